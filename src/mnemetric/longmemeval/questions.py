"""The questions file (data/suites/<variant>-<suite>.questions.jsonl): the eval view of a suite's questions.

Stage ``suite`` writes it from the adapted file, one JSON line per question of the suite, in suite
(file) order, so that the stages after it — answer (each question's query), judge (the gold side),
qa_metrics (the question types) — read a few kilobytes instead of parsing the adapted file again
(GB-sized at M). Only retrieve, which needs the haystacks, reads the adapted file, once. A
Mnemetric format (upstream has no such file). Keys in this order:

* ``question_id``, ``question_type``, ``question``, ``answer`` (a string or a number),
  ``question_date``, ``abstention``, ``answer_session_ids`` (upstream session ids): the adapted
  record's eval view without its per-session labels;
* ``query``: ``{query_id, text, date, prefix}``, the memory view's query (what the reader answers).

Every error names the file, the line and the field.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from mnemetric.errors import InputError
from mnemetric.io import read_jsonl, require_file, write_jsonl_atomic
from mnemetric.longmemeval.adapted import AdaptedRecord, Query
from mnemetric.longmemeval.reference import Reference
from mnemetric.records import Fields, record_name

_FIX: Final = "regenerate it with `dvc repro suite`"
_ANSWER = ((str, int, float), "a string or a number")
KEYS: Final = ("question_id", "question_type", "question", "answer", "question_date", "abstention",
               "answer_session_ids", "query")
QUERY_KEYS: Final = ("query_id", "text", "date", "prefix")


@dataclass(frozen=True)
class Question:
    """One question of the suite as the stages after retrieval need it (one line of the questions file)."""

    question_id: str
    question_type: str
    question: str
    answer: str | int | float
    """Gold answer; a rubric for preference questions, an explanation for _abs questions."""
    question_date: str
    abstention: bool
    answer_session_ids: tuple[str, ...]
    query: Query
    """The memory view's query: what the reader is asked (v3: with its date)."""

    @classmethod
    def of_adapted(cls, rec: AdaptedRecord) -> Question:
        e = rec.eval
        return cls(e.question_id, e.question_type, e.question, e.answer, e.question_date, e.abstention,
                   e.answer_session_ids, rec.memory.query)

    @property
    def reference(self) -> Reference:
        """The gold side the judge needs."""
        return Reference(self.question_id, self.question_type, self.question, self.answer)

    @classmethod
    def from_record(cls, raw: Any, *, file: str, line: int | str) -> Question:
        """Validate one line (the layout :meth:`to_record` writes, no other key)."""
        f = Fields.of(raw, file=file, record=record_name(line), fix=_FIX)
        qid, f = f.identified()
        f = f.only(KEYS)
        q = f.at("query").only(QUERY_KEYS)
        query = Query(q.string("query_id"), q.string("text"), q.optional_string("date"), q.string("prefix"))
        return cls(qid, f.string("question_type"), f.string("question"), f.get("answer", _ANSWER),
                   f.string("question_date"), f.boolean("abstention"), f.strings("answer_session_ids"), query)

    def to_record(self) -> dict[str, Any]:
        q = self.query
        return {"question_id": self.question_id, "question_type": self.question_type, "question": self.question,
                "answer": self.answer, "question_date": self.question_date, "abstention": self.abstention,
                "answer_session_ids": list(self.answer_session_ids),
                "query": {"query_id": q.query_id, "text": q.text, "date": q.date, "prefix": q.prefix}}


def write_questions(path: str | Path, questions: Iterable[Question]) -> int:
    """Write the questions file atomically (one ``json.dumps(..., ensure_ascii=False)`` line each)."""
    return write_jsonl_atomic(path, (q.to_record() for q in questions))


def read_questions(path: str | Path) -> list[Question]:
    """Every question of the file, in file order; a repeated question id is an error."""
    require_file(path, fix="run `dvc repro suite` first")
    out: list[Question] = []
    seen: set[str] = set()
    for lineno, raw in read_jsonl(path):
        q = Question.from_record(raw, file=str(path), line=lineno)
        if q.question_id in seen:
            raise InputError(str(path), f"line {lineno} ({q.question_id})", "question_id", "duplicate question_id",
                             fix=_FIX)
        seen.add(q.question_id)
        out.append(q)
    return out
