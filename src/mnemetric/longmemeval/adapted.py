"""LongMemEval session adapters: ``longmemeval-session-v3`` (dated) and ``legacy-v2`` (undated replay).

An adapted record has two halves:

* ``memory`` (:class:`MemoryView`): all a memory system may see — an opaque query id, the question
  text (v3: with its date), and the haystack sessions in chronological order under opaque ids
  (``s001``…), each with its messages (role, content), its position in the upstream haystack list
  and, in v3, its date and a date prefix.
  No answer, question_type, has_answer, answer_session_ids, question_id or upstream session id.
* ``eval`` (:class:`EvalView`): what the harness scores with — question_id, type, answer,
  abstention flag, and per session the mapping opaque id → upstream id plus the turn labels.

Schema ids: ``mnemetric.longmemeval-session/v3`` and ``mnemetric.longmemeval-session/v2``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from mnemetric.longmemeval.instance import Instance
from mnemetric.errors import ConfigError, InputError
from mnemetric.io import DuplicateKey, duplicate_key_error, require_file, unique_object
from mnemetric.records import Fields, Kind, is_kind, record_name, type_error

SCHEMAS = {"mnemetric.longmemeval-session/v3": True, "mnemetric.longmemeval-session/v2": False}


@dataclass(frozen=True)
class Message:
    role: str
    content: str


@dataclass(frozen=True)
class MemorySession:
    session_id: str
    """Opaque id, e.g. "s003" (chronological position); says nothing about evidence."""
    date: str | None
    """Session date text (v3); None in the undated v2 replay."""
    prefix: str
    """Text a system may put before the session's content ("" in v2)."""
    messages: tuple[Message, ...]
    position: int = 0
    """0-based index of the session in the upstream haystack lists (file order). Sessions are
    replayed in date order; a system that must reproduce upstream's corpus order (bm25-upstream:
    run_retrieval.py builds its corpus in file order) sorts by this. Not a label: the oracle file's
    order is its own, S and M files are chronological."""


@dataclass(frozen=True)
class Query:
    query_id: str
    text: str
    date: str | None
    prefix: str


@dataclass(frozen=True)
class MemoryView:
    schema: str
    query: Query
    sessions: tuple[MemorySession, ...]


@dataclass(frozen=True)
class EvalSession:
    session_id: str
    upstream_id: str
    date: str
    has_answer: tuple[bool | None, ...]


@dataclass(frozen=True)
class EvalView:
    question_id: str
    question_type: str
    question: str
    answer: str | int | float
    question_date: str
    abstention: bool
    answer_session_ids: tuple[str, ...]
    sessions: tuple[EvalSession, ...]
    """Aligned with MemoryView.sessions (same order, same opaque ids)."""


@dataclass(frozen=True)
class AdaptedRecord:
    memory: MemoryView
    eval: EvalView

    def to_record(self) -> dict[str, Any]:
        """One line of the adapted file: ``{"memory": ..., "eval": ...}``, fields in declaration order:
        ``dataclasses.asdict`` of each half, spelled out (asdict deep-copies every value through a
        recursive walk: half of ``mnemetric adapt``'s time on an M-shaped file; tests/longmemeval/
        test_adapted_record.py holds the two equal, so a new field must be added here)."""
        m, e, q = self.memory, self.eval, self.memory.query
        memory = {"schema": m.schema,
                  "query": {"query_id": q.query_id, "text": q.text, "date": q.date, "prefix": q.prefix},
                  "sessions": [{"session_id": s.session_id, "date": s.date, "prefix": s.prefix,
                                "messages": [{"role": x.role, "content": x.content} for x in s.messages],
                                "position": s.position} for s in m.sessions]}
        ev = {"question_id": e.question_id, "question_type": e.question_type, "question": e.question,
              "answer": e.answer, "question_date": e.question_date, "abstention": e.abstention,
              "answer_session_ids": list(e.answer_session_ids),
              "sessions": [{"session_id": s.session_id, "upstream_id": s.upstream_id, "date": s.date,
                            "has_answer": list(s.has_answer)} for s in e.sessions]}
        return {"memory": memory, "eval": ev}


    def to_upstream(self) -> dict[str, Any]:
        """The upstream instance record (haystack in replay order, has_answer restored)."""
        e = self.eval
        sessions = [[_upstream_turn(m, h) for m, h in zip(ms.messages, es.has_answer, strict=True)]
                    for ms, es in zip(self.memory.sessions, e.sessions, strict=True)]
        return {"question_id": e.question_id, "question_type": e.question_type, "question": e.question,
                "answer": e.answer, "question_date": e.question_date,
                "haystack_dates": [s.date for s in e.sessions], "haystack_sessions": sessions,
                "haystack_session_ids": [s.upstream_id for s in e.sessions],
                "answer_session_ids": list(e.answer_session_ids)}

    @classmethod
    def from_record(cls, raw: Any, *, file: str, line: int | str) -> AdaptedRecord:
        """Validate one line of the adapted file (the layout :meth:`to_record` writes, no other key);
        errors name file, line and field (``memory.sessions[3].messages[0].role``)."""
        f = Fields.of(raw, file=file, record=record_name(line), fix=_FIX).only(("memory", "eval"))
        return cls(_memory_view(f.at("memory")), _eval_view(f.at("eval")))


_FIX = "regenerate it with `dvc repro adapt`"
_ANSWER: Kind = ((str, int, float), "a string or a number")
_HAS_ANSWER: Kind = ((bool, type(None)), "true, false or null")
_LABEL_TYPES = frozenset({bool, type(None)})


def _items(f: Fields, name: str) -> list[Fields]:
    """The objects of list field ``name``, each a view named ``name[i].``."""
    return [Fields.of(x, file=f.file, record=f.record, prefix=f"{f.prefix}{name}[{i}].", fix=f.fix)
            for i, x in enumerate(f.array(name))]


def _memory_view(f: Fields) -> MemoryView:
    f.only(("schema", "query", "sessions"))
    q = f.at("query").only(("query_id", "text", "date", "prefix"))
    query = Query(q.string("query_id"), q.string("text"), q.optional_string("date"), q.string("prefix"))
    sessions = []
    for s in _items(f, "sessions"):
        s.only(("session_id", "date", "prefix", "messages", "position"))
        messages = _messages(s)
        sessions.append(MemorySession(s.string("session_id"), s.optional_string("date"), s.string("prefix"),
                                      messages, s.integer("position")))
    return MemoryView(f.string("schema"), query, tuple(sessions))


def _messages(s: Fields) -> tuple[Message, ...]:
    """The session's messages. Fast path for the common well-formed message (a dict of exactly role and
    content, both strings: 240k of them in an S file); anything else goes through the field checks, which
    name the first problem (``...messages[7].role``)."""
    raw = s.array("messages")
    out = []
    for m in raw:
        if type(m) is dict and len(m) == 2 and type(m.get("role")) is str and type(m.get("content")) is str:
            out.append(Message(m["role"], m["content"]))
        else:
            break
    else:
        return tuple(out)
    return tuple(Message(m.only(("role", "content")).string("role"), m.string("content")) for m in _items(s, "messages"))


def _eval_view(f: Fields) -> EvalView:
    f.only(tuple(EvalView.__dataclass_fields__))
    sessions = []
    for s in _items(f, "sessions"):
        s.only(("session_id", "upstream_id", "date", "has_answer"))
        labels = s.array("has_answer")
        if not set(map(type, labels)) <= _LABEL_TYPES:  # fast check of the whole list; then name the first bad one
            for i, label in enumerate(labels):
                if not is_kind(label, _HAS_ANSWER[0]):
                    raise s.error(f"has_answer[{i}]", type_error(label, _HAS_ANSWER[1]))
        sessions.append(EvalSession(s.string("session_id"), s.string("upstream_id"), s.string("date"), tuple(labels)))
    return EvalView(f.string("question_id"), f.string("question_type"), f.string("question"), f.get("answer", _ANSWER),
                    f.string("question_date"), f.boolean("abstention"), f.strings("answer_session_ids"),
                    tuple(sessions))


def query_id(question: str) -> str:
    """Opaque query id from the question text alone (what the memory system sees anyway).

    Not the file position (official files may be ordered by type) and not the question_id
    (which carries "_abs").
    """
    return "q-" + hashlib.sha256(question.encode("utf-8")).hexdigest()[:12]


def _upstream_turn(m: Message, has_answer: bool | None) -> dict[str, Any]:
    turn: dict[str, Any] = {"role": m.role, "content": m.content}
    if has_answer is not None:
        turn["has_answer"] = has_answer
    return turn


@dataclass(frozen=True)
class SessionAdapter:
    """Configured from conf/adapter/*.yaml (built with Hydra's ``_target_``)."""

    name: str
    schema: str

    def __post_init__(self) -> None:
        if self.schema not in SCHEMAS:
            raise ConfigError(f"adapter {self.name}: unknown schema {self.schema!r}; known: {', '.join(SCHEMAS)}")

    @property
    def dated(self) -> bool:
        return SCHEMAS[self.schema]

    def adapt(self, inst: Instance, position: int = 0) -> AdaptedRecord:
        """Adapt one instance. (``position``, its index in the file, is accepted for callers that
        track it; nothing derived from it reaches the memory view, since file order may group types.)"""
        order = sorted(range(len(inst.sessions)), key=lambda i: (inst.sessions[i].date, i))
        width = max(3, len(str(len(order))))
        mem_sessions, eval_sessions = [], []
        for rank, i in enumerate(order, start=1):
            s, sid = inst.sessions[i], f"s{rank:0{width}d}"
            date = s.date if self.dated else None
            prefix = f"[Session date: {s.date}]" if self.dated else ""
            mem_sessions.append(MemorySession(sid, date, prefix, tuple(Message(t.role, t.content) for t in s.turns), i))
            eval_sessions.append(EvalSession(sid, s.session_id, s.date, tuple(t.has_answer for t in s.turns)))
        query = Query(query_id(inst.question), inst.question, inst.question_date if self.dated else None,
                      f"[Current date: {inst.question_date}]" if self.dated else "")
        ev = EvalView(inst.question_id, inst.question_type, inst.question, inst.answer, inst.question_date,
                      inst.is_abstention, inst.answer_session_ids, tuple(eval_sessions))
        return AdaptedRecord(MemoryView(self.schema, query, tuple(mem_sessions)), ev)


_EVAL_ID = '"eval": {"question_id": '
"""How the eval half of a line as :meth:`AdaptedRecord.to_record` lays it out (``json.dumps`` default
separators) begins. Inside a JSON string every quote is escaped, so this text can only be the structure."""
_DECODER = json.JSONDecoder()


def _line_question_id(line: str) -> str | None:
    """The question id of one adapted line, read without parsing its memory half (the eval half comes
    last, question_id first); None for a line of another layout (it is then parsed in full)."""
    at = line.rfind(_EVAL_ID)
    if at < 0:
        return None
    try:
        value, _ = _DECODER.raw_decode(line, at + len(_EVAL_ID))
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, str) else None


@dataclass(frozen=True)
class AdaptedLine:
    """One line of an adapted file, not yet parsed: what a door hands a worker pool, so that parsing (a third
    of a bm25 question's CPU) runs on the workers instead of in the one process that feeds them.
    :meth:`parse` is :func:`read_adapted`'s parse, with the same errors (file, line, field)."""

    file: str
    line: int
    text: str
    expected: tuple[str, str, str] | None = None
    """(question_id, question_type, question index file) the record must have (:meth:`AdaptedRecords.lines`)."""

    @cached_property
    def question_id(self) -> str:
        """The question id, read off the line when its layout allows (else from the parsed record); read once."""
        qid = _line_question_id(self.text)
        return qid if qid is not None else self.parse().eval.question_id

    def parse(self) -> AdaptedRecord:
        try:
            raw = json.loads(self.text, object_pairs_hook=unique_object)
        except json.JSONDecodeError as exc:
            raise InputError(self.file, f"line {self.line}", "<record>", f"not an adapted record ({exc})",
                             fix=_FIX) from None
        except DuplicateKey as exc:
            raise duplicate_key_error(self.file, f"line {self.line}", exc, self.text) from None
        rec = AdaptedRecord.from_record(raw, file=self.file, line=self.line)
        if self.expected is not None:
            want_id, want_type, index = self.expected
            got = (rec.eval.question_id, rec.eval.question_type)
            if got != (want_id, want_type):
                raise out_of_step(self.file, index, got, (want_id, want_type))
        return rec


def as_record(item: AdaptedRecord | AdaptedLine) -> AdaptedRecord:
    """The record of an :class:`AdaptedLine` (parsed here) or of a record (itself)."""
    return item.parse() if isinstance(item, AdaptedLine) else item


def read_adapted_lines(path: str | Path, only: Collection[str] | None = None) -> Iterator[AdaptedLine]:
    """The lines of data/adapted/<variant>.jsonl, in file order, unparsed (:class:`AdaptedLine`).

    With ``only`` (a suite's question ids) only those questions' lines (the id is read off the line, or the
    line parsed when its layout hides it), and an id of ``only`` that no line has is an error once the file
    is read."""
    require_file(path, fix="run `dvc repro adapt` (or `mnemetric adapt FILE --out ...`) first")
    wanted = None if only is None else set(only)
    found: set[str] = set()
    with open(path, encoding="utf-8") as fh:
        for lineno, text in enumerate(fh, start=1):
            item = AdaptedLine(str(path), lineno, text)
            if wanted is not None:
                qid = item.question_id
                if qid not in wanted:
                    continue
                found.add(qid)
            yield item
    if wanted is not None and len(found) < len(wanted):
        missing = [q for q in only if q not in found]
        raise InputError(str(path), "<file>", "eval.question_id",
                         f"no record of question {missing[0]!r} ({len(missing)} question(s) of the suite missing)",
                         fix="the suite was chosen from another adapted file: rerun `dvc repro suite`")


def read_adapted(path: str | Path, only: Collection[str] | None = None) -> Iterator[AdaptedRecord]:
    """Stream adapted records from data/adapted/<variant>.jsonl, in file order.

    With ``only`` (a suite's question ids), the other records are skipped without being parsed (their
    question id is read off the line), and an id of ``only`` that no record has is an error once the
    file is read."""
    return (item.parse() for item in read_adapted_lines(path, only))


class AdaptedRecords:
    """The suite's records of an adapted file as a sized stream (each pass reads the file anew, one record
    at a time): what a stage hands on instead of a list, which at M would hold every haystack (GBs) at once.

    ``universe``: ``(question_id, question_type)`` of each record to come, in file order, known before the
    file is opened (:func:`mnemetric.longmemeval.suite.suite_universe`, from the question index
    ``index``) — a shard's assignment needs it up front, and a second pass over the adapted file only to
    learn it would read GBs twice. Each record read must be the universe's next entry (else an error
    naming both files: they come from different runs of stage suite)."""

    def __init__(self, path: str | Path, universe: Sequence[tuple[str, str]], *, index: str | Path):
        self.path, self.universe, self.index = path, tuple(universe), index

    def __iter__(self) -> Iterator[AdaptedRecord]:
        return (line.parse() for line in self.lines())

    def lines(self) -> Iterator[AdaptedLine]:
        """The same questions as unparsed lines (:func:`read_adapted_lines`), for a worker pool to parse: the
        order of question ids is checked here as each line is read (off the line), each record's type where it
        is parsed (:meth:`AdaptedLine.parse`, with the same error)."""
        expected = iter(self.universe)
        for line in read_adapted_lines(self.path, only=[q for q, _ in self.universe]):
            want = next(expected, None)
            if want is None or line.question_id != want[0]:
                raise out_of_step(str(self.path), self.index, (line.question_id, None), want)
            yield replace(line, expected=(*want, str(self.index)))

    def __len__(self) -> int:
        return len(self.universe)


def out_of_step(file: str, index: str | Path, got: tuple[str, str | None], want: tuple[str, str] | None) -> InputError:
    """The error for a record of the adapted ``file`` that is not the question index's next entry ``want``."""
    fix = "rerun `dvc repro suite` (the question index was written from another adapted file)"
    if want is not None and got[0] == want[0]:
        return InputError(file, f"question {got[0]!r}", "eval.question_type",
                          f"{got[1]!r}, but the question index {index} says {want[1]!r}", fix=fix)
    place = f"{want[0]!r} in its place" if want is not None else "no more questions of the suite"
    return InputError(file, f"question {got[0]!r}", "eval.question_id",
                      f"out of step with the question index {index}: it has {place}", fix=fix)
