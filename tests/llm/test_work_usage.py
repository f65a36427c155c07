"""The cost of the work: order-independent sums, and the per-text split of embedding tokens."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemetric.llm import ModelPrice, WorkUsage
from mnemetric.llm.replies import apportion

PRICE = ModelPrice(2.5, 10.0)


def test_worked_example():
    work = WorkUsage()
    work.add("gpt-4o", "gpt-4o-2024-08-06", 100, 10, PRICE)
    work.add("gpt-4o", "gpt-4o-2024-08-06", 200, 20, PRICE, responses=2)
    work.add("local", "local", 5, 5, None)
    d = work.to_dict()
    # gpt-4o: 100 + 2*200 = 500 prompt, 10 + 2*20 = 50 completion → (500*2.5 + 50*10) / 1e6 = 0.00175
    assert d["per_model"]["gpt-4o"] == {"responses": 3, "prompt_tokens": 500, "completion_tokens": 50,
                                        "usd": pytest.approx(0.00175), "resolved_models": ["gpt-4o-2024-08-06"]}
    assert (d["responses"], d["prompt_tokens"], d["completion_tokens"]) == (4, 505, 55)
    assert d["usd"] == pytest.approx(0.00175) and d["unpriced_models"] == ["local"]


usage_items = st.lists(st.tuples(st.sampled_from(["a", "b"]), st.sampled_from(["a-1", "a-2", "b"]),
                                 st.integers(0, 10**6), st.integers(0, 10**5)), max_size=40)


@given(usage_items, st.randoms())
def test_the_same_responses_in_any_order_give_the_same_bytes(items, rnd):
    def total(seq):
        work = WorkUsage()
        for req, res, p, c in seq:
            work.add(req, res, p, c, PRICE)
        return work.to_dict()

    shuffled = list(items)
    rnd.shuffle(shuffled)
    assert total(items) == total(shuffled)  # exact equality: floats included
    exact = sum(Fraction(p) * Fraction(5, 2) + Fraction(c) * 10 for _, _, p, c in items) / 10**6
    assert total(items)["usd"] == pytest.approx(float(exact), rel=1e-12, abs=1e-15)


def test_apportion_worked_example():
    assert apportion(10, [1, 1, 2]) == [3, 2, 5]  # 2.5, 2.5, 5: the earlier half-token goes first
    assert apportion(7, [0, 0]) == [4, 3]  # no lengths: equal weights
    assert apportion(0, [3, 4]) == [0, 0] and apportion(5, []) == []


@given(st.integers(0, 10**6), st.lists(st.integers(0, 10**4), min_size=1, max_size=50))
def test_apportion_sums_to_the_total_and_stays_within_one_token_of_the_exact_share(total, weights):
    parts = apportion(total, weights)
    assert sum(parts) == total and all(p >= 0 for p in parts)
    w = weights if sum(weights) else [1] * len(weights)
    for part, weight in zip(parts, w):
        assert abs(Fraction(part) - Fraction(total * weight, sum(w))) < 1
