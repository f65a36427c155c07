"""Upstream LongMemEval-V2's own baseline memories, run unchanged from a pinned local checkout.

No upstream code is in this repository: the method's module is imported at run time from the checkout named by
the option's ``checkout`` key, else MNEMETRIC_LONGMEMEVAL_V2_DIR, after every file it needs has been checked
against its sha256 at :data:`REVISION` (:data:`PINS`). Facts from xiaowu0162/LongMemEval-V2 at that revision
(memory_modules/memory.py, evaluation/harness.py, evaluation/run_eval.py; shared/docs/upstream-v2-protocol.md §11),
code ours:

* The constructor arguments are upstream's: the method's config file ``evaluation/memory_configs/<method>.json``
  (agentrunbook_c_v2 has none: what run_eval.py's build_memory_config builds with its argument defaults,
  :data:`BUILT_BY_RUN_EVAL`) (deep-merged with the option's ``params``; run_eval's ``questions_path`` placeholder
  becomes ``<data root>/questions.jsonl``), then the harness's runtime parameters (``workspace_dir`` and
  ``trajectories_root_dir`` = the folder of trajectories.jsonl for rag, agentrunbook_r, codex, agentrunbook_c,
  agentrunbook_c_v2; ``query_trace_dir`` for the last three), built by upstream's own ``build_memory``;
  then ``configure_runtime(query_trace_dir=, generation_temperature=, generation_top_p=, cancel_event=)``.
* ``insert`` gets the raw trajectories.jsonl row (a dict), never our typed record.
* Query context (``query_context: upstream``, the default): before each query the memory gets upstream's
  ``set_query_context(question_id=, question_type=, question_item=)`` — question_item is the WHOLE question row
  as run_eval materialises it, gold answer and eval function included — and ``clear_query_context()`` after the
  post-query hook. That leaks; such runs say so (settings ``memory_query_context``) and are never official.
  ``query_context: none`` passes nothing (rag and no_retrieval do not read it; codex and agentrunbook_* do).
* ``save_dir``: after the inserts, upstream's ``save_memory`` (memory_config.json + the backend's state);
  ``load_dir``: upstream's ``load_memory(dir, requested_config=<the config>)`` instead of a build, and the
  inserts are skipped (as upstream's harness does).
* Model calls (:data:`PROXIED`): rag and agentrunbook_r call their controller model (chat completions) and their
  embedding model (embeddings) through OpenAI SDK clients they build lazily from their config's ``base_url``. They
  declare UsesModelProxy (:mod:`mnemetric.execute.access`): when the harness serves the loopback model proxy
  (:mod:`mnemetric.llm.proxy`, stage v2_memory and ``mnemetric v2 run``), right after the memory is built and
  before ``configure_runtime`` its clients — the per-thread sync ones and the async controller — are replaced by
  clients at ``proxy.route(<the config's base_url>)`` with the proxy's dummy key (each client's timeout and
  retries as upstream sets them); the memory's config (its ``base_url`` attributes, what ``memory_config`` and
  ``save_memory`` write) is left as upstream's. The proxy sends each request through the run's executor to that
  base_url with the run's key (``$OPENAI_API_KEY``: the config's ``api_key_env`` / ``api_key_file`` are not
  read). codex and agentrunbook_c run the Codex CLI and agentrunbook_c_v2 the OpenAI Agents SDK, which speak
  OpenAI's Responses API (over a websocket for the latter) from their own process or runner: the proxy does not
  serve it, so their calls stay their own (docs/v2-upstream-baselines.md).
* Only the method's own import closure inside memory_modules is executed: memory.py imports every backend
  at its end, and the backends the method does not import are given inert placeholders (so
  agentrunbook_c_v2's openai-agents is not needed to run rag). A package the method imports that is missing
  is an error naming the package.
"""

from __future__ import annotations

import ast
import copy
import importlib
import importlib.util
import json
import os
import sys
import tempfile
import threading
import types
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mnemetric.errors import ConfigError, PluginError
from mnemetric.io import sha256_bytes
from mnemetric.longmemeval_v2.memory import QUESTION_ONLY, UPSTREAM_ROW

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
RUNTIME_TYPES = frozenset({"rag", "agentrunbook_r", "codex", "agentrunbook_c", "agentrunbook_c_v2"})
TRACE_TYPES = frozenset({"codex", "agentrunbook_c", "agentrunbook_c_v2"})
PIP_NAMES = {"agents": "openai-agents", "PIL": "pillow", "yaml": "pyyaml"}
PROXIED = frozenset({"rag", "agentrunbook_r"})
"""memory_type → its model calls go through OpenAI SDK clients it builds from ``controller_base_url`` /
``embedding_base_url`` (memory_modules/agentrunbook_r.py ``_get_controller_client``, ``_get_embedding_client``,
``_get_async_controller_client``; rag.py borrows the first two): the ones routed through the model proxy."""
CLIENT_SLOTS = ("controller_base_url", "embedding_base_url", "controller_max_retries", "controller_timeout_seconds",
                "_runtime_local", "_async_controller_client")
"""What :meth:`UpstreamMemory._route_clients` reads and replaces on such a memory (all there at :data:`REVISION`)."""
QUERY_CONTEXTS = ("upstream", "none")
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


def is_upstream_option(section: Mapping[str, Any]) -> bool:
    """Whether a ``v2.memory`` section is one of upstream's baselines (conf/v2/memory/upstream-*.yaml)."""
    return str(section.get("_target_", "")).endswith(".upstream_memory.UpstreamMemory")


def runtime_memory_config(section: Mapping[str, Any]) -> dict[str, Any]:
    """runtime_inputs/memory_config.json of an upstream option: :func:`memory_template` from the option's checkout,
    method, params and root (the checkout's files verified as for a run)."""
    for key in ("method", "root"):
        if section.get(key) in (None, ""):
            raise ConfigError(f"v2.memory.{key}", "is not set: an upstream memory option names its method and the "
                              "data root", fix="use a conf/v2/memory/upstream-*.yaml option as shipped")
    return memory_template(checkout_dir(section.get("checkout")), str(section["method"]), section.get("params"),
                           section["root"])


_RAW: dict[tuple[str, int, int], dict[str, dict[str, Any]]] = {}


def raw_rows(path: Path, key: str = "id") -> dict[str, dict[str, Any]]:
    """A JSONL file's rows by ``key``, exactly as json.loads gives them (cached per file version)."""
    stat = path.stat()
    cache_key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    with _LOCK:
        if cache_key not in _RAW:
            rows = (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
            _RAW.clear()  # hold one file version per path at most (trajectories or questions)
            _RAW[cache_key] = {r[key]: r for r in rows if isinstance(r, dict) and isinstance(r.get(key), str)}
        return _RAW[cache_key]


def build_os_error(name: str, template: Mapping[str, Any], exc: OSError) -> ConfigError | PluginError:
    """What an OSError raised while upstream builds (or loads) a memory means to the user. A method with an
    embedding model (rag_query_to_slice*, agentrunbook_r) loads that model's tokenizer at build with transformers'
    AutoTokenizer, from the Hugging Face cache or hub: offline or unknown, that is the OSError, so the error names
    the conf key and how to get the files; any other OSError is the memory's own, named as such."""
    embedding = (template.get("memory_params") or {}).get("embedding_params")
    model = embedding.get("model") if isinstance(embedding, Mapping) else None
    if not model:
        return PluginError(name, "build", f"{type(exc).__name__}: {exc}")
    return ConfigError("v2.memory.params.embedding_params.model",
                       f"{name} could not be built: {type(exc).__name__}: {exc} (the memory loads the tokenizer of "
                       f"its embedding model {model!r} with transformers when it is built)",
                       fix=f"put {model}'s tokenizer files in the Hugging Face cache on a machine with network "
                           f"access (hf download {model} --exclude '*.safetensors'), or set "
                           f"-S v2.memory.params.embedding_params.model=<a local folder holding them>")


class UpstreamMemory:
    """One upstream memory (module docstring); built from a conf option under conf/v2/memory/upstream-*.yaml."""

    fingerprint_files = staticmethod(fingerprint_files)
    uses_model_proxy = False
    """Set per memory when it is built (:data:`PROXIED`, :data:`CLIENT_SLOTS`)."""

    def __init__(self, method: str, root: str | Path, name: str | None = None, checkout: str | None = None,
                 params: Mapping[str, Any] | None = None, workspace: str | Path | None = None,
                 query_context: str = "upstream", reader_temperature: float | None = 0.6,
                 reader_top_p: float | None = 0.95, save_dir: str | Path | None = None,
                 load_dir: str | Path | None = None) -> None:
        if query_context not in QUERY_CONTEXTS:
            raise ConfigError("v2.memory.query_context", f"expected one of {', '.join(QUERY_CONTEXTS)}, "
                              f"got {query_context!r}")
        self.name = name or f"upstream-{method}"
        self.method, self.root, self.query_context = method, Path(root), query_context
        self.checkout = checkout_dir(checkout)
        self.save_dir = Path(save_dir) if save_dir else None
        self.loaded = bool(load_dir)
        template = memory_template(self.checkout, method, params, self.root)
        memory_type = str(template["memory_type"])
        self._upstream = load_package(self.checkout, memory_type)
        base = Path(workspace or Path(".mnemetric") / "v2-upstream-workspace")
        base.mkdir(parents=True, exist_ok=True)
        self.workdir = Path(tempfile.mkdtemp(prefix=f"{memory_type}-", dir=base)).resolve()
        trace_dir = self.workdir / "query_traces"
        try:
            if load_dir:
                self.memory = self._upstream.load_memory(load_dir, requested_config=template)
            else:
                self.memory = self._upstream.build_memory(self._runtime_config(template, trace_dir))
            # the UsesModelProxy capability (module docstring): the method's memory with upstream's client slots
            self.uses_model_proxy = memory_type in PROXIED and all(hasattr(self.memory, a) for a in CLIENT_SLOTS)
            self._route_clients()
            self.memory.configure_runtime(query_trace_dir=trace_dir, generation_temperature=reader_temperature,
                                          generation_top_p=reader_top_p, cancel_event=threading.Event())
        except RuntimeError as exc:  # upstream's require()
            raise PluginError(self.name, "build", str(exc)) from None
        except OSError as exc:  # e.g. transformers' AutoTokenizer: the embedding model's files not at hand
            raise build_os_error(self.name, template, exc) from None
        self._trajectories = self.root / "trajectories.jsonl"

    def _route_clients(self) -> None:
        """Point the memory's OpenAI clients at the running model proxy (module docstring); nothing when no proxy
        runs (the memory then calls its config's endpoints itself, as upstream's harness does)."""
        from mnemetric.llm.proxy import current

        proxy = current()
        if not self.uses_model_proxy or proxy is None:
            return
        from mnemetric.llm.sdk import openai

        m = self.memory
        controller, embedding = proxy.route(m.controller_base_url), proxy.route(m.embedding_base_url)
        key, retries, timeout = proxy.api_key, m.controller_max_retries, m.controller_timeout_seconds
        clients = types.SimpleNamespace(  # shared by every thread (upstream keeps one per thread)
            controller_client=openai.OpenAI(base_url=controller, api_key=key, max_retries=retries, timeout=timeout),
            embedding_client=openai.OpenAI(base_url=embedding, api_key=key, max_retries=3, timeout=1200.0))
        m._runtime_local = clients  # noqa: SLF001 - upstream's client slots (files pinned by sha256)
        m._async_controller_client = openai.AsyncOpenAI(base_url=controller, api_key=key, max_retries=retries,
                                                        timeout=timeout)

    def _runtime_config(self, template: Mapping[str, Any], trace_dir: Path) -> dict[str, Any]:
        """evaluation/harness.py inject_runtime_memory_params (facts in the module docstring)."""
        config = {"memory_type": template["memory_type"], "memory_params": dict(template["memory_params"])}
        if config["memory_type"] in RUNTIME_TYPES:
            config["memory_params"]["workspace_dir"] = str(self.workdir / "workspace")
            config["memory_params"]["trajectories_root_dir"] = str(self._trajectories_root())
            if config["memory_type"] in TRACE_TYPES:
                config["memory_params"]["query_trace_dir"] = str(trace_dir)
        return config

    def _trajectories_root(self) -> Path:
        return (self.root / "trajectories.jsonl").resolve().parent

    def insert(self, trajectory: Any) -> None:
        """Upstream's insert with the raw trajectories.jsonl row of ``trajectory`` (its id); skipped when loaded."""
        if self.loaded:
            return None
        tid = trajectory if isinstance(trajectory, str) else trajectory.id
        rows = raw_rows(self._trajectories)
        if tid not in rows:
            raise PluginError(self.name, "insert", f"trajectory {tid!r} is not in {self._trajectories}")
        self.memory.insert(rows[tid])

    def inserts_done(self) -> None:
        """After the last insert: upstream's save_memory when ``save_dir`` is set (never over an existing one)."""
        if self.save_dir is None or self.loaded:
            return
        if self.save_dir.exists():
            raise ConfigError("v2.memory.save_dir", f"{self.save_dir} exists: upstream never overwrites a saved "
                              "memory, and saves only when every question shares one haystack",
                              fix="remove it, or choose another save_dir")
        self._upstream.save_memory(self.memory, self.save_dir)

    def question_item(self, question_id: str) -> dict[str, Any]:
        """The question row as run_eval.py materialises it: questions.jsonl's row, ``question`` → {text, image:
        absolute path} when it has an image, ``image`` dropped."""
        item = dict(raw_rows(self.root / "questions.jsonl")[question_id])
        image = item.get("image")
        if image is not None:
            path = Path(image) if Path(image).is_absolute() else self.root / image
            item["question"] = {"text": item["question"], "image": str(path.resolve())}
        item.pop("image", None)
        return item

    def before_query(self, question_id: str) -> None:
        """Upstream's set_query_context (``query_context: upstream``), before the query is timed."""
        if self.query_context == "upstream":
            item = self.question_item(question_id)
            self.memory.set_query_context(question_id=question_id, question_type=item.get("question_type"),
                                          question_item=item)

    def after_query(self) -> None:
        self.memory.clear_query_context()

    def query(self, text: str, image: str | None = None) -> Any:
        return self.memory.query(text, query_image=str(Path(image).resolve()) if image else None)

    def post_query_hook(self, *, query: str, query_image: str | None, memory_context: list[dict[str, str]]) -> Any:
        return self.memory.post_query_hook(query=query, query_image=str(Path(query_image).resolve())
                                           if query_image else None, memory_context=memory_context)


def query_context_of(section: Mapping[str, Any]) -> str:
    """settings.memory_query_context for a memory option: :data:`UPSTREAM_ROW` when an upstream memory gets
    upstream's query context, else "question" (the question text and image only)."""
    upstream_row = is_upstream_option(section) and section.get("query_context", "upstream") == "upstream"
    return UPSTREAM_ROW if upstream_row else QUESTION_ONLY
