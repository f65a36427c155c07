"""LongMemEval's params sections (typed, checked with the key named; :mod:`mnemetric.schema` checks them).

The typed sections (``variant``, ``scoring``, ``suite``, ``retrieval``, ``errata``, ``attribution``,
``judge_audit``) and the open
component sections (``adapter``, ``memory``, ``reader``, ``judge``: their constructors check their
keys), in params.yaml's order: the conf groups V1 chooses options from first, then its own
``_self_`` sections. ``Family.params_sections`` of :mod:`mnemetric.longmemeval.family`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

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
