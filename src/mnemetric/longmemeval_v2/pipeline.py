"""A LongMemEval-V2 run from its settings (the ``v2`` conf option): the components the V2 stages and the CLI build.

Every component is a conf option built by Hydra's ``_target_`` (conf/v2/memory, reader, checker,
token_counter; no dispatch by name). No component holds a client: the reader and the LLM checkers build
:class:`mnemetric.execute.ModelCall` records, and the run's ONE executor (built by the stage or the CLI from
the ``executor`` and ``llm:`` settings) sends them — one budget and one usage ledger for the run. The
memory option is built afresh whenever the shared-haystack rule asks for a new memory (:mod:`.memory`); a memory
that calls models (the CallsModels capability: ``dense``) is handed that same executor when it is built; one whose
own OpenAI clients call models (UsesModelProxy: upstream's rag, agentrunbook_r) talks to the loopback model proxy
over it.
The offline reader and checker need no model and no network (the bundled sample's default); the reader
and LLM checkers read the pinned upstream texts at run time (MNEMETRIC_LONGMEMEVAL_V2_DIR, else the
cache, else a download). The CLI names options (``--memory bm25``) and gets the same conf files
(:func:`option`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mnemetric.errors import ConfigError
from mnemetric.execute import Executor
from mnemetric.longmemeval_v2.data_custody import DataCheck
from mnemetric.longmemeval_v2.memory import MemoryFactory
from mnemetric.longmemeval_v2.questions import DOMAINS
from mnemetric.longmemeval_v2.run import V2Run, run_v2
from mnemetric.longmemeval_v2.selection import Selection
from mnemetric.longmemeval_v2.tokens import DEFAULT_MAX_TOKENS
from mnemetric.longmemeval_v2.upstream_memory import query_context_of

GROUPS = ("memory", "reader", "checker", "token_counter")
"""The component sub-groups of the ``v2`` option (conf/v2/<group>/<option>.yaml)."""


def _section(s: Mapping[str, Any], group: str) -> dict[str, Any]:
    cfg = s.get(group)
    if not isinstance(cfg, dict):
        options = ", ".join(sorted(p.stem for p in (conf_dir() / group).glob("*.yaml")))
        raise ConfigError(f"v2.{group}", f"expected a component (a mapping with _target_), got {cfg!r}",
                          fix=f"choose an option with -S v2/{group}=<option> (options: {options}); "
                              f"set its keys with -S v2.{group}.<key>=<value>")
    return dict(cfg)


def build_component(cfg: Mapping[str, Any], where: str) -> Any:
    """Build one option (module docstring)."""
    from mnemetric.config import build

    return build(dict(cfg), where)


@dataclass(frozen=True)
class Components:
    """What one V2 run is made of, built from the ``v2`` settings."""

    factory: MemoryFactory
    memory_name: str
    reader: Any
    checker: Any
    counter: Any


@dataclass(frozen=True)
class MemoryOption:
    """A memory conf option as a factory: each call builds a fresh memory from ``section`` (picklable, for a worker
    pool or a Dask cluster). ``calls_models``: whether its memories declare CallsModels (then the harness hands
    each the run's executor and keeps it in this process: :mod:`.harness`); ``uses_model_proxy``: whether they
    declare UsesModelProxy (then the memory step serves the model proxy around them, in this process)."""

    section: Mapping[str, Any]
    calls_models: bool = False
    uses_model_proxy: bool = False

    def __call__(self) -> Any:
        from mnemetric.config import build

        return build(dict(self.section), "v2.memory")


def memory_factory(s: Mapping[str, Any]) -> tuple[MemoryOption, str]:
    """The memory option as a factory (built once now, so a bad target fails before any data is read, and to see
    whether it calls models) and its name."""
    from mnemetric.execute.access import calls_models, uses_model_proxy

    memory = _section(s, "memory")
    probe = MemoryOption(memory)()
    return MemoryOption(memory, calls_models(probe), uses_model_proxy(probe)), str(memory["name"])


def component(s: Mapping[str, Any], group: str) -> Any:
    """One of reader, checker, token_counter, built from the ``v2`` settings."""
    return build_component(_section(s, group), f"v2.{group}")


def components(s: Mapping[str, Any]) -> Components:
    """Build the memory factory, reader, checker and token counter the ``v2`` settings name."""
    factory, name = memory_factory(s)
    return Components(factory, name, component(s, "reader"), component(s, "checker"), component(s, "token_counter"))


def run_from_settings(s: Mapping[str, Any], executor: Executor | None = None, *, data: DataCheck | None = None,
                      select: Selection | None = None, keep: Any = None, shard_reason: str | None = None) -> V2Run:
    """One V2 evaluation as the ``v2`` settings say (see conf/v2/sample.yaml for the keys), every model call through
    ``executor`` (the run's one executor; None: the immediate one with default settings, made only if needed);
    ``data``: the data root checked against its custody record (None: not verified)."""
    c = components(s)
    return run_v2(Path(s["data_root"]), s["haystack"], tuple(dict.fromkeys(s["domains"])), factory=c.factory,
                  memory_name=c.memory_name, reader=c.reader, checker=c.checker, counter=c.counter, executor=executor,
                  max_tokens=int(s["max_tokens"]), texts=c.reader.texts, check_images=bool(s["images"]),
                  data=data, counter_note=c.counter.note, select=select,
                  memory_query_context=query_context_of(s["memory"]), keep=keep, shard_reason=shard_reason)


def conf_dir() -> Path:
    """conf/v2 of the package (the options the CLI names)."""
    from mnemetric.config import package_conf_dir

    return package_conf_dir() / "v2"


def option_dirs(group: str, conf: str | Path | None = None) -> list[Path]:
    """Where the options of ``group`` live: ``<conf>/v2/<group>/`` of a project's conf folder (when given),
    then the package's conf/v2/<group>/. A project option shadows a package option of the same name."""
    dirs = [Path(conf) / "v2" / group] if conf is not None else []
    return dirs + [conf_dir() / group]


def options(group: str, conf: str | Path | None = None) -> list[str]:
    """The option names of ``group`` (one per <name>.yaml in :func:`option_dirs`), sorted."""
    return sorted({p.stem for d in option_dirs(group, conf) for p in d.glob("*.yaml")})


def option(group: str, name: str, data_root: str | Path, conf: str | Path | None = None,
           **overrides: Any) -> dict[str, Any]:
    """<conf>/v2/<group>/<name>.yaml (else the package's) as a component section, ``${v2.data_root}`` resolved
    to ``data_root``, and each non-None override set where the option has that key — what the CLI builds when
    it names an option (a user's own option works as a shipped one)."""
    import yaml
    from omegaconf import OmegaConf

    path = next((d / f"{name}.yaml" for d in option_dirs(group, conf) if (d / f"{name}.yaml").is_file()), None)
    if path is None:
        where = " or ".join(str(d) for d in option_dirs(group, conf))
        raise ConfigError(group, f"no LongMemEval-V2 {group} option {name!r} (looked in {where})",
                          fix=f"one of: {', '.join(options(group, conf))}; or add {group}/{name}.yaml under "
                              "<conf>/v2/ and pass --conf")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{group}={name}", f"{path}: not valid YAML ({exc})", fix="fix the file") from None
    if not isinstance(raw, dict) or "_target_" not in raw or "name" not in raw:
        raise ConfigError(f"{group}={name}", f"{path}: expected a mapping with _target_ and name",
                          fix="copy a shipped option (conf/v2/<group>/*.yaml) and change it")
    raw.update({k: v for k, v in overrides.items() if v is not None and k in raw})
    tree = OmegaConf.create({"v2": {"data_root": str(data_root), group: raw}})
    return OmegaConf.to_container(tree, resolve=True)["v2"][group]


def run_named(root: str | Path, haystack: str | Path, *, memory: str, memory_options: Mapping[str, Any] | None = None,
              domains: Sequence[str] = DOMAINS, reader: str = "offline", reader_model: str | None = None,
              reader_base_url: str | None = None, enable_thinking: bool = True, checker: str = "offline",
              judge_model: str | None = None, judge_base_url: str | None = None, token_counter: str = "auto",
              processor_path: str | None = None, max_tokens: int = DEFAULT_MAX_TOKENS, check_images: bool = True,
              data: DataCheck | None = None, executor: Executor | None = None,
              conf: str | Path | None = None, select: Selection | None = None) -> V2Run:
    """:func:`run_from_settings` with every component named by its conf option (conf/v2/<group>/<name>.yaml, the
    files the DVC stages compose): the keyword arguments set the option's own keys where it has them (``top_k`` of
    bm25, ``model`` of openai, ``path`` of qwen …) and are ignored where it has not (the offline reader has no
    model). ``conf``: a project's conf folder whose v2/<group>/<name>.yaml options are found first (:func:`option`)."""
    settings = named_settings(root, haystack, memory=memory, memory_options=memory_options, domains=domains,
                              reader=reader, reader_model=reader_model, reader_base_url=reader_base_url,
                              enable_thinking=enable_thinking, checker=checker, judge_model=judge_model,
                              judge_base_url=judge_base_url, token_counter=token_counter,
                              processor_path=processor_path, max_tokens=max_tokens, check_images=check_images,
                              conf=conf)
    return run_from_settings(settings, executor, data=data, select=select)


def named_settings(root: str | Path, haystack: str | Path, *, memory: str,
                   memory_options: Mapping[str, Any] | None = None, domains: Sequence[str] = DOMAINS,
                   reader: str = "offline", reader_model: str | None = None, reader_base_url: str | None = None,
                   enable_thinking: bool = True, checker: str = "offline", judge_model: str | None = None,
                   judge_base_url: str | None = None, token_counter: str = "auto", processor_path: str | None = None,
                   max_tokens: int = DEFAULT_MAX_TOKENS, check_images: bool = True,
                   conf: str | Path | None = None) -> dict[str, Any]:
    """The ``v2`` settings :func:`run_named` runs (each component its conf option, the keyword arguments set)."""
    return {
        "name": "cli", "data_root": str(root), "haystack": haystack, "domains": list(domains),
        "max_tokens": max_tokens, "images": check_images,
        "memory": option("memory", memory, root, conf, **dict(memory_options or {})),
        "reader": option("reader", reader, root, conf, model=reader_model, base_url=reader_base_url,
                         enable_thinking=enable_thinking),
        "checker": option("checker", checker, root, conf, model=judge_model, base_url=judge_base_url),
        "token_counter": option("token_counter", token_counter, root, conf, path=processor_path),
    }
