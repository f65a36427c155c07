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


@dataclass(frozen=True)
class V2ParamsShown:
    """What V2's row of `mnemetric runs` reads of a revision's params.yaml, typed: ``benchmark.name``, the
    ``v2`` option's name, data root, haystack and domains, its components' names, and the ``paths`` of its
    metrics files. A key the file lacks is None; one of the wrong type an InputError naming params.yaml and
    the key."""

    benchmark: Optional[str] = None
    name: Optional[str] = None
    data_root: Optional[str] = None
    haystack: Optional[str] = None
    domains: Optional[tuple[str, ...]] = None
    components: dict[str, Optional[str]] = field(default_factory=dict)
    """:data:`V2_COMPONENTS` -> the chosen option's ``name`` (None as well where an older params.yaml held a
    plain string there, the layout before components were conf groups: shown as not recorded, as before)."""
    paths: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_record(cls, raw: Any, *, file: str = "params.yaml") -> V2ParamsShown:
        from mnemetric.records import Fields

        text = ((str,), "a string")
        f = Fields.shown(raw, file=file, fix="compose it again (mnemetric compose)")
        v2, paths = f.within("v2"), f.within("paths")
        return cls(f.within("benchmark").maybe("name", text), v2.maybe("name", text), v2.maybe("data_root", text),
                   v2.maybe("haystack", text), v2.maybe_strings("domains"),
                   {c: None if isinstance(v2.raw.get(c), str) else v2.within(c).maybe("name", text)
                    for c in V2_COMPONENTS},
                   {k: v for k in paths.raw if (v := paths.maybe(k, text)) is not None})
