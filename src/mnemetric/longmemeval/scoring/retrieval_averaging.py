"""LongMemEval (V1) retrieval averaging: the two upstream rules as named functions, and one mean.

Pure functions over per-question metrics ``{question_id: {level: {metric: value}}}``.
Upstream (xiaowu0162/LongMemEval @ 9e0b455f4ef0e2ab8f2e582289761153549043fc) averages in two
places with two rules, and both are kept, never one chosen by a flag:

* ``exclude_abs`` — ``src/evaluation/print_retrieval_metrics.py``: every question whose id does not
  contain "_abs" (questions without targets stay in: recall_all 1, ndcg 0);
* ``exclude_abs_and_no_user_target`` — ``src/retrieval/run_retrieval.py`` ``main()``: also drops the
  questions with no has_answer=true user turn.

mean = np.mean over the questions kept that have a value (``None`` values are left out; none left
-> ``None``, never NaN). Intervals come from :mod:`mnemetric.stats` (``bootstrap_mean``), not from
here. Written from docs/upstream-protocol.md section 2; no upstream code is copied.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mnemetric.longmemeval.rules import is_abstention

Metrics = dict[str, dict[str, float | None]]
"""Per-question result: level ("session" / "turn") -> metric name -> value."""


def split_at_k(name: str) -> tuple[str, int] | None:
    """A metric name ``<stem>@<k>`` (``recall_all@5``) as (stem, k); None for any other name
    (no ``@``, an empty stem, or a k that is not a whole number >= 0). The one parser of these names."""
    stem, sep, k = name.rpartition("@")
    if not sep or not stem or not k.isascii() or not k.isdigit():
        return None
    return stem, int(k)


def keeps_exclude_abs(question_id: str, has_user_target: bool | None = None) -> bool:
    """Rule ``exclude_abs`` (print_retrieval_metrics.py): kept iff "_abs" is not in the question id.

    ``has_user_target`` is accepted (and ignored) so both rules share one signature."""
    return not is_abstention(question_id)


def keeps_exclude_abs_and_no_user_target(question_id: str, has_user_target: bool) -> bool:
    """Rule ``exclude_abs_and_no_user_target`` (run_retrieval.py main()): kept iff not "_abs" AND
    the haystack has a has_answer=true user turn."""
    return not is_abstention(question_id) and bool(has_user_target)


@dataclass(frozen=True)
class AveragingRule:
    """One of upstream's two averaging rules: its key in metric files, what it says, who it keeps."""

    name: str
    description: str
    keeps: Callable[[str, bool], bool]
    """(question_id, has_user_target) -> whether the question is averaged."""


AVERAGING_RULES: tuple[AveragingRule, ...] = (
    AveragingRule("exclude_abs",
                  "print_retrieval_metrics.py: every question except _abs ones (no-target questions stay in)",
                  keeps_exclude_abs),
    AveragingRule("exclude_abs_and_no_user_target",
                  "run_retrieval.py main(): also drops questions without a has_answer=true user turn",
                  keeps_exclude_abs_and_no_user_target),
)
"""Both rules, in the order metric files list them."""


def average_over(per_question: Mapping[str, Metrics], kept: Sequence[str]) -> dict[str, Any]:
    """{"n": |kept|, "excluded": |per_question| - |kept|, <level>: {metric: mean over kept}}.

    Levels and metric names are those of every question in ``per_question`` (first-seen order),
    so a rule that keeps no question still lists each metric, as ``None``."""
    out: dict[str, Any] = {"n": len(kept), "excluded": len(per_question) - len(kept)}
    for level in _ordered_union(per_question[q] for q in per_question):
        names = _ordered_union(per_question[q].get(level, {}) for q in per_question)
        out[level] = {m: mean_present([per_question[q].get(level, {}).get(m) for q in kept]) for m in names}
    return out


def _ordered_union(mappings: Iterable[Mapping[str, Any]]) -> list[str]:
    seen: dict[str, None] = {}
    for m in mappings:
        seen.update(dict.fromkeys(m))
    return list(seen)


def mean_present(values: Sequence[float | None]) -> float | None:
    """np.mean over the non-None values (upstream averages with numpy); none left -> None."""
    present = [v for v in values if v is not None]
    if not present:
        return None
    return float(np.mean(np.asarray(present, dtype=np.float64)))


def average_exclude_abs(per_question: Mapping[str, Metrics]) -> dict[str, Any]:
    """Mean of every metric over questions whose question_id does not contain "_abs".

    Rule of src/evaluation/print_retrieval_metrics.py (xiaowu0162/LongMemEval @ 9e0b455f):
    questions without targets stay in (recall_all 1, ndcg 0). Returns
    {"n", "excluded", <level>: {metric: mean}}; a metric with no value -> None (never NaN).
    """
    return average_over(per_question, [q for q in per_question if keeps_exclude_abs(q)])


def average_exclude_abs_and_no_user_target(
    per_question: Mapping[str, Metrics], has_user_target: Mapping[str, bool]
) -> dict[str, Any]:
    """Mean over questions that are not "_abs" AND have a has_answer=true user turn.

    Rule of src/retrieval/run_retrieval.py main() (xiaowu0162/LongMemEval @ 9e0b455f).
    ``has_user_target`` maps question_id -> bool (see longmemeval.corpus.has_user_target); a missing
    question id raises KeyError. Same return shape as average_exclude_abs.
    """
    kept = [q for q in per_question if keeps_exclude_abs_and_no_user_target(q, has_user_target[q])]
    return average_over(per_question, kept)
