"""Fill the report model (mnemetric.report.model) from the V1 metric files; flips against a baseline.

Pure functions build the model from already-read inputs (:func:`build_report`, :func:`flips_between`);
:func:`read_inputs` is the I/O edge that reads them, each through its typed reader: the QA detail
(:class:`~mnemetric.longmemeval.scoring.qa_detail.QADetail`), the retrieval detail
(:func:`~mnemetric.longmemeval.scoring.retrieval_report.read_retrieval_detail`), metrics/data.json
(:class:`~mnemetric.longmemeval.data_stats.DataMetrics`) and the run manifest's verdict
(:class:`~mnemetric.official.OfficialEquivalence`); the interval and cost objects those files keep as objects
are read by name (:class:`IntervalShown`, :func:`cost_rows`). A field of the wrong type, or one the writer
always writes and the file lacks, is an InputError naming the file and the field.

Sources, each number shown exactly as its file holds it:

* equivalence: metrics/run.json ``official_equivalence: {value, reasons}`` when that file exists,
  else metrics/detail/qa.json's (the same record, :class:`mnemetric.official.OfficialEquivalence`);
* custody: metrics/data.json (variant, revision, sha256 and its verification, adapter schema,
  suite id-list sha256) and the QA detail (memory, reader, judge model, prompt-set sha256);
  memory code fingerprint: metrics/detail/retrieval.json ``memory_fingerprint``;
* headline: overall, task_averaged, abstention from metrics/detail/qa.json with their intervals
  and methods; recall_all@5/10 and ndcg_any@5/10 (session and turn) from metrics/detail/retrieval.json
  (rule exclude_abs, upstream print_retrieval_metrics.py's), with their bootstrap intervals;
* per-type bars: per_type.<type>.{accuracy, ci95, n}; curves: recall_all@k per level;
* cost: cost.<stage>.{responses, prompt_tokens, completion_tokens, usd} (cache hits are not in the
  cost-of-work layout: shown as not recorded);
* flips: only when a baseline's judged labels are given (the stage has none; the CLI may).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from mnemetric.errors import InputError
from mnemetric.io import atomic_open, require_file, sha256_file
from mnemetric.longmemeval.data_stats import DataMetrics, read_data_metrics
from mnemetric.longmemeval.scoring.qa import QUESTION_TYPES
from mnemetric.longmemeval.scoring.qa_detail import QADetail
from mnemetric.longmemeval.scoring.retrieval_averaging import split_at_k
from mnemetric.longmemeval.scoring.retrieval_report import RetrievalDetail, read_retrieval_detail
from mnemetric.report.model import (
    CostRow,
    Curve,
    CurvePoint,
    Custody,
    Equivalence,
    Flip,
    Flips,
    Headline,
    Interval,
    Report,
    TypeResult,
)
from mnemetric.official import KEY, OfficialEquivalence
from mnemetric.records import OPTIONAL_NUMBER, STRING, Fields
from mnemetric.stats import compare_paired

RULE = "exclude_abs"
UPSTREAM_PROFILE = "longmemeval-session-upstream-v1"
"""The profile whose metrics are upstream's (recall_all@k); the historical one has recall@k."""
RETRIEVAL_HEADLINE = ("recall_all@5", "recall_all@10", "ndcg_any@5", "ndcg_any@10",
                      "recall@5", "recall@10", "ndcg@5", "ndcg@10")
COST_STAGES = ("retrieve", "answer", "judge", "total")
QA_DETAIL: Final = "metrics/detail/qa.json"
RETRIEVAL_DETAIL: Final = "metrics/detail/retrieval.json"


_CI_FIX: Final = "regenerate it with `dvc repro` (the stage that writes it)"


@dataclass(frozen=True)
class IntervalShown:
    """An interval object (mnemetric.stats' ``{low, high, method, ...}``) as the page shows it: the bounds when
    both are numbers, its method (None: the file does not say); a bound or method of the wrong type is an
    InputError naming the file and the field."""

    interval: Interval | None
    method: str | None

    @classmethod
    def of(cls, raw: Any, *, file: str, field: str) -> IntervalShown:
        if raw is None:
            return cls(None, None)
        f = Fields.of(raw, file=file, record="<file>", prefix=f"{field}.", fix=_CI_FIX, field=field)
        low, high = f.maybe("low", OPTIONAL_NUMBER), f.maybe("high", OPTIONAL_NUMBER)
        return cls(Interval(low, high) if low is not None and high is not None else None,
                   f.maybe("method", STRING))


def equivalence(qa: QADetail, run: OfficialEquivalence | None) -> Equivalence:
    """From the run manifest when there is one, else from the QA detail (module docstring)."""
    gate = run if run is not None else qa.official_equivalence
    return Equivalence(gate.value, gate.reasons)


def custody(qa: QADetail, retrieval: RetrievalDetail, data: DataMetrics, judged_sha256: str | None = None) -> Custody:
    models = qa.judge.models
    return Custody(
        dataset_variant=data.variant, dataset_revision=data.revision, dataset_sha256=data.sha256,
        dataset_verified=data.sha256_verified, suite=data.suite, suite_ids_sha256=data.suite_ids_sha256,
        adapter_schema=data.adapter_schema, memory_system=str(qa.names.get("memory") or retrieval.memory or "unknown"),
        memory_fingerprint=retrieval.memory_fingerprint, reader=str(qa.names.get("reader") or "unknown"),
        judge_model=", ".join(models) if models else None, judge_prompt_set_sha256=qa.judge.prompt_set_sha256,
        judged_file_sha256=judged_sha256)


def qa_headline_rows(qa: QADetail, file: str = QA_DETAIL) -> list[Headline]:
    ci = {k: IntervalShown.of(qa.ci95.get(k), file=file, field=f"ci95.{k}")
          for k in ("overall", "task_averaged", "abstention")}
    return [Headline("overall accuracy", qa.overall, ci["overall"].interval, qa.n, ci["overall"].method or ""),
            Headline("task-averaged accuracy", qa.task_averaged, ci["task_averaged"].interval, qa.n,
                     ci["task_averaged"].method or "no interval"),
            Headline("abstention accuracy", qa.abstention_accuracy, ci["abstention"].interval, qa.abstention_n,
                     ci["abstention"].method or "")]


def retrieval_headline_rows(retrieval: RetrievalDetail) -> list[Headline]:
    block = retrieval.exclude_abs.mean  # RULE
    rows = []
    for level in ("session", "turn"):
        means, cis = block.means.get(level) or {}, (block.ci95 or {}).get(level) or {}
        for name in RETRIEVAL_HEADLINE:
            if name in means:
                ci = IntervalShown.of(cis.get(name), file=RETRIEVAL_DETAIL, field=f"{RULE}.ci95.{level}.{name}")
                rows.append(Headline(f"{name} ({level})", means[name], ci.interval, block.n,
                                     ci.method or "no interval"))
    return rows


def per_type(qa: QADetail, file: str = QA_DETAIL) -> tuple[TypeResult, ...]:
    out = []
    for t in QUESTION_TYPES:
        if t in qa.per_type:
            block = qa.per_type[t]
            ci = IntervalShown.of(block.ci95, file=file, field=f"per_type.{t}.ci95")
            out.append(TypeResult(t, block.accuracy, ci.interval, block.n))
    return tuple(out)


def curves(retrieval: RetrievalDetail) -> tuple[Curve, ...]:
    """recall_all@k (historical profile: recall@k) against k, one curve per level (rule exclude_abs)."""
    block = retrieval.exclude_abs.mean
    metric = "recall_all" if retrieval.profile == UPSTREAM_PROFILE else "recall"
    out = []
    for level in ("session", "turn"):
        points = sorted((parsed[1], v) for name, v in (block.means.get(level) or {}).items()
                        if (parsed := split_at_k(name)) and parsed[0] == metric)
        if points:
            out.append(Curve(f"{metric}@k ({level})", tuple(CurvePoint(k, v) for k, v in points)))
    return tuple(out)


def cost_rows(cost: Mapping[str, Any] | None, file: str = QA_DETAIL) -> tuple[CostRow, ...]:
    """One row per stage and the total; ``requests`` shows the responses used (cost of the work). The cost
    block's layout: :func:`~mnemetric.longmemeval.scoring.qa_report.cost_block` (a stage's counts read by name)."""
    if not cost:
        return ()
    f = Fields.of(cost, file=file, record="<file>", prefix="cost.", fix=_CI_FIX, field="cost")
    rows = []
    for stage in COST_STAGES:
        if isinstance(cost.get(stage), Mapping):
            s = f.at(stage)
            rows.append(CostRow(stage, s.count("responses"), None, s.count("prompt_tokens"),
                                s.count("completion_tokens"), float(s.amount("usd"))))
    return tuple(rows)


def flips_between(baseline: Mapping[str, bool], current: Mapping[str, bool], types: Mapping[str, str],
                  baseline_name: str, *, resamples: int = 1000, seed: int = 0) -> Flips:
    """Questions whose label differs between the baseline's and this run's judged labels (ids in
    both), with the paired difference of overall accuracy (this run − baseline; Tango's score
    interval for paired proportions, stats.score) and the exact McNemar p-value (stats.paired)."""
    common = [q for q in current if q in baseline]
    rows = tuple(Flip(q, types.get(q, "unknown"), "correct" if baseline[q] else "wrong",
                      "correct" if current[q] else "wrong") for q in common if baseline[q] != current[q])
    if not common:
        return Flips(baseline_name, rows)
    cmp = compare_paired([float(baseline[q]) for q in common], [float(current[q]) for q in common],
                         None, "micro", resamples, seed)
    return Flips(baseline_name, rows, cmp.diff, Interval(cmp.low, cmp.high) if cmp.interval else None, cmp.p_value)


def build_report(qa: QADetail, retrieval: RetrievalDetail, data: DataMetrics, *,
                 run: OfficialEquivalence | None = None, judged_sha256: str | None = None,
                 flips: Flips | None = None, result_card: str = "", title: str | None = None) -> Report:
    """The report model from the QA detail, retrieval detail and data metrics, typed (module docstring);
    ``run``: the run manifest's verdict (None: no manifest)."""
    name = title or f"Mnemetric report: {qa.names.get('memory') or 'unknown'} on {qa.names.get('variant') or 'unknown'}"
    notes = tuple(n for n in (qa.bootstrap.get("note"), retrieval.bootstrap.get("note")) if n)
    return Report(title=name, equivalence=equivalence(qa, run), custody=custody(qa, retrieval, data, judged_sha256),
                  headline=tuple(qa_headline_rows(qa) + retrieval_headline_rows(retrieval)), per_type=per_type(qa),
                  series_name=str(qa.names.get("memory") or "this run"),
                  retrieval_title=f"Retrieval: recall against k ({retrieval.profile} profile)",
                  curves=curves(retrieval), flips=flips, cost=cost_rows(qa.cost),
                  result_card=result_card, notes=notes)


def read_json(path: str | Path, *, fix: str) -> dict[str, Any]:
    """A JSON object from ``path``; a missing file or a non-object names the file and the fix."""
    file = require_file(Path(path), fix=fix)
    try:
        raw = json.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(str(path), f"line {exc.lineno}", "(file)", f"not valid JSON: {exc.msg}", fix=fix) from None
    if not isinstance(raw, dict):
        raise InputError(str(path), "index 0", "(file)", "expected a JSON object", fix=fix)
    return raw


def read_inputs(qa_detail: str | Path, retrieval_detail: str | Path, data_metrics: str | Path,
                run_manifest: str | Path | None) -> dict[str, Any]:
    """The four inputs of :func:`build_report` read from disk, each through its typed reader (QADetail,
    RetrievalDetail, DataMetrics; the run manifest's verdict, OfficialEquivalence, when that file exists)."""
    fix = "run `dvc repro` (or the qa_metrics / retrieval_metrics / data_metrics stage) first"
    qa = read_json(qa_detail, fix=fix)
    check_layout(qa, str(qa_detail))
    require_file(retrieval_detail, fix=fix)
    require_file(data_metrics, fix=fix)
    out = {"qa": QADetail.from_record(qa, file=str(qa_detail)), "retrieval": read_retrieval_detail(retrieval_detail),
           "data": read_data_metrics(data_metrics), "run": None}
    if run_manifest is not None and Path(run_manifest).exists():
        run = read_json(run_manifest, fix="rerun the stage that writes the run manifest")
        out["run"] = OfficialEquivalence.from_record(run.get(KEY), file=str(run_manifest))
    return out


def check_layout(qa: Mapping[str, Any], file: str) -> None:
    """An older metrics layout (no per-type intervals with methods) is named, not a traceback."""
    per = qa.get("per_type")
    if not isinstance(per, Mapping) or any(not isinstance(per.get(t), Mapping) for t in QUESTION_TYPES):
        raise InputError(file, "index 0", "per_type", "not the QA detail layout (per_type.<type>.{accuracy, n, ci95})",
                         fix="pass metrics/detail/qa.json written by the current qa_metrics stage")


def labels_by_id(lines: Sequence[Any]) -> dict[str, bool]:
    """question_id → label of judged hypotheses (mnemetric.longmemeval.hypotheses.JudgedHypothesis)."""
    return {j.question_id: bool(j.label) for j in lines}


def detail(path: str | Path) -> Path:
    """metrics/qa.json → metrics/detail/qa.json (the layout of the qa_metrics / retrieval_metrics stages)."""
    return Path(path).parent / "detail" / Path(path).name


def baseline_labels(path: str, rev: str, repo: str = ".") -> dict[str, bool]:
    """The judged labels of ``path`` at git revision / DVC experiment ``rev`` (dvc.api.open, no checkout)."""
    import tempfile

    import dvc.api

    from mnemetric.longmemeval.hypotheses import read_judged

    try:
        with dvc.api.open(path, repo=repo, rev=rev, encoding="utf-8") as fh:
            text = fh.read()
    except Exception as exc:  # dvc raises many types (unknown rev, missing file, no cache): one message
        raise InputError(path, f"revision {rev}", "(file)", f"cannot read the judged file at {rev}: {exc}",
                         fix="name a revision or experiment whose pipeline ran (`git log`, `dvc exp show`), "
                             "and make sure its outputs are in the DVC cache") from None
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / Path(path).name
        copy.write_text(text, encoding="utf-8")
        return labels_by_id(read_judged(copy))


def baseline_flips(p: Mapping[str, Any], baseline: str, *, resamples: int = 1000, seed: int = 0) -> Flips:
    """The flips of this run's judged labels against ``baseline``'s (question types from ``paths.questions``,
    the suite's eval view)."""
    from mnemetric.longmemeval.hypotheses import read_judged
    from mnemetric.longmemeval.questions import read_questions

    current = labels_by_id(read_judged(p["paths.judged"]))
    types = {q.question_id: q.question_type for q in read_questions(p["paths.questions"])}
    return flips_between(baseline_labels(p["paths.judged"], baseline), current, types, baseline,
                         resamples=resamples, seed=seed)


def report_model(p: Mapping[str, Any], card: str = "", baseline: str | None = None, *,
                 judge_audit: str | Path | None = None, **flip_options: Any) -> Report:
    """V1's report model from the files ``p`` (flat params, ``LongMemEvalFamily.report_params``) names;
    ``baseline``: a revision whose judged labels the flips are listed against (None: no flips);
    ``judge_audit``: a judge-audit file (`mnemetric judge-audit validity`, stage judge_audit) whose "Judge
    validity" section the page shows (None: the run's metrics/detail/judge_audit.json when it exists, else
    no section)."""
    inputs = read_inputs(detail(p["paths.metrics_qa"]), detail(p["paths.metrics_retrieval"]), p["paths.metrics_data"],
                         Path(p["paths.metrics_qa"]).parent / "run.json")
    judged = Path(p["paths.judged"])
    flips = baseline_flips(p, baseline, **flip_options) if baseline else None
    model = build_report(inputs["qa"], inputs["retrieval"], inputs["data"], run=inputs["run"],
                         judged_sha256=sha256_file(judged) if judged.is_file() else None, flips=flips,
                         result_card=card)
    model = with_attribution(model, detail(p["paths.metrics_qa"]).parent / "attribution.json")
    model = with_memory_cost(model, detail(p["paths.metrics_qa"]).parent / "memory_cost.json")
    if judge_audit is None:
        judge_audit = detail(p["paths.metrics_qa"]).parent / "judge_audit.json"
        if not judge_audit.is_file():
            return model
    from dataclasses import replace

    from mnemetric.longmemeval.judge_audit.files import read_judge_audit
    from mnemetric.longmemeval.judge_audit.report import judge_validity_section

    return replace(model, sections=(*model.sections, judge_validity_section(read_judge_audit(judge_audit))))


def with_attribution(model: Report, path: Path) -> Report:
    """The model with the failure-attribution section when the run has metrics/detail/attribution.json."""
    from dataclasses import replace

    from mnemetric.longmemeval.attribution_report import read_optional, report_section

    att = read_optional(path)
    return model if att is None else replace(model, sections=(*model.sections, report_section(att)))


def with_memory_cost(model: Report, path: Path) -> Report:
    """The model with the "Memory-side cost" section when the run's memory system used the model proxy
    (metrics/detail/memory_cost.json, mnemetric.llm.memory_cost)."""
    from dataclasses import replace

    from mnemetric.llm.memory_cost import report_section

    if not path.is_file():
        return model
    section = report_section(read_json(path, fix="rerun stage retrieve (dvc repro retrieve)"))
    return model if section is None else replace(model, sections=(*model.sections, section))


def write_report(p: dict, out: Path, flips=None, *, card: str = "") -> str:
    """Read the inputs named by ``p`` (stage params), render, write ``out`` atomically; returns the page text."""
    from dataclasses import replace

    from mnemetric.report import render_report

    model = report_model(p, card)
    page = render_report(model if flips is None else replace(model, flips=flips))
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_open(out, "w") as fh:
        fh.write(page)
    return page
