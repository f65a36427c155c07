"""``aggregated_metrics.json`` from per-question rows, exactly as the LongMemEval-V2 harness computes it.

Rules from upstream ``evaluation/harness.py`` (aggregate_metrics and the end of main, lines ~940-1000)
at be15ea6e995462f3391c1a610892df3f67dfa7bd; the code is ours. With S the scored rows in file (stream)
order, A ⊆ S the abstention problems (eval function llm_abstention_checker) and N = S \\ A:

* ``overall``: overall_full_set / _non_abstention_only / _abstention_only = mean of float(score) over S / N / A
  (None when empty), then count_all_questions = |S|, count_non_abstention = |N|, count_abstention = |A|.
* A *breakdown* of rows R: count n; pct_correct = #(score_bool ∧ ¬is_unknown)/n; pct_unknown = #is_unknown/n;
  pct_answered_wrong = (n − correct − unknown)/n — fractions in [0, 1] despite the names; all None when n = 0.
  ``non_abstention_by_category`` (static, dynamic, procedure, gotchas) breaks down N by category;
  ``abstention_by_category`` (static-abs, dynamic-abs, procedure-abs) breaks down A; so a non-abstention row
  in an ``-abs`` category is in neither. ``combined_abstention_by_category`` (static, dynamic, procedure)
  breaks down *all* rows whose category is in the pair; ``abstention_overall`` breaks down A.
* ``tokens``: prompt/completion sums of usage, total_tokens = prompt + completion sums (not usage.total_tokens),
  avg_* = sum / |S|. ``memory_context``: avg_original_tokens, avg_final_tokens (sums / |S|),
  num_truncated_sequences. ``memory_query`` and ``memory_post_query`` over the durations d: avg_seconds =
  (0.0 + d₁ + d₂ + …)/|S|, p50_seconds = sorted(d)[n // 2], p95_seconds = sorted(d)[min(n − 1, int(0.95·n))],
  max_seconds, total_seconds.
* ``completed_at_utc`` — upstream writes the wall clock here. We write it **only when the caller passes
  it**: our DVC outputs must be pure functions of their inputs, so by default the key is absent.
* ``shared_haystack``: every row (failed ones included: they are questions of the run) has the same ordered
  haystack_ids; then ``shared_haystack_ids`` = those ids.

An empty row list is an error (upstream refuses to aggregate no records).

Failed rows (``"failed": reason``, a question where upstream would have aborted) are **excluded** from
every number above, and listed in a separate block ``"mnemetric": {"failed_count", "failed_question_ids",
"failed_reasons", "rows_in_file", "upstream_equivalent": false}`` at the end. The block is present only when
at least one row failed, so a clean run has exactly upstream's layout. If every row failed there is nothing
to aggregate: an error.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from mnemetric.errors import InputError
from mnemetric.io import atomic_open
from mnemetric.longmemeval_v2.aggregated import AggregatedMetrics
from mnemetric.longmemeval_v2.categories import ABSTENTION_CATEGORIES, COMBINED_ABSTENTION_CATEGORY_PAIRS, NON_ABSTENTION_CATEGORIES
from mnemetric.longmemeval_v2.per_question import PerQuestionRow, read_per_question

UPSTREAM_FILE = "evaluation/harness.py"
UPSTREAM_SHA256 = "8c6d1bd124ce2caf8a4bdc8516ef1b54ffca98ea4c49b4e50355ee4207b55eb1"


def _mean_score(rows: Sequence[PerQuestionRow]) -> float | None:
    return sum(float(r.score) for r in rows) / len(rows) if rows else None


def breakdown(rows: Sequence[PerQuestionRow]) -> dict[str, Any]:
    """{count, pct_correct, pct_answered_wrong, pct_unknown} of ``rows`` (module docstring); None when empty."""
    n = len(rows)
    if n == 0:
        return {"count": 0, "pct_correct": None, "pct_answered_wrong": None, "pct_unknown": None}
    unknown = sum(1 for r in rows if r.is_unknown)
    correct = sum(1 for r in rows if r.score_bool and not r.is_unknown)
    return {"count": n, "pct_correct": correct / n, "pct_answered_wrong": (n - correct - unknown) / n,
            "pct_unknown": unknown / n}


def score_sections(rows: Sequence[PerQuestionRow]) -> dict[str, Any]:
    """The five score sections: overall and the four breakdown families (upstream aggregate_metrics)."""
    non_abst = [r for r in rows if not r.is_abstention_problem]
    abst = [r for r in rows if r.is_abstention_problem]
    overall = {
        "overall_full_set": _mean_score(rows),
        "overall_non_abstention_only": _mean_score(non_abst),
        "overall_abstention_only": _mean_score(abst),
        "count_all_questions": len(rows),
        "count_non_abstention": len(non_abst),
        "count_abstention": len(abst),
    }
    return {
        "overall": overall,
        "non_abstention_by_category": {c: breakdown([r for r in non_abst if r.category == c])
                                       for c in NON_ABSTENTION_CATEGORIES},
        "abstention_by_category": {c: breakdown([r for r in abst if r.category == c])
                                   for c in ABSTENTION_CATEGORIES},
        "combined_abstention_by_category": {c: breakdown([r for r in rows if r.category in pair])
                                            for c, pair in COMBINED_ABSTENTION_CATEGORY_PAIRS.items()},
        "abstention_overall": breakdown(abst),
    }


def _timing(durations: Sequence[float]) -> dict[str, Any]:
    total = 0.0
    for d in durations:
        total += d
    ordered = sorted(float(d) for d in durations)
    n = len(ordered)
    return {"avg_seconds": total / n, "p50_seconds": ordered[n // 2],
            "p95_seconds": ordered[min(n - 1, int(0.95 * n))], "max_seconds": ordered[-1],
            "total_seconds": total}


def cost_sections(rows: Sequence[PerQuestionRow]) -> dict[str, Any]:
    """tokens, memory_context, memory_query and memory_post_query over non-empty ``rows``."""
    n = len(rows)
    prompt = sum(r.usage.prompt_tokens for r in rows)
    completion = sum(r.usage.completion_tokens for r in rows)
    original = sum(r.memory_context_original_token_count for r in rows)
    final = sum(r.memory_context_token_count for r in rows)
    return {
        "tokens": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
                   "avg_prompt_tokens": prompt / n, "avg_completion_tokens": completion / n,
                   "avg_total_tokens": (prompt + completion) / n},
        "memory_context": {"avg_original_tokens": original / n, "avg_final_tokens": final / n,
                           "num_truncated_sequences": sum(int(r.memory_context_was_truncated) for r in rows)},
        "memory_query": _timing([r.memory_query_duration_seconds for r in rows]),
        "memory_post_query": _timing([r.memory_post_query_duration_seconds for r in rows]),
    }


def failed_block(rows: Sequence[PerQuestionRow]) -> dict[str, Any]:
    """The Mnemetric block that counts rows left out of the upstream aggregate (module docstring)."""
    failed = [r for r in rows if r.failed]
    return {
        "failed_count": len(failed),
        "failed_question_ids": [r.question_id for r in failed],
        "failed_reasons": {r.question_id: r.failed for r in failed},
        "rows_in_file": len(rows),
        "upstream_equivalent": not failed,
    }


def aggregate_metrics(rows: Sequence[PerQuestionRow], *, completed_at_utc: str | None = None,
                      file: str = "<per_question rows>") -> AggregatedMetrics:
    """The typed aggregated_metrics of ``rows`` (rules in the module docstring)."""
    if not rows:
        raise InputError(file, "<file>", "<rows>", "no per-question rows; upstream writes no aggregate for an "
                         "empty run", fix="aggregate a per_question.jsonl that has at least one row")
    scored = [r for r in rows if not r.failed]
    if not scored:
        raise InputError(file, "<file>", "failed", f"all {len(rows)} rows are marked failed; nothing to aggregate")
    out = score_sections(scored) | cost_sections(scored)
    if completed_at_utc is not None:
        out["completed_at_utc"] = completed_at_utc
    first = rows[0].haystack_ids
    shared = all(r.haystack_ids == first for r in rows[1:])
    out["shared_haystack"] = shared
    if shared:
        out["shared_haystack_ids"] = list(first)
    if len(scored) < len(rows):
        out["mnemetric"] = failed_block(rows)
    return AggregatedMetrics.from_record(out, file=file)


def aggregate(rows: Sequence[PerQuestionRow], *, completed_at_utc: str | None = None,
              file: str = "<per_question rows>") -> dict[str, Any]:
    """aggregated_metrics of ``rows`` as the JSON object written, in upstream's layout and key order
    (:meth:`AggregatedMetrics.to_record` of :func:`aggregate_metrics`)."""
    return aggregate_metrics(rows, completed_at_utc=completed_at_utc, file=file).to_record()


def aggregate_file(path: str | os.PathLike[str], *, completed_at_utc: str | None = None) -> AggregatedMetrics:
    """Read a per_question.jsonl (validated row by row) and aggregate it."""
    return aggregate_metrics(list(read_per_question(path)), completed_at_utc=completed_at_utc, file=str(path))


def upstream_json(obj: Any) -> str:
    """JSON text as upstream's save_json writes it: indent 2, ensure_ascii, one trailing newline."""
    return json.dumps(obj, indent=2, ensure_ascii=True) + "\n"


def write_upstream_json(path: str | os.PathLike[str], obj: Any) -> None:
    """Write :func:`upstream_json` of ``obj`` atomically (a crash leaves the old file or none)."""
    with atomic_open(path) as fh:
        fh.write(upstream_json(obj))
