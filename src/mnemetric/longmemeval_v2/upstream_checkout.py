"""The pinned upstream LongMemEval-V2 checkout, for :mod:`.upstream_memory`: where it is, the sha256 of every file used
at :data:`REVISION` (:data:`PINS`), each method's config (its JSON in evaluation/memory_configs/, or what run_eval.py
builds, :data:`BUILT_BY_RUN_EVAL`) and the import of the method's closure inside memory_modules (every other backend
a placeholder). Facts and rules: :mod:`.upstream_memory`'s docstring. No upstream code is in this repository."""

from __future__ import annotations

import ast
import copy
import importlib
import importlib.util
import json
import os
import sys
import threading
import types
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mnemetric.errors import ConfigError
from mnemetric.io import sha256_bytes

REVISION = "be15ea6e995462f3391c1a610892df3f67dfa7bd"
ENV = "MNEMETRIC_LONGMEMEVAL_V2_DIR"
PACKAGE = "memory_modules"
PINS: Mapping[str, str] = {  # sha256 of each file at REVISION (hashed by us)
    "memory_modules/__init__.py": "29eb4729405989c468a7a2b3171b620ffa4645098fcc348cadc56fc56cfb8044",
    "memory_modules/memory.py": "512d48d93ff78208127c85ffd90ea4c63f1f9ccea3427f0a7b6928a39bdc6a59",
    "memory_modules/no_retrieval.py": "a5b5fb0baef4314469556aec5cc2ab28ab23b283f544e8130b380d86c7c27307",
    "memory_modules/rag.py": "f5fed6692cf1b6b1d4baa3896a9cd323df65b31b649ceba1922c1a2b97a402ae",
    "memory_modules/agentrunbook_r.py": "d14d1356322a3fd4744fed78ae8f75a541bb1e56aeb93947e85ded5180356d95",
    "memory_modules/codex.py": "3e5fac1da343d077c4e1cd3b8521a00e911ca75f0c0db8d4550fe819f8dead59",
    "memory_modules/agentrunbook_c.py": "69aac23a10985ece14e58eeb07e5e23c12a40d3bac21eec4f8105faa05895eb6",
    "memory_modules/agentrunbook_c_v2.py": "3e6dc9ef7b90a91daad5b7fea0deff7dac8e055e361043e6c5dd8efc7475d4b8",
    "memory_modules/oai_agents_sdk.py": "6f238cb8d9c5df378f24f5c1d213daa446c599a506f04a8543cd1834716eed9c",
    "memory_modules/support.py": "66e1bb68ae42f0467e24cde0444b88f2d08c991ad9fd22ceda9920cf4b9d0f53",
    "memory_modules/trajectory_store.py": "437b825499000f7ae774f948a5e62a2ff9f455367491f97d0382431965ce594c",
    "memory_modules/assets/agentrunbook_c/INSTRUCTION.md":
        "6add63451d46ab786296963aef4cc36fcc63a83d9eba9b330d1ce6fd7b139a6c",
    "memory_modules/assets/agentrunbook_c/scripts/inspect_trajectory.py":
        "9d7df382c6ae3bf04155b62cfd6fdfd91b20568987620f1888c61b03882a830f",
    "memory_modules/assets/agentrunbook_c/scripts/render_trajectory_summary.py":
        "ab20519d302b5f12f25a25e743da0acdee2c98a1e10c0e1c212a53202351c337",
    "evaluation/memory_configs/no_retrieval.json": "aa6cf5ecb311a74b3861828989952c73873f9ff245af1fb02e1d09c933d8cae0",
    "evaluation/memory_configs/rag_query_to_slice.json":
        "52904e84ed096feffac19596d22f884ab5650bf3fc4c9d7e4f521041e0818fd8",
    "evaluation/memory_configs/rag_query_to_slice_notes.json":
        "08b99b870b3c134ccf3daca04cdba4248dda349004dd8d87159f0e8e4b62ec09",
    "evaluation/memory_configs/agentrunbook_r.json": "2847bfc7bfc6288115ec953f69efa0cc04a0327cc11a6b529d0d48763111ab0b",
    "evaluation/memory_configs/codex.json": "6ced4f04d2c7d4612c0c5474f23ff53dc3e3e6a708d86e83c560d532a100a3f2",
    "evaluation/memory_configs/agentrunbook_c.json": "9512d110d4eecbd9c4bbcf647df3fdd58f90370a32172274984e77a45b78d9c8",
    "evaluation/run_eval.py": "95d43fa67826eb6422ac18255ecad4110715472fe28c4d5ace7e6f1cc8179d43",
}
RUN_EVAL = "evaluation/run_eval.py"
BUILT_BY_RUN_EVAL: Mapping[str, Mapping[str, Any]] = {
    "agentrunbook_c_v2": {"memory_type": "agentrunbook_c_v2", "memory_params": {
        "questions_path": "SET_BY_SCRIPT", "evidence_mode": "both", "trajectory_pool_root": None,
        "query_openai_sdk_params": {"model": "gpt-5.4-mini", "reasoning_effort": "medium", "timeout_seconds": 800.0,
                                    "max_retries": 3, "max_turns": 30, "api_key_env": "OPENAI_API_KEY",
                                    "tool_timeout_seconds": 30.0, "max_tool_output_chars": 1048576}}},
}
"""Methods with no config file upstream → the config evaluation/run_eval.py's ``build_memory_config`` builds for it
with run_eval's argument defaults (no OPENAI_SDK_* / CODEX_* environment overrides; what
evaluation/scripts/run_agentrunbook_c_v2.sh passes too), in run_eval's key order. Facts read from the run_eval.py
pinned in :data:`PINS` (verified whenever such a method is used); tests/parity/test_v2_upstream_memory.py compares
it with run_eval's own function."""
ASSETS = {"agentrunbook_c": "memory_modules/assets/agentrunbook_c/"}
"""memory_type → the asset folder its module uses at run time (fingerprinted with it)."""
PIP_NAMES = {"agents": "openai-agents", "PIL": "pillow", "yaml": "pyyaml"}
_LOCK = threading.RLock()
_LOADED: dict[str, Any] = {}


def checkout_dir(checkout: str | Path | None) -> Path:
    """The checkout: the option's ``checkout`` key, else $MNEMETRIC_LONGMEMEVAL_V2_DIR; a clear error if neither."""
    value = checkout or os.environ.get(ENV)
    if not value:
        raise ConfigError("v2.memory.checkout", f"upstream LongMemEval-V2 memories run from a local checkout at "
                          f"{REVISION}, and none is named",
                          fix=f"git clone https://github.com/xiaowu0162/LongMemEval-V2 && git -C LongMemEval-V2 "
                              f"checkout {REVISION[:7]}; then set {ENV}=<that folder> or -S v2.memory.checkout=<it>")
    root = Path(value).expanduser()
    if not (root / PACKAGE / "memory.py").is_file():
        raise ConfigError("v2.memory.checkout", f"{root} is not a LongMemEval-V2 checkout (no {PACKAGE}/memory.py)",
                          fix=f"point {ENV} or v2.memory.checkout at a checkout of xiaowu0162/LongMemEval-V2 at "
                              f"{REVISION}")
    return root.resolve()


def verified(root: Path, rel: str) -> bytes:
    """The bytes of ``rel`` in the checkout, checked against :data:`PINS`; a clear error otherwise."""
    path = root / rel
    fix = f"git -C {root} checkout {REVISION} (the files pinned here; set {ENV} or v2.memory.checkout to such a checkout)"
    if rel not in PINS:
        raise ConfigError("v2.memory", f"{rel} is not a file pinned at {REVISION}", fix=fix)
    if not path.is_file():
        raise ConfigError("v2.memory.checkout", f"{path} is missing: the checkout is not at {REVISION}", fix=fix)
    data = path.read_bytes()
    if sha256_bytes(data) != PINS[rel]:
        raise ConfigError("v2.memory.checkout", f"{path} has sha256 {sha256_bytes(data)}, not the one at "
                          f"{REVISION} ({PINS[rel]})", fix=fix)
    return data


def _relative_imports(source: bytes, filename: str) -> list[str]:
    """The memory_modules siblings a module imports (``from .x import``), in source order."""
    out = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            out.append(node.module.split(".")[0])
    return list(dict.fromkeys(out))


def closure(root: Path, module: str) -> list[str]:
    """``module`` and the memory_modules modules it imports, transitively (memory.py's own tail excluded)."""
    found, todo = [], [module]
    while todo:
        name = todo.pop(0)
        if name in found or name == "memory":
            continue
        found.append(name)
        rel = f"{PACKAGE}/{name}.py"
        todo += _relative_imports(verified(root, rel), rel)
    return found


def config_file(method: str) -> str:
    """The upstream file ``method``'s config comes from: its JSON in evaluation/memory_configs/, or run_eval.py
    for a method upstream ships no config for (:data:`BUILT_BY_RUN_EVAL`)."""
    return RUN_EVAL if method in BUILT_BY_RUN_EVAL else f"evaluation/memory_configs/{method}.json"


def method_config(root: Path, method: str) -> dict[str, Any]:
    """Upstream's config for ``method`` (run_eval's method names): the JSON in evaluation/memory_configs/, else
    what run_eval.py builds for it (:data:`BUILT_BY_RUN_EVAL`, with run_eval.py verified)."""
    rel = config_file(method)
    if rel not in PINS:
        names = sorted([Path(p).stem for p in PINS if p.startswith("evaluation/memory_configs/")]
                       + list(BUILT_BY_RUN_EVAL))
        raise ConfigError("v2.memory.method", f"no upstream config for method {method!r}",
                          fix=f"one of: {', '.join(names)}")
    if method in BUILT_BY_RUN_EVAL:
        verified(root, rel)
        return copy.deepcopy(dict(BUILT_BY_RUN_EVAL[method]))
    return json.loads(verified(root, rel))


def files_used(root: Path, memory_type: str, method: str) -> list[str]:
    """Every upstream file the method uses (its config, memory_modules/__init__ and memory.py, its closure,
    its assets), each verified."""
    rels = [config_file(method), f"{PACKAGE}/__init__.py", f"{PACKAGE}/memory.py"]
    rels += [f"{PACKAGE}/{m}.py" for m in closure(root, memory_type)]
    for asset in ({ASSETS[m] for m in closure(root, memory_type) if m in ASSETS}):
        rels += sorted(p for p in PINS if p.startswith(asset))
    for rel in rels:
        verified(root, rel)
    return list(dict.fromkeys(rels))


def _placeholder(name: str) -> type:
    def refuse(*_: Any, **__: Any) -> None:
        raise RuntimeError(f"upstream backend {name} was not loaded (not imported by the chosen method)")
    return type(name, (), {"__init__": refuse})


def load_package(root: Path, memory_type: str) -> types.ModuleType:
    """Upstream's memory_modules.memory with the method's closure imported for real and every other backend
    of memory.py's tail a placeholder (module docstring). Cached per (checkout, closure)."""
    with _LOCK:
        needed = closure(root, memory_type)
        key = f"{root}|{','.join(sorted(needed))}"
        if key in _LOADED:
            return _LOADED[key]
        for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
            del sys.modules[name]
        init = PACKAGE + "/__init__.py"
        verified(root, init)
        spec = importlib.util.spec_from_file_location(PACKAGE, root / init,
                                                      submodule_search_locations=[str(root / PACKAGE)])
        package = importlib.util.module_from_spec(spec)
        sys.modules[PACKAGE] = package
        spec.loader.exec_module(package)
        memory_source = verified(root, f"{PACKAGE}/memory.py")
        for node in ast.parse(memory_source).body:
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module not in needed:
                stub = types.ModuleType(f"{PACKAGE}.{node.module}")
                for alias in node.names:
                    setattr(stub, alias.name, _placeholder(alias.name))
                sys.modules[stub.__name__] = stub
        try:
            module = importlib.import_module(f"{PACKAGE}.memory")
            importlib.import_module(f"{PACKAGE}.{memory_type}")
        except ModuleNotFoundError as exc:
            for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
                del sys.modules[name]
            top = (exc.name or "?").split(".")[0]
            raise ConfigError("v2.memory", f"upstream's {memory_type} memory needs the Python package "
                              f"{PIP_NAMES.get(top, top)!r} (module {top!r}), which is not installed",
                              fix=f"pip install {PIP_NAMES.get(top, top)}") from None
        _LOADED[key] = module
        return module


def fingerprint_files(section: Mapping[str, Any]) -> dict[str, str]:
    """For stage fingerprint: ``upstream:<path>`` → sha256 of every upstream file the option's method uses."""
    root = checkout_dir(section.get("checkout"))
    method = str(section.get("method"))
    memory_type = str(method_config(root, method)["memory_type"])
    return {f"upstream:{rel}": PINS[rel] for rel in files_used(root, memory_type, method)}


def _merge(base: Any, over: Any) -> Any:
    if isinstance(base, dict) and isinstance(over, Mapping):
        out = dict(base)
        for k, v in over.items():
            out[k] = _merge(base.get(k), v)
        return out
    return copy.deepcopy(over)


def _plain(value: Any) -> Any:
    """JSON-able plain containers (an instantiated option may hand OmegaConf containers)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):  # OmegaConf's ListConfig too
        return [_plain(v) for v in value]
    return value


def memory_template(root: Path, method: str, params: Mapping[str, Any] | None, data_root: str | Path) -> dict[str, Any]:
    """``{memory_type, memory_params}`` the method is built from, before the harness's runtime parameters: upstream's
    config file deep-merged with ``params``, ``questions_path: SET_BY_SCRIPT`` → ``<data root>/questions.jsonl``
    (absolute). With the shipped options' params this is what run_eval.py build_memory_config writes to
    runtime_inputs/memory_config.json with its default arguments."""
    template = _merge(method_config(root, method), {"memory_params": _plain(params or {})})
    mp = template["memory_params"]
    if mp.get("questions_path") == "SET_BY_SCRIPT":  # run_eval.py: the data root's questions.jsonl
        mp["questions_path"] = str((Path(data_root) / "questions.jsonl").resolve())
    return {"memory_type": str(template["memory_type"]), "memory_params": mp}
