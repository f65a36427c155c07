"""Code fingerprints: which source bytes decide a component's behaviour.

DVC reruns a stage when one of its ``deps`` changes. Mnemetric's own modules are listed in dvc.yaml
(tests/test_pipeline.py checks that every stage's import closure is covered), but a component built
by Hydra's ``_target_`` may live in another package (a researcher's memory system): editing it
must rerun the stages that use it, and a run must say which code produced it.

A fingerprint is computed without running the component's code beyond importing its package
(needed to find its files):

* the *closure*: the module that defines ``_target_`` plus every module of the same top-level
  package that it imports, transitively — found by reading ``import`` statements with :mod:`ast`
  (imports inside functions count too), never by executing the modules;
* ``sha256`` = sha256 of the canonical JSON of {module name: sha256 of its source bytes} over the
  closure, so it changes exactly when one of those files changes;
* the installed distribution that provides the top-level package, and its version, when known;
* files outside any Python package that the component runs (upstream code read from a checkout): when the
  object ``_target_`` names has a ``fingerprint_files(section)`` callable and the conf section is given, its
  ``{label: sha256}`` entries are added to the closure's (this imports the target's module, nothing more).

Paths and clock times are never part of a fingerprint: the same code gives the same bytes anywhere.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mnemetric.errors import ConfigError
from mnemetric.io import dumps_canonical, sha256_bytes, sha256_text


@dataclass(frozen=True)
class Fingerprint:
    target: str
    """The dotted ``_target_`` (or module) fingerprinted."""
    sha256: str
    """sha256 of the canonical JSON of ``files``."""
    files: dict[str, str]
    """Module name → sha256 of its source, for every module of the closure."""
    distribution: str | None
    version: str | None

    def to_record(self) -> dict[str, Any]:
        return {"target": self.target, "sha256": self.sha256, "distribution": self.distribution,
                "version": self.version, "modules": dict(sorted(self.files.items()))}


def module_file(name: str) -> Path | None:
    """The source file of module ``name`` (a package's ``__init__.py``), or None if it has none."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    return Path(spec.origin)


def _imported_names(tree: ast.AST, module: str, is_package: bool) -> set[str]:
    """Absolute names of the modules an AST imports (``from x import y`` also yields ``x.y``,
    which may be a module; relative imports are resolved against ``module``)."""
    package = module if is_package else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base = ".".join(base_parts[: len(base_parts) - node.level + 1])
                head = f"{base}.{node.module}" if node.module else base
            else:
                head = node.module or ""
            names.add(head)
            names.update(f"{head}.{alias.name}" for alias in node.names)
    return names


@functools.lru_cache(maxsize=4096)
def _file_imports(path: str, module: str, mtime_ns: int, size: int) -> frozenset[str]:
    """The names module ``module`` (file ``path``) imports; cached per file version (its mtime and size), so
    closures that share modules (one per stage) parse each file once."""
    try:
        tree = ast.parse(Path(path).read_bytes(), filename=path)
    except SyntaxError as exc:
        raise ConfigError(module, f"{path}: cannot parse ({exc.msg}, line {exc.lineno})",
                          fix="fix the syntax error in that module") from None
    return frozenset(_imported_names(tree, module, Path(path).name == "__init__.py"))


def module_closure(module: str) -> dict[str, Path]:
    """``module`` and every module of its top-level package it imports, transitively: name → file."""
    top = module.split(".")[0]
    found: dict[str, Path] = {}
    todo = [module]
    while todo:
        name = todo.pop()
        if name in found:
            continue
        path = module_file(name)
        if path is None:
            continue
        found[name] = path
        parts = name.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))  # parent packages run on import
        stat = path.stat()
        for imported in _file_imports(str(path), name, stat.st_mtime_ns, stat.st_size):
            if imported.split(".")[0] == top and imported not in found:
                todo.append(imported)
    return found


@functools.cache
def _packages_distributions() -> dict[str, list[str]]:
    """Top-level package -> distributions; read once per process (it scans every installed distribution)."""
    return dict(importlib.metadata.packages_distributions())


def _distribution(top: str) -> tuple[str | None, str | None]:
    dists = _packages_distributions().get(top) or []
    if not dists:
        return None, None
    name = sorted(dists)[0]
    try:
        return name, importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return name, None


def _extra_files(target: str, section: dict[str, Any]) -> dict[str, str]:
    """``{label: sha256}`` from the target's ``fingerprint_files(section)``, if it has one (module docstring)."""
    import importlib

    module, _, attr = target.rpartition(".")
    try:
        obj = getattr(importlib.import_module(module), attr, None) if module else None
    except ImportError:
        return {}
    hook = getattr(obj, "fingerprint_files", None)
    return dict(hook(section)) if callable(hook) else {}


def fingerprint(target: str, where: str = "_target_", section: dict[str, Any] | None = None) -> Fingerprint:
    """Fingerprint the class or function named by a dotted ``target`` (or a module name); ``section``: its conf
    section, for a target that names files of its own (module docstring)."""
    module = target
    while module and module_file(module) is None:
        module = module.rpartition(".")[0]
    if not module:
        raise ConfigError(where, f"cannot find the module of {target!r}",
                          fix="is the package that defines it installed in this environment? "
                              "(pip install -e path/to/your/package)")
    files = {name: sha256_bytes(path.read_bytes()) for name, path in module_closure(module).items()}
    if section is not None:
        files |= _extra_files(target, section)
    distribution, version = _distribution(module.split(".")[0])
    return Fingerprint(target, sha256_text(dumps_canonical(files)), files, distribution, version)


def component_target(section: dict[str, Any], default_module: str | None = None) -> str | None:
    """The ``_target_`` of a conf section, else ``default_module`` (components without a target)."""
    target = section.get("_target_") if isinstance(section, dict) else None
    return str(target) if target else default_module


def read_fingerprint(folder: str | Path, component: str) -> str:
    """The sha256 recorded by the fingerprint stage for ``component`` (``<folder>/<component>.json``)."""
    import json

    from mnemetric.io import require_file

    path = require_file(Path(folder) / f"{component}.json", fix="run `dvc repro fingerprint` first")
    return str(json.loads(path.read_text(encoding="utf-8"))["sha256"])
