"""aggregated_metrics as the V2 harness computes it (upstream-v2-protocol.md §6): a hand-worked run of six
questions, percentile indices, failed rows, then random runs against a naive aggregator written here."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemetric.errors import InputError
from mnemetric.longmemeval_v2.aggregate import aggregate, aggregate_file, upstream_json, write_upstream_json
from mnemetric.longmemeval_v2.per_question import PerQuestionRow

from tests.longmemeval_v2.rows import TYPE_CATEGORY, row, write_rows

LAYOUT = ["overall", "non_abstention_by_category", "abstention_by_category", "combined_abstention_by_category",
          "abstention_overall", "tokens", "memory_context", "memory_query", "memory_post_query", "shared_haystack",
          "shared_haystack_ids"]


def typed(raws):
    return [PerQuestionRow.from_record(r, file="pq.jsonl", line=i + 1) for i, r in enumerate(raws)]


def six_rows():
    return [
        row("q1", "static-environment", correct=True, query=1.0, prompt=10, completion=1),
        row("q2", "static-environment", query=3.0, prompt=20, completion=2),
        row("q3", "dynamic-environment", unknown=True, query=2.0, prompt=30, completion=3),
        row("q4", "errors-gotchas", correct=True, query=0.5, prompt=40, completion=4),
        row("q5", "static-environment-abs", correct=True, query=4.0, prompt=50, completion=5),
        row("q6", "procedure-abs", unknown=True, query=10.0, post=0.25, prompt=60, completion=6,
            original=300, final=200),
    ]


def bd(count, correct, wrong, unknown):
    return {"count": count, "pct_correct": correct, "pct_answered_wrong": wrong, "pct_unknown": unknown}


NONE = bd(0, None, None, None)


def test_six_questions_by_hand():
    out = aggregate(typed(six_rows()))
    assert list(out) == LAYOUT
    assert out["overall"] == {"overall_full_set": 0.5, "overall_non_abstention_only": 0.5,
                              "overall_abstention_only": 0.5, "count_all_questions": 6,
                              "count_non_abstention": 4, "count_abstention": 2}
    assert out["non_abstention_by_category"] == {"static": bd(2, 0.5, 0.5, 0.0), "dynamic": bd(1, 0.0, 0.0, 1.0),
                                                 "procedure": NONE, "gotchas": bd(1, 1.0, 0.0, 0.0)}
    assert list(out["non_abstention_by_category"]) == ["static", "dynamic", "procedure", "gotchas"]
    assert out["abstention_by_category"] == {"static-abs": bd(1, 1.0, 0.0, 0.0), "dynamic-abs": NONE,
                                             "procedure-abs": bd(1, 0.0, 0.0, 1.0)}
    assert out["combined_abstention_by_category"] == {"static": bd(3, 2 / 3, 1 / 3, 0.0),
                                                      "dynamic": bd(1, 0.0, 0.0, 1.0),
                                                      "procedure": bd(1, 0.0, 0.0, 1.0)}
    assert out["abstention_overall"] == bd(2, 0.5, 0.0, 0.5)
    assert out["tokens"] == {"prompt_tokens": 210, "completion_tokens": 21, "total_tokens": 231,
                             "avg_prompt_tokens": 35.0, "avg_completion_tokens": 3.5, "avg_total_tokens": 38.5}
    assert out["memory_context"] == {"avg_original_tokens": 800 / 6, "avg_final_tokens": 700 / 6,
                                     "num_truncated_sequences": 1}
    assert out["memory_query"] == {"avg_seconds": 20.5 / 6, "p50_seconds": 3.0, "p95_seconds": 10.0,
                                   "max_seconds": 10.0, "total_seconds": 20.5}
    assert out["memory_post_query"] == {"avg_seconds": 0.25 / 6, "p50_seconds": 0.0, "p95_seconds": 0.25,
                                        "max_seconds": 0.25, "total_seconds": 0.25}
    assert out["shared_haystack"] is True and out["shared_haystack_ids"] == ["t1", "t2"]
    assert "completed_at_utc" not in out


def test_non_abstention_row_in_an_abs_category_counts_only_in_combined():
    out = aggregate(typed([row("a", "procedure-abs", abstention=False, correct=True), row("b", "procedure")]))
    assert out["non_abstention_by_category"]["procedure"] == bd(1, 0.0, 1.0, 0.0)
    assert out["abstention_by_category"]["procedure-abs"] == NONE
    assert out["combined_abstention_by_category"]["procedure"] == bd(2, 0.5, 0.5, 0.0)
    assert out["overall"]["overall_abstention_only"] is None and out["abstention_overall"] == NONE


@pytest.mark.parametrize("n, p50, p95", [(1, 1, 1), (2, 2, 2), (7, 4, 7), (20, 11, 20), (40, 21, 39),
                                         (100, 51, 96)])
def test_percentile_indices(n, p50, p95):
    durations = list(range(1, n + 1))
    random.Random(n).shuffle(durations)
    out = aggregate(typed([row(f"q{i}", query=float(d)) for i, d in enumerate(durations)]))
    assert (out["memory_query"]["p50_seconds"], out["memory_query"]["p95_seconds"]) == (p50, p95)
    assert out["memory_query"]["max_seconds"] == n


def test_completed_at_only_when_given_and_in_place():
    out = aggregate(typed(six_rows()), completed_at_utc="2026-06-20T10:00:00+00:00")
    assert list(out) == LAYOUT[:9] + ["completed_at_utc"] + LAYOUT[9:]
    assert out["completed_at_utc"] == "2026-06-20T10:00:00+00:00"


def test_unshared_haystacks_have_no_ids():
    out = aggregate(typed([row("a", haystack=("t1",)), row("b", haystack=("t1", "t2"))]))
    assert out["shared_haystack"] is False and "shared_haystack_ids" not in out
    assert aggregate(typed([row("a", haystack=("t2", "t1"))]))["shared_haystack_ids"] == ["t2", "t1"]


def test_failed_rows_are_left_out_and_counted_apart():
    raws = six_rows()
    failed = row("q7", "procedure", haystack=("t9",), failed="judge reply unparseable")
    failed |= {"score": None, "score_bool": None, "is_unknown": None}
    out = aggregate(typed(raws[:3] + [failed] + raws[3:]))
    clean = aggregate(typed(raws))
    assert out["mnemetric"] == {"failed_count": 1, "failed_question_ids": ["q7"],
                                "failed_reasons": {"q7": "judge reply unparseable"}, "rows_in_file": 7,
                                "upstream_equivalent": False}
    assert list(out)[-1] == "mnemetric"
    assert out["shared_haystack"] is False            # the failed question is still part of the run
    for key in LAYOUT[:9]:
        assert out[key] == clean[key], key
    assert "mnemetric" not in clean


def test_empty_and_all_failed_are_errors():
    with pytest.raises(InputError, match="no per-question rows"):
        aggregate([])
    with pytest.raises(InputError, match="all 1 rows are marked failed"):
        aggregate(typed([row("a", failed="reader returned no text")]))


def test_file_and_writer(tmp_path):
    path = write_rows(tmp_path / "per_question.jsonl", six_rows())
    out = aggregate_file(path).to_record()
    assert out["overall"]["count_all_questions"] == 6
    target = tmp_path / "sub" / "aggregated_metrics.json"
    write_upstream_json(target, {"a": "é", "b": [1, None]})
    assert target.read_text(encoding="utf-8") == '{\n  "a": "\\u00e9",\n  "b": [\n    1,\n    null\n  ]\n}\n'
    assert upstream_json(out) == json.dumps(out, indent=2, ensure_ascii=True) + "\n"
    assert not [p for p in target.parent.iterdir() if p.name.startswith(".")]  # no temporary left


# ------------------------------------------------------------------ naive aggregator on raw dicts

def naive(raws: list[dict]) -> dict:
    def part(rows):
        if not rows:
            return NONE
        n = len(rows)
        unk = len([r for r in rows if r["is_unknown"]])
        ok = len([r for r in rows if r["score_bool"] and not r["is_unknown"]])
        return bd(n, ok / n, (n - ok - unk) / n, unk / n)

    def mean(rows):
        return len([r for r in rows if r["score"] == 1.0]) / len(rows) if rows else None

    def timing(values):
        total = 0.0
        for v in values:
            total = total + v
        s = sorted(values)
        return {"avg_seconds": total / len(s), "p50_seconds": s[len(s) // 2],
                "p95_seconds": s[min(len(s) - 1, int(0.95 * len(s)))], "max_seconds": max(s),
                "total_seconds": total}

    ab = [r for r in raws if r["eval_function"].startswith("llm_abstention_checker")]
    na = [r for r in raws if r not in ab]
    n = len(raws)
    p = sum(r["usage"]["prompt_tokens"] for r in raws)
    c = sum(r["usage"]["completion_tokens"] for r in raws)
    out = {
        "overall": {"overall_full_set": mean(raws), "overall_non_abstention_only": mean(na),
                    "overall_abstention_only": mean(ab), "count_all_questions": n,
                    "count_non_abstention": len(na), "count_abstention": len(ab)},
        "non_abstention_by_category": {k: part([r for r in na if r["category"] == k])
                                       for k in ("static", "dynamic", "procedure", "gotchas")},
        "abstention_by_category": {k: part([r for r in ab if r["category"] == k])
                                   for k in ("static-abs", "dynamic-abs", "procedure-abs")},
        "combined_abstention_by_category": {k: part([r for r in raws if r["category"].removesuffix("-abs") == k])
                                            for k in ("static", "dynamic", "procedure")},
        "abstention_overall": part(ab),
        "tokens": {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c, "avg_prompt_tokens": p / n,
                   "avg_completion_tokens": c / n, "avg_total_tokens": (p + c) / n},
        "memory_context": {
            "avg_original_tokens": sum(r["memory_context_original_token_count"] for r in raws) / n,
            "avg_final_tokens": sum(r["memory_context_token_count"] for r in raws) / n,
            "num_truncated_sequences": len([r for r in raws if r["memory_context_was_truncated"]])},
        "memory_query": timing([r["memory_query_duration_seconds"] for r in raws]),
        "memory_post_query": timing([r["memory_post_query_duration_seconds"] for r in raws]),
    }
    shared = all(r["haystack_ids"] == raws[0]["haystack_ids"] for r in raws)
    out["shared_haystack"] = shared
    if shared:
        out["shared_haystack_ids"] = raws[0]["haystack_ids"]
    return out


@st.composite
def runs(draw):
    n = draw(st.integers(1, 30))
    seconds = st.floats(0, 500, allow_nan=False, allow_infinity=False)
    raws = []
    for i in range(n):
        qtype = draw(st.sampled_from(sorted(TYPE_CATEGORY)))
        original = draw(st.integers(0, 5000))
        raws.append(row(f"q{i}", qtype, correct=draw(st.booleans()), unknown=draw(st.booleans()),
                        abstention=qtype.endswith("-abs") and draw(st.booleans()), query=draw(seconds),
                        post=draw(seconds), prompt=draw(st.integers(0, 10**6)), completion=draw(st.integers(0, 999)),
                        original=original, final=draw(st.integers(0, original)),
                        haystack=draw(st.sampled_from([("t1",), ("t1", "t2")])), index=i))
    return raws


@settings(max_examples=300, deadline=None)
@given(runs())
@pytest.mark.task("longmemeval-v2", "Static state recall")
@pytest.mark.task("longmemeval-v2", "Dynamic state tracking")
@pytest.mark.task("longmemeval-v2", "Workflow knowledge")
@pytest.mark.task("longmemeval-v2", "Environment gotchas")
@pytest.mark.task("longmemeval-v2", "Premise awareness")
def test_random_runs_equal_naive(raws):
    assert aggregate(typed(raws)) == naive(raws)
