"""Upstream retrieval logs (``*_retrievallog_<granularity>_<retriever>``): the typed format, read.

Format (docs/upstream-protocol.md section 2.3): JSONL, one question per line, line order not
meaningful. Only the fields needed for scoring are read: question_id, question_type,
haystack_session_ids, haystack_sessions (turns with role, content, optional has_answer) and
retrieval_results.ranked_items[].corpus_id. The metrics stored in the log are ignored: scores are
recomputed from the ranking and the corpus rebuilt from the line's own haystack (section 2.1).

Scoring a log lives in :mod:`mnemetric.longmemeval.scoring.score_retrieval` (a format knows no scoring).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mnemetric.errors import InputError
from mnemetric.io import read_jsonl, require_file



@dataclass(frozen=True)
class LogTurn:
    role: str
    """"user" or "assistant" (other values are kept and never indexed)."""
    content: str
    has_answer: bool | None
    """None when the turn carries no has_answer key (filler sessions in S/M)."""


@dataclass(frozen=True)
class RetrievalLogRecord:
    """One line of a retrieval log, reduced to what scoring needs."""

    line: int
    question_id: str
    question_type: str
    haystack_session_ids: tuple[str, ...]
    haystack_sessions: tuple[tuple[LogTurn, ...], ...]
    ranked_ids: tuple[str, ...]
    """retrieval_results.ranked_items[].corpus_id, best first."""

    @property
    def record(self) -> str:
        return f"line {self.line} (question_id {self.question_id!r})"

    @classmethod
    def from_record(cls, raw: Any, *, file: str, line: int) -> RetrievalLogRecord:
        """Check and convert one parsed JSON line; any problem raises InputError(file, line, field)."""
        where = f"line {line}"
        if not isinstance(raw, dict):
            raise InputError(file, where, "<line>", f"expected a JSON object, got {type(raw).__name__}")
        qid = _field(raw, "question_id", str, file, where)
        where = f"line {line} (question_id {qid!r})"
        qtype = _field(raw, "question_type", str, file, where)
        sids = _str_list(_field(raw, "haystack_session_ids", list, file, where), "haystack_session_ids", file, where)
        sessions = _sessions(_field(raw, "haystack_sessions", list, file, where), file, where)
        if len(sids) != len(sessions):
            raise InputError(file, where, "haystack_sessions",
                             f"{len(sessions)} sessions but {len(sids)} haystack_session_ids")
        ranked = _ranked_ids(raw, file, where)
        return cls(line, qid, qtype, tuple(sids), sessions, ranked)


def _field(raw: dict, key: str, typ: type, file: str, where: str) -> Any:
    if key not in raw:
        raise InputError(file, where, key, "missing", fix=f"every log line needs '{key}' (upstream format)")
    value = raw[key]
    if not isinstance(value, typ):
        raise InputError(file, where, key, f"expected {typ.__name__}, got {type(value).__name__}")
    return value


def _str_list(values: list, name: str, file: str, where: str) -> list[str]:
    for i, v in enumerate(values):
        if not isinstance(v, str):
            raise InputError(file, where, f"{name}[{i}]", f"expected str, got {type(v).__name__}")
    return values


def _sessions(raw: list, file: str, where: str) -> tuple[tuple[LogTurn, ...], ...]:
    out = []
    for i, session in enumerate(raw):
        if not isinstance(session, list):
            raise InputError(file, where, f"haystack_sessions[{i}]", f"expected a list of turns, got {type(session).__name__}")
        out.append(tuple(_turn(t, f"haystack_sessions[{i}][{j}]", file, where) for j, t in enumerate(session)))
    return tuple(out)


def _turn(raw: Any, name: str, file: str, where: str) -> LogTurn:
    if not isinstance(raw, dict):
        raise InputError(file, where, name, f"expected a turn object, got {type(raw).__name__}")
    role, content = raw.get("role"), raw.get("content")
    for key, value in (("role", role), ("content", content)):
        if not isinstance(value, str):
            raise InputError(file, where, f"{name}.{key}", "missing or not a string")
    has_answer = raw.get("has_answer")
    if has_answer is not None and not isinstance(has_answer, bool):
        raise InputError(file, where, f"{name}.has_answer", f"expected true/false, got {has_answer!r}")
    return LogTurn(role, content, has_answer)


def _ranked_ids(raw: dict, file: str, where: str) -> tuple[str, ...]:
    results = _field(raw, "retrieval_results", dict, file, where)
    if "ranked_items" not in results:
        raise InputError(file, where, "retrieval_results.ranked_items", "missing",
                         fix="write the full ranking as a list of {corpus_id, text, timestamp}")
    items = results["ranked_items"]
    if not isinstance(items, list):
        raise InputError(file, where, "retrieval_results.ranked_items", f"expected a list, got {type(items).__name__}")
    ids: list[str] = []
    first: dict[str, int] = {}
    for j, item in enumerate(items):
        name = f"retrieval_results.ranked_items[{j}].corpus_id"
        cid = item.get("corpus_id") if isinstance(item, dict) else None
        if not isinstance(cid, str):
            raise InputError(file, where, name, "missing or not a string")
        if cid in first:
            raise InputError(file, where, name, f"duplicate corpus id {cid!r} (also at ranked_items[{first[cid]}])")
        first[cid] = j
        ids.append(cid)
    return tuple(ids)


def read_retrieval_log(path: str | Path) -> Iterator[RetrievalLogRecord]:
    """Yield typed records, one per non-empty line; a bad line raises InputError naming it."""
    require_file(path, fix="check the path of the retrieval log")
    for line, raw in read_jsonl(path):
        yield RetrievalLogRecord.from_record(raw, file=str(path), line=line)
