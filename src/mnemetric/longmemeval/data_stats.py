"""What a dataset variant holds: counts per type, abstention, haystack sizes (pure)."""

from __future__ import annotations

from collections.abc import Iterable
from statistics import fmean
from typing import Any

from mnemetric.longmemeval.instance import QUESTION_TYPES


def haystack_stats(per_question: list[tuple[int, int]]) -> dict[str, Any]:
    """per_question: (sessions, turns) per haystack → mean/max of each (None when empty)."""
    sessions = [s for s, _ in per_question]
    turns = [t for _, t in per_question]
    return {
        "sessions": {"mean": fmean(sessions) if sessions else None, "max": max(sessions, default=None)},
        "turns": {"mean": fmean(turns) if turns else None, "max": max(turns, default=None)},
    }


def type_counts(types: Iterable[tuple[str, bool]]) -> dict[str, Any]:
    """(question_type, abstention) pairs → {total, abstention, per_type{six types}}."""
    per_type = dict.fromkeys(QUESTION_TYPES, 0)
    total = abstention = 0
    for qtype, abs_ in types:
        per_type[qtype] = per_type.get(qtype, 0) + 1
        total += 1
        abstention += bool(abs_)
    return {"total": total, "abstention": abstention, "per_type": per_type}
