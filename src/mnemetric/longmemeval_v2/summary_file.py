"""The V2 run summary (``v2.json`` in a run folder; :func:`mnemetric.longmemeval_v2.run.summary`), typed:
one record, reader beside writer.

Keys, in this order: schema, settings (:data:`SETTINGS`), domains (domain → :class:`Block`), combined (a
:class:`Block`, null with one domain), lafs (:class:`Lafs`), official_equivalence
(:class:`mnemetric.official.OfficialEquivalence`). A block: questions, scored, failed, accuracy (the three
:data:`ACCURACY_KEYS` of ``{value, correct, n, ci95_low, ci95_high, method}``), accuracy_failed_as_wrong (the
same, only when a question failed), category_accuracy (:data:`CATEGORIES`, a fraction or null),
memory_query_avg_seconds, memory_context (:data:`MEMORY_CONTEXT`). :meth:`V2Summary.to_record` gives back
exactly the values read, so read → write is byte for byte.

The reader is strict (a Mnemetric rule): every field the writer writes, of its type, and no other; errors
name the file, the record (the block: ``domains.web``, ``combined``, ``lafs`` …) and the field.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mnemetric.errors import InputError
from mnemetric.io import write_json_atomic
from mnemetric.official import KEY as OFFICIAL_KEY
from mnemetric.official import OfficialEquivalence
from mnemetric.records import Fields, read_json_file

FIX = "rewrite it (mnemetric v2 run / stage v2_metrics)"
KEYS = ("schema", "settings", "domains", "combined", "lafs", OFFICIAL_KEY)
SETTINGS = ("haystack", "tier", "domains", "memory", "memory_query_context", "reader", "checker", "token_counter",
            "memory_context_max_tokens")
ACCURACY_KEYS = ("overall_full_set", "non_abstention_only", "abstention_only")
ACCURACY_FIELDS = ("value", "correct", "n", "ci95_low", "ci95_high", "method")
CATEGORIES = ("static", "dynamic", "procedure", "gotchas")
MEMORY_CONTEXT = ("avg_original_tokens", "avg_final_tokens", "num_truncated_sequences")
BLOCK_KEYS = ("questions", "scored", "failed", "accuracy", "accuracy_failed_as_wrong", "category_accuracy",
              "memory_query_avg_seconds", "memory_context")
LAFS_COMPUTED = ("computed", "tier", "accuracy_percentage_points", "latency_seconds", "reference_lafs",
                 "submission_lafs", "lafs_gain")

Number = int | float


def checked_view(raw: Any, *, file: str, record: str, keys: tuple[str, ...], optional: tuple[str, ...] = (),
                 fix: str = FIX) -> Fields:
    """The view of one object (``record``), holding exactly ``keys`` (those in ``optional`` may be absent)."""
    view = Fields.of(raw, file=file, record=record, field="<record>", fix=fix).only(keys)
    for key in keys:
        if key not in view.raw and key not in optional:
            raise view.error(key, "missing")
    return view


@dataclass(frozen=True)
class Accuracy:
    """{value, correct, n, ci95_low, ci95_high, method} (value and bounds null over no question)."""

    value: Number | None
    correct: int
    n: int
    ci95_low: Number | None
    ci95_high: Number | None
    method: str

    def to_record(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ACCURACY_FIELDS}

    @classmethod
    def from_record(cls, raw: Any, *, file: str, record: str, fix: str = FIX) -> Accuracy:
        f = checked_view(raw, file=file, record=record, keys=ACCURACY_FIELDS, fix=fix)
        return cls(f.optional_number("value"), f.count("correct"), f.count("n"), f.optional_number("ci95_low"),
                   f.optional_number("ci95_high"), f.string("method"))


def accuracies_from_record(raw: Any, *, file: str, record: str, fix: str = FIX) -> dict[str, Accuracy]:
    f = checked_view(raw, file=file, record=record, keys=ACCURACY_KEYS, fix=fix)
    return {k: Accuracy.from_record(f.raw[k], file=file, record=f"{record}.{k}", fix=fix) for k in ACCURACY_KEYS}


def settings_from_record(raw: Any, *, file: str, fix: str = FIX) -> dict[str, Any]:
    """The ``settings`` object read (:data:`SETTINGS`, exactly; domains a tuple of strings, tier a string or
    null, memory_context_max_tokens a count, the rest strings)."""
    s = checked_view(raw, file=file, record="settings", keys=SETTINGS, fix=fix)
    texts = ("haystack", "memory", "memory_query_context", "reader", "checker", "token_counter")
    return {k: (s.string(k) if k in texts else s.optional_string(k) if k == "tier" else
                s.strings(k) if k == "domains" else s.count(k)) for k in SETTINGS}


def settings_to_record(settings: Mapping[str, Any]) -> dict[str, Any]:
    """``settings`` as written (the domains a list)."""
    return {k: list(v) if k == "domains" else v for k, v in settings.items()}


@dataclass(frozen=True)
class Block:
    """One domain's (or the combined run's) numbers (module docstring)."""

    questions: int
    scored: int
    failed: int
    accuracy: Mapping[str, Accuracy]
    category_accuracy: Mapping[str, Number | None]
    memory_query_avg_seconds: Number | None
    memory_context: Mapping[str, Number | None]
    accuracy_failed_as_wrong: Mapping[str, Accuracy] | None = None
    """The accuracies with failed questions counted wrong (only when a question failed)."""

    def to_record(self) -> dict[str, Any]:
        out: dict[str, Any] = {"questions": self.questions, "scored": self.scored, "failed": self.failed,
                               "accuracy": {k: a.to_record() for k, a in self.accuracy.items()}}
        if self.accuracy_failed_as_wrong is not None:
            out["accuracy_failed_as_wrong"] = {k: a.to_record() for k, a in self.accuracy_failed_as_wrong.items()}
        return out | {"category_accuracy": dict(self.category_accuracy),
                      "memory_query_avg_seconds": self.memory_query_avg_seconds,
                      "memory_context": dict(self.memory_context)}

    @classmethod
    def from_record(cls, raw: Any, *, file: str, record: str) -> Block:
        f = checked_view(raw, file=file, record=record, keys=BLOCK_KEYS, optional=("accuracy_failed_as_wrong",))
        cats = checked_view(f.raw["category_accuracy"], file=file, record=f"{record}.category_accuracy", keys=CATEGORIES)
        ctx = checked_view(f.raw["memory_context"], file=file, record=f"{record}.memory_context", keys=MEMORY_CONTEXT)
        wrong = f.raw.get("accuracy_failed_as_wrong")
        return cls(f.count("questions"), f.count("scored"), f.count("failed"),
                   accuracies_from_record(f.raw["accuracy"], file=file, record=f"{record}.accuracy"),
                   {k: cats.optional_number(k) for k in CATEGORIES}, f.optional_number("memory_query_avg_seconds"),
                   {k: ctx.optional_number(k) for k in MEMORY_CONTEXT},
                   None if "accuracy_failed_as_wrong" not in f.raw else
                   accuracies_from_record(wrong, file=file, record=f"{record}.accuracy_failed_as_wrong"))


@dataclass(frozen=True)
class Lafs:
    """The run's LAFS point: computed (tier, accuracy_percentage_points, latency_seconds, reference_lafs,
    submission_lafs, lafs_gain), or not ({computed, reason, tier}: one key order, whatever the reason)."""

    computed: bool
    tier: str | None
    reason: str | None = None
    values: Mapping[str, Number] | None = None
    """accuracy_percentage_points … lafs_gain, when computed."""

    def to_record(self) -> dict[str, Any]:
        if self.computed:
            return {"computed": True, "tier": self.tier, **dict(self.values or {})}
        return {"computed": False, "reason": self.reason, "tier": self.tier}

    @classmethod
    def from_record(cls, raw: Any, *, file: str) -> Lafs:
        f = Fields.of(raw, file=file, record="lafs", field="lafs", fix=FIX)
        if f.boolean("computed"):
            f = checked_view(raw, file=file, record="lafs", keys=LAFS_COMPUTED)
            return cls(True, f.optional_string("tier"), values={k: f.number(k) for k in LAFS_COMPUTED[2:]})
        f = checked_view(raw, file=file, record="lafs", keys=("computed", "reason", "tier"))
        return cls(False, f.optional_string("tier"), f.string("reason"))


@dataclass(frozen=True)
class V2Summary:
    """One run's summary (module docstring)."""

    schema: str
    settings: Mapping[str, Any]
    """:data:`SETTINGS`, in that order (domains a tuple of strings, tier null off the official tiers)."""
    domains: Mapping[str, Block]
    combined: Block | None
    lafs: Lafs
    official_equivalence: OfficialEquivalence

    @property
    def headline(self) -> Block:
        """The combined block, else the only domain's."""
        return self.combined or next(iter(self.domains.values()))

    def to_record(self) -> dict[str, Any]:
        return {"schema": self.schema, "settings": settings_to_record(self.settings),
                "domains": {d: b.to_record() for d, b in self.domains.items()},
                "combined": None if self.combined is None else self.combined.to_record(),
                "lafs": self.lafs.to_record(), OFFICIAL_KEY: self.official_equivalence.to_record()}

    @classmethod
    def from_record(cls, raw: Any, *, file: str) -> V2Summary:
        file = str(file)
        f = checked_view(raw, file=file, record="<file>", keys=KEYS)
        settings = settings_from_record(f.raw["settings"], file=file)
        domains = Fields.of(f.raw["domains"], file=file, record="<file>", field="domains", fix=FIX)
        if not domains.raw:
            raise f.error("domains", "empty (a run has at least one domain)")
        combined = f.raw["combined"]
        return cls(f.string("schema"), settings,
                   {d: Block.from_record(b, file=file, record=f"domains.{d}") for d, b in domains.raw.items()},
                   None if combined is None else Block.from_record(combined, file=file, record="combined"),
                   Lafs.from_record(f.raw["lafs"], file=file),
                   OfficialEquivalence.from_record(f.raw[OFFICIAL_KEY], file=file))


def write_summary(path: str | os.PathLike[str], summary: V2Summary) -> None:
    """Write ``summary`` atomically (indent 2, trailing newline)."""
    if not isinstance(summary, V2Summary):
        raise InputError(str(path), "<file>", "<json>", f"not a V2Summary record: {type(summary).__name__}")
    write_json_atomic(path, summary.to_record())


def read_summary(path: str | os.PathLike[str]) -> V2Summary:
    """A run folder's v2.json read back (the reader beside :func:`write_summary`)."""
    raw = read_json_file(path, missing_fix="write the run first (mnemetric v2 run)")
    return V2Summary.from_record(raw, file=str(path))
