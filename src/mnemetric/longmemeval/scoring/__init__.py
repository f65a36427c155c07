"""Scoring: pure metric functions and aggregation (no I/O)."""

from mnemetric.longmemeval.scoring.retrieval import (
    DEFAULT_KS,
    evaluate_question,
    evaluate_question_historical,
    ndcg_any_at_k_upstream,
    ndcg_at_k_standard,
    recall_all_at_k,
    recall_any_at_k,
    recall_fraction_at_k,
)
from mnemetric.longmemeval.scoring.retrieval_averaging import (
    average_exclude_abs,
    average_exclude_abs_and_no_user_target,
)
from mnemetric.longmemeval.scoring.retrieval_profiles import PROFILES, RetrievalProfile, get_profile

__all__ = [
    "DEFAULT_KS",
    "PROFILES",
    "RetrievalProfile",
    "average_exclude_abs",
    "average_exclude_abs_and_no_user_target",
    "evaluate_question",
    "evaluate_question_historical",
    "get_profile",
    "ndcg_any_at_k_upstream",
    "ndcg_at_k_standard",
    "recall_all_at_k",
    "recall_any_at_k",
    "recall_fraction_at_k",
]
