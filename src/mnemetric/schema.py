"""Typed run settings: what each fixed section of params.yaml may hold, checked with the key named.

Two checks, one description (the dataclasses below):

* at composition — the Hydra plugin (``hydra_plugins/mnemetric``) registers :class:`RunSchema` in
  Hydra's ConfigStore and conf/config.yaml lists it first in its defaults, so ``dvc exp run -S
  retrieval.context_k=abc`` stops before any stage with Hydra's message naming the key;
* when a stage reads params — :func:`check_section` checks types strictly (no "10" for 10, no
  integer 0 for a sha256) and ranges (``context_k >= 0``, ``max_concurrency >= 1``, a 64-hex
  sha256, known choices) and raises ``ConfigError(key, problem, fix)``; so does ``mnemetric
  compose`` before it writes params.yaml.

Which sections exist is not written here: each family declares its own (``Family.params_sections``,
a :class:`Section` per top-level section: a typed dataclass, or an open component section whose
keys belong to the component's constructor; only ``name`` and ``_target_`` are checked for those),
and :func:`family_sections` takes the union over the ``benchmark`` conf group with the base sections
(``benchmark``, ``executor``, ``llm``, ``memory_llm``). LongMemEval's are in :mod:`mnemetric.longmemeval.params_schema`,
LongMemEval-V2's in :mod:`mnemetric.longmemeval_v2.params_schema`.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from mnemetric.errors import ConfigError

MISSING = "???"


def _spec(*, min: float | None = None, gt: float | None = None, choices: tuple | None = None,  # noqa: A002
          pattern: str | None = None, fix: str | None = None) -> dict:
    return {k: v for k, v in (("min", min), ("gt", gt), ("choices", choices), ("pattern", pattern), ("fix", fix))
            if v is not None}


SHA256 = _spec(pattern=r"^[0-9a-f]{64}$", fix="a 64-character lowercase hex string, quoted in YAML")


@dataclass
class Budget:
    max_requests: Optional[int] = field(default=None, metadata=_spec(min=0))
    max_usd: Optional[float] = field(default=None, metadata=_spec(min=0))


@dataclass
class Price:
    input: float = field(default=MISSING, metadata=_spec(min=0))  # type: ignore[assignment]
    output: float = field(default=MISSING, metadata=_spec(min=0))  # type: ignore[assignment]
    batch_discount: Optional[float] = field(default=None, metadata=_spec(min=0))
    """The fraction a Batch API takes off (OpenAI: 0.5; at most 1, checked by the price table)."""


@dataclass
class LLM:
    max_concurrency: int = field(default=MISSING, metadata=_spec(min=1))  # type: ignore[assignment]
    timeout: float = field(default=MISSING, metadata=_spec(gt=0))  # type: ignore[assignment]
    max_attempts: int = field(default=MISSING, metadata=_spec(min=1))  # type: ignore[assignment]
    non_answer_attempts: int = field(default=MISSING, metadata=_spec(min=1))  # type: ignore[assignment]
    allow_partial: bool = False
    budget: Budget = field(default_factory=Budget)
    prices: dict[str, Price] = field(default_factory=dict)


@dataclass
class MemoryLLM:
    """The model proxy a UsesModelProxy memory system is served (:mod:`mnemetric.llm.memory_cost`)."""

    base_url: Optional[str] = None
    port: int = field(default=0, metadata=_spec(min=0, fix="an integer 0..65535 (0: any free port)"))


@dataclass
class ExecutorSection:
    """The ``executor`` section's common keys: the option (``_target_``, ``name``) and the run settings of
    :class:`mnemetric.execute.pool.PoolMapper` (immediate, dask), each checked when present; an option may add
    keys of its own (batch's ``poll_interval``, ...), which its constructor checks."""

    _target_: str = field(default=MISSING)  # type: ignore[assignment]
    _partial_: bool = True
    name: str = field(default=MISSING)  # type: ignore[assignment]
    workers: Optional[int] = field(default=None, metadata=_spec(min=1, fix="an integer >= 1, or null: one per core"))
    grace_seconds: float = field(default=30.0, metadata=_spec(min=0))
    shard: Optional[str] = field(default=None, metadata=_spec(pattern=r"^[0-9]+/[0-9]+$",
                                                              fix="K/N with 1 <= K <= N (quoted: \"1/4\"), or null"))
    address: Optional[str] = None


@dataclass(frozen=True)
class Section:
    """One top-level params section, as a family (or the base) declares it.

    ``shape``: the dataclass of a typed section (keys and ranges checked), or None for an open
    component section (its constructor checks its keys; only ``name`` and ``_target_`` here).
    ``components``: open sub-sections of a typed section (``v2.memory``), checked as components;
    ``fix``: the hint for a sub-section given as a name (``{group}`` is filled in)."""

    shape: type | None = None
    components: tuple[str, ...] = ()
    fix: str = "every conf option names itself"
    open: bool = False
    """A component section whose common keys ``shape`` types (checked when present) and whose options add keys
    of their own (e.g. ``executor``: ``workers`` typed; ``batch``'s ``poll_interval`` its own)."""


COMPONENT = Section()
BASE: dict[str, Section] = {"benchmark": COMPONENT, "executor": Section(ExecutorSection, open=True), "llm": Section(LLM),
                            "memory_llm": Section(MemoryLLM)}
"""The sections every run has, whatever its families: the headline family, the executor that runs model calls,
the one LLM client and the model proxy a memory library is served."""


def family_sections(families: typing.Iterable[Any] | None = None) -> dict[str, Section]:
    """section name -> :class:`Section` over :data:`BASE` and ``families``' ``params_sections`` (default:
    every option of the packaged ``benchmark`` conf group); two owners of one section are a ConfigError."""
    if families is None:
        from mnemetric.config import project_conf_dir

        return dict(_conf_sections(str(project_conf_dir())))
    out = dict(BASE)
    owner = dict.fromkeys(BASE, "mnemetric")
    for fam in families:
        for name, section in dict(fam.params_sections).items():
            if name in out:
                raise ConfigError(name, f"params section claimed by both {owner[name]} and {fam.name}")
            out[name], owner[name] = section, fam.name
    return out


@functools.lru_cache(maxsize=4)
def _conf_sections(conf_dir: str) -> tuple[tuple[str, Section], ...]:
    from mnemetric.family import conf_families

    return tuple(family_sections(conf_families(conf_dir)).items())


def _type_name(tp: Any) -> str:
    return {int: "an integer", float: "a number", str: "a string", bool: "true or false"}.get(tp, str(tp))


def _check_scalar(key: str, value: Any, tp: type, meta: dict) -> None:
    ok = isinstance(value, tp) and not (isinstance(value, bool) and tp is not bool)
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        ok = True
    if not ok:
        hint = " (quote it in YAML)" if tp is str and isinstance(value, (int, float)) else ""
        raise ConfigError(key, f"expected {_type_name(tp)}, got {type(value).__name__} {value!r}{hint}",
                          fix=meta.get("fix"))
    if "choices" in meta and value not in meta["choices"]:
        raise ConfigError(key, f"{value!r} is not one of {', '.join(map(str, meta['choices']))}")
    if "min" in meta and value < meta["min"]:
        raise ConfigError(key, f"must be >= {meta['min']}, got {value!r}")
    if "gt" in meta and value <= meta["gt"]:
        raise ConfigError(key, f"must be > {meta['gt']}, got {value!r}")
    if "pattern" in meta and not re.fullmatch(meta["pattern"], value):
        raise ConfigError(key, f"{value!r} is not valid", fix=meta.get("fix"))


def check_value(key: str, value: Any, tp: Any, meta: dict | None = None) -> None:
    """Check ``value`` against the annotation ``tp`` (dataclass, Optional, list, dict or scalar)."""
    meta = meta or {}
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Union:
        if value is None:
            return
        tp = next(a for a in args if a is not type(None))
        origin, args = typing.get_origin(tp), typing.get_args(tp)
    if dataclasses.is_dataclass(tp):
        check_dataclass(key, value, tp)
    elif origin is list:
        if not isinstance(value, list):
            raise ConfigError(key, f"expected a list, got {type(value).__name__} {value!r}")
        for i, item in enumerate(value):
            check_value(f"{key}[{i}]", item, args[0], meta)
    elif origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(key, f"expected a mapping, got {type(value).__name__} {value!r}")
        for k, item in value.items():
            check_value(f"{key}.{k}", item, args[1], meta)
    else:
        _check_scalar(key, value, tp, meta)


def check_dataclass(key: str, value: Any, cls: type) -> None:
    if not isinstance(value, dict):
        raise ConfigError(key, f"expected a mapping, got {type(value).__name__} {value!r}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(value) - set(fields))
    if unknown:
        raise ConfigError(f"{key}.{unknown[0]}", f"unknown key; known keys: {', '.join(fields)}",
                          fix="check the spelling (see conf/)")
    for name, f in fields.items():
        required = f.default is MISSING or (f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
        if name not in value:
            if required:
                raise ConfigError(f"{key}.{name}", "missing", fix="is params.yaml stale? run `dvc exp run` or `make params`")
            continue
        check_value(f"{key}.{name}", value[name], hints[name], dict(f.metadata))


def _check_component(name: str, value: Any, fix: str = "every conf option names itself") -> None:
    if not isinstance(value, dict):
        raise ConfigError(name, f"expected a mapping, got {type(value).__name__} {value!r}", fix=fix)
    if not isinstance(value.get("name"), str) or not value["name"]:
        raise ConfigError(f"{name}.name", "missing or not a string", fix="every conf option names itself")
    if "_target_" in value and not isinstance(value["_target_"], str):
        raise ConfigError(f"{name}._target_", f"expected a dotted path, got {value['_target_']!r}")


def check_section(name: str, value: Any, known: typing.Mapping[str, Section] | None = None) -> None:
    """Check one top-level section of params.yaml (``params.yaml <name>...`` in errors) as its owner
    declares it (``known``: :func:`family_sections`, by default); a section nobody declares is not checked."""
    section = (family_sections() if known is None else known).get(name)
    if section is None:
        return
    if section.shape is None:
        _check_component(name, value)
        return
    if section.open:
        _check_component(name, value)
        known = {f.name for f in dataclasses.fields(section.shape)}
        check_dataclass(name, {k: v for k, v in value.items() if k in known}, section.shape)
        return
    subs = section.components
    check_dataclass(name, {k: v for k, v in value.items() if k not in subs} if isinstance(value, dict) and subs
                    else value, section.shape)
    for group in subs:
        _check_component(f"{name}.{group}", value.get(group), fix=section.fix.format(group=group))


def check_params(params: dict[str, Any], sections: typing.Iterable[str] | None = None,
                 known: typing.Mapping[str, Section] | None = None) -> None:
    """Check the named sections of a params dict (all known ones by default)."""
    known = family_sections() if known is None else known
    for name in sections if sections is not None else list(known):
        if name in params:
            check_section(name, params[name], known)


def conf_order(conf_dir: str | Path | None = None) -> list[str]:
    """The top-level key order of a composition of ``conf_dir`` (default: the packaged conf): the conf
    groups of conf/config.yaml's defaults list, in that order, then the sections it holds itself."""
    import yaml

    from mnemetric.config import package_conf_dir

    path = Path(conf_dir or package_conf_dir()) / "config.yaml"
    raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    groups = [next(iter(d)).split("@")[0].removeprefix("override ").strip("/") for d in raw.get("defaults") or []
              if isinstance(d, dict)]
    return [*groups, *[k for k in raw if k != "defaults"]]


def run_schema(sections: typing.Mapping[str, Section] | None = None, order: typing.Sequence[str] = (),
               defaults: typing.Mapping[str, str] | None = None) -> type:
    """The shape of a composed run config: one field per section (a typed section's dataclass; an open
    section ``Any``), then ``paths``. Registered in Hydra's ConfigStore as ``mnemetric_schema``
    (conf/config.yaml lists it first): Hydra then refuses a mistyped value at composition, naming its
    key; :func:`check_params` adds the range checks. The fields follow ``order`` (:func:`conf_order`;
    sections it does not name come after, in their own order), which is params.yaml's key order.

    ``defaults`` (conf group -> option: the families' conf groups that conf/config.yaml does not list,
    :func:`family_defaults`) become the schema's own defaults list, after itself: composing then chooses
    each such group's default option (and ``-S group=option`` another) with no line in config.yaml."""
    sections = family_sections() if sections is None else sections
    rank = {name: i for i, name in enumerate(order)}
    fields: list[Any] = []
    for name, section in sorted(sections.items(), key=lambda kv: rank.get(kv[0], len(rank))):
        if section.shape is None or section.open:
            fields.append((name, Any, field(default=None)))
        else:
            fields.append((name, section.shape, field(default_factory=section.shape)))
    fields.append(("paths", dict[str, str], field(default_factory=dict)))
    fields.sort(key=lambda f: rank.get(f[0], len(rank)))
    if defaults:
        listed = ["_self_", *({group: option} for group, option in defaults.items())]
        fields.insert(0, ("defaults", list[Any], field(default_factory=lambda: list(listed))))
    return dataclasses.make_dataclass("RunSchema", fields)


def family_defaults(families: typing.Iterable[Any], order: typing.Sequence[str]) -> dict[str, str]:
    """The families' conf groups (group -> default option) that ``order`` (:func:`conf_order`: what
    conf/config.yaml's defaults list names) does not, in family order."""
    listed = set(order)
    return {g: opt for fam in families for g, opt in dict(fam.conf_groups).items() if g not in listed}


SCHEMA_NAME = "mnemetric_schema"


_registered = False


def register_schema(conf_dir: str | Path | None = None, *, if_absent: bool = False) -> None:
    """Store the :func:`run_schema` of ``conf_dir``'s families (default: the project's conf,
    :func:`mnemetric.config.project_conf_dir`) in Hydra's ConfigStore, in :func:`conf_order`, with the
    families' unlisted conf groups as its defaults (the latest call wins; ``if_absent``: only when none is
    stored yet, so the Hydra plugin, imported during a composition, keeps the schema of the conf being composed)."""
    global _registered
    from hydra.core.config_store import ConfigStore

    from mnemetric.config import project_conf_dir
    from mnemetric.family import conf_families

    if if_absent and _registered:
        return
    _registered = True
    conf = Path(conf_dir) if conf_dir is not None else project_conf_dir()
    families = conf_families(conf)
    order = conf_order(conf)
    node = run_schema(family_sections(families), order, family_defaults(families, order))
    ConfigStore.instance().store(name=SCHEMA_NAME, node=node)
