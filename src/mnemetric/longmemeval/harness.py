"""Running a memory system over adapted records: rankings, upstream-format logs, reader contexts.

The memory system sees only the memory view. This module — harness side — maps what it returns
back to upstream corpus ids (corpus.py holds the corpus and its rules), writes one upstream
retrievallog line per question (so upstream tools can read our logs), and picks the context the
reader will get: the top ``k`` items under a token budget, the same ``k`` and budget for every system.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Iterator

from mnemetric.errors import MnemetricError, PluginError
from mnemetric.llm.proxy import current as current_proxy
from mnemetric.longmemeval.adapted import AdaptedRecord
from mnemetric.longmemeval.contexts import Context, ContextItem, ContextMessage
from mnemetric.longmemeval.corpus import CorpusItem, targets
from mnemetric.longmemeval.corpus import upstream_corpus as corpus_of
from mnemetric.longmemeval.memory.base import MemorySystem, Retrieved, is_labelled_ceiling
from mnemetric.longmemeval.scoring.retrieval import evaluate_question

TOKENIZER = "wordpunct-v1"
_TOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def count_tokens(text: str) -> int:
    """The fixed context-budget tokenizer ``wordpunct-v1``: words and single punctuation marks.

    Dependency-free and identical for every system; not a model's tokenizer (readers cut to their
    own model budget separately).
    """
    return len(_TOKEN.findall(text))


def upstream_corpus(rec: AdaptedRecord, granularity: str) -> list[CorpusItem]:
    """The question's upstream corpus in upstream's order (:func:`mnemetric.longmemeval.corpus.upstream_corpus`)."""
    return corpus_of(rec.memory.sessions, rec.eval.sessions, granularity)


def _system(memory: MemorySystem) -> str:
    return f"memory system {getattr(memory, 'name', None) or type(memory).__name__}"


def _call(memory: MemorySystem, rec: AdaptedRecord, call: str, fn, *args):
    """Run one plug-in call; anything it raises becomes a PluginError naming system, call and question."""
    try:
        return fn(*args)
    except MnemetricError:
        raise
    except Exception as exc:  # a plug-in's bug: say whose and where, keep the cause for --traceback users
        raise PluginError(_system(memory), f"{call} for question {rec.eval.question_id} "
                          f"(query {rec.memory.query.query_id})", f"raised {type(exc).__name__}: {exc}",
                          fix="fix the memory system (run it on this question alone to debug)") from exc


def _phase(memory: MemorySystem, rec: AdaptedRecord, phase: str):
    """While a model proxy serves this run (a UsesModelProxy system: mnemetric.llm.proxy), its requests are
    counted for (system, phase, question); a request it could not answer is raised when the phase ends."""
    proxy = current_proxy()
    if proxy is None:
        return contextlib.nullcontext()
    return proxy.attribute(system=getattr(memory, "name", None) or type(memory).__name__, phase=phase,
                           question_id=rec.eval.question_id)


def run_memory(memory: MemorySystem, rec: AdaptedRecord, granularity: str) -> list[Retrieved]:
    """Reset, ingest the haystack chronologically, retrieve; a labelled ceiling is ranked here.
    With a model proxy running, reset + ingest are phase "ingest" and retrieve phase "query" of its ledger.

    A system declaring the LabelledCeiling capability (memory/base.py) has its checked ranking
    replaced by :func:`ceiling_ranking`; every other system's ranking is returned as it gave it."""
    with _phase(memory, rec, "ingest"):
        _call(memory, rec, "reset()", memory.reset)
        for session in rec.memory.sessions:
            _call(memory, rec, f"ingest(session {session.session_id})", memory.ingest, session)
    with _phase(memory, rec, "query"):
        ranked = _call(memory, rec, f"retrieve(granularity={granularity!r})", memory.retrieve, rec.memory.query,
                       granularity)
    if not isinstance(ranked, list) or not all(isinstance(r, Retrieved) for r in ranked):
        got = type(ranked).__name__ if not isinstance(ranked, list) else \
            f"a list holding {type(next(r for r in ranked if not isinstance(r, Retrieved))).__name__}"
        raise PluginError(_system(memory), f"retrieve() for question {rec.eval.question_id} "
                          f"(query {rec.memory.query.query_id})", f"returned {got}, not a list of Retrieved",
                          fix="return [Retrieved(session_id, turn_index, score), ...] best first "
                              "(from mnemetric.longmemeval.memory import Retrieved)")
    check_retrieved(memory, rec, granularity, ranked)
    if is_labelled_ceiling(memory):  # a ceiling allowed to use labels; it never sees them itself
        return ceiling_ranking(rec, granularity)
    return ranked


def ceiling_ranking(rec: AdaptedRecord, granularity: str) -> list[Retrieved]:
    """The labelled ceiling: every target of the question's upstream corpus first, in corpus order,
    then the other items in corpus order, each with score 0.0 — upstream's oracle retriever
    (src/retrieval/run_retrieval.py, xiaowu0162/LongMemEval @ 9e0b455f)."""
    corpus = upstream_corpus(rec, granularity)
    gold = targets(c.corpus_id for c in corpus)
    first = [c for c in corpus if c.corpus_id in gold] + [c for c in corpus if c.corpus_id not in gold]
    return [Retrieved(c.session_id, c.turn_index, 0.0) for c in first]


def check_retrieved(memory: MemorySystem, rec: AdaptedRecord, granularity: str, ranked: list[Retrieved]) -> None:
    """A memory system may only return sessions it was given, at the granularity asked for."""
    sizes = {s.session_id: len(s.messages) for s in rec.memory.sessions}
    for i, r in enumerate(ranked):
        problem = None
        if r.session_id not in sizes:
            problem = f"session_id {r.session_id!r} was never ingested for this question"
        elif granularity == "session" and r.turn_index is not None:
            problem = "a turn was returned but session granularity was asked for (turn_index must be None)"
        elif granularity == "turn" and not (isinstance(r.turn_index, int) and 0 <= r.turn_index < sizes[r.session_id]):
            problem = f"turn granularity needs a turn_index in 0..{sizes[r.session_id] - 1}, got {r.turn_index!r}"
        if problem:
            raise PluginError(_system(memory), f"retrieve()[{i}] for question {rec.eval.question_id} "
                              f"(query {rec.memory.query.query_id})", problem,
                              fix="return Retrieved(session_id, turn_index) items for the ingested sessions")


def ranked_corpus(ranked: Iterable[Retrieved], corpus: list[CorpusItem]) -> list[CorpusItem]:
    """The system's ranking restricted to corpus items (e.g. assistant turns drop out), first hit kept."""
    by_ref = {(c.session_id, c.turn_index): c for c in corpus}
    seen: set[str] = set()
    out = []
    for r in ranked:
        item = by_ref.get((r.session_id, r.turn_index))
        if item is not None and item.corpus_id not in seen:
            seen.add(item.corpus_id)
            out.append(item)
    return out


def log_record(rec: AdaptedRecord, ranked: list[CorpusItem], corpus: list[CorpusItem], granularity: str) -> dict:
    """One line of an upstream-format retrievallog (fields as run_retrieval.py writes them)."""
    upstream = rec.to_upstream()
    ids = [c.corpus_id for c in ranked]
    metrics = evaluate_question(ids, [c.corpus_id for c in corpus], targets(c.corpus_id for c in corpus),
                                granularity=granularity)
    return upstream | {"retrieval_results": {
        "query": rec.eval.question,
        "ranked_items": [{"corpus_id": c.corpus_id, "text": c.text, "timestamp": c.timestamp} for c in ranked],
        "metrics": {"session": metrics.get("session", {}), "turn": metrics.get("turn", {})},
    }}


def context_items(rec: AdaptedRecord, ranked: list[Retrieved], k: int,
                  budget: int) -> tuple[tuple[ContextItem, ...], int]:
    """Top-k retrieved items within ``budget`` tokens, in retrieved order.

    A session item carries the whole session; a turn item carries its round (the turn and the next
    one, as upstream's reader expands turns). The first item that does not fit is cut at the
    budget (marked ``truncated``) and ends the context. Dates are those of the memory view, so an
    undated adapter (legacy-v2) gives an undated context. Returns (items, tokens used), the items
    typed as the contexts file holds them (:class:`~mnemetric.longmemeval.contexts.ContextItem`).
    """
    sessions = {s.session_id: s for s in rec.memory.sessions}
    upstream = {e.session_id: e.upstream_id for e in rec.eval.sessions}
    items: list[ContextItem] = []
    used = 0
    for r in ranked[:k]:
        s = sessions[r.session_id]
        msgs = s.messages if r.turn_index is None else s.messages[r.turn_index : r.turn_index + 2]
        kept, cost = _fit(msgs, budget - used)
        if kept:
            truncated = len(kept) < len(msgs) or kept[-1].content != msgs[len(kept) - 1].content
            items.append(ContextItem(s.session_id, upstream[s.session_id], r.turn_index, s.date, kept, truncated))
            used += cost
        if not kept or items[-1].truncated:
            break
    return tuple(items), used


def _fit(messages: Iterable, room: int) -> tuple[tuple, int]:
    """Messages (role, content) that fit in ``room`` tokens, as ContextMessage; the last one cut at
    a token boundary if needed. Returns (messages kept, tokens used)."""
    kept, used = [], 0
    for m in messages:
        n = count_tokens(m.content)
        if used + n <= room:
            kept.append(ContextMessage(m.role, m.content))
            used += n
            continue
        left = room - used
        if left > 0:
            cut = list(_TOKEN.finditer(m.content))[left - 1].end()
            kept.append(ContextMessage(m.role, m.content[:cut]))
            used += left
        break
    return tuple(kept), used


def retrieve_all(memory: MemorySystem, records: Iterable[AdaptedRecord], granularity: str, k: int,
                 budget: int) -> Iterator[tuple[dict, Context]]:
    """For each record: (upstream log line, the reader's :class:`~mnemetric.longmemeval.contexts.Context`)."""
    for rec in records:
        ranked = run_memory(memory, rec, granularity)
        corpus = upstream_corpus(rec, granularity)
        items, used = context_items(rec, ranked, k, budget)
        context = Context(rec.eval.question_id, memory.name, granularity, k, budget, TOKENIZER, used, items)
        yield log_record(rec, ranked_corpus(ranked, corpus), corpus, granularity), context
