"""derive_inventory: statuses, evidence and review fields recomputed from hand-written manifests and metrics."""

from __future__ import annotations

import copy
import json
import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemetric.cli import main
from mnemetric.custody.inventory import derive_inventory
from mnemetric.errors import InputError

from tests.inventory import helpers
from tests.inventory.helpers import DELETE, PINNED_EVALUATE_QA, PINNED_PROMPT_SET, V1_TYPES, V2_TASKS, manifest, qa_metrics, v2_metrics

ALL_V1 = {t: 4 for t in V1_TYPES}


def derive(manifests=(), crosscheck=None, markers=None, metrics=None, seed=None) -> dict:
    return derive_inventory(seed or helpers.seed(), run_manifests=list(manifests), crosscheck=crosscheck,
                            markers=markers or {}, metrics=metrics or {})


def tasks(inv: dict) -> dict[str, dict]:
    return {t["task"]: t for f in inv["families"] for t in f["tasks"]}


def reviews(inv: dict) -> dict[str, bool]:
    impl = inv["families"][0]["implementation"]
    return {"official_equivalence": inv["date_transport_review"]["official_equivalence"],
            "full_protocol_equivalence": impl["full_protocol_equivalence"],
            "full_held_out_run_completed": impl["full_held_out_run_completed"],
            "judge_executed": inv["qa_aggregation_review"]["judge_executed"],
            "actual_judge_requests_executed": inv["official_qa_setup_review"]["actual_judge_requests_executed"],
            "judge_prompt_parity_verified": inv["qa_aggregation_review"]["judge_prompt_parity_verified"],
            "temporal_reasoning_measured": inv["date_transport_review"]["temporal_reasoning_measured"]}


def test_nothing_known_means_everything_unmapped_and_every_asserted_flag_false():
    inv = derive()
    assert {t["coverage_status"] for t in tasks(inv).values()} == {"unmapped"}
    assert inv["complete"] is False                       # the seed said true
    assert set(reviews(inv).values()) == {False}          # the seed asserted every one of them true
    assert inv["date_transport_review"]["method"] == "m"  # descriptive text is kept


def test_markers_alone_make_tasks_mapped_with_sorted_unique_refs():
    markers = {("longmemeval", "multi-session"): ["tests/b/test_q.py::test_2", "tests/a/test_p.py::test_1",
                                                  "tests/b/test_q.py::test_2"],
               ("longmemeval-v2", "Premise awareness"): ["tests/v2/test_r.py::TestX::test_3"]}
    t = tasks(derive(markers=markers))
    assert t["multi-session"] == {"classification": "question type", "coverage_status": "mapped",
                                  "evidence_refs": [], "selector": "question_type = multi-session",
                                  "task": "multi-session",
                                  "test_refs": ["tests/a/test_p.py::test_1", "tests/b/test_q.py::test_2"]}
    assert t["Premise awareness"]["coverage_status"] == "mapped"
    assert t["Premise awareness"]["test_refs"] == ["tests/v2/test_r.py::TestX::test_3"]
    assert t["abstention"]["coverage_status"] == "unmapped"


def test_a_manifest_and_qa_metrics_measure_the_v1_tasks_with_n_above_zero():
    n = dict(ALL_V1, **{"knowledge-update": 0})
    markers = {("longmemeval", "knowledge-update"): ["tests/t/test_k.py::test_k"]}
    t = tasks(derive([manifest()], markers=markers, metrics={"metrics/detail/qa.json": qa_metrics(n, abstention_n=7)}))
    assert t["multi-session"]["coverage_status"] == "measured"
    assert t["multi-session"]["evidence_refs"] == ["metrics/detail/qa.json#per_type.multi-session.accuracy", "metrics/run.json"]
    assert t["multi-session"]["test_refs"] == []
    assert t["abstention"]["evidence_refs"] == ["metrics/detail/qa.json#abstention.accuracy", "metrics/run.json"]
    assert t["knowledge-update"]["coverage_status"] == "mapped"    # n == 0: a test, but no measurement
    assert t["knowledge-update"]["evidence_refs"] == []
    assert {t[x]["coverage_status"] for x in V2_TASKS} == {"unmapped"}   # a V1 run measures no V2 task


def test_metrics_without_a_manifest_measure_nothing():
    t = tasks(derive([], metrics={"metrics/detail/qa.json": qa_metrics(ALL_V1)}))
    assert {x["coverage_status"] for x in t.values()} == {"unmapped"}


@pytest.mark.parametrize("field, value", [("variant", "s"), ("suite", "development")])
def test_a_metrics_file_of_another_run_is_not_evidence(field, value):
    qa = qa_metrics(ALL_V1, **{field: value})
    assert tasks(derive([manifest()], metrics={"metrics/detail/qa.json": qa}))["multi-session"]["coverage_status"] == "unmapped"


@pytest.mark.parametrize("accuracy, n", [(None, 4), (math.nan, 4), (0.5, 0), (0.5, None)])
def test_values_that_do_not_measure(accuracy, n):
    qa = qa_metrics(ALL_V1)
    qa["per_type"]["multi-session"] = {"accuracy": accuracy, "n": n}
    t = tasks(derive([manifest()], metrics={"metrics/detail/qa.json": qa}))
    assert t["multi-session"]["coverage_status"] == "unmapped"
    assert t["temporal-reasoning"]["coverage_status"] == "measured"


@pytest.mark.parametrize("block, field", [({"accuracy": True, "n": 4}, "per_type.multi-session.accuracy"),
                                          ({"accuracy": "0.5", "n": 4}, "per_type.multi-session.accuracy"),
                                          ({"accuracy": 0.5, "n": True}, "per_type.multi-session.n"),
                                          ({"accuracy": 0.5, "n": 2.0}, "per_type.multi-session.n"),
                                          ([0.5, 4], "per_type.multi-session")])
def test_a_malformed_metric_is_an_error_naming_file_and_field(block, field):
    # a wrong type is never read as "not measured": the metrics file is broken, and the error says where
    qa = qa_metrics(ALL_V1)
    qa["per_type"]["multi-session"] = block
    with pytest.raises(InputError, match=re.escape(f"metrics/detail/qa.json: <file>: field '{field}'")):
        derive([manifest()], metrics={"metrics/detail/qa.json": qa})


def test_two_manifests_of_the_same_run_are_both_evidence():
    other = manifest(path="runs/copy/run.json")
    t = tasks(derive([other, manifest()], metrics={"metrics/detail/qa.json": qa_metrics(ALL_V1)}))
    assert t["abstention"]["evidence_refs"] == ["metrics/detail/qa.json#abstention.accuracy", "metrics/run.json",
                                                "runs/copy/run.json"]


def test_v2_tasks_are_measured_by_a_v2_manifest_and_complete_needs_every_task():
    v2 = manifest(path="metrics/run-v2.json", benchmark="LongMemEval-V2", **{"variant.name": "small"})
    metrics = {"metrics/detail/qa.json": qa_metrics(ALL_V1), "metrics/v2.json": v2_metrics()}
    inv = derive([manifest(), v2], metrics=metrics)
    t = tasks(inv)
    assert t["Workflow knowledge"]["evidence_refs"] == [
        "metrics/v2.json#by_category.non_abstention_by_category.procedure.pct_correct", "metrics/run-v2.json"]
    assert t["Premise awareness"]["evidence_refs"] == [
        "metrics/v2.json#by_category.abstention_overall.pct_correct", "metrics/run-v2.json"]
    assert inv["complete"] is True
    metrics["metrics/v2.json"]["by_category"]["non_abstention_by_category"]["gotchas"]["count"] = 0
    inv = derive([manifest(), v2], metrics=metrics)
    assert tasks(inv)["Environment gotchas"]["coverage_status"] == "unmapped"
    assert inv["complete"] is False
    assert derive([manifest()], metrics=metrics | {"metrics/v2.json": v2_metrics()})["complete"] is False


def test_temporal_reasoning_measured_follows_the_task():
    assert reviews(derive([manifest()], metrics={"metrics/detail/qa.json": qa_metrics(ALL_V1)}))["temporal_reasoning_measured"]
    n = dict(ALL_V1, **{"temporal-reasoning": 0})
    assert not reviews(derive([manifest()], metrics={"metrics/detail/qa.json": qa_metrics(n)}))["temporal_reasoning_measured"]


FULL = {"variant.name": "s", "variant.sha256_verified": True, "suite.name": "full", "counts.failed": 0}


@pytest.mark.parametrize("changes, done", [
    ({}, True),
    ({"variant.name": "m"}, True),
    ({"variant.name": "oracle"}, True),
    ({"variant.name": "sample"}, False),
    ({"variant.sha256_verified": False}, False),
    ({"suite.name": "development"}, False),
    ({"counts.failed": 1}, False),
    ({"counts.questions": 0, "counts.judged": 0}, False),
])
def test_full_held_out_run_completed(changes, done):
    assert reviews(derive([manifest(**FULL | changes)]))["full_held_out_run_completed"] is done


SENT = {"requests": 5, "values": [{"temperature": 0, "max_tokens": 10, "n": 1}]}


@pytest.mark.parametrize("sent, judged, executed", [(SENT, 5, True), (SENT, 0, False), (None, 43, False),
                                                    ({"requests": 0, "values": []}, 43, False)])
def test_judge_executed(sent, judged, executed):
    """The judge executed when it sent model requests (the lexical judge sends none: params_sent null)."""
    r = reviews(derive([manifest(**{"judge.params_sent": sent, "counts.judged": judged})]))
    assert (r["judge_executed"], r["actual_judge_requests_executed"]) == (executed, executed)


def test_judge_executed_on_a_v2_run_is_not_the_v1_judge():
    v2 = manifest(benchmark="LongMemEval-V2", **{"judge.params_sent": SENT})
    assert reviews(derive([v2]))["judge_executed"] is False


@pytest.mark.parametrize("value", [True, False])
def test_official_equivalence_is_the_gate_of_the_manifest(value):
    r = reviews(derive([manifest(**{"official_equivalence": {"value": value, "reasons": [] if value else ["r"]}})]))
    assert (r["official_equivalence"], r["full_protocol_equivalence"]) == (value, value)


def test_one_official_run_among_others_is_enough():
    runs = [manifest(), manifest(path="b.json", official_equivalence={"value": True, "reasons": []})]
    assert reviews(derive(runs))["official_equivalence"] is True


@pytest.mark.parametrize("sha, verified", [(PINNED_PROMPT_SET, True), ("0" * 64, False), (None, False)])
def test_prompt_parity_by_the_prompt_set_hash_of_a_run(sha, verified):
    assert reviews(derive([manifest(**{"judge.prompt_set_sha256": sha})]))["judge_prompt_parity_verified"] is verified


def crosscheck(checks, *, pinned=True, sha=PINNED_EVALUATE_QA) -> dict:
    return {"schema": "mnemetric.crosscheck/v1", "path": "metrics/crosscheck.json",
            "upstream": {"pinned": pinned, "files": {"src/evaluation/evaluate_qa.py": sha}},
            "checks": [{"script": s, "metric": "m", "ours": 1, "upstream": 1 if a else 0, "agree": a} for s, a in checks],
            "agree": all(a for _, a in checks)}


@pytest.mark.parametrize("evidence, verified", [
    (crosscheck([("evaluate_qa.py", True), ("evaluate_qa.py", True), ("print_qa_metrics.py", False)]), True),
    (crosscheck([("evaluate_qa.py", True), ("evaluate_qa.py", False)]), False),
    (crosscheck([("print_qa_metrics.py", True), ("print_retrieval_metrics.py", True)]), False),  # judge not run
    (crosscheck([("evaluate_qa.py", True)], pinned=False), False),
    (crosscheck([("evaluate_qa.py", True)], sha="1" * 64), False),
])
def test_prompt_parity_by_cross_check_evidence(evidence, verified):
    assert reviews(derive([], crosscheck=evidence))["judge_prompt_parity_verified"] is verified


def test_the_seed_is_not_changed():
    seed = helpers.seed()
    before = copy.deepcopy(seed)
    derive([manifest()], seed=seed, metrics={"metrics/detail/qa.json": qa_metrics(ALL_V1)},
           markers={("longmemeval", "abstention"): ["tests/test_a.py::test_b"]})
    assert seed == before


@pytest.mark.parametrize("changes, field", [
    ({"counts.judged": DELETE}, "counts.judged"),
    ({"counts.failed": -1}, "counts.failed"),
    ({"counts.failed": False}, "counts.failed"),
    ({"variant.sha256_verified": "yes"}, "variant.sha256_verified"),
    ({"judge.params_sent": "sent"}, "judge.params_sent"),
    ({"official_equivalence": True}, "official_equivalence"),
    ({"official_equivalence.value": True}, "official_equivalence"),  # official, yet with a reason against it
    ({"official_equivalence.reasons": [1]}, "official_equivalence.reasons"),
    ({"benchmark": "LongMemEval-V3"}, "benchmark"),
    # a parent that is missing or not an object is named itself (field_of named the leaf below it)
    ({"counts": DELETE}, "counts"),
    ({"judge": DELETE}, "judge"),
    ({"variant": "small"}, "variant"),
    ({"suite": None}, "suite"),
    ({"judge": ["lexical"]}, "judge"),
    ({"judge.params_sent": {"requests": -1}}, "judge.params_sent.requests"),
    ({"judge.params_sent": {"requests": True}}, "judge.params_sent.requests"),
    ({"counts.questions": 2.5}, "counts.questions"),
    ({"path": 3}, "path"),
])
def test_a_bad_manifest_is_an_input_error_naming_file_and_key(changes, field):
    with pytest.raises(InputError) as err:
        derive([manifest(path="runs/x/run.json", **changes)] if "path" not in changes else [manifest(**changes)])
    file = "runs/x/run.json" if "path" not in changes else err.value.problem.file
    assert (err.value.problem.file, err.value.problem.field) == (file, field)
    assert err.value.problem.record == "index 0"


def test_a_missing_manifest_key_says_missing():
    with pytest.raises(InputError) as err:
        derive([manifest(path="runs/x/run.json", **{"counts.judged": DELETE})])
    assert str(err.value).startswith("runs/x/run.json: index 0: field 'counts.judged': missing")
    assert err.value.fix == "see the key table of the family's inventory review"
    with pytest.raises(InputError) as err:
        derive([manifest(path="runs/x/run.json", **{"counts.failed": "0"})])
    assert "field 'counts.failed': expected a non-negative integer, got str '0'" in str(err.value)


@pytest.mark.parametrize("edit, field", [
    (lambda c: c.pop("upstream"), "upstream"),
    (lambda c: c.update(upstream="pinned"), "upstream"),
    (lambda c: c["upstream"].update(files=[]), "upstream.files"),
    (lambda c: c["upstream"].pop("pinned"), "upstream.pinned"),
    (lambda c: c["upstream"].update(pinned="yes"), "upstream.pinned"),
    (lambda c: c.update(checks={}), "checks"),
    (lambda c: c.update(path=None), "path"),
])
def test_bad_cross_check_evidence_names_its_key(edit, field):
    evidence = crosscheck([("evaluate_qa.py", True)])
    edit(evidence)
    with pytest.raises(InputError) as err:
        derive([], crosscheck=evidence)
    assert err.value.problem.field == field, str(err.value)


def test_a_marker_for_a_task_the_inventory_does_not_have_is_an_error():
    with pytest.raises(InputError) as err:
        derive(markers={("longmemeval", "multi_session"): ["tests/scoring/test_q.py::test_t"]})
    assert (err.value.problem.file, err.value.problem.record) == ("tests/scoring/test_q.py",
                                                                   "tests/scoring/test_q.py::test_t")
    assert "longmemeval/multi-session" in err.value.fix


def test_a_seed_of_another_schema_is_an_error():
    seed = helpers.seed() | {"schema": "something/v2"}
    with pytest.raises(InputError):
        derive(seed=seed)


def test_cli_derive_end_to_end(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "metrics" / "detail").mkdir(parents=True)
    (tmp_path / "seed.json").write_text(json.dumps(helpers.seed()), encoding="utf-8")
    (tmp_path / "metrics" / "run.json").write_text(json.dumps(manifest(path=DELETE)), encoding="utf-8")
    (tmp_path / "metrics" / "detail" / "qa.json").write_text(json.dumps(qa_metrics(ALL_V1, abstention_n=0)),
                                                            encoding="utf-8")
    (tmp_path / "tests" / "scoring").mkdir(parents=True)
    (tmp_path / "tests" / "scoring" / "test_qa.py").write_text(
        'import pytest\n\n@pytest.mark.task("longmemeval", "abstention")\ndef test_abs():\n    pass\n', encoding="utf-8")
    assert main(["inventory", "derive", "--seed", "seed.json", "--out", "out/inventory.json"]) == 0
    t = tasks(json.loads((tmp_path / "out" / "inventory.json").read_text(encoding="utf-8")))
    assert t["multi-session"]["evidence_refs"] == ["metrics/detail/qa.json#per_type.multi-session.accuracy", "metrics/run.json"]
    assert t["abstention"]["coverage_status"] == "mapped"
    assert t["abstention"]["test_refs"] == ["tests/scoring/test_qa.py::test_abs"]
    out = capsys.readouterr().out
    assert "12 tasks (6 measured, 1 mapped, 5 unmapped); complete: false" in out
    # one line per family, the headline family (no params.yaml here: conf's default, LongMemEval) first
    lines = out.splitlines()
    assert lines[1].startswith("  LongMemEval (headline): ") and lines[2].startswith("  LongMemEval-V2: ")


def test_cli_derive_defaults_to_every_family_s_run_manifest_and_metrics(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "metrics").mkdir()
    (tmp_path / "seed.json").write_text(json.dumps(helpers.seed()), encoding="utf-8")
    (tmp_path / "tests").mkdir()
    assert main(["inventory", "derive", "--seed", "seed.json", "--out", "a.json"]) == 0
    assert "no run manifest found (metrics/run.json, metrics/run-v2.json)" in capsys.readouterr().err
    # only the V2 family's manifest and metrics: its five tasks are measured, V1's are not
    v2 = manifest(path=DELETE, benchmark="LongMemEval-V2", **{"variant.name": "small"})
    (tmp_path / "metrics" / "run-v2.json").write_text(json.dumps(v2), encoding="utf-8")
    (tmp_path / "metrics" / "v2.json").write_text(json.dumps(v2_metrics()), encoding="utf-8")
    assert main(["inventory", "derive", "--seed", "seed.json", "--out", "b.json"]) == 0
    t = tasks(json.loads((tmp_path / "b.json").read_text(encoding="utf-8")))
    assert t["Static state recall"]["evidence_refs"] == [
        "metrics/v2.json#by_category.non_abstention_by_category.static.pct_correct", "metrics/run-v2.json"]
    assert t["multi-session"]["coverage_status"] == "unmapped"


def test_cli_derive_errors_are_one_message(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tests").mkdir()
    assert main(["inventory", "derive", "--seed", "missing.json", "--out", "o.json"]) == 2
    assert "missing.json" in capsys.readouterr().err
    (tmp_path / "seed.json").write_text("{not json", encoding="utf-8")
    assert main(["inventory", "derive", "--seed", "seed.json", "--out", "o.json"]) == 2
    assert "not valid JSON" in capsys.readouterr().err
    assert main(["inventory", "derive", "--out", "o.json"]) == 2
    assert "--seed" in capsys.readouterr().err
    assert main(["inventory", "derive", "--seed", "seed.json", "--out", "o.json", "--upstream-dir", "."]) == 2
    assert not (tmp_path / "o.json").exists()


def test_structure_and_text_of_the_seed_are_kept():
    seed = helpers.seed()
    inv = derive([manifest()], metrics={"metrics/detail/qa.json": qa_metrics(ALL_V1)},
                 markers={("longmemeval-v2", "Workflow knowledge"): ["tests/v/test_w.py::test_w"]})
    assert list(inv) == list(seed)
    for s, i in zip(seed["families"], inv["families"], strict=True):
        assert {k: v for k, v in i.items() if k not in ("tasks", "implementation")} == \
               {k: v for k, v in s.items() if k not in ("tasks", "implementation")}
        assert [(t["task"], t["selector"], t.get("classification")) for t in i["tasks"]] == \
               [(t["task"], t["selector"], t.get("classification")) for t in s["tasks"]]
        assert all(set(a) == set(b) for a, b in zip(i["tasks"], s["tasks"], strict=True))
    assert inv["families"][0]["implementation"]["adapter"] == "x"


V1_TASKS = [*V1_TYPES, "abstention"]


@settings(max_examples=80, deadline=None)
@given(n=st.fixed_dictionaries({t: st.integers(0, 3) for t in V1_TASKS}),
       marked=st.sets(st.sampled_from(V1_TASKS + V2_TASKS)), with_manifest=st.booleans())
def test_statuses_equal_a_naive_rule(n, marked, with_manifest):
    qa = qa_metrics({t: n[t] for t in V1_TYPES}, abstention_n=n["abstention"])
    fam = {t: "longmemeval" for t in V1_TASKS} | {t: "longmemeval-v2" for t in V2_TASKS}
    markers = {(fam[t], t): [f"tests/test_{i}.py::test_{i}"] for i, t in enumerate(sorted(marked))}
    inv = derive([manifest()] if with_manifest else [], metrics={"metrics/detail/qa.json": qa}, markers=markers)
    for name, task in tasks(inv).items():
        measured = with_manifest and n.get(name, 0) > 0
        want = "measured" if measured else ("mapped" if name in marked else "unmapped")
        assert task["coverage_status"] == want, name
        assert bool(task["evidence_refs"]) is measured
        assert task["test_refs"] == markers.get((fam[name], name), [])
    assert inv["complete"] is False   # no V2 run: never complete
