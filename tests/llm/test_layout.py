"""The llm package's modules import each other without cycles (client and dry_run used to)."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "mnemetric" / "llm"


def sibling_imports(path: Path) -> set[str]:
    """Modules of mnemetric.llm that ``path`` imports at module level (``from mnemetric.llm.x import``
    or the relative ``from .x import``)."""
    found = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").startswith("mnemetric.llm."):
            found.add(node.module.split(".")[2])
    return found


def test_no_import_cycle_inside_the_llm_package():
    graph = {p.stem: sibling_imports(p) for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    assert "client" not in graph["dry_run"] and "cache" in graph["dry_run"]
    try:
        order = list(TopologicalSorter(graph).static_order())
    except CycleError as exc:  # pragma: no cover - the failure message
        pytest.fail(f"import cycle in mnemetric.llm: {exc.args[1]}")
    assert order.index("types") < order.index("client") and order.index("retry") < order.index("client")


def test_modules_stay_small():
    sizes = {p.name: len(p.read_text().splitlines()) for p in PACKAGE.glob("*.py")}
    assert max(sizes.values()) <= 400, sizes
