"""metrics/qa.json (and `mnemetric score-qa`): aggregate a judged file against its reference.

Aggregation is print_qa_metrics.py's (scoring/qa.py); this module adds the provenance (judge
models, prompt-set sha256, official_equivalence), bootstrap intervals on every number (a
Mnemetric addition) and the run's cost.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..data.hypotheses import JudgedHypothesis
from .qa import bootstrap_ci, join_with_reference, judge_provenance, qa_metrics


def _interval(ci: list[float] | None) -> dict[str, float] | None:
    return {"low": ci[0], "high": ci[1]} if ci else None


def qa_report(judged: Sequence[JudgedHypothesis], ref_types: Mapping[str, str], *, judge: str,
              prompt_set_sha256: str | None, source_sha256: str | None, resamples: int, seed: int,
              allow_partial: bool = False, file: str = "<judged>") -> dict[str, Any]:
    items, coverage = join_with_reference(((j.question_id, j.label) for j in judged), ref_types,
                                          allow_partial, file=file)
    metrics = qa_metrics(items, resamples=resamples, seed=seed)
    for t, block in metrics["per_type"].items():
        block["ci95"] = _interval(block["ci95"])
    ci = bootstrap_ci(items, resamples, seed) if resamples > 0 and items else {}
    provenance = judge_provenance([j.model for j in judged], prompt_set_sha256, source_sha256)
    return {
        "judge": {"name": judge, "models": provenance["judge_models"], "prompt_set_sha256": prompt_set_sha256,
                  "source_sha256": source_sha256},
        "official_equivalence": provenance["official_equivalence"],
        "official_equivalence_reasons": provenance["reasons"],
        **metrics,
        "ci95": {key: _interval(ci.get(key)) for key in ("task_averaged", "overall", "abstention")},
        "bootstrap": {"resamples": resamples, "seed": seed, "level": 0.95,
                      "note": "percentile bootstrap over questions; a Mnemetric addition, not an upstream metric"},
        "coverage": coverage,
    }


def cost_block(answer_usage: Mapping[str, Any], judge_usage: Mapping[str, Any]) -> dict[str, Any]:
    """Requests sent, cache hits, tokens, dollars and seconds, per stage and in total."""
    keys = ("requests_sent", "cache_hits", "prompt_tokens", "completion_tokens", "usd", "seconds")
    per = {name: {k: u.get(k, 0) for k in keys} for name, u in (("answer", answer_usage), ("judge", judge_usage))}
    return per | {"total": {k: per["answer"][k] + per["judge"][k] for k in keys}}
