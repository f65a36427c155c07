"""One instance from a question plan: answer sessions, filler sessions, ids, dates → a typed Instance.

Upstream conventions kept (shared/docs/upstream-protocol.md §1.2): question ids are 8 lowercase hex
characters, with a "gpt4_" prefix on some temporal / multi-session questions and an "_abs" suffix on
abstentions; answer session ids contain "answer" (``answer_<hex>``, ``answer_<hex>_<n>``,
``answer_<hex>_abs_<n>``, ``answer_ultrachat_<digits>``) and filler ids never do (``<hex>``,
``<hex>_<n>``, ``sharegpt_<alnum>_<n>``, ``ultrachat_<digits>``); every turn of an answer session
carries has_answer (true on the evidence turn only), filler turns carry none; sessions are sorted
by date and answer_session_ids lists the haystack ids containing "answer".
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta

from mnemetric.longmemeval.instance import Instance, Session, Turn
from mnemetric.longmemeval.sample.banks import Banks, draw_slots
from mnemetric.longmemeval.sample.dates import FIRST_DAY, format_date, schedule
from mnemetric.longmemeval.sample.questions import Ctx, Evidence, Scenario


@dataclass(frozen=True)
class Profile:
    """The shape of the haystacks of one data set."""

    sessions: tuple[int, int]
    """Sessions per haystack, drawn uniformly from this inclusive range."""
    exchanges: tuple[int, ...]
    """Exchanges (user+assistant pairs) per session, drawn uniformly from this tuple."""
    span_days: tuple[int, int]
    """Days the haystack spans, drawn uniformly from this inclusive range."""
    max_turns: int
    """A filler session opens with an assistant greeting (15%) only if it stays within this many turns."""


@dataclass(frozen=True)
class Spec:
    """One question to build: its type and scenario, and the id / date variants it takes."""

    qtype: str
    scenario: Scenario
    abstain: bool
    gpt4: bool
    quirk: bool
    """The last session is dated minutes after the question (dates.schedule)."""


def topic_exchanges(rng: random.Random, banks: Banks, topic: str, n: int,
                    fixed: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """``n`` distinct exchanges of ``topic`` (cycling with fresh slot values when n is large)."""
    bank = banks.topics[topic]
    out: list[tuple[str, str]] = []
    while len(out) < n:
        values = {**draw_slots(rng, bank.slots), **(fixed or {})}
        order = list(range(len(bank.exchanges)))
        rng.shuffle(order)
        out += [(bank.exchanges[i].user.format(**values), bank.exchanges[i].assistant.format(**values))
                for i in order[: n - len(out)]]
    return out


def filler_session(rng: random.Random, banks: Banks, topic: str, profile: Profile) -> tuple[Turn, ...]:
    """Exchanges of one topic, sometimes after an assistant greeting; no has_answer flags."""
    n = rng.choice(profile.exchanges)
    turns = []
    if 2 * n + 1 <= profile.max_turns and rng.random() < 0.15:
        turns.append(Turn("assistant", rng.choice(banks.greetings), None))
    for user, assistant in topic_exchanges(rng, banks, topic, n):
        turns += [Turn("user", user, None), Turn("assistant", assistant, None)]
    return tuple(turns)


def answer_session(rng: random.Random, banks: Banks, ev: Evidence, profile: Profile) -> tuple[Turn, ...]:
    """At least three exchanges of the evidence topic, the evidence exchange at a random position;
    has_answer on every turn, true only on the ``ev.mark`` turn of the evidence exchange."""
    n = max(3, rng.choice(profile.exchanges))
    pairs = topic_exchanges(rng, banks, ev.topic, n - 1, ev.fixed)
    pos = rng.randint(0, len(pairs))
    pairs.insert(pos, (ev.exchange.user, ev.exchange.assistant))
    turns = []
    for i, (user, assistant) in enumerate(pairs):
        turns.append(Turn("user", user, i == pos and ev.mark == "user"))
        turns.append(Turn("assistant", assistant, i == pos and ev.mark == "assistant"))
    return tuple(turns)


# ---------------------------------------------------------------- ids


def unique_id(rng: random.Random, used: set[str], make: Callable[[random.Random], str]) -> str:
    """A fresh id from ``make`` that is not in ``used`` and does not contain "answer"; adds it."""
    while True:
        token = make(rng)
        if token not in used and "answer" not in token:
            used.add(token)
            return token


def _hex8(rng: random.Random) -> str:
    return f"{rng.getrandbits(32):08x}"


def _ultrachat(rng: random.Random) -> str:
    return f"ultrachat_{rng.randint(100000, 599999)}"


def filler_id(rng: random.Random) -> str:
    """50% hex (60% bare, else with _1.._3), 25% sharegpt_<7 alnum>_<0..2>, 25% ultrachat_<6 digits>."""
    kind = rng.random()
    if kind < 0.5:
        base = _hex8(rng)
        return base if rng.random() < 0.6 else f"{base}_{rng.randint(1, 3)}"
    if kind < 0.75:
        alnum = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(7))
        return f"sharegpt_{alnum}_{rng.randint(0, 2)}"
    return _ultrachat(rng)


def question_id(rng: random.Random, spec: Spec, used: set[str]) -> str:
    base = unique_id(rng, used, _hex8)
    return ("gpt4_" if spec.gpt4 else "") + base + ("_abs" if spec.abstain else "")


def answer_ids(rng: random.Random, spec: Spec, n: int, used: set[str]) -> list[str]:
    """Ids of the ``n`` answer sessions (35% of plain single-session-assistant ones are ultrachat)."""
    if spec.qtype == "single-session-assistant" and not spec.abstain and rng.random() < 0.35:
        return ["answer_" + unique_id(rng, used, _ultrachat)]
    base = "answer_" + unique_id(rng, used, _hex8)
    if spec.abstain:
        return [f"{base}_abs_{i}" for i in range(1, n + 1)]
    return [base] if n == 1 else [f"{base}_{i}" for i in range(1, n + 1)]


# ---------------------------------------------------------------- assembly


def _fillers(rng: random.Random, banks: Banks, n: int, span: int, avoid: set[str], profile: Profile,
             used: set[str]) -> list[tuple[str, int, tuple[Turn, ...]]]:
    """``n`` filler sessions (id, day offset, turns) on topics the question does not use."""
    topics = [t for t in banks.topics if t not in avoid]
    out = []
    for _ in range(n):
        sid = unique_id(rng, used, filler_id)
        day = rng.randint(0, span)
        out.append((sid, day, filler_session(rng, banks, rng.choice(topics), profile)))
    return out


def build_instance(rng: random.Random, banks: Banks, spec: Spec, profile: Profile, used: set[str]) -> Instance:
    """One instance: plan the question, build its answer sessions and fillers, date and sort them."""
    span = rng.randint(*profile.span_days)
    start = FIRST_DAY + timedelta(days=rng.randint(0, 240))
    ctx = Ctx(rng, banks, spec.abstain, span, span + rng.randint(1, 4), start)
    plan = spec.scenario.build(ctx)
    qid = question_id(rng, spec, used)
    ids = answer_ids(rng, spec, len(plan.evidence), used)
    sessions = [(sid, day, answer_session(rng, banks, ev, profile))
                for sid, day, ev in zip(ids, plan.days, plan.evidence)]
    n_fill = rng.randint(*profile.sessions) - len(sessions)
    sessions += _fillers(rng, banks, n_fill, span, {ev.topic for ev in plan.evidence}, profile, used)
    qmoment, moments = schedule(rng, ctx.date(ctx.qday), [ctx.date(day) for _, day, _ in sessions], spec.quirk)
    order = sorted(range(len(sessions)), key=lambda i: moments[i])  # stable: equal minutes keep build order
    haystack = tuple(Session(sessions[i][0], format_date(moments[i]), sessions[i][2]) for i in order)
    return Instance(
        question_id=qid,
        question_type=spec.qtype,
        question=plan.question,
        answer=plan.answer,
        question_date=format_date(qmoment),
        sessions=haystack,
        answer_session_ids=tuple(s.session_id for s in haystack if "answer" in s.session_id),
    )
