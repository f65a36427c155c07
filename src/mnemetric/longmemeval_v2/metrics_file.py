"""metrics/v2.json, typed (reader beside writer): the V2 run summary without what a clock measured.

Query latency (and the LAFS point it places) is a measurement of this machine, not a pure function of the
inputs; this file must be (a fresh clone reproduces it byte for byte). So latency and LAFS go to
metrics/v2-latency.json (:mod:`.latency`; committed like a benchmark result) and this file says so; every
accuracy, count, token figure and the official verdict stay. Keys, in order: benchmark, headline, v2 (the option's name), schema, settings,
domains, combined, official_equivalence (:class:`mnemetric.official.OfficialEquivalence`), latency, lafs,
by_category (upstream's per-category breakdowns of the combined — or only — aggregate).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mnemetric.errors import InputError
from mnemetric.io import write_json_atomic
from mnemetric.longmemeval_v2.summary_file import V2Summary
from mnemetric.official import KEY as OFFICIAL_KEY
from mnemetric.official import OfficialEquivalence
from mnemetric.records import Fields

MEASURED = "measured on this machine: see metrics/v2-latency.json (not part of this reproducible file)"
CATEGORY_SECTIONS = ("non_abstention_by_category", "abstention_by_category", "combined_abstention_by_category",
                     "abstention_overall")
SUMMARY_KEYS = ("schema", "settings", "domains", "combined")


def by_category(aggregated: Mapping[str, Any]) -> dict[str, Any]:
    """upstream's per-category breakdowns (fractions, counts) of an aggregated_metrics dict."""
    return {k: aggregated[k] for k in CATEGORY_SECTIONS if k in aggregated}


def _strip(block: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block.items() if not k.startswith("memory_query")}


def tracked_summary(summary: V2Summary) -> dict[str, Any]:
    """The run summary (:class:`mnemetric.longmemeval_v2.summary_file.V2Summary`) without latency and LAFS
    (module docstring)."""
    out = {k: v for k, v in summary.to_record().items() if k != "lafs"}
    for name in ("domains", "combined"):
        blocks = out.get(name)
        if isinstance(blocks, dict):
            out[name] = _strip(blocks) if name == "combined" else {d: _strip(b) for d, b in blocks.items()}
    out["latency"] = MEASURED
    out["lafs"] = {"tier": summary.lafs.tier, "note": MEASURED}
    return out


@dataclass(frozen=True)
class V2Metrics:
    benchmark: str
    headline: bool
    """Whether the params' ``benchmark`` is this family (the run's headline numbers)."""
    option: str
    """The ``v2`` option's name."""
    summary: Mapping[str, Any]
    """schema, settings, domains, combined (tracked: no latency)."""
    official_equivalence: OfficialEquivalence
    lafs_tier: str | None
    by_category: Mapping[str, Any]

    @classmethod
    def of(cls, benchmark: str, headline: bool, option: str, summary: V2Summary,
           aggregated: Mapping[str, Any]) -> V2Metrics:
        """From a run's summary and its combined (or only) aggregate."""
        tracked = tracked_summary(summary)
        return cls(benchmark, headline, option, {k: tracked[k] for k in SUMMARY_KEYS},
                   summary.official_equivalence,
                   tracked["lafs"]["tier"], by_category(aggregated))

    def to_record(self) -> dict[str, Any]:
        return {"benchmark": self.benchmark, "headline": self.headline, "v2": self.option,
                **{k: self.summary[k] for k in SUMMARY_KEYS}, OFFICIAL_KEY: self.official_equivalence.to_record(),
                "latency": MEASURED, "lafs": {"tier": self.lafs_tier, "note": MEASURED},
                "by_category": dict(self.by_category)}

    @classmethod
    def from_record(cls, raw: Any, *, file: str) -> V2Metrics:
        if not isinstance(raw, dict):
            raise InputError(file, "<file>", "<metrics>", f"expected a JSON object, got {type(raw).__name__}")
        fix = "regenerate it (dvc repro v2_metrics)"
        for key, kind in (("benchmark", str), ("headline", bool), ("v2", str), ("schema", str), ("settings", dict),
                          ("domains", dict), ("by_category", dict)):
            if not isinstance(raw.get(key), kind):
                raise InputError(file, "<file>", key, f"missing or not {kind.__name__}", fix=fix)
        if raw.get("combined") is not None and not isinstance(raw["combined"], dict):
            raise InputError(file, "<file>", "combined", "expected an object or null", fix=fix)
        official = OfficialEquivalence.from_record(raw.get(OFFICIAL_KEY), file=file)
        return cls(raw["benchmark"], raw["headline"], raw["v2"], {k: raw.get(k) for k in SUMMARY_KEYS}, official,
                   (raw.get("lafs") or {}).get("tier"), raw["by_category"])


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
