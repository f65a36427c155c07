"""LongMemEval-V2's params section ``v2`` (typed, its four components open; :mod:`mnemetric.schema` checks it).

``Family.params_sections`` of :mod:`mnemetric.longmemeval_v2.family`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from mnemetric.schema import MISSING, SHA256, Section, _spec


@dataclass
class V2Subset:
    """``v2.subset``: which questions a run asks (:mod:`mnemetric.longmemeval_v2.selection`); all null: every
    question. Any of them set makes the run a development subset, never official."""

    question_ids: Optional[list[str]] = None
    per_type: Optional[int] = field(default=None, metadata=_spec(min=1, fix="an integer >= 1, or null"))
    limit: Optional[int] = field(default=None, metadata=_spec(min=1, fix="an integer >= 1, or null"))


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
    subset: V2Subset = field(default_factory=V2Subset)
    memory: Any = None
    reader: Any = None
    checker: Any = None
    token_counter: Any = None


V2_COMPONENTS = ("memory", "reader", "checker", "token_counter")
SECTIONS: dict[str, Section] = {
    "v2": Section(V2, components=V2_COMPONENTS, fix="choose an option with -S v2/{group}=<option> (conf/v2/{group}/)")}
