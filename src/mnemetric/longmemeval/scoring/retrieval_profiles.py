"""LongMemEval (V1) retrieval scoring profiles: a name, a per-question function, and what it claims.

``longmemeval-session-upstream-v1`` equals upstream (xiaowu0162/LongMemEval @ 9e0b455f,
src/retrieval/eval_utils.py) for the same ranking; ``mnemetric-historical`` is ours and says so
(its ``official_equivalence`` is false, with the reason: :class:`mnemetric.official.OfficialEquivalence`).
The kernels are in scoring/retrieval.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mnemetric.errors import ConfigError
from mnemetric.official import OfficialEquivalence
from mnemetric.longmemeval.scoring.retrieval import Metrics, evaluate_question, evaluate_question_historical



@dataclass(frozen=True)
class RetrievalProfile:
    """A named way of scoring retrieval: per-question function + what it claims."""

    name: str
    official_equivalence: OfficialEquivalence
    """Official only when the numbers equal upstream's for the same ranking; else the reason."""
    metric_names: tuple[str, ...]
    """Metric name stems; output keys are "<stem>@<k>"."""
    evaluate: Callable[..., Metrics]
    """(ranked_ids, corpus_ids, correct, ks, granularity) -> {level: {metric: value}}."""
    description: str


PROFILES: dict[str, RetrievalProfile] = {
    "longmemeval-session-upstream-v1": RetrievalProfile(
        name="longmemeval-session-upstream-v1",
        official_equivalence=OfficialEquivalence(True),
        metric_names=("recall_any", "recall_all", "ndcg_any"),
        evaluate=evaluate_question,
        description="Upstream eval_utils.py metrics, incl. the rank-1/rank-2 DCG quirk.",
    ),
    "mnemetric-historical": RetrievalProfile(
        name="mnemetric-historical",
        official_equivalence=OfficialEquivalence.of([
            "scoring profile 'mnemetric-historical' is not upstream's: share-of-targets recall and standard "
            "rel/log2(i+1) NDCG, not the recall_any/recall_all/ndcg_any of upstream src/retrieval/eval_utils.py "
            "@ 9e0b455f (profile longmemeval-session-upstream-v1)"]),
        metric_names=("recall", "ndcg"),
        evaluate=evaluate_question_historical,
        description="Share-of-targets recall and standard rel/log2(i+1) NDCG; not upstream.",
    ),
}


def get_profile(name: str) -> RetrievalProfile:
    """Look up a retrieval profile; an unknown name raises ConfigError listing the known ones."""
    try:
        return PROFILES[name]
    except KeyError:
        known = ", ".join(sorted(PROFILES))
        raise ConfigError(f"unknown retrieval profile {name!r}; known profiles: {known}") from None
