"""Retrieval metrics from a scored retrieval log: both averaging rules, per type, bootstrap CIs.

Pure: takes the :class:`~.scored_retrieval.ScoredRetrieval` that ``score_retrieval_log`` returns and
returns the metrics dict. The
averages are upstream's two rules (scoring/retrieval_averaging.py); the per-type breakdown and the intervals are
Mnemetric additions, labelled as such in the file.

Intervals: every retrieval number is a plain mean over questions (per rule, or per rule and type),
so its interval is a pooled percentile bootstrap of that mean (``mnemetric.stats.bootstrap_mean``,
the same draws as the intervals before it); each ``ci95`` entry names that method.

Two views: :func:`retrieval_metrics` is the detail (metrics/detail/retrieval.json);
:func:`retrieval_headline` the headline (metrics/retrieval.json): for each rule, n and the
recall_all@5/10 and ndcg_any@5/10 means (recall@5/10, ndcg@5/10 under the historical profile)
at both levels, no interval. :func:`retrieval_metric_files` builds the three files (headline,
detail, plot rows) with their names and provenance, for the stage and `mnemetric score-retrieval`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mnemetric.longmemeval.rules import QUESTION_TYPES
from mnemetric.longmemeval.scoring.retrieval_averaging import AVERAGING_RULES, average_over
from mnemetric.longmemeval.scoring.scored_retrieval import ScoredRetrieval
from mnemetric.stats import bootstrap_mean

BOOTSTRAP_METHOD = "percentile bootstrap of the mean over questions (pooled)"
BOOTSTRAP_NOTE = "percentile bootstrap of each mean over questions; a Mnemetric addition, not an upstream metric"
NAME_KEYS = ("profile", "official_equivalence", "memory", "variant", "suite", "granularity")
"""The keys both files start with (the headline holds these, then the rules)."""
HEADLINE_METRICS = ("recall_all", "ndcg_any", "recall", "ndcg")
HEADLINE_KS = (5, 10)
LEVELS = ("session", "turn")


def _block(per_question: Mapping[str, Any], kept: list[str], resamples: int, seed: int) -> dict[str, Any]:
    """Averages over ``kept`` plus a CI for each averaged number."""
    avg = average_over({q: per_question[q] for q in kept}, kept)
    avg.pop("excluded")
    ci: dict[str, Any] = {}
    for level, metrics in avg.items():
        if level == "n":
            continue
        ci[level] = {}
        for name in metrics:
            values = [v for q in kept if (v := per_question[q].get(level, {}).get(name)) is not None]
            res = bootstrap_mean(values, resamples, seed) if values and resamples > 0 else None
            ci[level][name] = ({"low": res.low, "high": res.high, "method": BOOTSTRAP_METHOD}
                               if res is not None and res.interval else None)
    return avg | {"ci95": ci}


def retrieval_metrics(scored: ScoredRetrieval, resamples: int, seed: int) -> dict[str, Any]:
    """Both averaging rules, each with per-question-type blocks; CIs on every averaged number."""
    per_q, questions = scored.per_question, scored.questions
    out: dict[str, Any] = {}
    for rule in AVERAGING_RULES:
        kept = [q for q in per_q if rule.keeps(q, questions[q].has_user_target)]
        block = {"rule": rule.description, **_block(per_q, kept, resamples, seed),
                 "excluded": len(per_q) - len(kept), "per_type": {}}
        for qtype in QUESTION_TYPES:
            of_type = [q for q in kept if questions[q].question_type == qtype]
            block["per_type"][qtype] = _block(per_q, of_type, resamples, seed) if of_type else {"n": 0}
        out[rule.name] = block
    return out


def retrieval_headline(detail: Mapping[str, Any]) -> dict[str, Any]:
    """Per rule: ``n`` and, per level present, the headline means (module docstring), in a fixed
    key order; no interval, no per-type block."""
    out: dict[str, Any] = {}
    for rule in (r.name for r in AVERAGING_RULES):
        block = detail[rule]
        out[rule] = {"n": block["n"]}
        for level in LEVELS:
            if level in block:
                out[rule][level] = {f"{m}@{k}": block[level][f"{m}@{k}"] for m in HEADLINE_METRICS
                                    for k in HEADLINE_KS if f"{m}@{k}" in block[level]}
    return out


def recall_curve(block: Mapping[str, Any], metric: str = "recall_all") -> list[dict[str, Any]]:
    """Rows {granularity, k, recall} of ``metric``@k for every level in ``block`` (session, then
    turn), for `dvc plots` (template recall_curve: recall against k, one line per granularity)."""
    rows = []
    for level in LEVELS:
        points = [(int(name.split("@")[1]), value) for name, value in block.get(level, {}).items()
                  if name.startswith(f"{metric}@") and value is not None]
        rows += [{"granularity": level, "k": k, "recall": v} for k, v in sorted(points)]
    return rows


@dataclass(frozen=True)
class RetrievalMetricFiles:
    """What a scored retrieval log gives: the three files, as JSON-ready values."""

    headline: dict[str, Any]
    """metrics/retrieval.json: NAME_KEYS, then per rule ``n`` and the headline means."""
    detail: dict[str, Any]
    """metrics/detail/retrieval.json: NAME_KEYS, memory_fingerprint, bootstrap, every mean per rule
    with intervals and per-type blocks (+ ``per_question`` and ``questions`` when asked for)."""
    plot: list[dict[str, Any]]
    """Rows {granularity, k, recall} of recall_all@k (recall@k under a non-upstream profile), rule exclude_abs."""


def retrieval_metric_files(scored: ScoredRetrieval, *, memory: str | None, variant: str | None,
                           suite: str | None, memory_fingerprint: str | None, resamples: int, seed: int,
                           per_question: bool = False) -> RetrievalMetricFiles:
    """The headline, detail and plot rows of a ``score_retrieval_log`` result, in their key order.

    ``per_question`` appends the per-question values (``per_question[qid][level][metric]``) and
    ``questions[qid] = {question_type, has_user_target}`` to the detail."""
    rules = retrieval_metrics(scored, resamples, seed)
    detail: dict[str, Any] = {
        "profile": scored.profile, "official_equivalence": scored.official_equivalence,
        "memory": memory, "variant": variant, "suite": suite, "memory_fingerprint": memory_fingerprint,
        "granularity": scored.granularity,
        "bootstrap": {"resamples": resamples, "seed": seed, "level": 0.95, "note": BOOTSTRAP_NOTE},
        **rules,
    }
    if per_question:
        record = scored.to_record()
        detail |= {"per_question": record["per_question"], "questions": record["questions"]}
    headline = {**{k: detail[k] for k in NAME_KEYS}, **retrieval_headline(rules)}
    metric = "recall_all" if scored.official_equivalence else "recall"
    return RetrievalMetricFiles(headline, detail, recall_curve(rules["exclude_abs"], metric))
