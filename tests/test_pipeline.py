"""dvc.yaml ↔ stage modules: each stage declares exactly the params its module reads."""

from __future__ import annotations

import ast
import functools
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


@functools.cache
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


def stage_closure_modules(stage: str) -> set[str]:
    """stage_closure as module names."""
    out = set()
    for path in stage_closure(stage):
        parts = path.relative_to("src").with_suffix("").parts
        out.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


CODE_STAGES = sorted(set(DVC_YAML["stages"]) - {"fingerprint"})
"""The stages whose code stage fingerprint records (each depends on its ``stages/<stage>.json``)."""


@functools.cache
def _code_record(stage: str) -> dict:
    from mnemetric.stages.fingerprint import stage_code

    return stage_code(stage)


@pytest.mark.parametrize("stage", CODE_STAGES)
def test_stage_deps_cover_the_code_it_imports(stage):
    """Code that decides a number is a dependency: editing any module a stage imports reruns it. A stage
    depends on its code record (``${paths.fingerprints}/stages/<stage>.json``, written by stage fingerprint,
    which depends on all of src/mnemetric and plugins/), and that record covers every module of the
    stage's import closure, found here independently of mnemetric.fingerprint."""
    deps = [str(d) for d in DVC_YAML["stages"][stage].get("deps", [])]
    assert f"${{paths.fingerprints}}/stages/{stage}.json" in deps, \
        f"dvc.yaml stage {stage!r} lacks its code record dep ${{paths.fingerprints}}/stages/{stage}.json"
    recorded = set(_code_record(stage)["modules"])
    trivial = {"mnemetric"}  # src/mnemetric/__init__.py, an empty file
    missing = sorted(stage_closure_modules(stage) - recorded - trivial)
    assert missing == [], f"the code record of stage {stage!r} lacks modules: {missing}"


@pytest.mark.parametrize("stage", CODE_STAGES)
def test_stage_code_is_not_listed_file_by_file(stage):
    """A module the stage's code record covers is not also a dvc.yaml dep of it: each per-file dep is a
    hash DVC checks on every `dvc repro` (hundreds of them made a no-op repro take seconds)."""
    recorded = {_source(m).relative_to(ROOT).as_posix() for m in _code_record(stage)["modules"]}
    listed = sorted(str(d) for d in DVC_YAML["stages"][stage].get("deps", []) if str(d) in recorded)
    assert listed == [], f"dvc.yaml stage {stage!r}: drop these deps, its code record covers them: {listed}"


def test_fingerprint_writes_the_code_record_of_every_stage():
    from mnemetric.stages.fingerprint import stage_names

    spec = DVC_YAML["stages"]["fingerprint"]
    assert stage_names() == CODE_STAGES
    outs = {next(iter(o)) if isinstance(o, dict) else o for o in spec["outs"]}
    assert {f"${{paths.fingerprints}}/stages/{s}.json" for s in CODE_STAGES} <= outs
    assert {"src/mnemetric", "plugins"} <= set(spec["deps"])


def test_a_stage_that_builds_families_records_their_code():
    """Stages that take the families from the registry (conf/benchmark ``_target_``) run the families'
    packages: their code records hold those modules; a stage that does not, does not."""
    assert "mnemetric.longmemeval.family" in _code_record("run_manifest")["modules"]
    assert "mnemetric.longmemeval_v2.family" in _code_record("report")["modules"]
    assert "mnemetric.longmemeval_v2.family" not in _code_record("prepare")["modules"]


def test_the_code_record_follows_the_source(tmp_path, monkeypatch):
    """The record's sha256 is over the modules' bytes: another byte in one module, another record."""
    import mnemetric.stages.fingerprint as fp

    before = _code_record("prepare")
    path = _source("mnemetric.stages.prepare")
    real = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: real(self) + (b"#" if self == path else b""))
    after = fp.stage_code("prepare")
    assert after["sha256"] != before["sha256"]
    assert {m for m in after["modules"] if after["modules"][m] != before["modules"][m]} == {"mnemetric.stages.prepare"}
