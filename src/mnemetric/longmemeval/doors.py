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
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from mnemetric.family import CardRow, CardSpec, RunSummary
from mnemetric.official import KEY, OfficialEquivalence
from mnemetric.records import dig

QA_DETAIL = "metrics/detail/qa.json"

QA_ROWS = (("overall", "overall accuracy"), ("task_averaged", "task-averaged accuracy"),
           ("abstention", "abstention accuracy"))
RETRIEVAL_KEYS = ("recall_all@5", "ndcg_any@5", "recall_all@10", "ndcg_any@10")
CARD_INPUTS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "qa": (QA_DETAIL, "metrics/qa.json"),
    "retrieval": ("metrics/detail/retrieval.json", "metrics/retrieval.json"),
})
"""The QA numbers: the detail file (intervals, n) when the pipeline writes one, else the headline;
the retrieval numbers likewise (both hold the same ``exclude_abs`` means and n)."""


def _value(node: Any) -> float | None:
    """A number, or the ``accuracy`` of a block (detail layout)."""
    if isinstance(node, Mapping):
        node = node.get("accuracy")
    return node if isinstance(node, (int, float)) and not isinstance(node, bool) else None


def qa_rows(qa: Mapping[str, Any]) -> list[CardRow]:
    """overall, task_averaged, abstention (``ci95.<key>.low|high``), then each type (``per_type.<type>``)."""
    n_of = {"overall": dig(qa, ("n",)), "task_averaged": dig(qa, ("n",)), "abstention": dig(qa, ("abstention", "n"))}
    rows = [CardRow(label, _value(qa.get(key)), dig(qa, ("ci95", key, "low")), dig(qa, ("ci95", key, "high")),
                    n_of[key]) for key, label in QA_ROWS]
    for t, block in (qa.get("per_type") or {}).items():
        rows.append(CardRow(t, _value(block), dig(block, ("ci95", "low")), dig(block, ("ci95", "high")),
                            dig(block, ("n",))))
    return rows


def retrieval_rows(retrieval: Mapping[str, Any]) -> list[CardRow]:
    """``exclude_abs.<granularity>.<metric>`` over ``exclude_abs.n`` (print_retrieval_metrics.py's set)."""
    gran = retrieval.get("granularity") or "session"
    block, n = dig(retrieval, ("exclude_abs", gran)) or {}, dig(retrieval, ("exclude_abs", "n"))
    return [CardRow(f"{gran} {k}", block.get(k), n=n) for k in RETRIEVAL_KEYS if _value(block.get(k)) is not None]


def card_rows(docs: Mapping[str, Mapping[str, Any] | None]) -> list[CardRow]:
    """The QA rows, then the retrieval rows; no QA metrics: no rows."""
    qa, retrieval = docs.get("qa"), docs.get("retrieval")
    if not qa:
        return []
    return qa_rows(qa) + (retrieval_rows(retrieval) if retrieval else [])





def _code(x: Any) -> str:
    return "—" if x in (None, "", []) else f"`{x}`"


def card_custody(run: Mapping[str, Any], outputs: Mapping[str, Any] | None,
                 params: Mapping[str, Any] | None) -> list[str]:
    """The run manifest's custody facts, one bullet each (module docstring)."""
    v, s, m, r, j = (run.get(k) or {} for k in ("variant", "suite", "memory", "reader", "judge"))
    judged_path = str(dig(params, ("paths", "judged")) or "<judged file>")
    judged_sha = dig(outputs, ("files", judged_path, "sha256"))
    return [
        f"- dataset: {_code(v.get('name'))} ({v.get('source')}{', ' + str(v.get('repo')) if v.get('repo') else ''}"
        f"{' @ ' + str(v.get('revision')) if v.get('revision') else ''}, file {_code(v.get('file'))}), sha256 "
        f"{_code(v.get('sha256'))} ({'verified' if v.get('sha256_verified') else 'NOT verified'})",
        f"- suite: {_code(s.get('name'))}, {s.get('size')} questions, id-list sha256 {_code(s.get('ids_sha256'))}",
        f"- memory system: {_code(m.get('name'))}, code fingerprint {_code(m.get('fingerprint_sha256'))}, "
        f"config sha256 {_code(m.get('config_sha256'))}",
        f"- reader: {_code(r.get('name'))}, model {_code(r.get('requested_model'))}, returned "
        f"{_code(', '.join(r.get('resolved_models') or []))}",
        f"- judge: {_code(j.get('name'))}, snapshot(s) {_code(', '.join(j.get('resolved_models') or []))}, "
        f"prompt-set sha256 {_code(j.get('prompt_set_sha256'))}, endpoint(s) {_code(', '.join(j.get('endpoints') or []))}",
        f"- judged file: {_code(judged_path)}, sha256 {_code(judged_sha) if judged_sha else 'not in the custody manifest'}",
        f"- scoring profile {_code(dig(run, ('scoring', 'profile')))}; Mnemetric {run.get('mnemetric_version')}; "
        f"{dig(run, ('counts', 'judged'))} of {dig(run, ('counts', 'questions'))} judged, "
        f"{dig(run, ('counts', 'failed'))} failed",
    ]


CARD = CardSpec(inputs=CARD_INPUTS, rows=card_rows, empty="(no QA metrics)", custody=card_custody)


# ---------------------------------------------------------------------------------------------
# `mnemetric runs`

HEADLINE = (("overall", "qa", "overall"), ("task_avg", "qa", "task_averaged"),
            ("R_all@10", "retrieval", "exclude_abs.session.recall_all@10"),
            ("nDCG@10", "retrieval", "exclude_abs.session.ndcg_any@10"))


def _headline(value: Any) -> float | None:
    """A number, or the ``value`` / ``point`` / ``accuracy`` of a block (layouts differ by version)."""
    if isinstance(value, dict):
        value = next((value[k] for k in ("value", "point", "accuracy", "mean") if k in value), None)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def gate_of(run: Any, file: str) -> OfficialEquivalence | None:
    """The run manifest's official_equivalence (None: no manifest, or an older one without the record)."""
    raw = run.get(KEY) if isinstance(run, Mapping) else None
    return None if raw is None else OfficialEquivalence.from_record(raw, file=file)


def summary(params: Mapping[str, Any], read: Callable[[str], Any]) -> RunSummary:
    """V1's row of `mnemetric runs` at one revision (module docstring); ``read(path)``: the document or None."""
    from mnemetric.longmemeval.compare import conf_settings

    paths = params.get("paths") or {}
    files = {"data": paths.get("metrics_data", "metrics/data.json"), "qa": paths.get("metrics_qa", "metrics/qa.json"),
             "retrieval": paths.get("metrics_retrieval", "metrics/retrieval.json"),
             "qa_detail": QA_DETAIL, "run": RUN_MANIFEST}
    docs = {k: read(f) or {} for k, f in files.items()}
    data, qa = docs["data"], docs["qa"]
    judge = next((b["judge"] for b in (docs["qa_detail"], qa) if isinstance(b.get("judge"), dict)), {})
    keys = {
        "benchmark": dig(params, "benchmark.name"),
        "variant": dig(params, "variant.name"),
        "sha256": (dig(data, "variant.sha256") or dig(params, "variant.sha256") or "")[:12] or None,
        "suite": (dig(data, "suite.name") or dig(params, "suite.name")),
        "suite_sha256": (dig(data, "suite.ids_sha256") or "")[:12] or None,
        "adapter": dig(params, "adapter.schema"),
        "profile": dig(params, "scoring.name"),
        "judge": ",".join(judge.get("models") or []) or dig(params, "judge.model"),
        "judge_name": dig(params, "judge.name"),
        "prompt_set": (judge.get("prompt_set_sha256") or "")[:12] or None,
        "reader": json.dumps(conf_settings(dig(params, "reader")), sort_keys=True),
        "budget": f"k={dig(params, 'retrieval.context_k')},tokens={dig(params, 'retrieval.context_tokens')}",
    }
    return RunSummary(headline={label: _headline(dig(docs[f], key)) for label, f, key in HEADLINE}, keys=keys,
                      official=gate_of(docs["run"], RUN_MANIFEST), memory=dig(params, "memory.name"))


RUN_MANIFEST = "metrics/run.json"
