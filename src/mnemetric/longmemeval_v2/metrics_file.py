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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mnemetric.errors import InputError
from mnemetric.io import write_json_atomic
from mnemetric.official import KEY as OFFICIAL_KEY
from mnemetric.official import OfficialEquivalence

MEASURED = "measured on this machine: see metrics/v2-latency.json (not part of this reproducible file)"
CATEGORY_SECTIONS = ("non_abstention_by_category", "abstention_by_category", "combined_abstention_by_category",
                     "abstention_overall")
SUMMARY_KEYS = ("schema", "settings", "domains", "combined")


def by_category(aggregated: Mapping[str, Any]) -> dict[str, Any]:
    """upstream's per-category breakdowns (fractions, counts) of an aggregated_metrics dict."""
    return {k: aggregated[k] for k in CATEGORY_SECTIONS if k in aggregated}


def _strip(block: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block.items() if not k.startswith("memory_query")}


def tracked_summary(summary: Mapping[str, Any]) -> dict[str, Any]:
    """The run summary (:func:`mnemetric.longmemeval_v2.run.summary`) without latency and LAFS (module docstring)."""
    out = {k: v for k, v in summary.items() if k != "lafs"}
    for name in ("domains", "combined"):
        blocks = out.get(name)
        if isinstance(blocks, dict):
            out[name] = _strip(blocks) if name == "combined" else {d: _strip(b) for d, b in blocks.items()}
    out["latency"] = MEASURED
    out["lafs"] = {"tier": (summary.get("lafs") or {}).get("tier"), "note": MEASURED}
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
    def of(cls, benchmark: str, headline: bool, option: str, summary: Mapping[str, Any],
           aggregated: Mapping[str, Any]) -> V2Metrics:
        """From a run's summary and its combined (or only) aggregate."""
        tracked = tracked_summary(summary)
        return cls(benchmark, headline, option, {k: tracked[k] for k in SUMMARY_KEYS},
                   OfficialEquivalence.from_record(summary[OFFICIAL_KEY], file="<v2 summary>"),
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
