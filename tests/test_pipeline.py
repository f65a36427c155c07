"""dvc.yaml ↔ stage modules: each stage declares exactly the params its module reads."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT

DVC_YAML = yaml.safe_load((ROOT / "dvc.yaml").read_text())


def declared_params(cmd: str) -> list[str]:
    """What the stage module of a dvc.yaml ``cmd`` reads: its ``PARAMS``, or, for a generic stage given
    families on its command line (``python -m mnemetric.stages.run_manifest longmemeval``), ``params_for``."""
    prefix, _, rest = cmd.partition("python -m mnemetric.stages.")
    assert prefix == "", cmd
    name, *args = rest.split()
    module = importlib.import_module(f"mnemetric.stages.{name}")
    if hasattr(module, "params_for"):
        return module.params_for(args)
    assert args == [], f"{cmd}: the stage takes no arguments"
    return module.PARAMS


@pytest.mark.parametrize("stage", sorted(DVC_YAML["stages"]))
def test_stage_params_match_module(stage):
    spec = DVC_YAML["stages"][stage]
    assert spec["cmd"].split()[:3] == ["python", "-m", f"mnemetric.stages.{stage}"]
    assert spec.get("params", []) == declared_params(spec["cmd"])


def test_dvc_loads_the_pipeline():
    from dvc.repo import Repo

    with Repo(str(ROOT)) as repo:
        names = {s.addressing for s in repo.index.stages}
    assert set(DVC_YAML["stages"]) <= names


def _imports_of(path: Path, module: str) -> set[str]:
    """Modules named by the import statements of one file (relative ones resolved), written here
    independently of mnemetric.fingerprint."""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)
    return out


def _source(module: str) -> Path | None:
    base = ROOT / "src" / Path(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def stage_closure(stage: str) -> set[Path]:
    """Every mnemetric source file the stage module can import (function-level imports included),
    plus the packages' __init__ files that importing them runs."""
    seen: dict[str, Path] = {}
    todo = [f"mnemetric.stages.{stage}"]
    while todo:
        name = todo.pop()
        path = _source(name)
        if name in seen or path is None:
            continue
        seen[name] = path
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]
        todo += [m for m in _imports_of(path, name) if m.split(".")[0] == "mnemetric"]
    return {p.relative_to(ROOT) for p in seen.values()}


@pytest.mark.parametrize("stage", sorted(DVC_YAML["stages"]))
def test_stage_deps_cover_the_code_it_imports(stage):
    """Code that decides a number is a dependency: editing any module a stage imports reruns it."""
    deps = [Path(d) for d in DVC_YAML["stages"][stage].get("deps", []) if not str(d).startswith("$")]
    trivial = {Path("src/mnemetric/__init__.py")}  # an empty file
    missing = sorted(str(f) for f in stage_closure(stage) - trivial
                     if not any(f == d or d in f.parents for d in deps))
    assert missing == [], f"dvc.yaml stage {stage!r} lacks deps for: {missing}"
