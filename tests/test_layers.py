"""The house's import rules: generic layers know no benchmark family; doors are not imported by the CLI."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

SRC = ROOT / "src" / "mnemetric"
GENERIC = ["llm", "execute", "stats", "upstream", "report", "custody", "family.py", "io.py", "errors.py", "params.py", "schema.py",
           "config.py",
           "fingerprint.py", "jsonstream.py", "jsonstrict.py", "jsonfast.py", "download.py", "embeddings.py", "ranking.py", "records.py",
           "revisions.py"]
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


def family_imports(package: str, other: str) -> set[str]:
    """Modules of family ``other`` that files under the ``package`` folder import (function-level included)."""
    return {f"{p.relative_to(ROOT)}: {m}" for p in files(package) for m in imported_modules(p)
            if m == other or m.startswith(other + ".")}


@pytest.mark.parametrize("package, other", [("longmemeval", "mnemetric.longmemeval_v2"),
                                            ("longmemeval_v2", "mnemetric.longmemeval")])
def test_no_benchmark_family_imports_the_other(package, other):
    """Families are siblings: what both need lives in a generic layer (e.g. ``mnemetric.ranking``)."""
    bad = family_imports(package, other)
    assert not bad, sorted(bad)


def test_the_family_rule_sees_a_cross_import(tmp_path, monkeypatch):
    """The check can fail: a V2 file that imports the V1 family (and one that only looks alike) is judged right."""
    pkg = tmp_path / "longmemeval_v2"
    pkg.mkdir()
    (pkg / "a.py").write_text("def f():\n    from mnemetric.longmemeval.memory.bm25 import BM25\n")
    (pkg / "b.py").write_text("import mnemetric.longmemeval_v2.lafs\nfrom mnemetric.ranking import BM25Ranker\n")
    monkeypatch.setattr(sys.modules[__name__], "SRC", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    found = family_imports("longmemeval_v2", "mnemetric.longmemeval")
    assert found == {"longmemeval_v2/a.py: mnemetric.longmemeval.memory.bm25"}


def bare_error_raises(path: Path) -> list[int]:
    """Lines of ``path`` that raise the base class MnemetricError itself (not a named subclass)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            func = node.exc.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            if name == "MnemetricError":
                out.append(node.lineno)
    return out


def test_no_module_raises_the_bare_base_error():
    """Every user-facing error says what kind it is: InputError (file, record, field), ConfigError (key),
    PluginError (component, call), UpstreamFormatError (file), IntegrityError, DownloadError, ..."""
    bad = [f"{p.relative_to(ROOT)}:{line}" for p in sorted(SRC.rglob("*.py")) for line in bare_error_raises(p)]
    assert not bad, bad


def test_the_bare_error_rule_sees_a_bare_raise(tmp_path):
    sample = tmp_path / "m.py"
    sample.write_text("from mnemetric import errors\n\ndef f():\n    raise errors.MnemetricError('x')\n")
    assert bare_error_raises(sample) == [4]


@pytest.mark.parametrize("package", ["longmemeval", "longmemeval_v2", "stages"])
def test_families_and_stages_import_no_cli(package):
    """The CLI is a door onto the library: nothing in the library (or a stage) goes back through it."""
    bad = {f"{p.relative_to(ROOT)}: {m}" for p in files(package) for m in imported_modules(p)
           if m == "mnemetric.cli" or m.startswith("mnemetric.cli.")}
    assert not bad, sorted(bad)


def test_no_stage_imports_the_openai_sdk_before_it_sends_a_request():
    """Importing the SDK costs about a second of CPU per stage process; modules say
    ``from mnemetric.llm.sdk import openai`` so it is imported on first use (mnemetric/llm/sdk.py)."""
    import os
    import subprocess

    stages = sorted(p.stem for p in (SRC / "stages").glob("[a-z]*.py"))
    code = ("import importlib, sys\n"
            f"for name in {stages!r}:\n"
            "    importlib.import_module('mnemetric.stages.' + name)\n"
            "    assert 'openai' not in sys.modules, name\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert done.returncode == 0, done.stderr
    assert len(stages) > 15


SQL_MODULES = {"llm/cache.py", "llm/claims.py", "llm/batch_ledger.py"}
"""The model-call store: the response cache (and its vector table), its single-flight claims table, the
batch ledger beside it. A manifest, a family or a door reads evidence from tracked files, never from them."""
CONCURRENT_MODULES = {"llm/gather.py", "execute/immediate.py"}
"""The one client loop: the immediate executor runs its calls through llm.gather; no component owns one."""


def _uses(path: Path, module: str, names: tuple[str, ...]) -> bool:
    """Whether ``path`` imports ``module`` or calls ``module.<name>`` / a from-imported ``<name>``."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name == module for a in node.names) and not names:
            return True
        if isinstance(node, ast.ImportFrom) and node.module == module and (
                not names or any(a.name in names for a in node.names)):
            return True
        if (isinstance(node, ast.Attribute) and node.attr in names and isinstance(node.value, ast.Name)
                and node.value.id == module):
            return True
    return False


def test_sql_lives_in_the_model_call_store_only():
    """Issue 15 item 3: run manifests are built from tracked files; no SQL outside the llm store modules."""
    bad = sorted(str(p.relative_to(SRC)) for p in SRC.rglob("*.py")
                 if _uses(p, "sqlite3", ()) and str(p.relative_to(SRC)) not in SQL_MODULES)
    assert not bad, bad


def test_no_component_owns_a_client_loop():
    """Issue 15 item 2: model calls are data sent by the run's executor; only it gathers them."""
    bad = sorted(str(p.relative_to(SRC)) for p in SRC.rglob("*.py")
                 if _uses(p, "asyncio", ("gather", "run", "as_completed", "wait")) and
                 str(p.relative_to(SRC)) not in CONCURRENT_MODULES)
    assert not bad, bad


def test_the_store_and_loop_rules_see_a_use(tmp_path):
    sample = tmp_path / "m.py"
    sample.write_text("import asyncio\nimport sqlite3\n\nasync def f(xs):\n    return await asyncio.gather(*xs)\n")
    assert _uses(sample, "sqlite3", ()) and _uses(sample, "asyncio", ("gather",))
    sample.write_text("from asyncio import gather\n")
    assert _uses(sample, "asyncio", ("gather",)) and not _uses(sample, "sqlite3", ())
