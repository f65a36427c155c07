"""Typed run settings: what each fixed section of params.yaml may hold, checked with the key named.

Two checks, one description (the dataclasses below):

* at composition — the Hydra plugin (``hydra_plugins/mnemetric``) registers :class:`RunSchema` in
  Hydra's ConfigStore and conf/config.yaml lists it first in its defaults, so ``dvc exp run -S
  retrieval.context_k=abc`` stops before any stage with Hydra's message naming the key;
* when a stage reads params — :func:`check_section` checks types strictly (no "10" for 10, no
  integer 0 for a sha256) and ranges (``context_k >= 0``, ``max_concurrency >= 1``, a 64-hex
  sha256, known choices) and raises ``ConfigError(key, problem, fix)``; so does ``mnemetric
  compose`` before it writes params.yaml.

Component sections (adapter, memory, reader, judge, executor, benchmark, and v2's memory, reader, checker,
token_counter) are open: their keys belong to the component, whose constructor checks them; only
``name`` (and ``_target_`` when present) are checked here.
"""

from __future__ import annotations

import dataclasses
import re
import typing
from dataclasses import dataclass, field
from typing import Any, Optional

from mnemetric.errors import ConfigError

MISSING = "???"


def _spec(*, min: float | None = None, gt: float | None = None, choices: tuple | None = None,  # noqa: A002
          pattern: str | None = None, fix: str | None = None) -> dict:
    return {k: v for k, v in (("min", min), ("gt", gt), ("choices", choices), ("pattern", pattern), ("fix", fix))
            if v is not None}


SHA256 = _spec(pattern=r"^[0-9a-f]{64}$", fix="a 64-character lowercase hex string, quoted in YAML")


@dataclass
class Retrieval:
    granularity: str = field(default=MISSING, metadata=_spec(choices=("session", "turn")))
    context_k: int = field(default=MISSING, metadata=_spec(min=0))  # type: ignore[assignment]
    context_tokens: int = field(default=MISSING, metadata=_spec(min=0))  # type: ignore[assignment]


@dataclass
class Budget:
    max_requests: Optional[int] = field(default=None, metadata=_spec(min=0))
    max_usd: Optional[float] = field(default=None, metadata=_spec(min=0))


@dataclass
class Price:
    input: float = field(default=MISSING, metadata=_spec(min=0))  # type: ignore[assignment]
    output: float = field(default=MISSING, metadata=_spec(min=0))  # type: ignore[assignment]


@dataclass
class LLM:
    max_concurrency: int = field(default=MISSING, metadata=_spec(min=1))  # type: ignore[assignment]
    timeout: float = field(default=MISSING, metadata=_spec(gt=0))  # type: ignore[assignment]
    max_attempts: int = field(default=MISSING, metadata=_spec(min=1))  # type: ignore[assignment]
    non_answer_attempts: int = field(default=MISSING, metadata=_spec(min=1))  # type: ignore[assignment]
    budget: Budget = field(default_factory=Budget)
    prices: dict[str, Price] = field(default_factory=dict)


@dataclass
class Bootstrap:
    resamples: int = field(default=MISSING, metadata=_spec(min=0))  # type: ignore[assignment]
    seed: int = field(default=MISSING, metadata=_spec(min=0))  # type: ignore[assignment]


@dataclass
class Scoring:
    name: str = MISSING
    ks: list[int] = field(default_factory=list, metadata=_spec(min=1))
    bootstrap: Bootstrap = field(default_factory=Bootstrap)


@dataclass
class Suite:
    name: str = MISSING
    kind: str = field(default=MISSING, metadata=_spec(choices=("full", "stratified")))
    per_type: int = field(default=0, metadata=_spec(min=0))
    abstention: int = field(default=0, metadata=_spec(min=0))
    seed: int = field(default=0, metadata=_spec(min=0))


@dataclass
class Errata:
    enabled: bool = False
    file: str = MISSING


@dataclass
class Variant:
    name: str = MISSING
    source: str = field(default=MISSING, metadata=_spec(choices=("bundled", "huggingface")))
    path: Optional[str] = None
    file: str = MISSING
    repo: Optional[str] = None
    revision: Optional[str] = field(default=None, metadata=_spec(pattern=r"^[0-9a-f]{40}$",
                                                                 fix="the full 40-character commit hash"))
    size: Optional[int] = field(default=None, metadata=_spec(min=0))
    sha256: str = field(default=MISSING, metadata=SHA256)
    license: str = MISSING
    pin_source: str = MISSING


@dataclass
class V2:
    """The ``v2`` option (conf/v2/*.yaml): a LongMemEval-V2 run. Its four component sub-sections are open
    (checked as components: ``name``, ``_target_``); the rest is typed here."""

    name: str = MISSING
    source: str = field(default=MISSING, metadata=_spec(choices=("bundled", "huggingface")))
    data_root: str = MISSING
    haystack: str = MISSING
    domains: list[str] = field(default_factory=list, metadata=_spec(choices=("web", "enterprise")))
    max_tokens: int = field(default=MISSING, metadata=_spec(min=1))  # type: ignore[assignment]
    images: bool = True
    official: bool = False
    repo: Optional[str] = None
    revision: Optional[str] = field(default=None, metadata=_spec(pattern=r"^[0-9a-f]{40}$",
                                                                 fix="the full 40-character commit hash"))
    checksums_sha256: Optional[str] = field(default=None, metadata=SHA256)
    memory: Any = None
    reader: Any = None
    checker: Any = None
    token_counter: Any = None


V2_COMPONENTS = ("memory", "reader", "checker", "token_counter")
SECTIONS: dict[str, type] = {"retrieval": Retrieval, "llm": LLM, "scoring": Scoring, "suite": Suite,
                             "variant": Variant, "errata": Errata, "v2": V2}
COMPONENTS = ("adapter", "memory", "reader", "judge", "executor", "benchmark")
"""Open sections: the component's own constructor checks its keys."""


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


def check_section(name: str, value: Any) -> None:
    """Check one top-level section of params.yaml (``params.yaml <name>...`` in errors)."""
    if name == "v2":
        check_dataclass(name, {k: v for k, v in value.items() if k not in V2_COMPONENTS}
                        if isinstance(value, dict) else value, V2)
        for group in V2_COMPONENTS:
            _check_component(f"v2.{group}", value.get(group),
                             fix=f"choose an option with -S v2/{group}=<option> (conf/v2/{group}/)")
    elif name in SECTIONS:
        check_dataclass(name, value, SECTIONS[name])
    elif name in COMPONENTS:
        _check_component(name, value)


def check_params(params: dict[str, Any], sections: typing.Iterable[str] | None = None) -> None:
    """Check the named sections of a params dict (all known ones by default)."""
    for name in sections if sections is not None else [*SECTIONS, *COMPONENTS]:
        if name in params:
            check_section(name, params[name])


@dataclass
class RunSchema:
    """The shape of a composed run config, registered in Hydra's ConfigStore as ``mnemetric_schema``
    (conf/config.yaml lists it first): Hydra then refuses a mistyped value at composition, naming its
    key. Component sections and paths are open here; :func:`check_params` adds the range checks."""

    variant: Variant = field(default_factory=Variant)
    adapter: Any = None
    scoring: Scoring = field(default_factory=Scoring)
    suite: Suite = field(default_factory=Suite)
    memory: Any = None
    reader: Any = None
    judge: Any = None
    executor: Any = None
    benchmark: Any = None
    v2: V2 = field(default_factory=V2)
    retrieval: Retrieval = field(default_factory=Retrieval)
    errata: Errata = field(default_factory=Errata)
    llm: LLM = field(default_factory=LLM)
    paths: dict[str, str] = field(default_factory=dict)


SCHEMA_NAME = "mnemetric_schema"


def register_schema() -> None:
    """Store :class:`RunSchema` in Hydra's ConfigStore (idempotent)."""
    from hydra.core.config_store import ConfigStore

    ConfigStore.instance().store(name=SCHEMA_NAME, node=RunSchema)
