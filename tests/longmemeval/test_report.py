"""The report model filled from the typed metric files (longmemeval/report.py), and flips against a baseline.

Expected values are typed by hand from the input dicts below; the McNemar p-value of 0 vs 5
discordant pairs is 2 * (1/2)^5 = 0.0625.
"""

from __future__ import annotations

import json

import pytest

from dataclasses import replace

from mnemetric.errors import InputError
from mnemetric.longmemeval.data_stats import DataMetrics
from mnemetric.longmemeval.report import (
    build_report,
    check_layout,
    cost_rows,
    curves,
    equivalence,
    flips_between,
    read_json,
)
from mnemetric.longmemeval.scoring.qa import QUESTION_TYPES
from mnemetric.longmemeval.scoring.qa_detail import QADetail
from mnemetric.longmemeval.scoring.retrieval_report import RetrievalDetail
from mnemetric.report import render_report
from mnemetric.official import OfficialEquivalence
from mnemetric.report.model import Interval

CP = "Clopper-Pearson exact interval for k of n"
QA_RECORD = {
    "reader": "extractive", "memory": "bm25", "variant": "sample", "suite": "full",
    "judge": {"name": "lexical", "models": ["mnemetric-lexical-v1"], "prompt_set_sha256": None,
              "source_sha256": None, "endpoints": []},
    "official_equivalence": {"value": False, "reasons": ["judge model differs"]},
    "per_type": {t: {"accuracy": 0.5, "n": 2, "ci95": {"low": 0.0126, "high": 0.9874, "method": CP}, "mdd80": None}
                 for t in QUESTION_TYPES},
    "task_averaged": 0.5, "overall": 0.5, "abstention": {"accuracy": 1.0, "n": 1}, "n": 12,
    "ci95": {"task_averaged": None, "overall": {"low": 0.21, "high": 0.79, "method": CP},
             "abstention": {"low": 0.025, "high": 1.0, "method": CP}},
    "bootstrap": {"resamples": 10, "seed": 0, "level": 0.95, "note": "intervals note"},
    "coverage": {"n_reference": 12, "n_judged": 12, "n_failed": 0, "missing": [], "scope": "suite"},
    "failures": {"n": 0, "by_stage": {}, "by_reason": {}, "question_ids": []},
    "cost": {"retrieve": {"responses": 0, "prompt_tokens": 0, "completion_tokens": 0, "usd": 0.0},
             "answer": {"responses": 12, "prompt_tokens": 1200, "completion_tokens": 60, "usd": 0.25},
             "judge": {"responses": 12, "prompt_tokens": 2400, "completion_tokens": 12, "usd": 0.5},
             "total": {"responses": 24, "prompt_tokens": 3600, "completion_tokens": 72, "usd": 0.75},
             "note": "a note, not a stage"},
}
"""metrics/detail/qa.json's layout (QADetail)."""
QA = QADetail.from_record(QA_RECORD, file="metrics/detail/qa.json")
RULE_BLOCK = {"rule": "print_retrieval_metrics.py", "n": 10,
              "session": {"recall_all@1": 0.2, "recall_all@5": 0.6, "recall_all@10": 0.9,
                          "ndcg_any@5": 0.5, "ndcg_any@10": 0.55, "recall_any@5": 0.7},
              "ci95": {"session": {"recall_all@5": {"low": 0.3, "high": 0.9, "method": "boot"}}},
              "excluded": 0, "per_type": {}}
RETRIEVAL = {
    "profile": "longmemeval-session-upstream-v1", "official_equivalence": {"value": True, "reasons": []}, "memory": "bm25",
    "variant": "sample",
    "suite": "full", "memory_fingerprint": "ab" * 32, "granularity": "session",
    "bootstrap": {"resamples": 10, "seed": 0, "level": 0.95, "note": "retrieval note"},
    "exclude_abs": RULE_BLOCK, "exclude_abs_and_no_user_target": {**RULE_BLOCK, "n": 8, "excluded": 2},
}
"""metrics/detail/retrieval.json's layout (the report stage's test writes it to disk)."""
TYPED = RetrievalDetail.from_record(RETRIEVAL, file="metrics/detail/retrieval.json")
COUNTS = {"total": 12, "abstention": 1, "per_type": {t: 2 for t in QUESTION_TYPES}}
DATA_RECORD = {"variant": {"name": "sample", "revision": "bundled", "sha256": "cd" * 32, "sha256_verified": True},
               "adapter": {"name": "longmemeval-session", "schema": "mnemetric.longmemeval-session/v3"},
               "questions": COUNTS,
               "haystack": {"sessions": {"mean": 3.0, "max": 5}, "turns": {"mean": 9.0, "max": 20}},
               "suite": {"name": "full", "size": 12, "ids_sha256": "ef" * 32, "questions": COUNTS}}
"""metrics/data.json's layout (DataMetrics)."""
DATA = DataMetrics.from_record(DATA_RECORD, file="metrics/data.json")


def test_headline_rows_carry_value_interval_n_and_method():
    model = build_report(QA, TYPED, DATA)
    rows = {h.name: h for h in model.headline}
    assert rows["overall accuracy"].interval == Interval(0.21, 0.79) and rows["overall accuracy"].n == 12
    assert rows["overall accuracy"].method == CP
    assert rows["task-averaged accuracy"].interval is None and rows["task-averaged accuracy"].method == "no interval"
    assert rows["abstention accuracy"].value == 1.0 and rows["abstention accuracy"].n == 1
    assert rows["recall_all@5 (session)"].interval == Interval(0.3, 0.9)
    assert [h.name for h in model.headline][3:] == ["recall_all@5 (session)", "recall_all@10 (session)",
                                                     "ndcg_any@5 (session)", "ndcg_any@10 (session)"]
    assert [t.question_type for t in model.per_type] == list(QUESTION_TYPES)
    assert model.custody.dataset_sha256 == "cd" * 32 and model.custody.memory_fingerprint == "ab" * 32
    assert model.custody.judge_model == "mnemetric-lexical-v1" and model.notes == ("intervals note", "retrieval note")


def test_equivalence_prefers_the_run_manifest():
    run = OfficialEquivalence(False, ("dataset is the sample",))
    assert equivalence(QA, run).reasons == ("dataset is the sample",)
    assert equivalence(QA, None).reasons == ("judge model differs",) and not equivalence(QA, None).official
    assert equivalence(replace(QA, official_equivalence=OfficialEquivalence(True, ())), None).official


def test_curve_and_cost_rows():
    (curve,) = curves(TYPED)
    assert curve.name == "recall_all@k (session)" and [(p.k, p.value) for p in curve.points] == [(1, 0.2), (5, 0.6), (10, 0.9)]
    rows = cost_rows(QA.cost)
    assert [r.stage for r in rows] == ["retrieve", "answer", "judge", "total"]
    assert (rows[3].requests, rows[3].prompt_tokens, rows[3].usd, rows[3].cache_hits) == (24, 3600, 0.75, None)


def test_flips_paired_difference_and_exact_mcnemar():
    base = {f"q{i}": True for i in range(1, 6)} | {"q6": False}
    new = {f"q{i}": False for i in range(1, 7)} | {"q7": True}  # q7 is not in the baseline: not compared
    types = {f"q{i}": "multi-session" for i in range(1, 8)}
    f = flips_between(base, new, types, "main", resamples=200, seed=0)
    assert [r.question_id for r in f.rows] == ["q1", "q2", "q3", "q4", "q5"]
    assert (f.rows[0].old_label, f.rows[0].new_label) == ("correct", "wrong")
    assert f.paired_difference == pytest.approx(-5 / 6) and f.mcnemar_p == pytest.approx(0.0625)
    assert f.interval.low <= -5 / 6 <= f.interval.high


def test_no_common_question_gives_no_statistics():
    f = flips_between({"a": True}, {"b": False}, {}, "main")
    assert f.rows == () and f.paired_difference is None and f.mcnemar_p is None


def test_page_is_offline_and_shows_the_numbers():
    page = render_report(build_report(QA, TYPED, DATA, result_card="#### card"))
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in page
    assert "<script" not in page and "0.210" in page and "#### card" in page and CP in page


def test_older_layout_and_bad_files_are_named(tmp_path):
    with pytest.raises(InputError, match="per_type"):
        check_layout({"per_type": {t: 0.5 for t in QUESTION_TYPES}}, "metrics/qa.json")  # the headline file
    bad = tmp_path / "qa.json"
    bad.write_text("[1, 2]")
    with pytest.raises(InputError, match="expected a JSON object"):
        read_json(bad, fix="f")
    bad.write_text("{")
    with pytest.raises(InputError, match="not valid JSON"):
        read_json(bad, fix="f")
    with pytest.raises(InputError, match="does not exist"):
        read_json(tmp_path / "none.json", fix="f")


def test_read_inputs_types_the_retrieval_detail_and_names_a_bad_field(tmp_path):
    from mnemetric.longmemeval.report import read_inputs
    files = {name: tmp_path / f"{name}.json" for name in ("qa", "retrieval", "data")}
    for name, doc in (("qa", QA_RECORD), ("retrieval", RETRIEVAL), ("data", DATA_RECORD)):
        files[name].write_text(json.dumps(doc), encoding="utf-8")
    inputs = read_inputs(files["qa"], files["retrieval"], files["data"], None)
    assert inputs["retrieval"] == TYPED and inputs["retrieval"].exclude_abs_and_no_user_target.mean.n == 8
    files["retrieval"].write_text(json.dumps({**RETRIEVAL, "granularity": "page"}), encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_inputs(files["qa"], files["retrieval"], files["data"], None)
    assert (info.value.problem.file, info.value.problem.field) == (str(files["retrieval"]), "granularity")


@pytest.mark.parametrize(("name", "edit", "field"), [
    ("data", lambda d: d["variant"].update(sha256_verified="yes"), "variant.sha256_verified"),
    ("data", lambda d: d["suite"].pop("ids_sha256"), "suite.ids_sha256"),
    ("qa", lambda d: d["ci95"]["overall"].update(low="0.21"), "ci95.overall.low"),
    ("qa", lambda d: d["per_type"]["multi-session"]["ci95"].update(method=7), "per_type.multi-session.ci95.method"),
    ("qa", lambda d: d["cost"]["judge"].update(usd="0.5"), "cost.judge.usd"),
    ("qa", lambda d: d["judge"].update(models="gpt-4o"), "judge.models"),
    ("run", lambda d: d["official_equivalence"].update(value="no"), "official_equivalence.value"),
])
def test_every_input_is_read_typed_and_a_bad_field_is_named(tmp_path, name, edit, field):
    """QA detail, data.json and the run manifest's verdict go through their typed readers (QADetail,
    DataMetrics, OfficialEquivalence): a field of the wrong type or missing is an InputError naming the file
    and the field, never shown as it stands or a traceback while the page is drawn."""
    import copy

    from mnemetric.longmemeval.report import read_inputs
    docs = {"qa": copy.deepcopy(QA_RECORD), "retrieval": RETRIEVAL, "data": copy.deepcopy(DATA_RECORD),
            "run": {"official_equivalence": {"value": False, "reasons": ["dataset is the sample"]}}}
    edit(docs[name])
    files = {k: tmp_path / f"{k}.json" for k in docs}
    for k, doc in docs.items():
        files[k].write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(InputError) as info:
        inputs = read_inputs(files["qa"], files["retrieval"], files["data"], files["run"])
        render_report(build_report(inputs["qa"], inputs["retrieval"], inputs["data"], run=inputs["run"]))
    assert info.value.problem.file.endswith(f"{name}.json") and info.value.problem.field == field


def test_read_inputs_gives_the_typed_records(tmp_path):
    from mnemetric.longmemeval.report import read_inputs
    files = {k: tmp_path / f"{k}.json" for k in ("qa", "retrieval", "data", "run")}
    for k, doc in (("qa", QA_RECORD), ("retrieval", RETRIEVAL), ("data", DATA_RECORD),
                   ("run", {"official_equivalence": {"value": False, "reasons": ["dataset is the sample"]}})):
        files[k].write_text(json.dumps(doc), encoding="utf-8")
    inputs = read_inputs(files["qa"], files["retrieval"], files["data"], files["run"])
    assert inputs["qa"] == QA and inputs["data"] == DATA
    assert inputs["run"] == OfficialEquivalence(False, ("dataset is the sample",))
    model = build_report(inputs["qa"], inputs["retrieval"], inputs["data"], run=inputs["run"])
    assert model.equivalence.reasons == ("dataset is the sample",) and model.custody.dataset_verified is True
