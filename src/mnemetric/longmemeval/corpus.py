"""The LongMemEval (V1) retrieval corpus: one question's corpus and targets, from its own haystack.

The harness (running a memory system) and retrieval scoring (re-deriving a log's corpus) both take
the corpus from here. Pure functions. Source: ``src/retrieval/run_retrieval.py`` (xiaowu0162/LongMemEval @
9e0b455f4ef0e2ab8f2e582289761153549043fc), written from the facts in docs/upstream-protocol.md
section 2.1; no upstream code is copied. The substrings are those of ``longmemeval/rules.py``:
a corpus id containing ``TARGET_MARK`` ("answer") is a target; an answer session (or user turn)
without evidence has ``TARGET_MARK`` replaced by ``NO_ANSWER_MARK`` ("noans") in its id.

A turn is a ``(role, content, has_answer)`` tuple or any object with those attributes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from mnemetric.longmemeval.rules import GRANULARITIES, NO_ANSWER_MARK, TARGET_MARK, is_target


def _turn_fields(turn: Any) -> tuple[str, str, bool | None]:
    """Accept a (role, content, has_answer) tuple or an object with those attributes."""
    if hasattr(turn, "role"):
        return turn.role, turn.content, turn.has_answer
    role, content, has_answer = turn
    return role, content, has_answer


def session_corpus(session_id: str, turns: Iterable[Any]) -> tuple[str, str]:
    """One session document: (corpus id, user-turn contents joined by one space).

    Only user turns are indexed. If the id contains "answer" and no user turn has
    has_answer true, every "answer" in the id becomes "noans" (the session is then no target).
    Source: run_retrieval.py (xiaowu0162/LongMemEval @ 9e0b455f).
    """
    users = [(c, h) for r, c, h in map(_turn_fields, turns) if r == "user"]
    text = " ".join(c for c, _ in users)
    cid = session_id
    if TARGET_MARK in cid and not any(h is True for _, h in users):
        cid = cid.replace(TARGET_MARK, NO_ANSWER_MARK)
    return cid, text


def turn_corpus(session_id: str, turns: Iterable[Any]) -> list[tuple[str, str]]:
    """One document per user turn: (session_id + "_" + (i+1), content), i = 0-based position
    among ALL turns (assistant turns included), so user turns are usually _1, _3, _5, ...

    In a session whose id contains "answer", a user turn whose has_answer is not true gets
    "answer" -> "noans" in its id. Source: run_retrieval.py (xiaowu0162/LongMemEval @ 9e0b455f).
    """
    docs: list[tuple[str, str]] = []
    for i, (role, content, has_answer) in enumerate(map(_turn_fields, turns)):
        if role != "user":
            continue
        cid = f"{session_id}_{i + 1}"
        if TARGET_MARK in session_id and has_answer is not True:
            cid = cid.replace(TARGET_MARK, NO_ANSWER_MARK)
        docs.append((cid, content))
    return docs


def haystack_corpus(
    session_ids: Sequence[str], sessions: Sequence[Iterable[Any]], granularity: str
) -> list[tuple[str, str]]:
    """The whole corpus of one question, in haystack order, at the given granularity."""
    if granularity not in GRANULARITIES:
        raise ValueError(f"unknown granularity {granularity!r}; expected one of {GRANULARITIES}")
    if granularity == "session":
        return [session_corpus(sid, turns) for sid, turns in zip(session_ids, sessions, strict=True)]
    return [doc for sid, turns in zip(session_ids, sessions, strict=True) for doc in turn_corpus(sid, turns)]


def targets(corpus_ids: Iterable[str]) -> set[str]:
    """correct_docs = the corpus ids containing the substring "answer" (derived from ids only)."""
    return {x for x in corpus_ids if is_target(x)}


def has_user_target(sessions: Iterable[Iterable[Any]]) -> bool:
    """True iff some user turn anywhere in the haystack has has_answer true (run_retrieval main())."""
    return any(
        role == "user" and has_answer is True
        for turns in sessions
        for role, _, has_answer in map(_turn_fields, turns)
    )


@dataclass(frozen=True)
class CorpusItem:
    """One document of a question's upstream corpus, with the memory-view item it stands for."""

    corpus_id: str
    text: str
    timestamp: str
    """The session's date (upstream's ``timestamp`` of a ranked item)."""
    session_id: str
    """The memory view's opaque session id."""
    turn_index: int | None
    """0-based turn of a turn document; None for a session document."""


def upstream_corpus(memory_sessions: Sequence[Any], eval_sessions: Sequence[Any], granularity: str) -> list[CorpusItem]:
    """The question's upstream corpus (user turns only, noans relabelling) in upstream's order: the
    haystack file order (run_retrieval.py), not our chronological replay. ``memory_sessions`` and
    ``eval_sessions`` are the two halves of an adapted record's sessions (adapted.MemorySession with
    ``session_id``, ``messages``, ``position``; adapted.EvalSession with ``upstream_id``, ``date``,
    ``has_answer``), aligned."""
    items: list[CorpusItem] = []
    pairs = sorted(zip(memory_sessions, eval_sessions, strict=True), key=lambda pair: pair[0].position)
    for mem, ev in pairs:
        turns = [(m.role, m.content, h) for m, h in zip(mem.messages, ev.has_answer, strict=True)]
        if granularity == "session":
            cid, text = session_corpus(ev.upstream_id, turns)
            items.append(CorpusItem(cid, text, ev.date, mem.session_id, None))
            continue
        for cid, text in turn_corpus(ev.upstream_id, turns):
            items.append(CorpusItem(cid, text, ev.date, mem.session_id, int(cid.rsplit("_", 1)[1]) - 1))
    return items
