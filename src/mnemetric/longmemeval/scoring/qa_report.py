"""metrics/qa.json (and `mnemetric score-qa`): aggregate a judged file against its reference.

Aggregation is print_qa_metrics.py's (scoring/qa.py); this module adds the provenance (judge
models, prompt-set sha256, official_equivalence), an interval on every number, each naming its
method (scoring/qa.py ``qa_intervals``; a Mnemetric addition), the per-type minimal detectable
difference, the failed questions and the cost of the work.

Two views of one result (``qa_report`` gives the detail, :func:`qa_headline` the headline):

* metrics/detail/qa.json, the detail: everything below, intervals and n included;
* metrics/qa.json, the headline that ``dvc metrics diff`` shows by default: the point numbers
  only (``overall``, ``task_averaged``, ``abstention``, ``per_type.<type>``, ``n``), so a typical
  change fits a screen; ``dvc metrics diff --targets metrics/detail/qa.json`` shows the rest.

Failed questions (the model gave no usable answer; ``<judged>.failures.jsonl``) are in no number:
every metric covers the judged questions only, and ``coverage`` says so (judged + failed = the
reference set, exactly). Where any question failed, ``failed_as_wrong`` holds the same numbers with
the failed counted wrong (over judged + failed), and the headline shows both with ``n_failed``. While any question failed, ``official_equivalence`` is false (upstream's
script has no such case: it labels empty content "no" and crashes on null content).

``official_equivalence`` is the one record of :class:`mnemetric.official.OfficialEquivalence`
(``{"value", "reasons"}``) in both views: whether these QA numbers are upstream's (the judge: its
models, request parameters, prompt set and source; no failed question), each failed condition named.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mnemetric.io import write_json_atomic
from mnemetric.longmemeval.hypotheses import JudgedHypothesis, read_judged
from mnemetric.longmemeval.judgments import JudgeTrace, judge_provenance
from mnemetric.errors import InputError
from mnemetric.llm.failures import QuestionFailure, failures_path, read_failures
from mnemetric.llm.usage import UsageRecord
from mnemetric.official import OfficialEquivalence
from mnemetric.longmemeval.scoring.qa import (
    CI_LEVEL,
    QUESTION_TYPES,
    check_items,
    join_with_reference,
    point_estimates,
    qa_intervals,
    qa_metrics,
)
from mnemetric.longmemeval.scoring.qa_detail import QADetail, write_qa_detail

SHOW_FAILED = 10
INTERVAL_NOTE = ("intervals are a Mnemetric addition, not upstream metrics; each names its method: "
                 "proportions (per type, overall, abstention) exact Clopper-Pearson, task_averaged a "
                 "percentile bootstrap stratified by question type; mdd80 = minimal detectable difference "
                 "of the exact McNemar test at 80% power, by exact enumeration (its assumption is recorded with it)")


def judge_traces(traces: Sequence[JudgeTrace | None]) -> dict[str, Any]:
    """What the judged lines' typed traces (``mnemetric_judge``,
    :class:`~mnemetric.longmemeval.judgments.JudgeTrace`; ``JudgedHypothesis.judge_trace``) say about
    how they were judged (None for lines judged elsewhere, e.g. by upstream's own script). The judge
    and its prompt provenance are the first line's; the lists cover every model call."""
    calls = [t.call for t in traces if t is not None and t.call is not None]
    first = traces[0] if traces else None
    return {
        "judge": first.judge if first is not None else "unknown",
        "prompt_set_sha256": first.call.prompt_set_sha256 if first is not None and first.call else None,
        "source_sha256": first.call.source_sha256 if first is not None and first.call else None,
        "prompt_set_sha256s": sorted({c.prompt_set_sha256 for c in calls if c.prompt_set_sha256}),
        "requested_models": [c.requested_model for c in calls],
        "params": [c.params.to_record() for c in calls],
        "endpoints": sorted({c.endpoint for c in calls if c.endpoint}),
    }


def _failed_ids(failures: Sequence[QuestionFailure], judged: Sequence[JudgedHypothesis],
                ref_types: Mapping[str, str], file: str) -> list[str]:
    """Ids of the failed questions: unique, in the reference, and not judged as well."""
    judged_ids = {j.question_id for j in judged}
    ids: list[str] = []
    for f in failures:
        if f.question_id not in ref_types:
            raise InputError(file, f.question_id, "question_id", "failed question is not in the reference")
        if f.question_id in judged_ids:
            raise InputError(file, f.question_id, "question_id", "question is both judged and failed",
                             fix="rerun the judge stage (the judged file and its failures sidecar disagree)")
        if f.question_id in ids:
            raise InputError(file, f.question_id, "question_id", "duplicate failed question")
        ids.append(f.question_id)
    return ids


def failures_block(failures: Sequence[QuestionFailure]) -> dict[str, Any]:
    """``{n, by_stage, by_reason, question_ids}`` of the failed questions (reasons as given)."""
    return {"n": len(failures), "by_stage": dict(sorted(Counter(f.stage for f in failures).items())),
            "by_reason": dict(sorted(Counter(f.reason for f in failures).items())),
            "question_ids": [f.question_id for f in failures]}


def failed_as_wrong(items: Sequence[tuple[str, str, bool]], failed: Sequence[str],
                    ref_types: Mapping[str, str]) -> dict[str, Any]:
    """The headline numbers again with every failed question counted wrong (label false) over judged + failed:
    ``{overall, task_averaged, abstention: {accuracy, n}, per_type: {<type>: {accuracy, n}}, n}``. Beside the
    official-layout numbers (failed excluded), never instead of them: a lower bound a partial run cannot beat."""
    return point_estimates([*items, *((q, ref_types[q], False) for q in failed)])


def _coverage(coverage: Mapping[str, Any], n_reference: int, failed: list[str]) -> dict[str, Any]:
    scope = "judged questions only" + (f"; {len(failed)} failed question(s) are in no number" if failed else "")
    return {"n_reference": n_reference, "n_judged": coverage["n_judged"], "n_failed": len(failed),
            "missing": coverage["missing"], "scope": scope}


def qa_report(judged: Sequence[JudgedHypothesis], ref_types: Mapping[str, str], *, judge: str,
              traces: Mapping[str, Any], resamples: int, seed: int, allow_partial: bool = False,
              file: str = "<judged>", reference_file: str = "<reference>",
              failures: Sequence[QuestionFailure] = ()) -> dict[str, Any]:
    """The metrics/qa.json payload for judged labels joined with the reference's question types.

    ``failures``: questions without a verdict; the judged ids plus these must be the reference
    ids (unless ``allow_partial``), and the metrics are over the judged ones only."""
    failed = _failed_ids(failures, judged, ref_types, file)
    to_judge = {q: t for q, t in ref_types.items() if q not in set(failed)}
    items, coverage = join_with_reference(((j.question_id, j.label) for j in judged), to_judge,
                                          allow_partial, file=file)
    check_items(items, reference_file)  # an unknown question_type is the reference's fault
    metrics = qa_metrics(items, resamples=resamples, seed=seed)
    ci = qa_intervals(items, resamples, seed)
    for t, block in metrics["per_type"].items():
        block["ci95"] = ci["per_type"][t]
        block["mdd80"] = ci["mdd80"][t]
    prompt_set_sha256 = traces.get("prompt_set_sha256")
    provenance = judge_provenance([j.model for j in judged], prompt_set_sha256, traces.get("source_sha256"),
                                  requested_models=traces.get("requested_models"), params=traces.get("params"))
    if len(traces.get("prompt_set_sha256s", [])) > 1:
        provenance["official_equivalence"] = False
        provenance["reasons"].append(f"judged with several prompt sets: {traces['prompt_set_sha256s']}")
    if failed:
        shown = ", ".join(failed[:SHOW_FAILED]) + (f", ... ({len(failed) - SHOW_FAILED} more)"
                                                    if len(failed) > SHOW_FAILED else "")
        provenance["official_equivalence"] = False
        provenance["reasons"].append(f"{len(failed)} question(s) failed (no usable model answer; in no number): {shown}")
    return {
        "judge": {"name": judge, "models": provenance["judge_models"], "prompt_set_sha256": prompt_set_sha256,
                  "source_sha256": traces.get("source_sha256"), "endpoints": traces.get("endpoints", [])},
        "official_equivalence": OfficialEquivalence.of(provenance["reasons"]).to_record(),
        **metrics,
        "ci95": {key: ci[key] for key in ("task_averaged", "overall", "abstention")},
        "bootstrap": {"resamples": resamples, "seed": seed, "level": CI_LEVEL, "note": INTERVAL_NOTE},
        "coverage": _coverage(coverage, len(ref_types), failed),
        "failures": failures_block(failures),
        **({"failed_as_wrong": failed_as_wrong(items, failed, ref_types)} if failed else {}),
    }


def qa_headline(detail: Mapping[str, Any]) -> dict[str, Any]:
    """The headline view of a :func:`qa_report` dict: point numbers only, stable keys
    (``official_equivalence``, ``overall``, ``task_averaged``, ``abstention``, ``per_type.<type>``
    in upstream's type order, ``n``); intervals, n per type and everything else stay in the detail."""
    out = {"official_equivalence": detail["official_equivalence"], "overall": detail["overall"],
           "task_averaged": detail["task_averaged"], "abstention": detail["abstention"]["accuracy"],
           "per_type": {t: detail["per_type"][t]["accuracy"] for t in QUESTION_TYPES}, "n": detail["n"]}
    wrong = detail.get("failed_as_wrong")
    if wrong is not None:  # where questions failed: both accuracies and the count, side by side
        out["n_failed"] = detail["failures"]["n"]
        out["failed_as_wrong"] = {"overall": wrong["overall"], "task_averaged": wrong["task_averaged"],
                                  "abstention": wrong["abstention"]["accuracy"],
                                  "per_type": {t: wrong["per_type"][t]["accuracy"] for t in QUESTION_TYPES},
                                  "n": wrong["n"]}
    return out


def per_type_plot_rows(detail: Mapping[str, Any]) -> list[dict[str, Any]]:
    """metrics/plots/qa_per_type.json rows ``{type, accuracy, low, high, n, method}`` (template
    bar_ci); a type without questions is left out (nothing to draw)."""
    rows = []
    for t in QUESTION_TYPES:
        block = detail["per_type"][t]
        ci = block.get("ci95") or {}
        if block["accuracy"] is not None:
            rows.append({"type": t, "accuracy": block["accuracy"], "low": ci.get("low"), "high": ci.get("high"),
                         "n": block["n"], "method": ci.get("method")})
    return rows


COST_KEYS = ("responses", "prompt_tokens", "completion_tokens", "usd")
COST_NOTE = ("the cost of the work: the usage recorded with each response used (cached or not), priced by "
             "llm.prices; what a run sent, reused and how long it took is in the run log (.mnemetric/run-log.jsonl)")


def cost_block(retrieve_usage: UsageRecord, answer_usage: UsageRecord, judge_usage: UsageRecord) -> dict[str, Any]:
    """Responses used, tokens and dollars per stage and in total, with a per-model breakdown.

    Inputs are the stages' usage sidecars, typed (:class:`mnemetric.llm.usage.UsageRecord`, as
    ``read_usage`` gives them): a pure function of the responses, so the block is the same on a cold
    and a warm run. Dollars are summed in a fixed order (retrieve, answer, judge; models sorted)."""
    stages = (("retrieve", retrieve_usage), ("answer", answer_usage), ("judge", judge_usage))
    per = {name: {k: getattr(u, k) for k in COST_KEYS} | {"per_model": u.to_record()["per_model"]}
           for name, u in stages}
    total: dict[str, Any] = {k: 0.0 if k == "usd" else 0 for k in COST_KEYS}
    models: dict[str, dict[str, Any]] = {}
    for name, _ in stages:
        for k in COST_KEYS:
            total[k] += per[name][k]
        for model, block in sorted(per[name]["per_model"].items()):
            into = models.setdefault(model, {k: 0.0 if k == "usd" else 0 for k in COST_KEYS})
            for k in COST_KEYS:
                into[k] += block.get(k, 0)
    return per | {"total": total | {"per_model": dict(sorted(models.items()))}, "note": COST_NOTE}


# ------------------------------------------------------------------ the score-QA job (stage qa_metrics, `mnemetric score-qa`)


def detail_path(headline: str | Path) -> Path:
    """metrics/qa.json → metrics/detail/qa.json."""
    path = Path(headline)
    return path.parent / "detail" / path.name


def plot_path(headline: str | Path) -> Path:
    """metrics/qa.json → metrics/plots/qa_per_type.json."""
    return Path(headline).parent / "plots" / "qa_per_type.json"


@dataclass(frozen=True)
class QAScored:
    """A judged file scored: its lines, its failed questions, and the detail (metrics/detail/qa.json)."""

    judged: list[JudgedHypothesis]
    failures: list[QuestionFailure]
    detail: QADetail


def score_judged_file(judged_file: str | Path, ref_types: Mapping[str, str], *, names: Mapping[str, Any],
                      judge: str | None, resamples: int, seed: int, reference_file: str | Path,
                      usage: Sequence[UsageRecord] | None, allow_partial: bool = False) -> QAScored:
    """Score ``judged_file`` (and its ``.failures.jsonl``, none if absent) against ``ref_types``.

    detail = ``names`` (reader, memory, variant, suite) + :func:`qa_report` + ``cost`` (the
    :func:`cost_block` of the retrieve, answer and judge usage sidecars; null when not given).
    ``judge``: the judge's name (None: the name in the lines' traces, "unknown" without)."""
    judged = read_judged(judged_file)
    failures = read_failures(failures_path(judged_file))
    traces = judge_traces([j.judge_trace for j in judged])
    report = qa_report(judged, ref_types, judge=traces["judge"] if judge is None else judge, traces=traces,
                       resamples=resamples, seed=seed, allow_partial=allow_partial, file=str(judged_file),
                       reference_file=str(reference_file), failures=failures)
    record = {**names, **report, "cost": None if usage is None else cost_block(*usage)}
    return QAScored(judged, failures, QADetail.from_record(record, file="<qa detail>"))


def write_qa_files(headline: str | Path, detail: QADetail, *, names: Mapping[str, Any],
                   detail_file: str | Path | None = None, plot_file: str | Path | None = None) -> dict[str, Any]:
    """Write the detail (default :func:`detail_path`), the per-type plot rows (default
    :func:`plot_path`) and the headline ``names + judge + qa_headline(detail)``, each atomically, in
    that order; returns the headline."""
    record = detail.to_record()
    out = {**names, "judge": detail.judge.name, **qa_headline(record)}
    write_qa_detail(detail_path(headline) if detail_file is None else detail_file, detail)
    write_json_atomic(plot_path(headline) if plot_file is None else plot_file, per_type_plot_rows(record))
    write_json_atomic(headline, out)
    return out
