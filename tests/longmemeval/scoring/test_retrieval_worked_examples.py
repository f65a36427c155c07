"""Worked examples A-E of docs/upstream-protocol.md section 2.4, plus edge cases, to 1e-12."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from mnemetric.errors import ConfigError
from mnemetric.longmemeval.scoring.retrieval import (
    effective_k,
    evaluate_question,
    evaluate_turn_as_session,
    ndcg_any_at_k_upstream,
    ndcg_at_k_standard,
    recall_all_at_k,
    recall_any_at_k,
    recall_fraction_at_k,
    turn_to_session_id,
)
from mnemetric.longmemeval.scoring.retrieval_averaging import (
    average_exclude_abs,
    average_exclude_abs_and_no_user_target,
)
from mnemetric.longmemeval.corpus import (
    has_user_target,
    haystack_corpus,
    session_corpus,
    targets,
    turn_corpus,
)
from mnemetric.longmemeval.scoring.retrieval_profiles import PROFILES, get_profile

TOL = 1e-12
SAMPLE = Path("/work/shared/data/upstream/longmemeval_oracle_2q_sample.json")


def triple(ranked, corpus, correct, k):
    return (
        recall_any_at_k(ranked, correct, k),
        recall_all_at_k(ranked, correct, k),
        ndcg_any_at_k_upstream(ranked, corpus, correct, k),
    )


def assert_triple(got, want):
    assert got[0] == want[0] and got[1] == want[1]
    assert got[2] == pytest.approx(want[2], abs=TOL)


# --- A ------------------------------------------------------------------------------------
A_IDS = ["s1", "answer_a", "s2", "answer_b", "s3"]
A_RANKED = [A_IDS[i] for i in [1, 0, 2, 3, 4]]
A_C = {"answer_a", "answer_b"}


@pytest.mark.parametrize(
    "k, want",
    [(1, (1, 0, 1.0)), (2, (1, 0, 0.5)), (3, (1, 0, 0.5)), (5, (1, 1, 0.75))],
)
def test_example_a(k, want):
    assert_triple(triple(A_RANKED, A_IDS, A_C, k), want)


def test_example_a_standard_ndcg_differs():
    assert ndcg_at_k_standard(A_RANKED, A_IDS, A_C, 5) == pytest.approx(
        (1 + 1 / math.log2(5)) / (1 + 1 / math.log2(3)), abs=TOL
    )
    assert ndcg_at_k_standard(A_RANKED, A_IDS, A_C, 5) == pytest.approx(0.8772, abs=5e-5)


# --- B ------------------------------------------------------------------------------------
B_IDS = ["x", "answer_a", "y"]


def test_example_b_rank2_quirk():
    ranked = ["x", "answer_a", "y"]
    assert_triple(triple(ranked, B_IDS, {"answer_a"}, 1), (0, 0, 0.0))
    assert_triple(triple(ranked, B_IDS, {"answer_a"}, 2), (1, 1, 1.0))
    assert ndcg_at_k_standard(ranked, B_IDS, {"answer_a"}, 2) == pytest.approx(1 / math.log2(3), abs=TOL)


def test_example_b_rank3():
    ranked = ["x", "y", "answer_a"]
    assert_triple(triple(ranked, B_IDS, {"answer_a"}, 3), (1, 1, 1 / math.log2(3)))
    assert ndcg_any_at_k_upstream(ranked, B_IDS, {"answer_a"}, 3) == pytest.approx(0.6309, abs=5e-5)


# --- C ------------------------------------------------------------------------------------
@pytest.mark.parametrize("k", [1, 3, 5, 10, 50])
def test_example_c_empty_targets(k):
    ids = ["s1", "s2", "s3"]
    assert triple(ids, ids, set(), k) == (0.0, 1.0, 0.0)


def test_empty_targets_in_evaluate_question_and_historical_is_none():
    ids = ["s1_1", "s2_1", "s2_3"]
    out = evaluate_question(ids, ids, targets(ids), ks=(1, 50), granularity="turn")
    for level in ("session", "turn"):
        assert out[level] == {
            "recall_any@1": 0.0, "recall_all@1": 1.0, "ndcg_any@1": 0.0,
            "recall_any@50": 0.0, "recall_all@50": 1.0, "ndcg_any@50": 0.0,
        }
    assert recall_fraction_at_k(ids, set(), 5) is None
    assert ndcg_at_k_standard(ids, ids, set(), 5) is None


# --- D ------------------------------------------------------------------------------------
def test_example_d_ideal_over_all_corpus_targets():
    corpus = ["answer_a"] + [f"f{i}" for i in range(10)] + ["answer_b", "answer_c"]
    ranked = list(corpus)  # answer_a at rank 1, the other targets at ranks 12 and 13
    correct = {"answer_a", "answer_b", "answer_c"}
    assert_triple(triple(ranked, corpus, correct, 10), (1, 0, 1 / (2 + 1 / math.log2(3))))
    assert ndcg_any_at_k_upstream(ranked, corpus, correct, 10) == pytest.approx(0.3801, abs=5e-5)


def test_duplicate_corpus_ids_count_in_ideal():
    corpus = ["answer_a", "answer_a", "x"]
    # one copy retrieved at rank 1, the duplicate ranked last: ideal [1, 1, 0] = 2
    assert ndcg_any_at_k_upstream(["answer_a", "x"], corpus, {"answer_a"}, 3) == pytest.approx(0.5, abs=TOL)
    assert recall_all_at_k(["answer_a", "x"], {"answer_a"}, 1) == 1.0


# --- E ------------------------------------------------------------------------------------
E_IDS = ["s1_1", "s1_3", "answer_a_1", "noans_a_3", "s2_1", "answer_b_1"]
E_RANKED = ["s1_1", "s1_3", "answer_a_1", "s2_1", "noans_a_3", "answer_b_1"]
E_C = targets(E_IDS)


def test_example_e_targets():
    assert E_C == {"answer_a_1", "answer_b_1"}


def test_example_e_turn_level():
    assert_triple(triple(E_RANKED, E_IDS, E_C, 2), (0, 0, 0.0))
    assert_triple(triple(E_RANKED, E_IDS, E_C, 3), (1, 0, (1 / math.log2(3)) / 2))


def test_example_e_session_level():
    stripped = [turn_to_session_id(x) for x in E_RANKED]
    assert effective_k(stripped, 2, len(E_IDS)) == 3
    got = evaluate_turn_as_session(E_RANKED, E_IDS, E_C, 2)
    assert got["recall_any@2"] == 1.0 and got["recall_all@2"] == 0.0
    assert got["ndcg_any@2"] == pytest.approx(0.31546487678572877, abs=TOL)
    assert got["ndcg_any@2"] == pytest.approx(0.3155, abs=5e-5)


def test_example_e_evaluate_question_layout():
    out = evaluate_question(E_RANKED, E_IDS, E_C, ks=(2, 3), granularity="turn")
    assert set(out) == {"session", "turn"}
    assert list(out["turn"]) == ["recall_any@2", "recall_all@2", "ndcg_any@2", "recall_any@3", "recall_all@3", "ndcg_any@3"]
    assert out["session"]["ndcg_any@2"] == pytest.approx(0.3155, abs=5e-5)
    session_only = evaluate_question(["answer_a", "x"], ["x", "answer_a"], {"answer_a"}, granularity="session")
    assert set(session_only) == {"session"}
    assert len(session_only["session"]) == 18


# --- cutoffs ------------------------------------------------------------------------------
def test_k_larger_than_corpus():
    assert_triple(triple(A_RANKED, A_IDS, A_C, 50), (1, 1, 0.75))
    assert effective_k(["a", "a", "b"], 5, 3) == 5
    got = evaluate_turn_as_session(E_RANKED, E_IDS, E_C, 50)
    assert got == {"recall_any@50": 1.0, "recall_all@50": 1.0, "ndcg_any@50": pytest.approx(
        (1 / math.log2(3) + 1 / math.log2(6)) / 2, abs=TOL)}


def test_effective_k_examples():
    assert effective_k(["a", "b", "c"], 2) == 2
    assert effective_k(["a", "a", "a", "b"], 2) == 4
    assert effective_k(["a", "a", "a"], 2) == 3


def test_bad_arguments():
    with pytest.raises(ValueError):
        turn_to_session_id("answer_a")
    with pytest.raises(ValueError):
        evaluate_question(E_RANKED, E_IDS, E_C, granularity="round")
    with pytest.raises(ValueError):
        evaluate_question(E_RANKED, E_IDS, E_C, ks=(0,))


# --- corpus rules -------------------------------------------------------------------------
def test_session_corpus_rules():
    turns = [("assistant", "hi", False), ("user", "a", False), ("assistant", "b", True), ("user", "c", False)]
    assert session_corpus("answer_ultrachat_446979", turns) == ("noans_ultrachat_446979", "a c")
    turns[1] = ("user", "a", True)
    assert session_corpus("answer_x_1", turns) == ("answer_x_1", "a c")
    assert session_corpus("sharegpt_1", [("user", "q", None)]) == ("sharegpt_1", "q")


def test_turn_corpus_rules():
    turns = [("user", "u1", False), ("assistant", "a1", False), ("user", "u2", True), ("user", "u3", None)]
    assert turn_corpus("answer_x", turns) == [("noans_x_1", "u1"), ("answer_x_3", "u2"), ("noans_x_4", "u3")]
    assert turn_corpus("s9", [("assistant", "a", None), ("user", "u", None)]) == [("s9_2", "u")]


def test_has_user_target_ignores_assistant_evidence():
    assert not has_user_target([[("user", "u", False), ("assistant", "a", True)]])
    assert has_user_target([[("user", "u", None)], [("assistant", "a", False), ("user", "v", True)]])


# --- averaging ----------------------------------------------------------------------------
PER_Q = {
    "q1": {"session": {"recall_all@5": 1.0, "ndcg_any@5": 0.5}},
    "q2": {"session": {"recall_all@5": 0.0, "ndcg_any@5": 0.25}},
    "q3_abs": {"session": {"recall_all@5": 0.0, "ndcg_any@5": 0.0}},
    "q4": {"session": {"recall_all@5": 1.0, "ndcg_any@5": 0.0}},
}


def test_average_rules():
    a = average_exclude_abs(PER_Q)
    assert a["n"] == 3 and a["excluded"] == 1
    assert a["session"]["recall_all@5"] == pytest.approx(2 / 3, abs=TOL)
    assert a["session"]["ndcg_any@5"] == pytest.approx(0.25, abs=TOL)
    b = average_exclude_abs_and_no_user_target(PER_Q, {"q1": True, "q2": True, "q3_abs": True, "q4": False})
    assert b["n"] == 2 and b["excluded"] == 2
    assert b["session"] == {"recall_all@5": 0.5, "ndcg_any@5": 0.375}


def test_average_empty_is_none():
    assert average_exclude_abs({}) == {"n": 0, "excluded": 0}
    only_abs = average_exclude_abs({"x_abs": {"session": {"ndcg_any@1": 1.0}}})
    assert only_abs == {"n": 0, "excluded": 1, "session": {"ndcg_any@1": None}}


# --- bootstrap ----------------------------------------------------------------------------
def test_the_retrieval_interval_is_the_stats_bootstrap():
    from mnemetric.stats import bootstrap_mean

    assert bootstrap_mean([], 100, 0).interval is None
    assert bootstrap_mean([0.5, 0.5], 50, 1).interval == (0.5, 0.5)
    vals = [0.0, 1.0] * 20
    lo, hi = bootstrap_mean(vals, 2000, 7).interval
    assert lo < 0.5 < hi and bootstrap_mean(vals, 2000, 7).interval == (lo, hi)


# --- profiles -----------------------------------------------------------------------------
def test_profiles_registry():
    assert PROFILES["longmemeval-session-upstream-v1"].official_equivalence is True
    assert PROFILES["mnemetric-historical"].official_equivalence is False
    hist = get_profile("mnemetric-historical").evaluate(E_RANKED, E_IDS, E_C, (3,), "turn")
    assert set(hist["turn"]) == {"recall@3", "ndcg@3"}
    assert hist["turn"]["recall@3"] == 0.5
    with pytest.raises(ConfigError, match="longmemeval-session-upstream-v1.*mnemetric-historical"):
        get_profile("nope")


# --- real sample (skipped when absent) ----------------------------------------------------
def _sample():
    if not SAMPLE.exists():
        pytest.skip(f"{SAMPLE} not present")
    data = json.loads(SAMPLE.read_text(encoding="utf-8"))
    out = {}
    for inst in data:
        sessions = [[(t["role"], t["content"], t.get("has_answer")) for t in s] for s in inst["haystack_sessions"]]
        out[inst["question_id"]] = (inst["haystack_session_ids"], sessions)
    return out


def test_real_sample_session_corpus():
    sample = _sample()
    ids_q1 = [c for c, _ in haystack_corpus(*sample["6a1eabeb"], "session")]
    assert ids_q1 == ["answer_a25d4a91_1", "answer_a25d4a91_2"]
    assert "answer_a25d4a91_1" in targets(ids_q1)
    ids_q2 = [c for c, _ in haystack_corpus(*sample["gpt4_70e84552_abs"], "session")]
    assert ids_q2 == ["answer_b3070ec4_abs_1", "noans_b3070ec4_abs_2"]
    assert targets(ids_q2) == {"answer_b3070ec4_abs_1"}


def test_real_sample_turn_corpus():
    sample = _sample()
    ids_q1 = [c for c, _ in haystack_corpus(*sample["6a1eabeb"], "turn")]
    assert len(ids_q1) == 12
    assert all(int(c.rsplit("_", 1)[1]) % 2 == 1 for c in ids_q1)
    assert targets(ids_q1) == {"answer_a25d4a91_1_5", "answer_a25d4a91_2_1"}
    assert "noans_a25d4a91_1_1" in ids_q1
    ids_q2 = [c for c, _ in haystack_corpus(*sample["gpt4_70e84552_abs"], "turn")]
    assert targets(ids_q2) == {"answer_b3070ec4_abs_1_1"}
    assert all(has_user_target(s) for _, s in sample.values())
