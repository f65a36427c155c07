"""QA aggregation: per-type, task-averaged, overall and abstention accuracy, plus bootstrap CIs.

Pure functions (no I/O). Parity source: xiaowu0162/LongMemEval src/evaluation/print_qa_metrics.py
@ 9e0b455f4ef0e2ab8f2e582289761153549043fc (shared/docs/upstream-protocol.md §3.3):

* per-type accuracy over exactly six question types, the type taken from the **reference** file;
  "_abs" questions count in their own type bucket **and** in the abstention bucket;
* task_averaged = unweighted mean of the six per-type accuracies;
* overall = micro mean over all judged questions;
* abstention = mean over "_abs" questions, with their count.

Differences from upstream, on purpose: values are not rounded (upstream prints 4 decimals); an
empty bucket gives ``None`` (JSON null), never NaN — so task_averaged is null when any type is
empty where upstream prints nan; upstream's assertion on the judge model is not an exception here
but the ``official_equivalence`` flag (:func:`mnemetric.longmemeval.judgments.judge_provenance`).

Intervals (:func:`qa_intervals`; a Mnemetric addition, not part of upstream's output), each
labelled with the method that made it:

* per-type, overall and abstention accuracy are proportions k/n: exact Clopper-Pearson interval
  (``mnemetric.stats.intervals.clopper_pearson``), so 0 of 6 correct gives [0, 0.459], never the
  percentile bootstrap's [0, 0];
* task_averaged = mean of the six type means: percentile bootstrap resampled within each type
  (``stratified_bootstrap``, statistic "macro"), so every replicate keeps the type sizes, as the
  number itself weighs each type equally whatever its size;
* per type, the minimal detectable difference of a paired comparison of that many questions at
  80% power, two-sided alpha 0.05, for the test ``mnemetric compare`` runs: the exact McNemar
  test's power by exact enumeration (``mnemetric.stats.power``), with its assumption.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from mnemetric.errors import InputError
from mnemetric.stats import clopper_pearson, minimal_detectable_difference, stratified_bootstrap

from mnemetric.longmemeval.rules import ABSTENTION_MARK  # noqa: E402
from mnemetric.longmemeval.rules import UPSTREAM_PRINT_ORDER as QUESTION_TYPES  # noqa: E402
CI_LEVEL = 0.95
SHOW_IDS = 10

Item = tuple[str, str, bool]
"""(question_id, question_type from the reference, judge label)."""


def check_items(items: Iterable[Sequence[Any]], file: str = "<judged>") -> list[Item]:
    """Validate (question_id, question_type, label) triples: known type, bool label, unique id."""
    out: list[Item] = []
    seen: set[str] = set()
    for qid, qtype, label in items:
        if qtype not in QUESTION_TYPES:
            raise InputError(file, str(qid), "question_type", f"unknown type {qtype!r}; expected one of {list(QUESTION_TYPES)}")
        if not isinstance(label, (bool, np.bool_)):
            raise InputError(file, str(qid), "label", f"expected true/false, got {label!r}")
        if qid in seen:
            raise InputError(file, str(qid), "question_id", "duplicate question_id")
        seen.add(qid)
        out.append((str(qid), str(qtype), bool(label)))
    return out


def _mean(labels: Sequence[bool]) -> float | None:
    """Mean of booleans; None for an empty bucket (upstream: NaN)."""
    return sum(labels) / len(labels) if labels else None


def point_estimates(items: Sequence[Item]) -> dict[str, Any]:
    """print_qa_metrics.py @ 9e0b455f semantics on validated items (see module docstring)."""
    buckets: dict[str, list[bool]] = {t: [] for t in QUESTION_TYPES}
    abstention: list[bool] = []
    for qid, qtype, label in items:
        buckets[qtype].append(label)
        if ABSTENTION_MARK in qid:
            abstention.append(label)
    per_type = {t: {"accuracy": _mean(v), "n": len(v)} for t, v in buckets.items()}
    accs = [per_type[t]["accuracy"] for t in QUESTION_TYPES]
    task_averaged = None if any(a is None for a in accs) else sum(accs) / len(accs)
    return {
        "per_type": per_type,
        "task_averaged": task_averaged,
        "overall": _mean([label for _, _, label in items]),
        "abstention": {"accuracy": _mean(abstention), "n": len(abstention)},
        "n": len(items),
    }


def qa_metrics(items: Iterable[Sequence[Any]], *, resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Point estimates: ``per_type.<type>.{accuracy,n,ci95}``, ``task_averaged``, ``overall``,
    ``abstention.{accuracy,n}``, ``n``.

    ``ci95`` is the per-type Clopper-Pearson interval ``[low, high]`` of :func:`qa_intervals`
    (null for an empty bucket; it needs no resampling). The other intervals come from
    :func:`qa_intervals` and are kept out of this dict so its keys stay exactly these.
    """
    checked = check_items(items)
    out = point_estimates(checked)
    for t in QUESTION_TYPES:
        labels = [lab for _, qt, lab in checked if qt == t]
        ci = clopper_pearson(sum(labels), len(labels), CI_LEVEL) if labels else None
        out["per_type"][t]["ci95"] = list(ci) if ci else None
    return out


EXACT_METHOD = "Clopper-Pearson exact interval for k of n"
STRATIFIED_METHOD = "percentile bootstrap resampled within each question type (macro mean of the type means)"
MDD_POWER = 0.80
MDD_ALPHA = 0.05
MDD_EDGE_P = 0.5
"""An accuracy of 0 or 1 implies no discordance under the independence assumption (MDD undefined);
the MDD is then taken at p = 0.5, the largest discordance (the most conservative choice)."""


def exact_interval(labels: Sequence[bool], level: float = CI_LEVEL) -> dict[str, Any] | None:
    """``{low, high, method, level, k, n}``: Clopper-Pearson for k correct of n; None when n = 0."""
    k, n = sum(labels), len(labels)
    ci = clopper_pearson(k, n, level)
    return None if ci is None else {"low": ci[0], "high": ci[1], "method": EXACT_METHOD, "level": level, "k": k, "n": n}


def detectable_difference(labels: Sequence[bool]) -> dict[str, Any] | None:
    """Minimal detectable difference of a paired comparison over these questions (80% power,
    alpha 0.05), assuming independent outcomes at the observed accuracy p (psi = 2p(1-p)); at p
    of 0 or 1, p = 0.5 instead (:data:`MDD_EDGE_P`). None when there is no question."""
    if not labels:
        return None
    p = sum(labels) / len(labels)
    edge = p in (0.0, 1.0)
    mdd = minimal_detectable_difference(len(labels), MDD_EDGE_P if edge else p, MDD_ALPHA, MDD_POWER)
    record = mdd.to_record()
    record["p_rule"] = (f"observed accuracy {p:g} gives no discordance; p = {MDD_EDGE_P} used (largest discordance)"
                        if edge else "observed accuracy")
    return record


def qa_intervals(items: Iterable[Sequence[Any]], resamples: int, seed: int) -> dict[str, Any]:
    """Every interval of the QA numbers, each naming its method (module docstring):
    ``per_type.<type>``, ``overall``, ``abstention``: :func:`exact_interval`; ``task_averaged``:
    stratified bootstrap ``{low, high, method, level, resamples, seed}`` (None when ``resamples``
    is 0 or some type has no question); ``mdd80.<type>``: :func:`detectable_difference`."""
    checked = check_items(items)
    by_type = {t: [lab for _, qt, lab in checked if qt == t] for t in QUESTION_TYPES}
    task = None
    if resamples > 0 and all(by_type.values()):
        res = stratified_bootstrap([float(lab) for _, _, lab in checked], [qt for _, qt, _ in checked], "macro",
                                   resamples, seed, CI_LEVEL, labels=QUESTION_TYPES)
        if res.interval is not None:
            task = {"low": res.low, "high": res.high, "method": STRATIFIED_METHOD, "level": CI_LEVEL,
                    "resamples": resamples, "seed": seed}
    return {
        "per_type": {t: exact_interval(v) for t, v in by_type.items()},
        "overall": exact_interval([lab for _, _, lab in checked]),
        "abstention": exact_interval([lab for q, _, lab in checked if ABSTENTION_MARK in q]),
        "task_averaged": task,
        "mdd80": {t: detectable_difference(v) for t, v in by_type.items()},
    }


def _show(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:SHOW_IDS])
    return shown + (f", ... ({len(ids) - SHOW_IDS} more)" if len(ids) > SHOW_IDS else "")


def match_ids(hyp_ids: Iterable[str], ref_ids: Iterable[str], allow_partial: bool = False, *,
              file: str = "<hypotheses>") -> dict[str, Any]:
    """Check judged/hypothesis ids against the reference ids; return coverage.

    Extra ids (not in the reference) are always an error (upstream skips them with a warning; a
    silently smaller set changes every number). Missing ids are an error unless ``allow_partial``.
    Returns ``{"n_reference", "n_judged", "missing": [...]}``; errors name up to 10 ids.
    """
    hyp, ref = list(hyp_ids), list(ref_ids)
    ref_set, hyp_set = set(ref), set(hyp)
    duplicates = sorted(q for q, n in Counter(hyp).items() if n > 1)
    if duplicates:
        raise InputError(file, f"{len(duplicates)} question_id(s)", "question_id", f"duplicated: {_show(duplicates)}")
    extra = [q for q in hyp if q not in ref_set]
    if extra:
        raise InputError(file, f"{len(extra)} question_id(s)", "question_id", f"not in the reference: {_show(extra)}",
                         fix="use the reference file the hypotheses were generated from")
    missing = [q for q in ref if q not in hyp_set]
    if missing and not allow_partial:
        raise InputError(file, f"{len(missing)} question_id(s)", "question_id",
                         f"missing from this file but in the reference: {_show(missing)}",
                         fix="complete the run, or pass allow_partial to score a subset (coverage is recorded)")
    return {"n_reference": len(ref), "n_judged": len(hyp), "missing": missing}


def join_with_reference(judged: Iterable[tuple[str, bool]], ref_types: Mapping[str, str],
                        allow_partial: bool = False, *, file: str = "<judged>") -> tuple[list[Item], dict[str, Any]]:
    """(question_id, label) pairs + reference id → type map → (items for :func:`qa_metrics`, coverage)."""
    pairs = list(judged)
    coverage = match_ids([q for q, _ in pairs], ref_types, allow_partial, file=file)
    return [(q, ref_types[q], label) for q, label in pairs], coverage
