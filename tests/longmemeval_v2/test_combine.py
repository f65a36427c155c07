"""Combining web + enterprise aggregates as leaderboard/combine_aggregated_metrics.py (upstream-v2-protocol.md
§7): a hand-worked pair, upstream's validation errors, and a property: combining the aggregates of two row
sets equals aggregating their union (to float rounding) — an independent route to the same numbers."""

from __future__ import annotations

import copy
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemetric.errors import InputError
from mnemetric.longmemeval_v2.aggregate import aggregate
from mnemetric.longmemeval_v2.combine import combine_aggregates
from mnemetric.longmemeval_v2.per_question import PerQuestionRow

from tests.longmemeval_v2.rows import TYPE_CATEGORY, row
from tests.support.edits import set_at


def bd(count, correct, wrong, unknown):
    return {"count": count, "pct_correct": correct, "pct_answered_wrong": wrong, "pct_unknown": unknown}


def web():
    return {
        "overall": {"overall_full_set": 0.5, "overall_non_abstention_only": 0.625, "overall_abstention_only": 0.0,
                    "count_all_questions": 10, "count_non_abstention": 8, "count_abstention": 2},
        "non_abstention_by_category": {"static": bd(4, 0.5, 0.25, 0.25), "dynamic": bd(0, None, None, None)},
        "abstention_by_category": {"static-abs": bd(2, 0.0, 0.5, 0.5)},
        "combined_abstention_by_category": {"static": bd(6, 1 / 3, 1 / 3, 1 / 3)},
        "abstention_overall": bd(2, 0.0, 0.5, 0.5),
        "tokens": {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100, "avg_prompt_tokens": 100.0},
        "memory_context": {"avg_original_tokens": 200.0, "avg_final_tokens": 150.0, "num_truncated_sequences": 3},
        "memory_query": {"avg_seconds": 2.0, "p50_seconds": 1.0, "p95_seconds": 5.0, "max_seconds": 6.0,
                         "total_seconds": 20.0},
        "memory_post_query": {},
        "completed_at_utc": "2026-06-01T00:00:00+00:00",
    }


def enterprise():
    return {
        "overall": {"overall_full_set": 0.75, "overall_non_abstention_only": 0.75, "overall_abstention_only": None,
                    "count_all_questions": 4, "count_non_abstention": 4, "count_abstention": 0},
        "non_abstention_by_category": {"static": bd(2, 1.0, 0.0, 0.0), "procedure": bd(2, 0.5, 0.5, 0.0)},
        "abstention_by_category": {},
        "abstention_overall": bd(0, None, None, None),
        "tokens": {"prompt_tokens": None, "avg_prompt_tokens": 50.5, "completion_tokens": 40},
        "memory_context": {"avg_original_tokens": 100.0, "avg_final_tokens": None},
        "memory_query": {"avg_seconds": 0.5, "max_seconds": 1.5},
        "memory_post_query": {"total_seconds": 1.0, "max_seconds": None},
    }


def test_worked_pair():
    out = combine_aggregates(web(), enterprise(), sources=("runs/web/agg.json", "runs/ent/agg.json"))
    assert list(out) == ["overall", "abstention_overall", "tokens", "memory_context", "memory_query",
                         "memory_post_query", "combined_from", "non_abstention_by_category",
                         "abstention_by_category", "combined_abstention_by_category"]
    assert out["overall"] == {"overall_full_set": 8 / 14, "overall_non_abstention_only": 8 / 12,
                              "overall_abstention_only": 0.0, "count_all_questions": 14,
                              "count_non_abstention": 12, "count_abstention": 2}
    assert out["abstention_overall"] == bd(2, 0.0, 0.5, 0.5)                 # the zero-count side is skipped
    # prompt: 1000 + 50.5 x 4; completion 100 + 40; total: only web has one (1100); ints when integral
    assert out["tokens"] == {"prompt_tokens": 1202, "completion_tokens": 140, "total_tokens": 1100,
                             "avg_prompt_tokens": 1202 / 14, "avg_completion_tokens": 10.0,
                             "avg_total_tokens": 1100 / 14}
    assert type(out["tokens"]["prompt_tokens"]) is int
    assert out["memory_context"] == {"avg_original_tokens": 2400 / 14, "avg_final_tokens": 150.0,
                                     "num_truncated_sequences": 3}
    # p50/p95 dropped; enterprise total = 0.5 x 4
    assert out["memory_query"] == {"avg_seconds": 22 / 14, "max_seconds": 6.0, "total_seconds": 22.0}
    assert out["memory_post_query"] == {"avg_seconds": 1 / 14, "max_seconds": None, "total_seconds": 1.0}
    assert out["combined_from"] == ["runs/web/agg.json", "runs/ent/agg.json"]
    assert out["non_abstention_by_category"] == {"static": bd(6, 4 / 6, 1 / 6, 1 / 6),
                                                 "dynamic": bd(0, None, None, None),
                                                 "procedure": bd(2, 0.5, 0.5, 0.0)}
    assert out["abstention_by_category"] == {"static-abs": bd(2, 0.0, 0.5, 0.5)}
    # enterprise has no combined section: rebuilt from its non-abstention / abstention sections
    assert out["combined_abstention_by_category"] == {"static": bd(8, (2 + 2) / 8, 2 / 8, 2 / 8),
                                                      "procedure": bd(2, 0.5, 0.5, 0.0)}


def test_combined_at_only_when_given():
    out = combine_aggregates(web(), enterprise(), combined_at_utc="2026-06-20T00:00:00+00:00")
    keys = list(out)
    assert keys[keys.index("combined_from") + 1] == "combined_at_utc"
    assert out["combined_from"] == ["web", "enterprise"]


def test_token_fallbacks():
    a, b = web(), enterprise()
    del a["tokens"]["total_tokens"]
    out = combine_aggregates(a, b)["tokens"]
    assert out["total_tokens"] == 1202 + 140                                   # prompt + completion
    b["tokens"] = {"avg_completion_tokens": 2.6}
    out = combine_aggregates(a, b)["tokens"]
    assert out["completion_tokens"] == 100 + 2.6 * 4 and out["prompt_tokens"] == 1000
    a["tokens"], b["tokens"] = "not an object", None
    assert combine_aggregates(a, b)["tokens"] == {k: None for k in (
        "prompt_tokens", "completion_tokens", "total_tokens", "avg_prompt_tokens", "avg_completion_tokens",
        "avg_total_tokens")}


def test_only_a_missing_total_makes_upstream_read_the_average():
    b = enterprise()
    b["memory_query"] = {"total_seconds": 2.0, "avg_seconds": "ignored when a total exists"}
    assert combine_aggregates(web(), b)["memory_query"]["total_seconds"] == 22.0


def edit(side: dict, path: str, value):
    set_at(side, path, value)


@pytest.mark.parametrize("which, path, value, needle", [
    ("web", "overall", KeyError, "overall: field '<section>': missing overall"),
    ("ent", "overall", [1], "overall: field '<section>'"),
    ("web", "overall.count_all_questions", 0, "count_all_questions': must be a positive integer"),
    ("web", "overall.count_all_questions", KeyError, "must be a positive integer"),
    ("ent", "overall.count_all_questions", True, "count_all_questions': expected a non-negative integer"),
    ("ent", "overall.count_all_questions", 4.0, "expected a non-negative integer count, got 4.0"),
    ("ent", "overall.count_abstention", -1, "count_abstention': expected a non-negative integer"),
    ("web", "overall.overall_full_set", "0.5", "overall_full_set': expected a number, got '0.5'"),
    ("web", "overall.overall_full_set", False, "expected a number, got False"),
    ("ent", "overall.overall_abstention_only", "x", "expected a number"),      # checked even at count 0
    ("ent", "abstention_overall", None, "abstention_overall: field '<section>'"),
    ("web", "non_abstention_by_category.static", 5, "non_abstention_by_category.static: field '<section>'"),
    ("web", "non_abstention_by_category.static.count", 1.5, "field 'count'"),
    ("ent", "memory_context.num_truncated_sequences", -2, "num_truncated_sequences"),
    ("web", "memory_query.max_seconds", "6", "max_seconds"),
    ("ent", "tokens.avg_prompt_tokens", [50], "avg_prompt_tokens"),
])
def test_upstream_validation_errors(which, path, value, needle):
    sides = {"web": web(), "ent": enterprise()}
    edit(sides[which], path, value)
    with pytest.raises(InputError) as err:
        combine_aggregates(sides["web"], sides["ent"], sources=("w.json", "e.json"))
    assert needle in str(err.value)
    assert str(err.value).startswith("w.json" if which == "web" else "e.json")


def test_inputs_are_not_changed():
    a, b = web(), enterprise()
    before = copy.deepcopy((a, b))
    combine_aggregates(a, b)
    assert (a, b) == before


# ------------------------------------------------------------------ combine(agg(A), agg(B)) == agg(A ∪ B)

@st.composite
def row_sets(draw, prefix):
    out = []
    for i in range(draw(st.integers(1, 15))):
        qtype = draw(st.sampled_from(sorted(TYPE_CATEGORY)))
        original = draw(st.integers(0, 900))
        out.append(row(f"{prefix}{i}", qtype, correct=draw(st.booleans()), unknown=draw(st.booleans()),
                       abstention=qtype.endswith("-abs") and draw(st.booleans()),
                       query=draw(st.floats(0.001, 300)), post=draw(st.floats(0, 3)),
                       prompt=draw(st.integers(0, 9999)), completion=draw(st.integers(0, 99)),
                       original=original, final=draw(st.integers(0, original))))
    return out


def close(x, y) -> bool:
    if x is None or y is None or isinstance(x, (bool, str)):
        return x == y
    return math.isclose(x, y, rel_tol=1e-12, abs_tol=1e-12)


def typed(raws):
    return [PerQuestionRow.from_record(r, file="t", line=i + 1) for i, r in enumerate(raws)]


@settings(max_examples=200, deadline=None)
@given(row_sets("w"), row_sets("e"))
def test_combining_equals_aggregating_the_union(a, b):
    out = combine_aggregates(aggregate(typed(a)), aggregate(typed(b)))
    union = aggregate(typed(a + b))
    for section in ("overall", "abstention_overall", "tokens", "memory_context"):
        for key, value in union[section].items():
            assert close(out[section][key], value), (section, key)
    for section in ("non_abstention_by_category", "abstention_by_category", "combined_abstention_by_category"):
        assert list(out[section]) == list(union[section])
        for cat, values in union[section].items():
            assert all(close(out[section][cat][k], v) for k, v in values.items()), (section, cat)
    for section in ("memory_query", "memory_post_query"):
        assert set(out[section]) == {"avg_seconds", "max_seconds", "total_seconds"}
        assert all(close(out[section][k], union[section][k]) for k in out[section])
