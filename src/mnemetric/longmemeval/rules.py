"""LongMemEval (V1) rules, written once: abstention, question types, granularities, targets, the judge.

Every other V1 module takes these from here (no second spelling of "_abs" or of the type list).
Facts: shared/docs/upstream-protocol.md §1.2, §2.1, §3.2-3.3 (xiaowu0162/LongMemEval @ 9e0b455f).
"""

from __future__ import annotations

ABSTENTION_MARK = "_abs"
"""Upstream marks an abstention question by this substring of its question_id (never by its type)."""

QUESTION_TYPES: tuple[str, ...] = (
    "single-session-user", "single-session-assistant", "single-session-preference",
    "temporal-reasoning", "knowledge-update", "multi-session",
)
"""The six question types, in the order our files list them."""

UPSTREAM_PRINT_ORDER: tuple[str, ...] = (
    "single-session-user", "single-session-preference", "single-session-assistant",
    "multi-session", "temporal-reasoning", "knowledge-update",
)
"""The order print_qa_metrics.py reports the types in (metrics/qa.json keeps it)."""

PREFERENCE_TYPE = "single-session-preference"
"""Its gold "answer" is a rubric, not an answer."""

GRANULARITIES: tuple[str, ...] = ("session", "turn")

TARGET_MARK = "answer"
"""A corpus id containing this substring is a retrieval target (run_retrieval.py)."""
NO_ANSWER_MARK = "noans"
"""What TARGET_MARK becomes in the id of an answer session / turn without evidence."""

OFFICIAL_JUDGE_MODEL = "gpt-4o-2024-08-06"
OFFICIAL_JUDGE_PARAMS = {"temperature": 0, "max_tokens": 10, "n": 1}
"""Request parameters of upstream evaluate_qa.py; print_qa_metrics.py asserts the model id."""


def is_abstention(question_id: str) -> bool:
    """Upstream's rule: ``"_abs" in question_id``."""
    return ABSTENTION_MARK in question_id


def is_target(corpus_id: str) -> bool:
    """Upstream's rule: a corpus id containing "answer" is a target."""
    return TARGET_MARK in corpus_id
