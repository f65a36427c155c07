"""The reference file: the upstream LongMemEval instance file, read minimally and item by item.

One typed record (:class:`Reference`) and one streaming reader (:func:`iter_reference`) serve every
caller that needs the gold side of a question: the judge, score-qa, compare, the cross-check (family
``reference_types``) and retrieval scoring (the known question ids).

Format (shared/docs/upstream-protocol.md §3.3; xiaowu0162/LongMemEval src/evaluation/evaluate_qa.py and
print_qa_metrics.py @ 9e0b455f): one JSON list of instances. evaluate_qa.py falls back to JSONL, and so
do we. Only ``question_id``, ``question_type``, ``question`` and ``answer`` are read, so a trimmed reference
works; ``answer`` may be a bare number (a few upstream answers are). The list is streamed with
:func:`mnemetric.jsonstream.iter_json_items` (the M file is ~2.7 GB; only the four fields are kept).

Rules, each refusal naming file, record and field: in a JSON list the record is
``question 'qid' (index N, byte B)`` (B: the offset of the item's first byte), or ``index N (byte B)``
without a usable id; in JSONL ``line N (qid)``.

* question_id: a non-empty string, unique in the file;
* question_type: one of :data:`mnemetric.longmemeval.rules.QUESTION_TYPES`. Upstream evaluate_qa.py
  raises NotImplementedError on any other type of a non-abstention question, and print_qa_metrics.py
  fails on it for every question (its per-type table has the six types only), so refusing an unknown
  type when the file is read is upstream-consistent, only earlier;
* question: a string; answer: a string or a number (never true/false).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mnemetric.errors import InputError
from mnemetric.io import read_jsonl, require_file
from mnemetric.jsonstream import iter_json_items, record_of
from mnemetric.longmemeval.rules import QUESTION_TYPES

_FIX_FILE = "pass the LongMemEval dataset file (a JSON list of instances, or JSONL) the run was made from"


def _field(file: str, where: str, raw: dict, name: str, kinds: tuple[type, ...], what: str) -> Any:
    """``raw[name]`` if present and of an accepted type (bool never passes as a number)."""
    if name not in raw:
        raise InputError(file, where, name, "missing")
    value = raw[name]
    if not isinstance(value, kinds) or isinstance(value, bool):
        raise InputError(file, where, name, f"expected {what}, got {type(value).__name__} {value!r:.60}")
    return value


@dataclass(frozen=True)
class Reference:
    """The gold side of one question, as the judge and the QA metrics need it."""

    question_id: str
    question_type: str
    """One of rules.QUESTION_TYPES (upstream's six)."""
    question: str
    answer: str | int | float
    """Gold answer; a rubric for preference questions, an explanation for _abs questions."""

    @classmethod
    def from_record(cls, raw: Any, *, file: str, line: str) -> Reference:
        """Validate one instance (other fields are ignored); errors name ``file``, ``line (qid)`` and the field."""
        if not isinstance(raw, dict):
            raise InputError(file, line, "<record>", f"expected a JSON object, got {type(raw).__name__}")
        qid = _field(file, line, raw, "question_id", (str,), "a string")
        if not qid:
            raise InputError(file, line, "question_id", "empty")
        here = f"{line} ({qid})"
        qtype = _field(file, here, raw, "question_type", (str,), "a string")
        if qtype not in QUESTION_TYPES:
            raise InputError(file, here, "question_type", f"unknown question type {qtype!r}",
                             fix=f"use one of upstream's types: {', '.join(QUESTION_TYPES)}")
        return cls(question_id=qid, question_type=qtype,
                   question=_field(file, here, raw, "question", (str,), "a string"),
                   answer=_field(file, here, raw, "answer", (str, int, float), "a string or a number"))

    def to_record(self) -> dict[str, Any]:
        return {"question_id": self.question_id, "question_type": self.question_type,
                "question": self.question, "answer": self.answer}


def _raw_items(path: str | Path) -> Iterator[tuple[str, Any, int | None, Callable[[int], int | None] | None]]:
    """(``"index N"`` or ``"line N"``, item, index, offset): a file whose first non-space byte is '[' is a
    JSON list (streamed; ``offset(index)`` is where an item starts, asked only for a message), anything
    else JSONL (streamed line by line; index and offset None)."""
    with open(require_file(path, fix=_FIX_FILE), "rb") as fh:
        head = fh.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith(b"["):
        items = iter_json_items(path)
        for index, (item, flaws) in enumerate(items):
            if flaws:
                f = flaws[0]
                raise InputError(str(path), record_of(item, index), f.path or "<item>", f.message, fix=f.fix,
                                 index=index, offset=items.offset(index))
            yield f"index {index}", item, index, items.offset
        return
    for n, item in read_jsonl(path):
        yield f"line {n}", item, None, None


def iter_reference(path: str | Path) -> Iterator[Reference]:
    """Yield each reference record in file order, checking as it goes (a bad item late in the file
    raises when the stream reaches it, naming its index); duplicate question ids and an empty file
    are refused."""
    file, seen = str(path), set()
    for where, raw, index, offset in _raw_items(path):
        try:
            ref = Reference.from_record(raw, file=file, line=where)
            if ref.question_id in seen:
                raise InputError(file, f"{where} ({ref.question_id})", "question_id", "duplicate question_id",
                                 fix="keep one record per question")
        except InputError as exc:
            if index is None or offset is None:
                raise
            p = exc.problem  # a list item: named as the V1 readers name it, with its index and first byte
            raise InputError(p.file, record_of(raw, index), p.field, p.message, fix=exc.fix, index=index,
                             offset=offset(index)) from None
        seen.add(ref.question_id)
        yield ref
    if not seen:
        raise InputError(file, "<file>", "<file>", "no records", fix=_FIX_FILE)


def read_reference(path: str | Path) -> list[Reference]:
    """Every reference record of ``path``, in file order."""
    return list(iter_reference(path))


def reference_by_id(path: str | Path) -> dict[str, Reference]:
    """{question_id: Reference} (what the judge looks hypotheses up in)."""
    return {r.question_id: r for r in iter_reference(path)}


def reference_types(path: str | Path) -> dict[str, str]:
    """{question_id: question_type} (what the QA metrics group by)."""
    return {r.question_id: r.question_type for r in iter_reference(path)}


def reference_ids(path: str | Path) -> set[str]:
    """The question ids of ``path`` (what retrieval scoring checks a log against)."""
    return {r.question_id for r in iter_reference(path)}
