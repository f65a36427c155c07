"""Opt-in differential tests against LongMemEval-V2's own functions: one top-level function of a
pinned upstream file, read from the checkout named by MNEMETRIC_LONGMEMEVAL_V2_DIR.

The file's sha256 is checked against our pin (mnemetric.longmemeval_v2.upstream_text.KNOWN_PINS)
before anything is compiled; only the named ``def`` is extracted (ast) and run, never the module.
Without the variable the calling test is skipped, with the reason.
"""

from __future__ import annotations

import ast
import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mnemetric.longmemeval_v2 import upstream_text as ut


def upstream_v2_function(path: str, name: str) -> Callable[..., Any]:
    """Upstream's function ``name`` of ``path`` (at ut.REVISION), or skip the test saying why."""
    root = os.environ.get("MNEMETRIC_LONGMEMEVAL_V2_DIR")
    if not root:
        pytest.skip("set MNEMETRIC_LONGMEMEVAL_V2_DIR to a LongMemEval-V2 checkout at be15ea6 to compare with "
                    f"upstream's {Path(path).stem}.{name}")
    data = (Path(root) / path).read_bytes()
    pin = ut.KNOWN_PINS.pin(ut.REPO, ut.REVISION, path)
    assert hashlib.sha256(data).hexdigest() == pin.sha256, f"{path} is not the file at {ut.REVISION}"
    tree = ast.parse(data.decode("utf-8"), path)
    nodes = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name]
    assert len(nodes) == 1, f"{path} has {len(nodes)} top-level functions named {name}"
    namespace: dict[str, Any] = {"Any": Any}
    exec(compile(ast.Module(nodes, []), path, "exec"), namespace)  # noqa: S102 - opt-in differential test
    return namespace[name]
