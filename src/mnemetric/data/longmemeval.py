"""LongMemEval (V1) instances: typed records, validation and the streaming loader.

Schema facts (shared/docs/upstream-protocol.md §1.2): a file is one JSON list of instances with
question_id, question_type, question, answer (str, or a bare number in real data), question_date,
the parallel lists haystack_session_ids / haystack_dates / haystack_sessions, and
answer_session_ids. A turn is {role, content} plus has_answer (bool) inside answer sessions.
Dates use strftime "%Y/%m/%d (%a) %H:%M". Abstention = "_abs" in question_id (never a type).

Only this module knows the upstream key spellings; the rest of Mnemetric uses the attributes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ..errors import InputError, Problem, ValidationFailed
from ..io import require_file
from .jsonstream import iter_json_list

DATE_FORMAT = "%Y/%m/%d (%a) %H:%M"
_DATE_RE = re.compile(r"^\d{4}/\d{2}/\d{2} \([A-Z][a-z]{2}\) \d{2}:\d{2}$")

QUESTION_TYPES = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "temporal-reasoning",
    "knowledge-update",
    "multi-session",
)
ROLES = ("user", "assistant")
ABSTENTION_MARK = "_abs"


@dataclass(frozen=True)
class Turn:
    role: str
    """"user" or "assistant"."""
    content: str
    has_answer: bool | None
    """Evidence flag; present (True/False) only inside answer sessions, else None."""


@dataclass(frozen=True)
class Session:
    session_id: str
    """Upstream id; answer sessions contain the word "answer" (never shown to a memory system)."""
    date: str
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Instance:
    question_id: str
    question_type: str
    question: str
    answer: str | int | float
    question_date: str
    sessions: tuple[Session, ...]
    """Haystack in file order (S/M files are chronological; oracle is not)."""
    answer_session_ids: tuple[str, ...]

    @property
    def is_abstention(self) -> bool:
        """Upstream rule: the substring "_abs" in question_id marks an abstention question."""
        return ABSTENTION_MARK in self.question_id

    def to_record(self) -> dict[str, Any]:
        """Back to the upstream JSON shape (used for upstream-format logs)."""
        return {
            "question_id": self.question_id,
            "question_type": self.question_type,
            "question": self.question,
            "answer": self.answer,
            "question_date": self.question_date,
            "haystack_session_ids": [s.session_id for s in self.sessions],
            "haystack_dates": [s.date for s in self.sessions],
            "haystack_sessions": [[_turn_record(t) for t in s.turns] for s in self.sessions],
            "answer_session_ids": list(self.answer_session_ids),
        }


def _turn_record(t: Turn) -> dict[str, Any]:
    rec: dict[str, Any] = {"role": t.role, "content": t.content}
    if t.has_answer is not None:
        rec["has_answer"] = t.has_answer
    return rec


def is_valid_date(text: Any) -> bool:
    if not isinstance(text, str) or not _DATE_RE.match(text):
        return False
    try:
        datetime.strptime(text, DATE_FORMAT)
    except ValueError:
        return False
    return True


# ---------------------------------------------------------------- validation (pure)

_STR_FIELDS = ("question_id", "question_type", "question", "question_date")
_LIST_FIELDS = ("haystack_session_ids", "haystack_dates", "haystack_sessions", "answer_session_ids")


def record_name(raw: Any, index: int) -> str:
    qid = raw.get("question_id") if isinstance(raw, dict) else None
    return qid if isinstance(qid, str) and qid else f"index {index}"


def check_instance(raw: Any, file: str, index: int) -> list[Problem]:
    """Every problem of one raw instance (empty list = valid)."""
    rec = record_name(raw, index)
    p = lambda field, msg: Problem(file, rec, field, msg)  # noqa: E731
    if not isinstance(raw, dict):
        return [p("<instance>", f"expected a JSON object, got {type(raw).__name__}")]
    problems = [p(f, "missing") for f in (*_STR_FIELDS, "answer", *_LIST_FIELDS) if f not in raw]
    for f in _STR_FIELDS:
        if f in raw and not isinstance(raw[f], str):
            problems.append(p(f, f"expected a string, got {type(raw[f]).__name__}"))
    if "answer" in raw and (isinstance(raw["answer"], bool) or not isinstance(raw["answer"], (str, int, float))):
        problems.append(p("answer", f"expected a string or number, got {type(raw['answer']).__name__}"))
    if isinstance(raw.get("question_type"), str) and raw["question_type"] not in QUESTION_TYPES:
        problems.append(p("question_type", f"unknown type {raw['question_type']!r}; known: {', '.join(QUESTION_TYPES)}"))
    if isinstance(raw.get("question_date"), str) and not is_valid_date(raw["question_date"]):
        problems.append(p("question_date", f"{raw['question_date']!r} is not in the format {DATE_FORMAT!r}"))
    for f in _LIST_FIELDS:
        if f in raw and not isinstance(raw[f], list):
            problems.append(p(f, f"expected a list, got {type(raw[f]).__name__}"))
    if not problems:
        problems += _check_haystack(raw, p)
    return problems


def _check_haystack(raw: dict, p) -> list[Problem]:
    ids, dates, sessions = raw["haystack_session_ids"], raw["haystack_dates"], raw["haystack_sessions"]
    problems: list[Problem] = []
    if not (len(ids) == len(dates) == len(sessions)):
        problems.append(p("haystack_sessions", f"parallel lists differ in length: haystack_session_ids {len(ids)}, "
                          f"haystack_dates {len(dates)}, haystack_sessions {len(sessions)}"))
    for i, sid in enumerate(ids):
        if not isinstance(sid, str) or not sid:
            problems.append(p(f"haystack_session_ids[{i}]", f"expected a non-empty string, got {sid!r}"))
    for i, d in enumerate(dates):
        if not is_valid_date(d):
            problems.append(p(f"haystack_dates[{i}]", f"{d!r} is not in the format {DATE_FORMAT!r}"))
    for i, session in enumerate(sessions):
        problems += _check_session(session, i, p)
    known = {s for s in ids if isinstance(s, str)}
    for i, aid in enumerate(raw["answer_session_ids"]):
        if not isinstance(aid, str):
            problems.append(p(f"answer_session_ids[{i}]", f"expected a string, got {type(aid).__name__}"))
        elif aid not in known:
            problems.append(p(f"answer_session_ids[{i}]", f"{aid!r} is not in haystack_session_ids"))
    return problems


def _check_session(session: Any, i: int, p) -> list[Problem]:
    where = f"haystack_sessions[{i}]"
    if not isinstance(session, list):
        return [p(where, f"expected a list of turns, got {type(session).__name__}")]
    problems = []
    for j, turn in enumerate(session):
        tw = f"{where}[{j}]"
        if not isinstance(turn, dict):
            problems.append(p(tw, f"expected a turn object, got {type(turn).__name__}"))
            continue
        if turn.get("role") not in ROLES:
            problems.append(p(f"{tw}.role", f"expected 'user' or 'assistant', got {turn.get('role')!r}"))
        if not isinstance(turn.get("content"), str):
            problems.append(p(f"{tw}.content", "missing" if "content" not in turn else
                              f"expected a string, got {type(turn['content']).__name__}"))
        if "has_answer" in turn and not isinstance(turn["has_answer"], bool):
            problems.append(p(f"{tw}.has_answer", f"expected true/false, got {turn['has_answer']!r}"))
    return problems


def parse_instance(raw: dict[str, Any]) -> Instance:
    """Raw (already validated) dict → typed Instance."""
    sessions = tuple(
        Session(sid, date, tuple(Turn(t["role"], t["content"], t.get("has_answer")) for t in turns))
        for sid, date, turns in zip(raw["haystack_session_ids"], raw["haystack_dates"], raw["haystack_sessions"])
    )
    return Instance(raw["question_id"], raw["question_type"], raw["question"], raw["answer"],
                    raw["question_date"], sessions, tuple(raw["answer_session_ids"]))


# ---------------------------------------------------------------- loading (I/O)


def iter_instances(path: str | Path) -> Iterator[Instance]:
    """Stream typed instances; the first invalid instance (or duplicate id) raises, naming file/record/field."""
    file, seen = str(path), set()
    for index, raw in enumerate(_iter_raw(path)):
        problems = check_instance(raw, file, index)
        if not problems and raw["question_id"] in seen:
            problems = [Problem(file, raw["question_id"], "question_id", f"duplicate question_id (again at index {index})")]
        if problems:
            first = problems[0]
            if len(problems) == 1:
                raise InputError(first.file, first.record, first.field, first.message,
                                 fix=f"run `mnemetric validate {file}` to list every problem")
            raise ValidationFailed(file, problems)
        seen.add(raw["question_id"])
        yield parse_instance(raw)


def load_instances(path: str | Path) -> list[Instance]:
    return list(iter_instances(path))


def validate_file(path: str | Path) -> tuple[int, list[Problem]]:
    """Check every instance; return (number of instances, all problems). Never raises for bad data."""
    file, problems, first_index = str(path), [], {}
    n = 0
    try:
        for index, raw in enumerate(_iter_raw(path)):
            n += 1
            problems += check_instance(raw, file, index)
            qid = raw.get("question_id") if isinstance(raw, dict) else None
            if isinstance(qid, str):
                if qid in first_index:
                    problems.append(Problem(file, qid, "question_id",
                                            f"duplicate question_id (index {first_index[qid]} and index {index})"))
                else:
                    first_index[qid] = index
    except InputError as exc:
        problems.append(exc.problem)
    return n, problems


def _iter_raw(path: str | Path) -> Iterator[Any]:
    return iter_json_list(require_file(path, fix="check the path; for pipeline variants run `dvc repro` "
                                                 "(stage prepare) first"))
