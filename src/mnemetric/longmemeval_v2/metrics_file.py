"""metrics/v2.json, typed (reader beside writer): the V2 run summary without what a clock measured.

Query latency (and the LAFS point it places) is a measurement of this machine, not a pure function of the
inputs; this file must be (a fresh clone reproduces it byte for byte). So latency and LAFS go to
metrics/v2-latency.json (:mod:`.latency`; committed like a benchmark result) and this file says so; every
accuracy, count, token figure and the official verdict stay. Keys, in order: benchmark, headline, v2 (the
option's name), then the run summary's part (:class:`TrackedSummary`: schema, settings, domains, combined —
:class:`TrackedBlock`, the summary's blocks without memory_query_avg_seconds —, official_equivalence
(:class:`mnemetric.official.OfficialEquivalence`), latency, lafs), then by_category (upstream's per-category
breakdowns of the combined — or only — aggregate).

The reader (:class:`V2Metrics`) is strict like the run summary's: every field the writer writes, of its type,
and no other; errors name the file, the record (``<file>``, ``settings``, ``domains.web``, ``combined``,
``lafs`` …) and the field. read → write is byte for byte.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mnemetric.io import write_json_atomic
from mnemetric.longmemeval_v2.summary_file import (BLOCK_KEYS, CATEGORIES, MEMORY_CONTEXT, Accuracy, Block, Number,
                                                   V2Summary, accuracies_from_record, checked_view,
                                                   settings_from_record, settings_to_record)
from mnemetric.official import KEY as OFFICIAL_KEY
from mnemetric.official import OfficialEquivalence
from mnemetric.records import OBJECT, Fields

MEASURED = "measured on this machine: see metrics/v2-latency.json (not part of this reproducible file)"
FIX = "regenerate it (dvc repro v2_metrics)"
CATEGORY_SECTIONS = ("non_abstention_by_category", "abstention_by_category", "combined_abstention_by_category",
                     "abstention_overall")
TRACKED_BLOCK_KEYS = tuple(k for k in BLOCK_KEYS if not k.startswith("memory_query"))
"""A block's keys here: the run summary's (:data:`~mnemetric.longmemeval_v2.summary_file.BLOCK_KEYS`) without
the memory_query* timings."""
TRACKED_KEYS = ("schema", "settings", "domains", "combined", OFFICIAL_KEY, "latency", "lafs")
KEYS = ("benchmark", "headline", "v2", *TRACKED_KEYS, "by_category")


def by_category(aggregated: Mapping[str, Any]) -> dict[str, Any]:
    """upstream's per-category breakdowns (fractions, counts) of an aggregated_metrics dict."""
    return {k: aggregated[k] for k in CATEGORY_SECTIONS if k in aggregated}


def _measured(f: Fields, name: str) -> str:
    """Field ``name``, which the writer words as :data:`MEASURED` (anything else would not read back as written)."""
    if f.string(name) != MEASURED:
        raise f.error(name, f"expected {MEASURED!r}, got {f.raw[name]!r:.60}")
    return MEASURED


@dataclass(frozen=True)
class TrackedBlock:
    """One domain's (or the combined run's) numbers: a :class:`~mnemetric.longmemeval_v2.summary_file.Block`
    without ``memory_query_avg_seconds`` (:data:`TRACKED_BLOCK_KEYS`, in that order)."""

    questions: int
    scored: int
    failed: int
    accuracy: Mapping[str, Accuracy]
    category_accuracy: Mapping[str, Number | None]
    memory_context: Mapping[str, Number | None]
    accuracy_failed_as_wrong: Mapping[str, Accuracy] | None = None
    """The accuracies with failed questions counted wrong (only when a question failed)."""

    @classmethod
    def of(cls, block: Block) -> TrackedBlock:
        return cls(block.questions, block.scored, block.failed, block.accuracy, block.category_accuracy,
                   block.memory_context, block.accuracy_failed_as_wrong)

    def to_record(self) -> dict[str, Any]:
        out: dict[str, Any] = {"questions": self.questions, "scored": self.scored, "failed": self.failed,
                               "accuracy": {k: a.to_record() for k, a in self.accuracy.items()}}
        if self.accuracy_failed_as_wrong is not None:
            out["accuracy_failed_as_wrong"] = {k: a.to_record() for k, a in self.accuracy_failed_as_wrong.items()}
        return out | {"category_accuracy": dict(self.category_accuracy), "memory_context": dict(self.memory_context)}

    @classmethod
    def from_record(cls, raw: Any, *, file: str, record: str) -> TrackedBlock:
        f = checked_view(raw, file=file, record=record, keys=TRACKED_BLOCK_KEYS, optional=("accuracy_failed_as_wrong",),
                  fix=FIX)
        cats = checked_view(f.raw["category_accuracy"], file=file, record=f"{record}.category_accuracy", keys=CATEGORIES,
                     fix=FIX)
        ctx = checked_view(f.raw["memory_context"], file=file, record=f"{record}.memory_context", keys=MEMORY_CONTEXT,
                    fix=FIX)
        return cls(f.count("questions"), f.count("scored"), f.count("failed"),
                   accuracies_from_record(f.raw["accuracy"], file=file, record=f"{record}.accuracy", fix=FIX),
                   {k: cats.optional_number(k) for k in CATEGORIES},
                   {k: ctx.optional_number(k) for k in MEMORY_CONTEXT},
                   None if "accuracy_failed_as_wrong" not in f.raw else
                   accuracies_from_record(f.raw["accuracy_failed_as_wrong"], file=file,
                               record=f"{record}.accuracy_failed_as_wrong", fix=FIX))


@dataclass(frozen=True)
class TrackedSummary:
    """The run summary (:class:`mnemetric.longmemeval_v2.summary_file.V2Summary`) without latency and LAFS
    (module docstring): keys :data:`TRACKED_KEYS`, in that order; ``latency`` and ``lafs.note`` are
    :data:`MEASURED`, ``lafs`` keeps only the tier."""

    schema: str
    settings: Mapping[str, Any]
    """:data:`~mnemetric.longmemeval_v2.summary_file.SETTINGS` (domains a tuple of strings)."""
    domains: Mapping[str, TrackedBlock]
    combined: TrackedBlock | None
    official_equivalence: OfficialEquivalence
    lafs_tier: str | None

    @classmethod
    def of(cls, summary: V2Summary) -> TrackedSummary:
        settings = {k: tuple(v) if k == "domains" else v for k, v in summary.settings.items()}
        return cls(summary.schema, settings, {d: TrackedBlock.of(b) for d, b in summary.domains.items()},
                   None if summary.combined is None else TrackedBlock.of(summary.combined),
                   summary.official_equivalence, summary.lafs.tier)

    def to_record(self) -> dict[str, Any]:
        return {"schema": self.schema, "settings": settings_to_record(self.settings),
                "domains": {d: b.to_record() for d, b in self.domains.items()},
                "combined": None if self.combined is None else self.combined.to_record(),
                OFFICIAL_KEY: self.official_equivalence.to_record(),
                "latency": MEASURED, "lafs": {"tier": self.lafs_tier, "note": MEASURED}}

    @classmethod
    def from_record(cls, raw: Any, *, file: str) -> TrackedSummary:
        """From an object holding exactly :data:`TRACKED_KEYS`; errors name the file, the record (``<file>``,
        ``settings``, ``domains.web``, ``combined``, ``lafs`` …) and the field."""
        file = str(file)
        f = checked_view(raw, file=file, record="<file>", keys=TRACKED_KEYS, fix=FIX)
        settings = settings_from_record(f.raw["settings"], file=file, fix=FIX)
        domains = f.get("domains", OBJECT)
        if not domains:
            raise f.error("domains", "empty (a run has at least one domain)")
        combined = f.raw["combined"]
        official = OfficialEquivalence.from_record(f.raw[OFFICIAL_KEY], file=file)
        _measured(f, "latency")
        lafs = checked_view(f.raw["lafs"], file=file, record="lafs", keys=("tier", "note"), fix=FIX)
        _measured(lafs, "note")
        return cls(f.string("schema"), settings,
                   {d: TrackedBlock.from_record(b, file=file, record=f"domains.{d}") for d, b in domains.items()},
                   None if combined is None else TrackedBlock.from_record(combined, file=file, record="combined"),
                   official, lafs.optional_string("tier"))


def tracked_summary(summary: V2Summary) -> TrackedSummary:
    """The run summary without latency and LAFS (:meth:`TrackedSummary.of`)."""
    return TrackedSummary.of(summary)


@dataclass(frozen=True)
class V2Metrics:
    """metrics/v2.json (module docstring): keys :data:`KEYS`, in that order."""

    benchmark: str
    headline: bool
    """Whether the params' ``benchmark`` is this family (the run's headline numbers)."""
    option: str
    """The ``v2`` option's name."""
    summary: TrackedSummary
    """schema, settings, domains, combined, official_equivalence, latency, lafs (tracked: no latency)."""
    by_category: Mapping[str, Any]

    @property
    def official_equivalence(self) -> OfficialEquivalence:
        return self.summary.official_equivalence

    @property
    def lafs_tier(self) -> str | None:
        return self.summary.lafs_tier

    @classmethod
    def of(cls, benchmark: str, headline: bool, option: str, summary: V2Summary,
           aggregated: Mapping[str, Any]) -> V2Metrics:
        """From a run's summary and its combined (or only) aggregate."""
        return cls(benchmark, headline, option, TrackedSummary.of(summary), by_category(aggregated))

    def to_record(self) -> dict[str, Any]:
        return {"benchmark": self.benchmark, "headline": self.headline, "v2": self.option,
                **self.summary.to_record(), "by_category": dict(self.by_category)}

    @classmethod
    def from_record(cls, raw: Any, *, file: str) -> V2Metrics:
        file = str(file)
        f = Fields.of(raw, file=file, record="<file>", field="<metrics>", fix=FIX).only(KEYS)
        for key in KEYS:
            if key not in f.raw:
                raise f.error(key, "missing")
        benchmark, headline, option = f.string("benchmark"), f.boolean("headline"), f.string("v2")
        summary = TrackedSummary.from_record({k: f.raw[k] for k in TRACKED_KEYS}, file=file)
        return cls(benchmark, headline, option, summary, dict(f.get("by_category", OBJECT)))


def write_metrics(path: str | Path, metrics: V2Metrics) -> None:
    write_json_atomic(path, metrics.to_record())


def read_metrics(path: str | Path) -> V2Metrics:
    from mnemetric.records import read_json_file

    raw = read_json_file(path, missing_fix="run the V2 stages first (dvc repro v2_metrics)")
    return V2Metrics.from_record(raw, file=str(path))


# ---------------------------------------------------------------------------------------------
# What the doors show (the report, `mnemetric runs`), of any revision

ACCURACY_KEYS = ("overall_full_set", "non_abstention_only", "abstention_only")
_TEXT = ((str,), "a string")
_COUNT = ((int,), "an integer")
_NUMBER = ((int, float), "a number")


@dataclass(frozen=True)
class AccuracyShown:
    """One accuracy block (``{value, correct, n, ci95_low, ci95_high, method}``) as shown (None: not recorded)."""

    value: float | None
    low: float | None
    high: float | None
    n: int | None
    method: str | None


@dataclass(frozen=True)
class CategoryShown:
    """One category of ``by_category``: ``pct_correct`` over ``count`` (0 when not recorded)."""

    name: str
    pct_correct: float | None
    count: int


@dataclass(frozen=True)
class V2Shown:
    """What the doors read of metrics/v2.json, typed: the option's name (``v2``), ``settings.{memory, tier,
    haystack}``, the accuracy blocks (:data:`ACCURACY_KEYS`) of the combined run then of each domain, and the
    categories (``by_category.non_abstention_by_category.<name>``, then ``abstention_overall`` as
    "abstention (all)"). A key the file lacks is None (shows "—"); one of the wrong type an InputError naming
    the file and the key."""

    option: str | None = None
    memory: str | None = None
    tier: str | None = None
    haystack: str | None = None
    accuracy: Mapping[str, Mapping[str, AccuracyShown]] = field(default_factory=dict)
    """scope ("combined", then each domain) -> accuracy key -> block, the blocks the file has."""
    categories: tuple[CategoryShown, ...] = ()

    @classmethod
    def from_record(cls, raw: Any, *, file: str) -> V2Shown:
        f = Fields.shown(raw, file=file, fix="regenerate it (dvc repro v2_metrics)")
        settings, domains, by = f.within("settings"), f.within("domains"), f.within("by_category")
        scopes = {"combined": f.within("combined").within("accuracy")}
        scopes |= {d: domains.within(d).within("accuracy") for d in domains.raw}
        accuracy = {scope: {k: _accuracy(acc.within(k)) for k in ACCURACY_KEYS if acc.raw.get(k) is not None}
                    for scope, acc in scopes.items()}
        cats = by.within("non_abstention_by_category")
        blocks = [(name, cats.within(name)) for name in cats.raw if cats.raw[name] is not None]
        if by.raw.get("abstention_overall") is not None:
            blocks.append(("abstention (all)", by.within("abstention_overall")))
        return cls(f.maybe("v2", _TEXT), settings.maybe("memory", _TEXT), settings.maybe("tier", _TEXT),
                   settings.maybe("haystack", _TEXT), accuracy,
                   tuple(CategoryShown(name, b.maybe("pct_correct", _NUMBER), b.maybe("count", _COUNT) or 0)
                         for name, b in blocks))


def _accuracy(block: Fields) -> AccuracyShown:
    return AccuracyShown(block.maybe("value", _NUMBER), block.maybe("ci95_low", _NUMBER),
                         block.maybe("ci95_high", _NUMBER), block.maybe("n", _COUNT), block.maybe("method", _TEXT))
