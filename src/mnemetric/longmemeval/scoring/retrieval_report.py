"""metrics/retrieval.json from a scored retrieval log: both averaging rules, per type, bootstrap CIs.

Pure: takes the dict returned by ``score_retrieval_log`` and returns the metrics dict. The
averages are upstream's (see scoring/retrieval.py); the per-type breakdown and the percentile
bootstrap intervals are Mnemetric additions, labelled as such in the file.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mnemetric.longmemeval.instance import QUESTION_TYPES
from mnemetric.longmemeval.scoring.retrieval import ABS_MARKER, _average, bootstrap_ci

RULES: dict[str, tuple[str, Callable[[str, Mapping[str, Any]], bool]]] = {
    "exclude_abs": (
        "print_retrieval_metrics.py: every question except _abs ones (no-target questions stay in)",
        lambda qid, q: ABS_MARKER not in qid,
    ),
    "exclude_abs_and_no_user_target": (
        "run_retrieval.py main(): also drops questions without a has_answer=true user turn",
        lambda qid, q: ABS_MARKER not in qid and q["has_user_target"],
    ),
}


def _block(per_question: Mapping[str, Any], kept: list[str], resamples: int, seed: int) -> dict[str, Any]:
    """Averages over ``kept`` plus a CI for each averaged number."""
    avg = _average({q: per_question[q] for q in kept}, lambda _q: True)
    avg.pop("excluded")
    ci: dict[str, Any] = {}
    for level, metrics in avg.items():
        if level == "n":
            continue
        ci[level] = {}
        for name in metrics:
            values = [v for q in kept if (v := per_question[q].get(level, {}).get(name)) is not None]
            interval = bootstrap_ci(values, resamples, seed) if values and resamples > 0 else None
            ci[level][name] = {"low": interval[0], "high": interval[1]} if interval else None
    return avg | {"ci95": ci}


def retrieval_metrics(scored: Mapping[str, Any], resamples: int, seed: int) -> dict[str, Any]:
    """Both averaging rules, each with per-question-type blocks; CIs on every averaged number."""
    per_q, questions = scored["per_question"], scored["questions"]
    out: dict[str, Any] = {}
    for rule, (description, keep) in RULES.items():
        kept = [q for q in per_q if keep(q, questions[q])]
        block = {"rule": description, **_block(per_q, kept, resamples, seed),
                 "excluded": len(per_q) - len(kept), "per_type": {}}
        for qtype in QUESTION_TYPES:
            of_type = [q for q in kept if questions[q]["question_type"] == qtype]
            block["per_type"][qtype] = _block(per_q, of_type, resamples, seed) if of_type else {"n": 0}
        out[rule] = block
    return out


def recall_curve(block: Mapping[str, Any], system: str, metric: str = "recall_all",
                 level: str = "session") -> list[dict[str, Any]]:
    """Rows {system, metric, k, recall} for `dvc plots` (e.g. recall_all@k against k)."""
    rows = []
    for name, value in block.get(level, {}).items():
        if name.startswith(f"{metric}@") and value is not None:
            rows.append({"system": system, "metric": metric, "k": int(name.split("@")[1]), "recall": value})
    return sorted(rows, key=lambda r: r["k"])
