"""Compare two V1 runs on the same questions: comparability, paired QA and retrieval differences.

Pure functions over per-question data (the CLI reads the files at each revision). A Mnemetric
addition: upstream LongMemEval (xiaowu0162/LongMemEval @ 9e0b455f) compares no runs.

Comparability (:class:`RunKeys`, :func:`differences`): two runs are comparable only if they agree
on every key — dataset sha256, question set (suite ids_sha256), adapter schema, scoring profile,
judge models and prompt-set sha256, reader settings, retrieval budget (context_k, context_tokens).

QA (:func:`compare_qa`), per question i with labels a_i, b_i in {0, 1} (B minus A throughout):

* overall = mean over all questions; task_averaged = unweighted mean of the six per-type means
  ("_abs" questions in their own type, as print_qa_metrics.py); per type = mean within the type;
* primary rows: overall, then task_averaged (``primary``); the per-type and abstention rows are
  exploratory (``exploratory``): each carries ``p_holm``, its McNemar p Holm-adjusted over those
  rows (``mnemetric.stats.score.holm``), and the block states the family size, alpha, and the
  family-wise rate the unadjusted p-values would have (1 - (1 - alpha)^m, e.g. 0.30 for m = 7);
* interval (``mnemetric.stats.compare_paired``, named by ``interval_method``): Tango's score
  interval for paired proportions (overall, per type, abstention), the per-type Tango intervals
  combined by MOVER (task_averaged); the paired percentile bootstrap (questions resampled jointly,
  stratified by type) is kept as ``bootstrap_low`` / ``bootstrap_high``;
* McNemar exact two-sided p from the discordant pairs (``mnemetric.stats.mcnemar_exact``);
* flips: questions whose label differs, with id, type and old -> new label.

Retrieval (:func:`compare_retrieval`): per-question metrics (``ScoredRetrieval.per_question`` of
``score_retrieval_log``), rule
exclude_abs (question ids containing "_abs" left out, print_retrieval_metrics.py); the same
``compare_paired`` records: for 0/1 recall Tango's interval and McNemar's p, otherwise the paired
bootstrap of the mean difference, pooled over questions, and the exact sign test.

A regression (:func:`regression`) is a significant drop by the exact paired test: B - A < 0 with
the exact two-sided p (McNemar for 0/1 values, the sign test otherwise) below alpha (0.05 unless
``--alpha``), never the bootstrap interval. task_averaged has no such test: it regresses when its
MOVER score interval at level 1 - alpha lies below 0.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mnemetric.errors import ConfigError, InputError, MnemetricError
from mnemetric.longmemeval.data_stats import DataShown
from mnemetric.longmemeval.judgments import JudgeTrace
from mnemetric.longmemeval.params_schema import ParamsShown
from mnemetric.longmemeval.scoring.qa import ABSTENTION_MARK, QUESTION_TYPES
from mnemetric.longmemeval.scoring.scored_retrieval import Metrics
from mnemetric.stats.paired import compare_paired
from mnemetric.stats.score import familywise_rate, holm

HEADLINE_RETRIEVAL = ("recall_all@5", "recall_all@10", "ndcg_any@5", "ndcg_any@10")
LEVELS = ("session", "turn")
QA_METRICS = ("overall", "task_averaged")

KEY_LABELS = {
    "variant_sha256": "dataset sha256 (variant)",
    "suite_ids_sha256": "question set (suite ids_sha256)",
    "adapter_schema": "adapter schema",
    "scoring_profile": "scoring profile",
    "judge_models": "judge model",
    "judge_prompt_set_sha256": "judge prompt-set sha256",
    "reader": "reader model and settings",
    "context_k": "retrieval budget (retrieval.context_k)",
    "context_tokens": "retrieval budget (retrieval.context_tokens)",
}


@dataclass(frozen=True)
class RunKeys:
    """What must be equal for two runs' numbers to be compared."""

    variant_sha256: str | None
    suite_ids_sha256: str | None
    adapter_schema: str | None
    scoring_profile: str | None
    judge_models: tuple[str, ...]
    """Distinct autoeval_label.model values of the judged lines, sorted."""
    judge_prompt_set_sha256: str | None
    """mnemetric_judge.prompt_set_sha256 of the judged lines (None for the lexical judge)."""
    reader: str
    """params.yaml ``reader`` as canonical JSON (model and every setting; not ``_target_``, the class's
    import path, which moves when code is reorganised — its code is fingerprinted separately)."""
    context_k: int | None
    context_tokens: int | None

    def to_record(self) -> dict[str, Any]:
        return {**self.__dict__, "judge_models": list(self.judge_models)}

    @classmethod
    def from_record(cls, raw: Mapping[str, Any], *, file: str, line: int | str) -> RunKeys:
        """Read back :meth:`to_record`; a missing field raises InputError naming it."""
        record = f"line {line}" if isinstance(line, int) else line
        if not isinstance(raw, Mapping):
            raise InputError(file, record, "<root>", "expected an object of comparability keys")
        missing = [k for k in KEY_LABELS if k not in raw]
        if missing:
            raise InputError(file, record, missing[0], "missing comparability key")
        return cls(**{**{k: raw[k] for k in KEY_LABELS}, "judge_models": tuple(raw["judge_models"])})


def keys_from(params: Mapping[str, Any], data_metrics: Mapping[str, Any],
              judged_traces: Sequence[tuple[str, JudgeTrace | None]]) -> RunKeys:
    """Keys from a run's params.yaml, metrics/data.json and judged lines ((autoeval_label.model,
    typed ``mnemetric_judge`` trace) pairs; the trace is None for a line judged elsewhere).

    Dataset sha256 and suite hash are read from metrics/data.json (what the run verified), with
    params.yaml ``variant.sha256`` as the fallback; prompt sets from the judged lines' model calls
    (an offline judge's trace, or no trace, names none).
    """
    prompt_sets = sorted({t.call.prompt_set_sha256 for _, t in judged_traces
                          if t is not None and t.call is not None and t.call.prompt_set_sha256})
    p = ParamsShown.from_record(params)
    data = DataShown.from_record(data_metrics, file=p.paths.get("metrics_data", "metrics/data.json"))
    return RunKeys(
        variant_sha256=data.variant_sha256 or p.variant_sha256,
        suite_ids_sha256=data.suite_ids_sha256,
        adapter_schema=data.adapter_schema or p.adapter_schema,
        scoring_profile=p.scoring_name,
        judge_models=tuple(sorted({m for m, _ in judged_traces})),
        judge_prompt_set_sha256=",".join(prompt_sets) or None,
        reader=json.dumps(p.reader, sort_keys=True),
        context_k=p.context_k,
        context_tokens=p.context_tokens,
    )


@dataclass(frozen=True)
class Difference:
    key: str
    label: str
    a: Any
    b: Any

    def to_record(self) -> dict[str, Any]:
        return {"key": self.key, "field": self.label, "a": self.a, "b": self.b}


def differences(a: RunKeys, b: RunKeys) -> list[Difference]:
    """Every comparability key whose values differ, in :data:`KEY_LABELS` order."""
    ra, rb = a.to_record(), b.to_record()
    return [Difference(k, label, ra[k], rb[k]) for k, label in KEY_LABELS.items() if ra[k] != rb[k]]


def refusal(diffs: Sequence[Difference], a_name: str, b_name: str) -> str:
    """The message naming every differing field (one line each)."""
    lines = [f"{a_name} and {b_name} are not comparable; {len(diffs)} field(s) differ:"]
    lines += [f"  {d.label}: {d.a!r} vs {d.b!r}" for d in diffs]
    return "\n".join(lines)


@dataclass(frozen=True)
class Flip:
    question_id: str
    question_type: str
    old: bool
    new: bool

    def to_record(self) -> dict[str, Any]:
        return {"question_id": self.question_id, "question_type": self.question_type,
                "old": self.old, "new": self.new}


def paired_ids(a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[list[str], list[str], list[str]]:
    """(common ids sorted, ids only in A, ids only in B)."""
    return sorted(set(a) & set(b)), sorted(set(a) - set(b)), sorted(set(b) - set(a))


def flips(a: Mapping[str, bool], b: Mapping[str, bool], types: Mapping[str, str]) -> list[Flip]:
    """Questions in both runs whose label changed, sorted by (type, id)."""
    out = [Flip(q, types[q], a[q], b[q]) for q in paired_ids(a, b)[0] if a[q] != b[q]]
    return sorted(out, key=lambda f: (f.question_type, f.question_id))


def _check_types(ids: Sequence[str], types: Mapping[str, str], source: str) -> None:
    for q in ids:
        if q not in types:
            raise InputError(source, q, "question_type", "no question type for this question",
                             fix="the type comes from the retrieval log of the same revision")
        if types[q] not in QUESTION_TYPES:
            raise InputError(source, q, "question_type", f"unknown type {types[q]!r}")


def _exploratory(out: dict[str, Any], alpha: float) -> None:
    """Holm-adjust the per-type and abstention p-values in place; the ``exploratory`` block."""
    recs = [*out["per_type"].values(), *([out["abstention"]] if "abstention" in out else [])]
    tested = [r for r in recs if r["p_value"] is not None]
    for r, adj in zip(tested, holm([r["p_value"] for r in tested])):
        r["p_holm"] = adj
    for r in recs:
        r.setdefault("p_holm", None)
    m = len(tested)
    out["primary"] = list(QA_METRICS)
    out["exploratory"] = {
        "rows": [*out["per_type"], *(["abstention"] if "abstention" in out else [])],
        "adjustment": "holm", "family_size": m, "alpha": alpha,
        "familywise_rate_unadjusted": familywise_rate(m, alpha) if m else 0.0,
        "note": (f"exploratory: with {m} unadjusted tests at alpha {alpha:g}, at least one would be significant by "
                 f"chance up to {familywise_rate(m, alpha) if m else 0.0:.0%} of the time (independent tests, "
                 f"no true difference); p_holm keeps that family-wise rate at most {alpha:g}"),
    }


def compare_qa(a: Mapping[str, bool], b: Mapping[str, bool], types: Mapping[str, str], *,
               resamples: int = 1000, seed: int = 0, level: float = 0.95, alpha: float = 0.05,
               source: str = "<judged>") -> dict[str, Any]:
    """Paired QA comparison on the questions both runs judged (see the module docstring)."""
    ids, only_a, only_b = paired_ids(a, b)
    _check_types(ids, types, source)
    va = [int(a[q]) for q in ids]
    vb = [int(b[q]) for q in ids]
    strata = [types[q] for q in ids]
    kw = {"resamples": resamples, "seed": seed, "level": level, "source": source}
    out: dict[str, Any] = {
        "n": len(ids), "only_in_a": only_a, "only_in_b": only_b,
        "overall": compare_paired(va, vb, strata, "micro", labels=QUESTION_TYPES, **kw).to_record(),
        "task_averaged": compare_paired(va, vb, strata, "macro", labels=QUESTION_TYPES, **kw).to_record(),
        "per_type": {},
    }
    for t in QUESTION_TYPES:
        idx = [i for i, s in enumerate(strata) if s == t]
        if idx:
            out["per_type"][t] = compare_paired([va[i] for i in idx], [vb[i] for i in idx], None, "micro",
                                                **kw).to_record()
    abst = [i for i, q in enumerate(ids) if ABSTENTION_MARK in q]
    if abst:
        out["abstention"] = compare_paired([va[i] for i in abst], [vb[i] for i in abst], None, "micro",
                                           **kw).to_record()
    _exploratory(out, alpha)
    out["flips"] = [f.to_record() for f in flips(a, b, types)]
    return out


def _values(per_question: Mapping[str, Metrics], ids: Sequence[str], level: str, metric: str) -> list[float] | None:
    vals = []
    for q in ids:
        v = (per_question[q].get(level) or {}).get(metric)
        if v is None:
            return None
        vals.append(float(v))
    return vals


def compare_retrieval(a: Mapping[str, Metrics], b: Mapping[str, Metrics], *, metrics: Sequence[str] = HEADLINE_RETRIEVAL,
                      resamples: int = 1000, seed: int = 0, level: float = 0.95,
                      source: str = "<retrieval log>") -> dict[str, Any]:
    """Paired retrieval differences under exclude_abs, per level present in both runs' per-question metrics.

    ``a``/``b``: question_id -> {"session": {metric: value}, "turn": {...}} (``ScoredRetrieval.per_question``). A level is compared only if every question of both runs has it (turn: both
    are turn logs).
    """
    ids = [q for q in paired_ids(a, b)[0] if ABSTENTION_MARK not in q]
    out: dict[str, Any] = {"n": len(ids), "rule": "exclude_abs", "levels": {}}
    for lvl in LEVELS:
        block = {}
        for m in metrics:
            va, vb = _values(a, ids, lvl, m), _values(b, ids, lvl, m)
            if va is not None and vb is not None and ids:
                block[m] = compare_paired(va, vb, None, "micro", resamples, seed, level, source=source).to_record()
        if block:
            out["levels"][lvl] = block
    return out


def find_metric(result: Mapping[str, Any], metric: str) -> dict[str, Any]:
    """The comparison record of ``metric``: overall, task_averaged, abstention, a question type,
    ``<metric>@k`` (session level) or ``<level>.<metric>@k``; ConfigError listing the known names."""
    qa = result.get("qa") or {}
    ret = (result.get("retrieval") or {}).get("levels") or {}
    table: dict[str, Any] = {k: qa[k] for k in (*QA_METRICS, "abstention") if k in qa}
    table.update(qa.get("per_type") or {})
    for lvl, block in ret.items():
        for m, rec in block.items():
            table[f"{lvl}.{m}"] = rec
            if lvl == "session":
                table[m] = rec
    if metric not in table:
        raise ConfigError("--fail-on-regression", f"unknown metric {metric!r}",
                          fix=f"one of: {', '.join(table)}")
    return table[metric]


def regression(result: Mapping[str, Any], metric: str, alpha: float = 0.05) -> str | None:
    """Why ``metric`` dropped significantly, else None (module docstring): B - A < 0 with the exact
    paired p below ``alpha``; for a record without a test (task_averaged), its interval below 0."""
    rec = find_metric(result, metric)
    diff = rec.get("diff")
    if diff is None or diff >= 0:
        return None
    if rec.get("p_value") is not None:
        if rec["p_value"] >= alpha:
            return None
        test = rec.get("test") or "exact paired test"
        return (f"{metric} dropped: B - A = {diff:+.4f}, {test} p = {rec['p_value']:.4g} < alpha {alpha:g} "
                f"(a_only {rec.get('a_only')}, b_only {rec.get('b_only')}, n = {rec['n']})")
    if rec.get("high") is None or rec["high"] >= 0:
        return None
    return (f"{metric} dropped: B - A = {diff:+.4f}, {rec['level']:.0%} {rec.get('interval_method', 'interval')} "
            f"[{rec['low']:+.4f}, {rec['high']:+.4f}] lies below 0 (n = {rec['n']})")


def gate_basis(result: Mapping[str, Any], metric: str) -> str | None:
    """None if ``metric`` can gate; else why not (no test and no interval: too few questions)."""
    rec = find_metric(result, metric)
    if rec.get("p_value") is None and rec.get("high") is None:
        return f"{metric} has no test and no interval (too few questions), so it cannot gate"
    return None


class NotComparable(MnemetricError):
    """Two runs differ in a comparability key (the message names every differing field)."""

    def __init__(self, diffs: Sequence[Difference], a_name: str, b_name: str):
        self.diffs = list(diffs)
        super().__init__(refusal(diffs, a_name, b_name)
                         + "\n  fix: compare runs that differ only in the memory system, or pass --force "
                           "to compare anyway (the differences are printed first)")
