"""LongMemEval's params sections (typed, checked with the key named; :mod:`mnemetric.schema` checks them).

The typed sections (``variant``, ``scoring``, ``suite``, ``retrieval``, ``errata``, ``attribution``,
``judge_audit``) and the open
component sections (``adapter``, ``memory``, ``reader``, ``judge``: their constructors check their
keys), in params.yaml's order: the conf groups V1 chooses options from first, then its own
``_self_`` sections. ``Family.params_sections`` of :mod:`mnemetric.longmemeval.family`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from mnemetric.schema import COMPONENT, MISSING, SHA256, Section, _spec


@dataclass
class Retrieval:
    granularity: str = field(default=MISSING, metadata=_spec(choices=("session", "turn")))
    context_k: int = field(default=MISSING, metadata=_spec(min=0))  # type: ignore[assignment]
    context_tokens: int = field(default=MISSING, metadata=_spec(min=0))  # type: ignore[assignment]


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
class Attribution:
    disputed: Optional[str] = None


@dataclass
class JudgeAudit:
    judges: list[str] = field(default_factory=lambda: ["lexical"])
    repeats: int = field(default=0, metadata=_spec(min=0))


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


GROUP_SECTIONS: dict[str, Section] = {"variant": Section(Variant), "adapter": COMPONENT, "scoring": Section(Scoring),
                                      "suite": Section(Suite), "memory": COMPONENT, "reader": COMPONENT,
                                      "judge": COMPONENT}
"""The sections chosen by a conf group (conf/<group>/<option>.yaml), in conf/config.yaml's order."""
SELF_SECTIONS: dict[str, Section] = {"retrieval": Section(Retrieval), "errata": Section(Errata),
                                      "attribution": Section(Attribution),
                                      "judge_audit": Section(JudgeAudit)}
"""The sections conf/config.yaml itself holds for V1."""


_TEXT = ((str,), "a string")
_COUNT = ((int,), "an integer")
SHOWN: dict[str, tuple[str, str, Any]] = {
    "benchmark_name": ("benchmark", "name", _TEXT), "variant_name": ("variant", "name", _TEXT),
    "variant_sha256": ("variant", "sha256", _TEXT), "suite_name": ("suite", "name", _TEXT),
    "adapter_schema": ("adapter", "schema", _TEXT), "scoring_name": ("scoring", "name", _TEXT),
    "memory_name": ("memory", "name", _TEXT), "judge_name": ("judge", "name", _TEXT),
    "judge_model": ("judge", "model", _TEXT), "context_k": ("retrieval", "context_k", _COUNT),
    "context_tokens": ("retrieval", "context_tokens", _COUNT),
}
"""What the doors read of params.yaml: attribute -> (section, key, kind)."""


@dataclass(frozen=True)
class ParamsShown:
    """What V1's doors (the card, `mnemetric runs`, `mnemetric compare`) read of a revision's params.yaml,
    typed: :data:`SHOWN`, the ``reader`` section without Hydra's ``_target_`` / ``_partial_`` keys, and the
    ``paths`` the doors find files by. A key the file lacks (an older layout) is None; one of the wrong type
    an InputError naming params.yaml and the key."""

    reader: Optional[dict[str, Any]] = None
    paths: dict[str, str] = field(default_factory=dict)
    benchmark_name: Optional[str] = None
    variant_name: Optional[str] = None
    variant_sha256: Optional[str] = None
    suite_name: Optional[str] = None
    adapter_schema: Optional[str] = None
    scoring_name: Optional[str] = None
    memory_name: Optional[str] = None
    judge_name: Optional[str] = None
    judge_model: Optional[str] = None
    context_k: Optional[int] = None
    context_tokens: Optional[int] = None

    @classmethod
    def from_record(cls, raw: Any, *, file: str = "params.yaml") -> ParamsShown:
        from mnemetric.records import Fields

        f = Fields.shown(raw, file=file, fix="compose it again (mnemetric compose)")
        values = {attr: f.within(section).maybe(key, kind) for attr, (section, key, kind) in SHOWN.items()}
        reader = f.within("reader")
        paths = f.within("paths")
        return cls(reader={k: v for k, v in reader.raw.items() if not str(k).startswith("_")}
                   if f.raw.get("reader") is not None else None,
                   paths={k: v for k in paths.raw if (v := paths.maybe(k, _TEXT)) is not None}, **values)
