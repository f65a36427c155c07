"""Upstream QA file formats: hypotheses and judged hypotheses (the reference: longmemeval/reference.py).

Formats (shared/docs/upstream-protocol.md §3.1–3.3; xiaowu0162/LongMemEval
src/evaluation/evaluate_qa.py and print_qa_metrics.py @ 9e0b455f):

* hypotheses: JSONL of ``{"question_id", "hypothesis"}`` (upstream falls back to one JSON list);
* judged: the hypothesis lines echoed with ``autoeval_label = {"model": str, "label": bool}`` (and, when
  Mnemetric judged them, ``mnemetric_judge``: :class:`mnemetric.longmemeval.judgments.JudgeTrace`);
* the reference file (the instance file read minimally) has its own module:
  :mod:`mnemetric.longmemeval.reference` (one record, one streaming reader).

Every error names the file, the line (or list index) and the field.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mnemetric.errors import InputError
from mnemetric.io import DuplicateKey, duplicate_key_error, require_file, unique_object
from mnemetric.longmemeval.judgments import JudgeTrace


@dataclass(frozen=True)
class Hypothesis:
    question_id: str
    hypothesis: str
    """The reader's answer text, judged against the reference answer."""
    record: dict = field(default_factory=dict, compare=False, repr=False)
    """The whole line as read (a judge echoes it, extra fields included, as upstream does)."""


@dataclass(frozen=True)
class JudgedHypothesis:
    question_id: str
    model: str
    """autoeval_label.model: the judge model id (upstream's official one is gpt-4o-2024-08-06)."""
    label: bool
    """autoeval_label.label: True if the judge said the hypothesis is correct."""
    hypothesis: str | None = None
    judge_trace: JudgeTrace | None = field(default=None, compare=False, repr=False)
    """Mnemetric's ``mnemetric_judge`` custody fields of the line, typed (None for files judged elsewhere)."""


_FIX_FORMAT = "write one JSON object per line (JSONL) or one JSON list of objects"


def _parse_jsonl(path: str, text: str) -> list[tuple[str, Any]]:
    """(``"line N"``, object) per non-empty line; the first line that is not JSON raises InputError."""
    records = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                records.append((f"line {lineno}", json.loads(line, object_pairs_hook=unique_object)))
            except DuplicateKey as exc:
                raise duplicate_key_error(path, f"line {lineno}", exc, line) from None
            except json.JSONDecodeError as exc:
                raise InputError(path, f"line {lineno}", "<json>", f"not valid JSON ({exc.msg}, column {exc.colno})",
                                 fix=f"{_FIX_FORMAT}; delete a cut-off last line (interrupted write)") from None
    return records


def _parse_json_list(path: str, text: str) -> list[tuple[str, Any]]:
    """(``"index N"``, object) per item of a top-level JSON list; text holding one complete list
    followed by more JSON is JSONL whose lines are lists. Any other JSON error names its line."""
    try:
        obj = json.loads(text, object_pairs_hook=unique_object)
    except DuplicateKey as exc:
        raise duplicate_key_error(path, "<file>", exc) from None
    except json.JSONDecodeError as exc:
        if exc.msg.startswith("Extra data"):
            return _parse_jsonl(path, text)
        raise InputError(path, f"line {exc.lineno}", "<json>",
                         f"not a valid JSON list ({exc.msg}, column {exc.colno})", fix=_FIX_FORMAT) from None
    return [(f"index {i}", item) for i, item in enumerate(obj)]


def load_records(path: str | Path, prefer: str = "jsonl") -> list[tuple[str, Any]]:
    """Read JSONL or one JSON list and label each record ("line N" / "index N").

    A file whose first non-space character is '[' is a JSON list (or JSONL of lists); anything else
    is JSONL, and its first bad line is reported. ``prefer`` is kept for compatibility: the first
    character decides unambiguously, whatever upstream tries first.
    """
    path = str(path)
    text = require_file(path).read_text(encoding="utf-8")
    records = _parse_json_list(path, text) if text.lstrip().startswith("[") else _parse_jsonl(path, text)
    if not records:
        raise InputError(path, "<file>", "<file>", "no records")
    return records


def _field(path: str, where: str, rec: Any, name: str, kinds: tuple[type, ...], what: str) -> Any:
    """``rec[name]`` if present and of an accepted type (bool never passes as a number)."""
    if not isinstance(rec, dict):
        raise InputError(path, where, "<record>", f"expected a JSON object, got {type(rec).__name__}")
    if name not in rec:
        raise InputError(path, where, name, "missing")
    value = rec[name]
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise InputError(path, where, name, f"expected {what}, got {type(value).__name__} {value!r:.60}")
    return value


def _question_id(path: str, where: str, rec: Any, seen: set[str]) -> tuple[str, str]:
    """The record's question_id (non-empty, unique in the file) and a location naming it."""
    qid = _field(path, where, rec, "question_id", (str,), "a string")
    here = f"{where} ({qid})"
    if not qid:
        raise InputError(path, where, "question_id", "empty")
    if qid in seen:
        raise InputError(path, here, "question_id", "duplicate question_id", fix="keep one record per question")
    seen.add(qid)
    return qid, here


def read_hypotheses(path: str | Path) -> list[Hypothesis]:
    """Upstream hypothesis file: JSONL (fallback: JSON list) with question_id + hypothesis strings."""
    out, seen = [], set()
    for where, rec in load_records(path, prefer="jsonl"):
        qid, here = _question_id(str(path), where, rec, seen)
        out.append(Hypothesis(qid, _field(str(path), here, rec, "hypothesis", (str,), "a string"), rec))
    return out


def read_judged(path: str | Path) -> list[JudgedHypothesis]:
    """Upstream ``.eval-results-<alias>`` file: lines with autoeval_label {model: str, label: bool}."""
    out, seen = [], set()
    for where, rec in load_records(path, prefer="jsonl"):
        qid, here = _question_id(str(path), where, rec, seen)
        auto = _field(str(path), here, rec, "autoeval_label", (dict,), "an object {model, label}")
        model = _field(str(path), here, auto, "model", (str,), "a string")
        label = _field(str(path), here, auto, "label", (bool,), "true or false")
        hyp = rec.get("hypothesis")
        if hyp is not None and not isinstance(hyp, str):
            raise InputError(str(path), here, "hypothesis", f"expected a string, got {type(hyp).__name__}")
        raw_trace = rec.get("mnemetric_judge")
        trace = None if raw_trace is None else JudgeTrace.from_record(raw_trace, file=str(path), line=here)
        out.append(JudgedHypothesis(qid, model, label, hyp, trace))
    return out


def iter_ids(records: list[Hypothesis] | list[JudgedHypothesis]) -> Iterator[str]:
    """The question ids of any of the record lists above, in file order."""
    return (r.question_id for r in records)
