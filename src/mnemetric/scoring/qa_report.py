"""metrics/qa.json (and `mnemetric score-qa`): aggregate a judged file against its reference.

Aggregation is print_qa_metrics.py's (scoring/qa.py); this module adds the provenance (judge
models, prompt-set sha256, official_equivalence), bootstrap intervals on every number (a
Mnemetric addition) and the run's cost.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..data.hypotheses import JudgedHypothesis
from .qa import bootstrap_ci, check_items, join_with_reference, judge_provenance, qa_metrics


def _interval(ci: list[float] | None) -> dict[str, float] | None:
    return {"low": ci[0], "high": ci[1]} if ci else None


def judge_traces(traces: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """What the judged lines' ``mnemetric_judge`` fields say about how they were judged (empty
    mappings for files judged elsewhere, e.g. by upstream's own script)."""
    first = traces[0] if traces else {}
    return {
        "judge": first.get("judge", "unknown"),
        "prompt_set_sha256": first.get("prompt_set_sha256"),
        "source_sha256": first.get("source_sha256"),
        "prompt_set_sha256s": sorted({t.get("prompt_set_sha256") for t in traces if t.get("prompt_set_sha256")}),
        "requested_models": [t["requested_model"] for t in traces if "requested_model" in t],
        "params": [t["params"] for t in traces if "params" in t],
        "endpoints": sorted({t["endpoint"] for t in traces if t.get("endpoint")}),
    }


def qa_report(judged: Sequence[JudgedHypothesis], ref_types: Mapping[str, str], *, judge: str,
              traces: Mapping[str, Any], resamples: int, seed: int, allow_partial: bool = False,
              file: str = "<judged>", reference_file: str = "<reference>") -> dict[str, Any]:
    """The metrics/qa.json payload for judged labels joined with the reference's question types."""
    items, coverage = join_with_reference(((j.question_id, j.label) for j in judged), ref_types,
                                          allow_partial, file=file)
    check_items(items, reference_file)  # an unknown question_type is the reference's fault
    metrics = qa_metrics(items, resamples=resamples, seed=seed)
    for t, block in metrics["per_type"].items():
        block["ci95"] = _interval(block["ci95"])
    ci = bootstrap_ci(items, resamples, seed) if resamples > 0 and items else {}
    prompt_set_sha256 = traces.get("prompt_set_sha256")
    provenance = judge_provenance([j.model for j in judged], prompt_set_sha256, traces.get("source_sha256"),
                                  requested_models=traces.get("requested_models"), params=traces.get("params"))
    if len(traces.get("prompt_set_sha256s", [])) > 1:
        provenance["official_equivalence"] = False
        provenance["reasons"].append(f"judged with several prompt sets: {traces['prompt_set_sha256s']}")
    return {
        "judge": {"name": judge, "models": provenance["judge_models"], "prompt_set_sha256": prompt_set_sha256,
                  "source_sha256": traces.get("source_sha256"), "endpoints": traces.get("endpoints", [])},
        "official_equivalence": provenance["official_equivalence"],
        "official_equivalence_reasons": provenance["reasons"],
        **metrics,
        "ci95": {key: _interval(ci.get(key)) for key in ("task_averaged", "overall", "abstention")},
        "bootstrap": {"resamples": resamples, "seed": seed, "level": 0.95,
                      "note": "percentile bootstrap over questions; a Mnemetric addition, not an upstream metric"},
        "coverage": coverage,
    }


def cost_block(retrieve_usage: Mapping[str, Any], answer_usage: Mapping[str, Any],
               judge_usage: Mapping[str, Any]) -> dict[str, Any]:
    """Requests sent, cache hits, tokens, dollars and seconds, per stage and in total."""
    keys = ("requests_sent", "cache_hits", "prompt_tokens", "completion_tokens", "usd", "seconds")
    stages = (("retrieve", retrieve_usage), ("answer", answer_usage), ("judge", judge_usage))
    per = {name: {k: u.get(k, 0) for k in keys} for name, u in stages}
    return per | {"total": {k: sum(per[name][k] for name, _ in stages) for k in keys}}
