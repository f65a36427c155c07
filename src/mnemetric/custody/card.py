"""The result card: a short Markdown block ready to paste into an issue or a paper appendix.

What researchers post in the upstream tracker (LongMemEval issues #51, #53), written from the run's
own evidence instead of by hand: the headline numbers with their intervals, the dataset and its
revision with sha256, the suite, the memory system and its fingerprint, the reader, the judge
snapshot(s) and prompt-set sha256, the sha256 of the judged file, and official_equivalence with
its reasons. Inputs: the run manifest (metrics/run.json), the QA metrics (the detail file with
intervals when there is one), the retrieval headline and the sha256 custody manifest. Pure.

The metrics layouts are read in one small function each (:func:`qa_numbers`,
:func:`retrieval_numbers`), so a key that moves is a one-line fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

QA_ROWS = (("overall", "overall accuracy"), ("task_averaged", "task-averaged accuracy"),
           ("abstention", "abstention accuracy"))
RETRIEVAL_KEYS = ("recall_all@5", "ndcg_any@5", "recall_all@10", "ndcg_any@10")


@dataclass(frozen=True)
class Number:
    label: str
    value: float | None
    low: float | None = None
    high: float | None = None
    n: int | None = None


def _get(doc: Any, *path: str) -> Any:
    for part in path:
        if not isinstance(doc, Mapping):
            return None
        doc = doc.get(part)
    return doc


def _value(node: Any) -> float | None:
    """A number, or the ``accuracy`` of a block (detail layout)."""
    if isinstance(node, Mapping):
        node = node.get("accuracy")
    return node if isinstance(node, (int, float)) and not isinstance(node, bool) else None


def qa_numbers(qa: Mapping[str, Any]) -> list[Number]:
    """overall, task_averaged, abstention (``ci95.<key>.low|high``), then each type (``per_type.<type>``)."""
    n_of = {"overall": _get(qa, "n"), "task_averaged": _get(qa, "n"), "abstention": _get(qa, "abstention", "n")}
    rows = [Number(label, _value(qa.get(key)), _get(qa, "ci95", key, "low"), _get(qa, "ci95", key, "high"),
                   n_of[key]) for key, label in QA_ROWS]
    for t, block in (qa.get("per_type") or {}).items():
        rows.append(Number(t, _value(block), _get(block, "ci95", "low"), _get(block, "ci95", "high"),
                           _get(block, "n")))
    return rows


def retrieval_numbers(retrieval: Mapping[str, Any]) -> list[Number]:
    """``exclude_abs.<granularity>.<metric>`` over ``exclude_abs.n`` (print_retrieval_metrics.py's set)."""
    gran = retrieval.get("granularity") or "session"
    block, n = _get(retrieval, "exclude_abs", gran) or {}, _get(retrieval, "exclude_abs", "n")
    return [Number(f"{gran} {k}", block.get(k), n=n) for k in RETRIEVAL_KEYS if _value(block.get(k)) is not None]


def _fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.4f}"


def _code(x: Any) -> str:
    return "—" if x in (None, "", []) else f"`{x}`"


def _table(rows: list[Number]) -> list[str]:
    out = ["| metric | value | 95% interval | n |", "|---|---|---|---|"]
    for r in rows:
        ci = "—" if r.low is None or r.high is None else f"[{_fmt(r.low)}, {_fmt(r.high)}]"
        out.append(f"| {r.label} | {_fmt(r.value)} | {ci} | {'—' if r.n is None else r.n} |")
    return out


def render_card(run: Mapping[str, Any], qa: Mapping[str, Any] | None, retrieval: Mapping[str, Any] | None,
                outputs: Mapping[str, Any] | None, judged_path: str) -> str:
    """The card's Markdown (module docstring)."""
    v, s, m, r, j = (run.get(k) or {} for k in ("variant", "suite", "memory", "reader", "judge"))
    gate = run.get("official_equivalence") or {}
    judged_sha = _get(outputs, "files", judged_path, "sha256")
    lines = [f"#### {run.get('benchmark', 'LongMemEval')} result: memory `{m.get('name')}` on `{v.get('name')}` "
             f"(suite `{s.get('name')}`)", ""]
    lines += _table(qa_numbers(qa) + (retrieval_numbers(retrieval) if retrieval else [])) if qa else ["(no QA metrics)"]
    lines += [
        "",
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
        f"- scoring profile {_code(_get(run, 'scoring', 'profile'))}; Mnemetric {run.get('mnemetric_version')}; "
        f"{_get(run, 'counts', 'judged')} of {_get(run, 'counts', 'questions')} judged, "
        f"{_get(run, 'counts', 'failed')} failed",
        f"- official_equivalence: **{str(gate.get('value')).lower()}**",
    ]
    lines += [f"  - {reason}" for reason in gate.get("reasons") or []]
    return "\n".join(lines) + "\n"
