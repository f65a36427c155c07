"""mnemetric.longmemeval.compare: hand-computed cases (McNemar table, flips, refusal) and a naive re-implementation."""

from __future__ import annotations

import json
from fractions import Fraction
from math import comb

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemetric.errors import ConfigError, InputError
from mnemetric.longmemeval.judgments import JudgeCall, JudgeParams, JudgeTrace
from mnemetric.longmemeval.compare import (
    KEY_LABELS,
    NotComparable,
    RunKeys,
    compare_qa,
    compare_retrieval,
    differences,
    find_metric,
    flips,
    keys_from,
    regression,
)

TYPES = ("single-session-user", "single-session-preference", "single-session-assistant",
         "multi-session", "temporal-reasoning", "knowledge-update")


def _table():
    """12 questions, 2 per type. A right on q00..q05, B right on q03..q10 (q11 both wrong).

    Discordant: A only = q00, q01, q02 (3); B only = q06..q10 (5); D = 8.
    McNemar exact: 2 * (C(8,0)+C(8,1)+C(8,2)+C(8,3)) / 2^8 = 2 * 93 / 256 = 0.7265625.
    """
    ids = [f"q{i:02d}" for i in range(12)]
    types = {q: TYPES[i // 2] for i, q in enumerate(ids)}
    a = {q: i <= 5 for i, q in enumerate(ids)}
    b = {q: 3 <= i <= 10 for i, q in enumerate(ids)}
    return ids, types, a, b


def test_mcnemar_and_overall_on_a_small_table():
    _, types, a, b = _table()
    r = compare_qa(a, b, types, resamples=200)
    assert r["n"] == 12
    assert (r["overall"]["a_only"], r["overall"]["b_only"]) == (3, 5)
    assert r["overall"]["p_value"] == pytest.approx(2 * 93 / 256)
    assert r["overall"]["a_mean"] == pytest.approx(6 / 12) and r["overall"]["b_mean"] == pytest.approx(8 / 12)
    assert r["overall"]["diff"] == pytest.approx(2 / 12)
    assert r["overall"]["low"] <= r["overall"]["diff"] <= r["overall"]["high"]


def test_task_averaged_and_per_type_by_hand():
    _, types, a, b = _table()
    r = compare_qa(a, b, types, resamples=200)
    # per type (2 questions each), A: 1, 1, 1, 0, 0, 0 ; B: 0, 0.5, 1, 1, 1, 0.5
    a_types = [1, 1, 1, 0, 0, 0]
    b_types = [0, 0.5, 1, 1, 1, 0.5]
    for t, ea, eb in zip(TYPES, a_types, b_types):
        assert r["per_type"][t]["a_mean"] == pytest.approx(ea) and r["per_type"][t]["b_mean"] == pytest.approx(eb)
        assert r["per_type"][t]["n"] == 2
    assert r["task_averaged"]["a_mean"] == pytest.approx(3 / 6)
    assert r["task_averaged"]["b_mean"] == pytest.approx(4 / 6)
    assert r["task_averaged"]["p_value"] is None  # McNemar compares micro accuracies only
    # per type user: A right on both, B wrong on both -> the bootstrap says exactly [-1, -1]; the
    # score interval (primary) does not exclude 0 on two questions (McNemar p = 0.5)
    user = r["per_type"]["single-session-user"]
    assert (user["bootstrap_low"], user["bootstrap_high"]) == (-1.0, -1.0)
    assert user["low"] == -1.0 and user["high"] > 0 and user["p_value"] == 0.5


def test_flip_list():
    _, types, a, b = _table()
    got = [f.to_record() for f in flips(a, b, types)]
    expected = [
        {"question_id": "q00", "question_type": "single-session-user", "old": True, "new": False},
        {"question_id": "q01", "question_type": "single-session-user", "old": True, "new": False},
        {"question_id": "q02", "question_type": "single-session-preference", "old": True, "new": False},
        {"question_id": "q06", "question_type": "multi-session", "old": False, "new": True},
        {"question_id": "q07", "question_type": "multi-session", "old": False, "new": True},
        {"question_id": "q08", "question_type": "temporal-reasoning", "old": False, "new": True},
        {"question_id": "q09", "question_type": "temporal-reasoning", "old": False, "new": True},
        {"question_id": "q10", "question_type": "knowledge-update", "old": False, "new": True},
    ]
    assert sorted(got, key=lambda f: f["question_id"]) == sorted(expected, key=lambda f: f["question_id"])
    assert [f["question_type"] for f in got] == sorted(f["question_type"] for f in got)
    assert compare_qa(a, b, types, resamples=10)["flips"] == got


def test_questions_judged_on_one_side_only_are_named_and_left_out():
    _, types, a, b = _table()
    a = {**a, "extra_a": True}
    b = {k: v for k, v in b.items() if k != "q11"}
    r = compare_qa(a, b, {**types, "extra_a": "multi-session"}, resamples=10)
    assert r["only_in_a"] == ["extra_a", "q11"] and r["only_in_b"] == [] and r["n"] == 11


def test_a_question_without_a_type_is_named():
    _, types, a, b = _table()
    del types["q04"]
    with pytest.raises(InputError, match="q04.*question_type"):
        compare_qa(a, b, types, resamples=10)


def test_abstention_bucket_is_the_abs_questions():
    types = {"x_abs": "multi-session", "y_abs": "temporal-reasoning", "z": "multi-session"}
    r = compare_qa({"x_abs": True, "y_abs": False, "z": True}, {"x_abs": True, "y_abs": True, "z": False},
                   types, resamples=10)
    assert r["abstention"]["n"] == 2 and r["abstention"]["diff"] == pytest.approx(0.5)


def _keys(**over) -> RunKeys:
    base = {"variant_sha256": "aa", "suite_ids_sha256": "bb", "adapter_schema": "s/v3", "scoring_profile": "p1",
            "judge_models": ("m1",), "judge_prompt_set_sha256": "ps", "reader": '{"name": "r"}', "context_k": 10,
            "context_tokens": 6000}
    return RunKeys(**{**base, **over})


def test_refused_comparison_names_every_differing_field():
    a = _keys()
    b = _keys(variant_sha256="zz", suite_ids_sha256="yy", adapter_schema="s/v2", scoring_profile="p2",
              judge_models=("m2",), judge_prompt_set_sha256="qq", reader='{"name": "o"}', context_k=5,
              context_tokens=100)
    diffs = differences(a, b)
    assert [d.key for d in diffs] == list(KEY_LABELS)
    msg = str(NotComparable(diffs, "main", "exp"))
    for label in ("dataset sha256", "question set", "adapter schema", "scoring profile", "judge model",
                  "judge prompt-set sha256", "reader model and settings", "retrieval.context_k",
                  "retrieval.context_tokens"):
        assert label in msg
    assert "'s/v3' vs 's/v2'" in msg and "9 field(s) differ" in msg and "--force" in msg


def test_one_differing_field_only_that_one():
    diffs = differences(_keys(), _keys(adapter_schema="s/v2"))
    assert [(d.label, d.a, d.b) for d in diffs] == [("adapter schema", "s/v3", "s/v2")]
    assert differences(_keys(), _keys()) == []


def test_keys_from_params_metrics_and_judged_lines():
    params = {"variant": {"sha256": "fallback"}, "adapter": {"schema": "from-params"},
              "scoring": {"name": "prof"},
              "reader": {"_target_": "x.Reader", "name": "openai", "model": "gpt", "temperature": 0},
              "retrieval": {"context_k": 7, "context_tokens": 900}}
    data = {"variant": {"sha256": "verified"}, "suite": {"ids_sha256": "ids"}, "adapter": {"schema": "s/v3"}}
    call = JudgeCall("p", "src", "gpt-4o", JudgeParams(0, 10, 1), None, "r" * 64, "yes", 5, 1, None)
    traces = [("gpt-4o", JudgeTrace("upstream-gpt-4o", call)), ("gpt-4o", JudgeTrace("upstream-gpt-4o", call)),
              ("gpt-4o", None)]
    k = keys_from(params, data, traces)
    assert k == RunKeys("verified", "ids", "s/v3", "prof", ("gpt-4o",), "p",
                        '{"model": "gpt", "name": "openai", "temperature": 0}', 7, 900)
    assert RunKeys.from_record(json.loads(json.dumps(k.to_record())), file="f", line=1) == k
    lexical = keys_from(params, {}, [("lex", JudgeTrace.offline("lexical"))])
    assert lexical.variant_sha256 == "fallback" and lexical.suite_ids_sha256 is None
    assert lexical.judge_prompt_set_sha256 is None and lexical.adapter_schema == "from-params"
    with pytest.raises(InputError, match="context_k"):
        RunKeys.from_record({k: v for k, v in k.to_record().items() if k != "context_k"}, file="f", line=3)


def test_retrieval_excludes_abs_and_compares_turn_only_when_both_have_it():
    def q(s5, s10, t10=None):
        out = {"session": {"recall_all@5": s5, "recall_all@10": s10, "ndcg_any@5": s5, "ndcg_any@10": s10}}
        if t10 is not None:
            out["turn"] = {"recall_all@5": t10, "recall_all@10": t10, "ndcg_any@5": t10, "ndcg_any@10": t10}
        return out
    a = {"q1": q(1, 1, 1), "q2": q(0, 0, 0), "q3": q(0, 1, 0), "x_abs": q(1, 1, 1)}
    b = {"q1": q(1, 1, 1), "q2": q(1, 1, 1), "q3": q(1, 1, 1), "x_abs": q(0, 0, 0)}
    r = compare_retrieval(a, b, resamples=200)
    assert r["n"] == 3 and set(r["levels"]) == {"session", "turn"}
    s10 = r["levels"]["session"]["recall_all@10"]
    assert (s10["a_mean"], s10["b_mean"], s10["diff"]) == pytest.approx((2 / 3, 1.0, 1 / 3))
    assert r["levels"]["session"]["recall_all@5"]["diff"] == pytest.approx(2 / 3)
    b_session = {k: {"session": v["session"]} for k, v in b.items()}
    assert set(compare_retrieval(a, b_session, resamples=10)["levels"]) == {"session"}


def test_regression_gate_and_metric_names():
    result = {"qa": {"overall": {"n": 40, "diff": -0.1, "low": -0.2, "high": -0.01, "level": 0.95,
                                 "p_value": 0.03, "test": "mcnemar exact, two-sided", "a_only": 6, "b_only": 0},
                     "task_averaged": {"n": 40, "diff": -0.1, "low": -0.2, "high": 0.0, "level": 0.95,
                                       "p_value": None, "interval_method": "MOVER"},
                     "per_type": {}},
              "retrieval": {"levels": {"session": {"recall_all@10": {"n": 30, "diff": 0.2, "low": 0.1,
                                                                     "high": 0.3, "level": 0.95, "p_value": 0.001}}}}}
    reason = regression(result, "overall")
    assert reason is not None and "overall dropped" in reason and "p = 0.03 < alpha 0.05" in reason
    assert regression(result, "overall", alpha=0.01) is None          # --alpha 0.01: not below
    assert regression(result, "task_averaged") is None  # touching 0 is not significant
    below = {**result["qa"]["task_averaged"], "high": -0.001}
    assert "lies below 0" in regression({**result, "qa": {**result["qa"], "task_averaged": below}}, "task_averaged")
    # B better with a tiny p is not a regression
    assert regression(result, "recall_all@10") is None and regression(result, "session.recall_all@10") is None
    with pytest.raises(ConfigError, match=r"(?s)unknown metric 'recall_all@3'.*recall_all@10"):
        find_metric(result, "recall_all@3")


def test_four_one_way_flips_do_not_fail_the_gate():
    # the README's sample case: 43 questions, A right on 4 that B misses, nothing the other way.
    # McNemar p = 2 (1/2)^4 = 0.125: not significant, so no regression, although the paired bootstrap
    # interval lies below 0 (the old gate failed CI here at every n)
    ids = [f"q{i:02d}" for i in range(43)]
    types = {q: TYPES[i % 6] for i, q in enumerate(ids)}
    a = {q: i < 10 for i, q in enumerate(ids)}
    b = {q: 4 <= i < 10 for i, q in enumerate(ids)}
    r = compare_qa(a, b, types, resamples=500)
    overall = r["overall"]
    assert (overall["a_only"], overall["b_only"], overall["p_value"]) == (4, 0, 0.125)
    assert overall["bootstrap_high"] < 0                    # what the old gate read
    assert regression({"qa": r, "retrieval": {"levels": {}}}, "overall") is None
    assert overall["interval_method"].startswith("Tango") and overall["low"] < overall["diff"] < overall["high"]


def test_zero_discordant_pairs_give_a_non_degenerate_interval():
    ids = [f"q{i:02d}" for i in range(30)]
    types = {q: "single-session-preference" for q in ids}
    a = {q: i < 27 for i, q in enumerate(ids)}            # accuracy 0.9, identical runs
    rec = compare_qa(a, dict(a), types, resamples=200)["per_type"]["single-session-preference"]
    assert (rec["bootstrap_low"], rec["bootstrap_high"]) == (0.0, 0.0)   # the old, degenerate interval
    z2 = 1.959963984540054 ** 2
    assert (rec["low"], rec["high"]) == (pytest.approx(-z2 / (30 + z2)), pytest.approx(z2 / (30 + z2)))


def test_exploratory_rows_are_holm_adjusted():
    _, types, a, b = _table()
    r = compare_qa(a, b, types, resamples=20)
    assert r["primary"] == ["overall", "task_averaged"]
    block = r["exploratory"]
    tested = {t: rec["p_value"] for t, rec in r["per_type"].items()}
    assert block["adjustment"] == "holm" and block["family_size"] == len(tested) == 6 and block["alpha"] == 0.05
    assert block["familywise_rate_unadjusted"] == pytest.approx(1 - 0.95 ** 6)
    assert "26%" in block["note"]
    # Holm by hand: p sorted ascending, multiplied by 6, 5, ..., running max, capped at 1
    ps = sorted(tested.values())
    expected, running = [], 0.0
    for i, p in enumerate(ps):
        running = max(running, min(1.0, (6 - i) * p))
        expected.append(running)
    assert sorted(rec["p_holm"] for rec in r["per_type"].values()) == pytest.approx(expected)
    assert "p_holm" not in r["overall"]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.booleans(), st.sampled_from(TYPES)), min_size=1, max_size=30))
def test_against_a_naive_implementation(rows):
    ids = [f"q{i}" for i in range(len(rows))]
    a = {q: r[0] for q, r in zip(ids, rows)}
    b = {q: r[1] for q, r in zip(ids, rows)}
    types = {q: r[2] for q, r in zip(ids, rows)}
    r = compare_qa(a, b, types, resamples=20)
    n_b = sum(1 for x, y, _ in rows if x and not y)
    n_c = sum(1 for x, y, _ in rows if y and not x)
    d = n_b + n_c
    p = 1.0 if d == 0 else min(Fraction(1), Fraction(2 * sum(comb(d, i) for i in range(min(n_b, n_c) + 1)), 2 ** d))
    assert r["overall"]["p_value"] == pytest.approx(float(p))
    assert r["overall"]["diff"] == pytest.approx((n_c - n_b) / len(rows))
    assert len(r["flips"]) == d
    present = [t for t in TYPES if any(tt == t for *_, tt in rows)]
    if len(present) == len(TYPES):
        def macro(side):
            return sum(sum(row[side] for row in rows if row[2] == t) / sum(1 for row in rows if row[2] == t)
                       for t in TYPES) / len(TYPES)
        assert r["task_averaged"]["diff"] == pytest.approx(macro(1) - macro(0))
    else:
        assert r["task_averaged"]["diff"] is None


def test_upstream_protocol_worked_example_task_averaged_and_overall():
    """shared/docs/upstream-protocol.md 3.3: SSU [1,0,0], SSA [1], SSP [0], MS [1,1], TR [0,1], KU [1]
    -> task-averaged 3.8333/6 = 0.6389, overall 6/10; the second SSU entry _abs -> abstention 0 of 1."""
    rows = [("u1", "single-session-user", True), ("u2_abs", "single-session-user", False),
            ("u3", "single-session-user", False), ("a1", "single-session-assistant", True),
            ("p1", "single-session-preference", False), ("m1", "multi-session", True),
            ("m2", "multi-session", True), ("t1", "temporal-reasoning", False),
            ("t2", "temporal-reasoning", True), ("k1", "knowledge-update", True)]
    a = {q: lab for q, _, lab in rows}
    b = {q: False for q, _, _ in rows}
    types = {q: t for q, t, _ in rows}
    r = compare_qa(a, b, types, resamples=50)
    assert r["task_averaged"]["a_mean"] == pytest.approx((1 / 3 + 1 + 0 + 1 + 0.5 + 1) / 6)
    assert round(r["task_averaged"]["a_mean"], 4) == 0.6389
    assert r["overall"]["a_mean"] == pytest.approx(0.6) and r["overall"]["diff"] == pytest.approx(-0.6)
    assert r["abstention"]["n"] == 1 and r["abstention"]["a_mean"] == 0.0
    assert r["overall"]["p_value"] == pytest.approx(2 / 2 ** 6)  # b = 6, c = 0: 2 * (1/2)^6
