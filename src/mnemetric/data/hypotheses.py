"""Upstream QA file formats: hypotheses, judged hypotheses, and the minimal reference.

Formats (shared/docs/upstream-protocol.md §3.1–3.3; xiaowu0162/LongMemEval
src/evaluation/evaluate_qa.py and print_qa_metrics.py @ 9e0b455f):

* hypotheses: JSONL of ``{"question_id", "hypothesis"}`` (upstream falls back to one JSON list);
* judged: the hypothesis lines echoed with ``autoeval_label = {"model": str, "label": bool}``;
* reference: one JSON list of instances (we fall back to JSONL); only question_id, question_type,
  question and answer are read, so a trimmed reference works. ``answer`` may be a bare number.

Every error names the file, the line (or list index) and the field.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError
from .jsonstream import iter_json_list


@dataclass(frozen=True)
class Hypothesis:
    question_id: str
    hypothesis: str
    """The reader's answer text, judged against the reference answer."""


@dataclass(frozen=True)
class JudgedHypothesis:
    question_id: str
    model: str
    """autoeval_label.model: the judge model id (upstream's official one is gpt-4o-2024-08-06)."""
    label: bool
    """autoeval_label.label: True if the judge said the hypothesis is correct."""
    hypothesis: str | None = None


@dataclass(frozen=True)
class ReferenceItem:
    question_id: str
    question_type: str
    question: str
    answer: str | int | float
    """Gold answer; a rubric for preference questions, an explanation for _abs questions."""


def _parse_jsonl(text: str) -> list[tuple[str, Any]] | None:
    """(``"line N"``, object) per non-empty line, or None if any line is not JSON."""
    records = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                records.append((f"line {lineno}", json.loads(line)))
            except json.JSONDecodeError:
                return None
    return records


def _parse_json_list(text: str) -> list[tuple[str, Any]] | None:
    """(``"index N"``, object) per item of a top-level JSON list, or None if the text is not one."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        return None
    return [(f"index {i}", item) for i, item in enumerate(obj)] if isinstance(obj, list) else None


def load_records(path: str | Path, prefer: str = "jsonl") -> list[tuple[str, Any]]:
    """Read JSONL or a JSON list (trying ``prefer`` first, as upstream does); label each record."""
    path = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(path, "<file>", "<file>", "file not found") from None
    if prefer == "jsonl":
        records = _parse_jsonl(text)
        if records is None or (len(records) == 1 and isinstance(records[0][1], list)):
            records = _parse_json_list(text)
    else:
        records = _parse_json_list(text)
        if records is None:
            records = _parse_jsonl(text)
    if records is None:
        raise InputError(path, "<file>", "<json>", "neither JSONL nor one JSON list",
                         fix="write one JSON object per line (JSONL) or one JSON list of objects")
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
        out.append(Hypothesis(qid, _field(str(path), here, rec, "hypothesis", (str,), "a string")))
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
        out.append(JudgedHypothesis(qid, model, label, hyp))
    return out


def read_reference_minimal(path: str | Path) -> list[ReferenceItem]:
    """Reference questions: JSON list (fallback: JSONL); only question_id/type, question, answer are read."""
    out, seen = [], set()
    for where, rec in _reference_records(path):
        qid, here = _question_id(str(path), where, rec, seen)
        p = str(path)
        out.append(ReferenceItem(
            question_id=qid,
            question_type=_field(p, here, rec, "question_type", (str,), "a string"),
            question=_field(p, here, rec, "question", (str,), "a string"),
            answer=_field(p, here, rec, "answer", (str, int, float), "a string or a number"),
        ))
    if not out:
        raise InputError(str(path), "<file>", "<file>", "no records")
    return out


def _reference_records(path: str | Path) -> Iterator[tuple[str, Any]]:
    """Stream a JSON list item by item (the M file is ~2.7 GB); anything else goes through load_records."""
    try:
        with open(path, encoding="utf-8") as fh:
            head = fh.read(4096).lstrip()
    except FileNotFoundError:
        raise InputError(str(path), "<file>", "<file>", "file not found") from None
    if head.startswith("["):
        return ((f"index {i}", item) for i, item in enumerate(iter_json_list(path)))
    return iter(load_records(path, prefer="json"))


def iter_ids(records: list[Hypothesis] | list[JudgedHypothesis] | list[ReferenceItem]) -> Iterator[str]:
    """The question ids of any of the record lists above, in file order."""
    return (r.question_id for r in records)
