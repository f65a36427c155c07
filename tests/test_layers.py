"""The house's import rules: generic layers know no benchmark family; doors are not imported by the CLI."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import ROOT

SRC = ROOT / "src" / "mnemetric"
GENERIC = ["llm", "stats", "upstream", "report", "io.py", "errors.py", "params.py", "schema.py", "config.py",
           "fingerprint.py", "jsonstream.py", "download.py", "embeddings.py"]
FAMILIES = ("mnemetric.longmemeval", "mnemetric.longmemeval_v2")


def imported_modules(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.add(node.module)
    return out


def files(entry: str) -> list[Path]:
    path = SRC / entry
    return sorted(path.rglob("*.py")) if path.is_dir() else [path]


@pytest.mark.parametrize("entry", GENERIC)
def test_generic_layers_import_no_benchmark_family(entry):
    bad = {f"{p.relative_to(ROOT)}: {m}" for p in files(entry) for m in imported_modules(p)
           if any(m == fam or m.startswith(fam + ".") for fam in FAMILIES)}
    assert not bad, sorted(bad)


def test_the_cli_imports_no_stage_module():
    bad = {f"{p.relative_to(ROOT)}: {m}" for p in files("cli") for m in imported_modules(p)
           if m == "mnemetric.stages" or m.startswith("mnemetric.stages.")}
    assert not bad, sorted(bad)
