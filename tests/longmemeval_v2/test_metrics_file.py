"""metrics/v2.json typed (TrackedSummary, TrackedBlock, V2Metrics): the committed file reads and writes back byte
for byte; a real run's summary goes in as the run summary without its memory_query* timings and LAFS point; a
malformed file is refused naming the file, the record and the field."""

from __future__ import annotations

import json

import pytest

from mnemetric.errors import InputError
from mnemetric.io import write_json_atomic
from mnemetric.longmemeval_v2.metrics_file import (MEASURED, TrackedBlock, TrackedSummary, V2Metrics, read_metrics,
                                                   write_metrics)
from tests.conftest import ROOT
from tests.longmemeval_v2.test_summary_file import _run
from tests.support.edits import set_at


def test_the_committed_metrics_file_reads_and_writes_back_byte_for_byte(tmp_path):
    committed = ROOT / "metrics" / "v2.json"
    m = read_metrics(committed)
    assert isinstance(m.summary, TrackedSummary)
    assert all(isinstance(b, TrackedBlock) for b in m.summary.domains.values())
    write_metrics(tmp_path / "v2.json", m)
    assert (tmp_path / "v2.json").read_bytes() == committed.read_bytes()


def _stripped(summary) -> dict:
    """What metrics/v2.json held before it was typed: the summary's record, lafs and memory_query* dropped."""
    def strip(block):
        return {k: v for k, v in block.items() if not k.startswith("memory_query")}

    out = {k: v for k, v in summary.to_record().items() if k != "lafs"}
    out["domains"] = {d: strip(b) for d, b in out["domains"].items()}
    out["combined"] = None if out["combined"] is None else strip(out["combined"])
    return out | {"latency": MEASURED, "lafs": {"tier": summary.lafs.tier, "note": MEASURED}}


@pytest.mark.parametrize("domains", [("web", "enterprise"), ("web",)])
def test_a_runs_summary_goes_in_without_what_a_clock_measured_and_reads_back(tmp_path, domains):
    run, _ = _run(tmp_path / "run", domains)
    both = (run.combined or next(iter(run.aggregated.values()))).to_record()
    m = V2Metrics.of("longmemeval-v2", True, "sample", run.summary, both)
    assert m.summary.to_record() == _stripped(run.summary)
    assert m.official_equivalence == run.summary.official_equivalence and m.lafs_tier == run.summary.lafs.tier
    write_metrics(tmp_path / "v2.json", m)
    assert read_metrics(tmp_path / "v2.json") == m
    write_metrics(tmp_path / "again.json", read_metrics(tmp_path / "v2.json"))
    assert (tmp_path / "again.json").read_bytes() == (tmp_path / "v2.json").read_bytes()


def test_failed_as_wrong_keeps_its_bytes(tmp_path):
    raw = json.loads((ROOT / "metrics" / "v2.json").read_text())
    web = raw["domains"]["web"]
    raw["domains"]["web"] = {**{k: web[k] for k in ("questions", "scored", "failed", "accuracy")},
                             "accuracy_failed_as_wrong": web["accuracy"],
                             **{k: web[k] for k in ("category_accuracy", "memory_context")}}
    write_json_atomic(tmp_path / "edited.json", raw)
    m = read_metrics(tmp_path / "edited.json")
    assert m.summary.domains["web"].accuracy_failed_as_wrong == m.summary.domains["web"].accuracy
    write_metrics(tmp_path / "again.json", m)
    assert (tmp_path / "again.json").read_bytes() == (tmp_path / "edited.json").read_bytes()


@pytest.mark.parametrize("dotted, value, record, field, message", [
    ("benchmark", KeyError, "<file>", "benchmark", "missing"),
    ("headline", "yes", "<file>", "headline", "expected true or false"),
    ("extra", 1, "<file>", "extra", "unexpected field"),
    ("latency", 0.5, "<file>", "latency", "expected a string"),
    ("latency", "0.5 s", "<file>", "latency", "expected 'measured on this machine"),
    ("by_category", [], "<file>", "by_category", "expected an object"),
    ("settings.memory", KeyError, "settings", "memory", "missing"),
    ("settings.domains", "web", "settings", "domains", "expected a list of strings"),
    ("domains", {}, "<file>", "domains", "empty"),
    ("domains.web.memory_query_avg_seconds", 0.5, "domains.web", "memory_query_avg_seconds", "unexpected field"),
    ("domains.web.scored", True, "domains.web", "scored", "expected a non-negative integer, got bool"),
    ("domains.web.accuracy.overall_full_set.correct", "1", "domains.web.accuracy.overall_full_set", "correct",
     "expected a non-negative integer"),
    ("combined.category_accuracy.static", "high", "combined.category_accuracy", "static", "expected a number"),
    ("combined.memory_context", [], "combined.memory_context", "<record>", "expected a JSON object"),
    ("lafs.tier", 1, "lafs", "tier", "expected a string or null"),
    ("lafs.note", KeyError, "lafs", "note", "missing"),
    ("lafs.computed", True, "lafs", "computed", "unexpected field"),
    ("official_equivalence.value", 1, "<file>", "official_equivalence.value", "expected true or false"),
])
def test_a_malformed_metrics_file_is_refused_naming_file_record_and_field(tmp_path, dotted, value, record, field,
                                                                          message):
    raw = json.loads((ROOT / "metrics" / "v2.json").read_text())
    set_at(raw, dotted, value)
    path = tmp_path / "v2.json"
    write_json_atomic(path, raw)
    with pytest.raises(InputError, match=message) as err:
        read_metrics(path)
    assert (err.value.problem.file, err.value.problem.record, err.value.problem.field) == (str(path), record, field)


def test_a_file_that_is_not_an_object_is_refused(tmp_path):
    (tmp_path / "v2.json").write_text("[]")
    with pytest.raises(InputError, match=r"v2.json.*expected a JSON object, got list"):
        read_metrics(tmp_path / "v2.json")
