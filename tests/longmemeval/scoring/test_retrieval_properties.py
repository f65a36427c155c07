"""Property tests: the library against a deliberately naive second implementation (loops, math.log2).

The naive code below is written from docs/upstream-protocol.md section 2 only, independently of
src/mnemetric/longmemeval/scoring/retrieval.py and longmemeval/corpus.py, and must agree to 1e-12 on random corpora and rankings.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemetric.longmemeval.scoring.retrieval import (
    effective_k,
    evaluate_question,
    evaluate_question_historical,
    ndcg_any_at_k_upstream,
    ndcg_at_k_standard,
    recall_all_at_k,
    recall_any_at_k,
    recall_fraction_at_k,
)
from mnemetric.longmemeval.corpus import haystack_corpus, targets

TOL = 1e-12
KS = (1, 2, 3, 5, 10, 30, 50)
SETTINGS = settings(max_examples=300, deadline=None)


# ---------------------------------------------------------------- naive reference ----------
def naive_any(ranked, correct, k):
    for c in correct:
        for x in ranked[:k]:
            if x == c:
                return 1.0
    return 0.0


def naive_all(ranked, correct, k):
    for c in correct:
        if c not in ranked[:k]:
            return 0.0
    return 1.0


def naive_dcg(rels, k):
    total = 0.0
    for i in range(1, min(k, len(rels)) + 1):
        weight = 1.0 if i == 1 else 1.0 / math.log2(i)
        total += rels[i - 1] * weight
    return total


def naive_ndcg(ranked, corpus, correct, k):
    rels = [1 if x in correct else 0 for x in ranked]
    ideal_rels = sorted([1 if x in correct else 0 for x in corpus], reverse=True)
    ideal = naive_dcg(ideal_rels, k)
    return 0.0 if ideal == 0 else naive_dcg(rels, k) / ideal


def naive_strip(turn_id):
    parts = turn_id.split("_")
    return "_".join(parts[:-1])


def naive_effective_k(ranked_sessions, k):
    kp = k
    while kp <= len(ranked_sessions) and len(set(ranked_sessions[:kp])) < k:
        kp += 1
    return kp


def naive_session_metrics(ranked, corpus, correct, k):
    r = [naive_strip(x) for x in ranked]
    c = [naive_strip(x) for x in corpus]
    g = {naive_strip(x) for x in correct}
    kp = naive_effective_k(r, k)
    return naive_any(r, g, kp), naive_all(r, g, kp), naive_ndcg(r, c, g, kp)


def naive_turn_ids(session_ids, sessions):
    ids = []
    for sid, turns in zip(session_ids, sessions):
        for pos in range(len(turns)):
            role, _, has_answer = turns[pos]
            if role == "user":
                name = sid + "_" + str(pos + 1)
                if "answer" in sid and has_answer != True:  # noqa: E712 - literal rule
                    name = name.replace("answer", "noans")
                ids.append(name)
    return ids


def naive_session_ids(session_ids, sessions):
    ids = []
    for sid, turns in zip(session_ids, sessions):
        found = False
        for role, _, has_answer in turns:
            if role == "user" and has_answer == True:  # noqa: E712
                found = True
        ids.append(sid.replace("answer", "noans") if "answer" in sid and not found else sid)
    return ids


# ---------------------------------------------------------------- strategies ---------------
ALPHABET = ["answer_a", "answer_b", "answer_c", "x", "y", "z", "noans_a"]


@st.composite
def flat_case(draw):
    corpus = draw(st.lists(st.sampled_from(ALPHABET), min_size=0, max_size=14))
    order = draw(st.permutations(range(len(corpus))))
    ranked = [corpus[i] for i in order]
    correct = set(draw(st.lists(st.sampled_from(ALPHABET), max_size=4)))
    return corpus, ranked, correct


turn_st = st.tuples(
    st.sampled_from(["user", "assistant"]), st.just("text"), st.sampled_from([None, True, False])
)


@st.composite
def haystack(draw):
    n = draw(st.integers(0, 6))
    prefixes = ["answer_", "answer_ultrachat_", "sharegpt_", "", "ultrachat_"]
    session_ids = [draw(st.sampled_from(prefixes)) + f"{i}" + draw(st.sampled_from(["", "_1", "_abs_2"])) for i in range(n)]
    sessions = [draw(st.lists(turn_st, max_size=7)) for _ in range(n)]
    return session_ids, sessions


# ---------------------------------------------------------------- properties ---------------
@SETTINGS
@given(flat_case(), st.integers(1, 20))
def test_kernels_match_naive(case, k):
    corpus, ranked, correct = case
    assert recall_any_at_k(ranked, correct, k) == naive_any(ranked, correct, k)
    assert recall_all_at_k(ranked, correct, k) == naive_all(ranked, correct, k)
    assert ndcg_any_at_k_upstream(ranked, corpus, correct, k) == pytest.approx(
        naive_ndcg(ranked, corpus, correct, k), abs=TOL
    )


@SETTINGS
@given(flat_case(), st.integers(1, 20))
def test_historical_matches_naive(case, k):
    corpus, ranked, correct = case
    frac = recall_fraction_at_k(ranked, correct, k)
    if not correct:
        assert frac is None
    else:
        assert frac == pytest.approx(sum(1 for c in correct if c in ranked[:k]) / len(correct), abs=TOL)
    rel = [1 if x in correct else 0 for x in ranked]
    ideal_rel = sorted([1 if x in correct else 0 for x in corpus], reverse=True)
    dcg = sum(rel[i] / math.log2(i + 2) for i in range(min(k, len(rel))))
    ideal = sum(ideal_rel[i] / math.log2(i + 2) for i in range(min(k, len(ideal_rel))))
    got = ndcg_at_k_standard(ranked, corpus, correct, k)
    assert got is None if ideal == 0 else got == pytest.approx(dcg / ideal, abs=TOL)


@SETTINGS
@given(haystack())
def test_corpus_rules_match_naive(h):
    session_ids, sessions = h
    assert [c for c, _ in haystack_corpus(session_ids, sessions, "turn")] == naive_turn_ids(session_ids, sessions)
    assert [c for c, _ in haystack_corpus(session_ids, sessions, "session")] == naive_session_ids(session_ids, sessions)


@SETTINGS
@given(haystack(), st.data())
def test_turn_granularity_matches_naive(h, data):
    corpus = naive_turn_ids(*h)
    ranked = [corpus[i] for i in data.draw(st.permutations(range(len(corpus))))]
    correct = targets(corpus)
    out = evaluate_question(ranked, corpus, correct, ks=KS, granularity="turn")
    for k in KS:
        want_turn = (naive_any(ranked, correct, k), naive_all(ranked, correct, k), naive_ndcg(ranked, corpus, correct, k))
        want_sess = naive_session_metrics(ranked, corpus, correct, k)
        for level, want in (("turn", want_turn), ("session", want_sess)):
            got = out[level]
            assert got[f"recall_any@{k}"] == want[0]
            assert got[f"recall_all@{k}"] == want[1]
            assert got[f"ndcg_any@{k}"] == pytest.approx(want[2], abs=TOL)


@SETTINGS
@given(haystack(), st.data())
def test_session_granularity_matches_naive(h, data):
    corpus = naive_session_ids(*h)
    ranked = [corpus[i] for i in data.draw(st.permutations(range(len(corpus))))]
    correct = {c for c in corpus if "answer" in c}
    out = evaluate_question(ranked, corpus, correct, ks=KS, granularity="session")
    assert set(out) == {"session"}
    for k in KS:
        assert out["session"][f"recall_any@{k}"] == naive_any(ranked, correct, k)
        assert out["session"][f"recall_all@{k}"] == naive_all(ranked, correct, k)
        assert out["session"][f"ndcg_any@{k}"] == pytest.approx(naive_ndcg(ranked, corpus, correct, k), abs=TOL)


@SETTINGS
@given(st.lists(st.sampled_from("abcde"), max_size=12), st.integers(1, 8))
def test_effective_k_matches_naive_when_reached(ranked, k):
    got = effective_k(ranked, k)
    want = naive_effective_k(ranked, k)
    assert got >= k
    if want <= len(ranked):
        assert got == want
    else:  # never k distinct: any cutoff past the end is equivalent
        assert got >= len(ranked)


@SETTINGS
@given(haystack(), st.data())
def test_historical_turn_levels_bounded(h, data):
    corpus = naive_turn_ids(*h)
    ranked = [corpus[i] for i in data.draw(st.permutations(range(len(corpus))))]
    out = evaluate_question_historical(ranked, corpus, targets(corpus), ks=KS, granularity="turn")
    for level in ("turn", "session"):
        for value in out[level].values():
            assert value is None or 0.0 <= value <= 1.0 + TOL
