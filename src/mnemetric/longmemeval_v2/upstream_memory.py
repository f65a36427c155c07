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

The checkout, its pins, the methods' configs and the loading: :mod:`.upstream_checkout`; the adapter here.
"""

from __future__ import annotations

import json
import tempfile
import threading
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mnemetric.errors import ConfigError, PluginError
from mnemetric.longmemeval_v2.memory import QUESTION_ONLY, UPSTREAM_ROW
from mnemetric.longmemeval_v2.upstream_checkout import (  # noqa: F401 (re-exported: callers and tests use them here)
    _LOADED, _LOCK, ASSETS, BUILT_BY_RUN_EVAL, ENV, PACKAGE, PINS, PIP_NAMES, RUN_EVAL, REVISION, checkout_dir, closure,
    config_file, files_used, fingerprint_files, load_package, memory_template, method_config, verified)

RUNTIME_TYPES = frozenset({"rag", "agentrunbook_r", "codex", "agentrunbook_c", "agentrunbook_c_v2"})
TRACE_TYPES = frozenset({"codex", "agentrunbook_c", "agentrunbook_c_v2"})
PROXIED = frozenset({"rag", "agentrunbook_r"})
"""memory_type → its model calls go through OpenAI SDK clients it builds from ``controller_base_url`` /
``embedding_base_url`` (memory_modules/agentrunbook_r.py ``_get_controller_client``, ``_get_embedding_client``,
``_get_async_controller_client``; rag.py borrows the first two): the ones routed through the model proxy."""
CLIENT_SLOTS = ("controller_base_url", "embedding_base_url", "controller_max_retries", "controller_timeout_seconds",
                "_runtime_local", "_async_controller_client")
"""What :meth:`UpstreamMemory._route_clients` reads and replaces on such a memory (all there at :data:`REVISION`)."""
QUERY_CONTEXTS = ("upstream", "none")


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
