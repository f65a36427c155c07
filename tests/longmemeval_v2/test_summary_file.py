"""The typed V2 run summary (v2.json): read → write gives the bytes back; a malformed one is refused naming the
file, the record and the field. Real runs on the bundled sample, real files."""

from __future__ import annotations

import json

import pytest

from mnemetric.errors import InputError
from mnemetric.io import write_json_atomic
from mnemetric.longmemeval_v2.llm_checkers import OfflineChecker
from mnemetric.longmemeval_v2.reader import OfflineReader
from mnemetric.longmemeval_v2.run import run_v2, write_run
from mnemetric.longmemeval_v2.summary_file import V2Summary, read_summary, write_summary
from mnemetric.longmemeval_v2.tokens import O200kCounter
from tests.longmemeval_v2.test_run import SAMPLE, make_memory
from tests.support.edits import set_at


def _run(tmp_path, domains=("web", "enterprise")):
    run = run_v2(SAMPLE, "small", domains, factory=lambda: make_memory("bm25", SAMPLE), memory_name="bm25",
                 reader=OfflineReader(), checker=OfflineChecker(), counter=O200kCounter())
    write_run(tmp_path, run)
    return run, tmp_path / "v2.json"


@pytest.mark.parametrize("domains", [("web", "enterprise"), ("web",)])
def test_a_run_folders_summary_reads_back_and_writes_the_same_bytes(tmp_path, domains):
    run, path = _run(tmp_path / "run", domains)
    summary = read_summary(path)
    assert summary == run.summary and isinstance(summary, V2Summary)
    write_summary(tmp_path / "again.json", summary)
    assert (tmp_path / "again.json").read_bytes() == path.read_bytes()
    # "not computed" has one layout whatever the reason (the unverified data's, one domain's)
    lafs = json.loads(path.read_text())["lafs"]
    assert list(lafs) == ["computed", "reason", "tier"]
    assert ("verified official tier" in lafs["reason"]) == (len(domains) == 2)


def test_failed_as_wrong_and_a_computed_lafs_keep_their_bytes(tmp_path):
    _, path = _run(tmp_path / "run")
    raw = json.loads(path.read_text())
    web = raw["domains"]["web"]
    raw["domains"]["web"] = {**{k: web[k] for k in ("questions", "scored", "failed", "accuracy")},
                             "accuracy_failed_as_wrong": web["accuracy"],
                             **{k: web[k] for k in ("category_accuracy", "memory_query_avg_seconds", "memory_context")}}
    raw["lafs"] = {"computed": True, "tier": "small", "accuracy_percentage_points": 21.4, "latency_seconds": 0.5,
                   "reference_lafs": 1, "submission_lafs": 2.5, "lafs_gain": 1.5}
    write_json_atomic(tmp_path / "edited.json", raw)
    write_summary(tmp_path / "again.json", read_summary(tmp_path / "edited.json"))
    assert (tmp_path / "again.json").read_bytes() == (tmp_path / "edited.json").read_bytes()


@pytest.mark.parametrize("dotted, value, record, field, message", [
    ("settings.memory", KeyError, "settings", "memory", "missing"),
    ("settings.memory_context_max_tokens", "200000", "settings", "memory_context_max_tokens", "expected"),
    ("extra", 1, "<file>", "extra", "unexpected field"),
    ("domains.web.scored", True, "domains.web", "scored", "expected a non-negative integer, got bool"),
    ("domains.web.accuracy.overall_full_set.correct", "1", "domains.web.accuracy.overall_full_set", "correct",
     "expected a non-negative integer"),
    ("combined.category_accuracy.static", "high", "combined.category_accuracy", "static", "expected a number"),
    ("combined.memory_context", [], "combined.memory_context", "<record>", "expected a JSON object"),
    ("lafs.reason", KeyError, "lafs", "reason", "missing"),
    ("lafs.computed", "no", "lafs", "computed", "expected true or false"),
    ("official_equivalence.value", 1, "<file>", "official_equivalence.value", "expected true or false"),
])
def test_a_malformed_summary_is_refused_naming_file_record_and_field(tmp_path, dotted, value, record, field,
                                                                     message):
    _, path = _run(tmp_path / "run")
    raw = json.loads(path.read_text())
    set_at(raw, dotted, value)
    write_json_atomic(path, raw)
    with pytest.raises(InputError, match=message) as err:
        read_summary(path)
    assert (err.value.problem.file, err.value.problem.record, err.value.problem.field) == (str(path), record, field)


def test_a_missing_summary_says_how_to_make_one(tmp_path):
    with pytest.raises(InputError, match=r"(?s)v2.json.*mnemetric v2 run"):
        read_summary(tmp_path / "v2.json")
