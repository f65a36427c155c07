"""Failure attribution per question (V1): why each question judged wrong went wrong, one cause each.

Pure functions over already-read inputs; the typed file and the I/O edge are in
:mod:`mnemetric.longmemeval.attribution_file`. A Mnemetric addition (upstream LongMemEval @ 9e0b455f
attributes nothing).

A question judged wrong gets every cause that holds (``applies``) and one ``cause``: the first of
``applies`` in this precedence (:data:`CAUSES`), measurement before system, upstream before downstream:

1. ``gold_disputed``: the question is in the errata overlay (data/errata/longmemeval.yaml, the
   entries that apply to the variant): the gold answer itself is in doubt, so is the verdict;
2. ``judge_disputed``: the question is in the disputed-verdicts file (``attribution.disputed``: the
   judge's controls or judge matrix disagree on it): the verdict is in doubt;
3. ``evidence_not_ingested``: some evidence session (``answer_session_ids``) is not in the haystack
   the memory system was given (the retrieval log's ``haystack_session_ids``), or the retrieval log
   has no line for the question: the system could not have retrieved it;
4. ``not_retrieved``: no item of the reader's context (the contexts file) holds evidence: a session
   item counts when its upstream session is an evidence session; a turn item (the turn and the next,
   as the reader gets it) when one of those turns has ``has_answer`` true (or, in an evidence
   session with no turn labels, when its session is an evidence session);
5. ``answered_wrong``: evidence reached the reader (at least one item) and the answer was judged
   wrong — or the evidence could not be checked: abstention questions ("_abs": there is nothing to
   retrieve, the reader should have abstained) and questions with no evidence sessions.

Correct questions and questions without a verdict (failed, or missing from the judged file: a
non-answer is never a verdict) get no cause.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

CAUSES = ("gold_disputed", "judge_disputed", "evidence_not_ingested", "not_retrieved", "answered_wrong")
"""Every cause, in precedence order (the first that applies is the question's cause)."""
OUTCOMES = ("correct", "wrong", "not_judged")
CAUSE_TEXT = {
    "gold_disputed": "gold disputed (errata overlay)",
    "judge_disputed": "judge disputed (controls / judge matrix)",
    "evidence_not_ingested": "evidence never ingested",
    "not_retrieved": "evidence not retrieved (not in the reader's context)",
    "answered_wrong": "evidence retrieved, answered wrong",
}


@dataclass(frozen=True)
class Evidence:
    """What one question's evidence checks need, from the questions file, retrieval log and contexts."""

    sessions: tuple[str, ...]
    """Upstream evidence session ids (the question's ``answer_session_ids``)."""
    turns: frozenset[tuple[str, int]] = frozenset()
    """(upstream session id, 0-based turn) of every turn with ``has_answer`` true."""
    haystack: frozenset[str] | None = None
    """Upstream session ids the memory system was given; None: no retrieval-log line for the question."""
    context: tuple[tuple[str, int | None], ...] = ()
    """(upstream session id, turn_index) of each reader context item, in order (turn_index None: a session)."""
    abstention: bool = False


@dataclass(frozen=True)
class QuestionAttribution:
    """One question's line of the attribution file."""

    question_id: str
    question_type: str
    outcome: str
    """One of :data:`OUTCOMES`."""
    cause: str | None
    """The first of ``applies`` (None unless ``outcome`` is "wrong")."""
    applies: tuple[str, ...] = ()
    """Every cause that holds, in :data:`CAUSES` order."""
    evidence_checked: bool = False
    """False for abstention questions and questions with no evidence session (no evidence to find)."""
    evidence_sessions: int = 0
    missing_sessions: tuple[str, ...] = ()
    """Evidence sessions the memory system never saw (sorted)."""
    context_items: int = 0
    evidence_items: int = 0
    """Items of the reader's context that hold evidence."""
    disputes: tuple[str, ...] = ()
    """Why the gold or the verdict is disputed (errata issues, the judge-dispute reasons)."""


def missing_sessions(ev: Evidence) -> tuple[str, ...]:
    """Evidence sessions not in the haystack (all of them when the question has no retrieval-log line)."""
    seen = ev.haystack if ev.haystack is not None else frozenset()
    return tuple(sorted(set(ev.sessions) - seen))


def evidence_items(ev: Evidence) -> int:
    """Context items that hold evidence (module docstring, cause 4)."""
    sessions = set(ev.sessions)
    labelled = {sid for sid, _ in ev.turns}
    hits = 0
    for sid, turn in ev.context:
        if turn is None:
            hits += sid in sessions
        elif sid in labelled:
            hits += (sid, turn) in ev.turns or (sid, turn + 1) in ev.turns
        else:
            hits += sid in sessions
    return hits


def attribute_question(question_id: str, question_type: str, label: bool | None, ev: Evidence, *,
                       gold_disputes: Iterable[str] = (), judge_disputes: Iterable[str] = ()) -> QuestionAttribution:
    """One question's attribution. ``label``: the verdict (None: no verdict); the dispute reasons are
    empty when the gold / the verdict is not disputed."""
    gold, judge = tuple(gold_disputes), tuple(judge_disputes)
    checked = not ev.abstention and bool(ev.sessions)
    missing = missing_sessions(ev) if checked else ()
    hits = evidence_items(ev) if checked else 0
    base = {"evidence_checked": checked, "evidence_sessions": len(ev.sessions), "missing_sessions": missing,
            "context_items": len(ev.context), "evidence_items": hits, "disputes": gold + judge}
    if label is None or label:
        return QuestionAttribution(question_id, question_type, "not_judged" if label is None else "correct", None,
                                   **base)
    holds = {"gold_disputed": bool(gold), "judge_disputed": bool(judge), "evidence_not_ingested": bool(missing),
             "not_retrieved": checked and hits == 0, "answered_wrong": not checked or hits > 0}
    applies = tuple(c for c in CAUSES if holds[c])
    return QuestionAttribution(question_id, question_type, "wrong", applies[0], applies, **base)


def cause_counts(rows: Iterable[QuestionAttribution]) -> dict[str, int]:
    """Questions per cause (every cause listed, 0 included), then per outcome, in a fixed key order."""
    rows = list(rows)
    causes = Counter(r.cause for r in rows if r.cause is not None)
    outcomes = Counter(r.outcome for r in rows)
    return {**{c: causes.get(c, 0) for c in CAUSES}, **{o: outcomes.get(o, 0) for o in OUTCOMES}}


def state(row: QuestionAttribution) -> str:
    """A question's place in a comparison: its cause when wrong, else its outcome."""
    return row.cause if row.cause is not None else row.outcome


STATES = (*CAUSES, "correct", "not_judged")


def cause_moves(a: Mapping[str, QuestionAttribution], b: Mapping[str, QuestionAttribution]) -> dict:
    """Counts per cause for A and B (each on its own questions) and the paired moves between states
    (cause when wrong, else outcome) of the questions both hold: ``[{from, to, n}]`` for every pair of
    differing states, most frequent first (ties in :data:`STATES` order)."""
    common = sorted(set(a) & set(b))
    moves = Counter((state(a[q]), state(b[q])) for q in common if state(a[q]) != state(b[q]))
    order = {s: i for i, s in enumerate(STATES)}
    rows = sorted(moves.items(), key=lambda kv: (-kv[1], order[kv[0][0]], order[kv[0][1]]))
    return {"a": cause_counts(a.values()), "b": cause_counts(b.values()), "n_paired": len(common),
            "unchanged": len(common) - sum(moves.values()),
            "moves": [{"from": f, "to": t, "n": n} for (f, t), n in rows]}
