"""LongMemEval's doors: its result card (rows and custody bullets) and its row of `mnemetric runs`.

The frames are generic (:mod:`mnemetric.custody.card`, `mnemetric runs`); what they show of V1 is here.

* card rows (:func:`card_rows`): overall, task-averaged and abstention accuracy
  (``ci95.<key>.low|high``; the detail layout's ``{accuracy}`` blocks or the headline's plain
  numbers), each question type (``per_type.<type>``), then the retrieval metrics
  print_retrieval_metrics.py prints, ``exclude_abs.<granularity>.<metric>`` over ``exclude_abs.n``;
* card custody (:func:`card_custody`): dataset (source, repo @ revision, file, sha256, verified),
  suite, memory system (code fingerprint, config sha256), reader, judge (snapshots, prompt-set
  sha256, endpoints), the judged file (``paths.judged``) and its sha256 from the sha256 custody
  manifest, scoring profile, Mnemetric version, counts — all from metrics/run.json;
* runs (:func:`summary`): overall and task-averaged accuracy (metrics/qa.json), session
  recall_all@10 and ndcg_any@10 (metrics/retrieval.json), the comparability keys (variant, dataset
  sha256, suite and its id-list hash, adapter schema, scoring profile, judge, prompt set, reader,
  retrieval budget) and metrics/run.json's official_equivalence.

Every file is read through its typed display record, beside its writer: metrics/qa.json and
metrics/detail/qa.json :class:`~mnemetric.longmemeval.scoring.qa_detail.QAShown`, the retrieval files
:class:`~mnemetric.longmemeval.scoring.retrieval_report.RetrievalShown`, metrics/run.json
:class:`~mnemetric.longmemeval.family.RunShown`, metrics/data.json
:class:`~mnemetric.longmemeval.data_stats.DataShown`, the sha256 custody manifest
:class:`~mnemetric.custody.sha256_manifest.Sha256Shown`, params.yaml
:class:`~mnemetric.longmemeval.params_schema.ParamsShown`. What a file lacks (an older or partial
one) shows as "—"; a field of the wrong type is an InputError naming the file and the field.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from mnemetric.family import CardRow, CardSpec, RunSummary
from mnemetric.longmemeval.data_stats import DataShown
from mnemetric.longmemeval.params_schema import ParamsShown
from mnemetric.longmemeval.scoring.qa_detail import JudgeShown, QAShown, ShownRate
from mnemetric.longmemeval.scoring.retrieval_report import RetrievalShown
from mnemetric.official import KEY, OfficialEquivalence

QA_DETAIL = "metrics/detail/qa.json"
RUN_MANIFEST = "metrics/run.json"

QA_ROWS = (("overall", "overall accuracy"), ("task_averaged", "task-averaged accuracy"),
           ("abstention", "abstention accuracy"))
RETRIEVAL_KEYS = ("recall_all@5", "ndcg_any@5", "recall_all@10", "ndcg_any@10")
CARD_INPUTS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "qa": (QA_DETAIL, "metrics/qa.json"),
    "retrieval": ("metrics/detail/retrieval.json", "metrics/retrieval.json"),
})
"""The QA numbers: the detail file (intervals, n) when the pipeline writes one, else the headline;
the retrieval numbers likewise (both hold the same ``exclude_abs`` means and n)."""


def _role(role: str) -> str:
    """The file an error about a card input names: its candidates (the frame reads the first that exists)."""
    return " or ".join(CARD_INPUTS[role])


def _row(label: str, rate: ShownRate) -> CardRow:
    return CardRow(label, rate.value, rate.low, rate.high, rate.n)


def qa_rows(qa: Mapping[str, Any], file: str | None = None) -> list[CardRow]:
    """overall, task_averaged, abstention (``ci95.<key>.low|high``), then each type (``per_type.<type>``)."""
    shown = QAShown.from_record(qa, file=file or _role("qa"))
    rows = [_row(label, getattr(shown, key)) for key, label in QA_ROWS]
    return rows + [_row(t, rate) for t, rate in shown.per_type.items()]


def retrieval_rows(retrieval: Mapping[str, Any], file: str | None = None) -> list[CardRow]:
    """``exclude_abs.<granularity>.<metric>`` over ``exclude_abs.n`` (print_retrieval_metrics.py's set)."""
    shown = RetrievalShown.from_record(retrieval, file=file or _role("retrieval"))
    gran = shown.granularity or "session"
    return [CardRow(f"{gran} {k}", shown.mean(gran, k), n=shown.n) for k in RETRIEVAL_KEYS
            if shown.mean(gran, k) is not None]


def card_rows(docs: Mapping[str, Mapping[str, Any] | None]) -> list[CardRow]:
    """The QA rows, then the retrieval rows; no QA metrics: no rows."""
    qa, retrieval = docs.get("qa"), docs.get("retrieval")
    if not qa:
        return []
    return qa_rows(qa) + (retrieval_rows(retrieval) if retrieval else [])


def _code(x: Any) -> str:
    return "—" if x in (None, "", [], ()) else f"`{x}`"


def _names(values: tuple[str, ...] | None) -> str:
    return ", ".join(values or ())


def card_custody(run: Mapping[str, Any], outputs: Mapping[str, Any] | None,
                 params: Mapping[str, Any] | None) -> list[str]:
    """The run manifest's custody facts, one bullet each (module docstring)."""
    from mnemetric.custody.sha256_manifest import Sha256Shown
    from mnemetric.longmemeval.family import RunShown

    r = RunShown.from_record(run)
    judged_path = ParamsShown.from_record(params).paths.get("judged") or "<judged file>"
    judged_sha = Sha256Shown.from_record(outputs).sha256.get(judged_path)
    return [
        f"- dataset: {_code(r.variant_name)} ({r.variant_source}{', ' + r.variant_repo if r.variant_repo else ''}"
        f"{' @ ' + r.variant_revision if r.variant_revision else ''}, file {_code(r.variant_file)}), sha256 "
        f"{_code(r.variant_sha256)} ({'verified' if r.variant_sha256_verified else 'NOT verified'})",
        f"- suite: {_code(r.suite_name)}, {r.suite_size} questions, id-list sha256 {_code(r.suite_ids_sha256)}",
        f"- memory system: {_code(r.memory_name)}, code fingerprint {_code(r.memory_fingerprint_sha256)}, "
        f"config sha256 {_code(r.memory_config_sha256)}",
        f"- reader: {_code(r.reader_name)}, model {_code(r.reader_requested_model)}, returned "
        f"{_code(_names(r.reader_resolved_models))}",
        f"- judge: {_code(r.judge_name)}, snapshot(s) {_code(_names(r.judge_resolved_models))}, "
        f"prompt-set sha256 {_code(r.judge_prompt_set_sha256)}, endpoint(s) {_code(_names(r.judge_endpoints))}",
        f"- judged file: {_code(judged_path)}, sha256 {_code(judged_sha) if judged_sha else 'not in the custody manifest'}",
        f"- scoring profile {_code(r.scoring_profile)}; Mnemetric {r.mnemetric_version}; "
        f"{r.counts_judged} of {r.counts_questions} judged, {r.counts_failed} failed",
    ]


CARD = CardSpec(inputs=CARD_INPUTS, rows=card_rows, empty="(no QA metrics)", custody=card_custody)


# ---------------------------------------------------------------------------------------------
# `mnemetric runs`

HEADLINE = ("overall", "task_avg", "R_all@10", "nDCG@10")


def gate_of(run: Any, file: str) -> OfficialEquivalence | None:
    """The run manifest's official_equivalence (None: no manifest, or an older one without the record)."""
    raw = run.get(KEY) if isinstance(run, Mapping) else None
    return None if raw is None else OfficialEquivalence.from_record(raw, file=file)


def _short(sha: str | None) -> str | None:
    return (sha or "")[:12] or None


def _float(x: float | None) -> float | None:
    return None if x is None else float(x)


def summary(params: Mapping[str, Any], read: Callable[[str], Any]) -> RunSummary:
    """V1's row of `mnemetric runs` at one revision (module docstring); ``read(path)``: the document or None."""
    p = ParamsShown.from_record(params)
    files = {"data": p.paths.get("metrics_data", "metrics/data.json"),
             "qa": p.paths.get("metrics_qa", "metrics/qa.json"),
             "retrieval": p.paths.get("metrics_retrieval", "metrics/retrieval.json"),
             "qa_detail": QA_DETAIL, "run": RUN_MANIFEST}
    docs = {k: read(f) for k, f in files.items()}
    data = DataShown.from_record(docs["data"], file=files["data"])
    qa = QAShown.from_record(docs["qa"], file=files["qa"])
    detail = QAShown.from_record(docs["qa_detail"], file=QA_DETAIL)
    retrieval = RetrievalShown.from_record(docs["retrieval"], file=files["retrieval"])
    judge = next((q.judge for q in (detail, qa) if q.judge is not None), JudgeShown(None, None))
    keys = {
        "benchmark": p.benchmark_name,
        "variant": p.variant_name,
        "sha256": _short(data.variant_sha256 or p.variant_sha256),
        "suite": data.suite_name or p.suite_name,
        "suite_sha256": _short(data.suite_ids_sha256),
        "adapter": p.adapter_schema,
        "profile": p.scoring_name,
        "judge": _names(judge.models) or p.judge_model,
        "judge_name": p.judge_name,
        "prompt_set": _short(judge.prompt_set_sha256),
        "reader": json.dumps(p.reader, sort_keys=True),
        "budget": f"k={p.context_k},tokens={p.context_tokens}",
    }
    numbers = (qa.overall.value, qa.task_averaged.value, retrieval.mean("session", "recall_all@10"),
               retrieval.mean("session", "ndcg_any@10"))
    return RunSummary(headline={label: _float(x) for label, x in zip(HEADLINE, numbers)}, keys=keys,
                      official=gate_of(docs["run"], RUN_MANIFEST), memory=p.memory_name)
