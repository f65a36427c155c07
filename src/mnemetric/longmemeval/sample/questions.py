"""Question builders: for each question type, the scenarios that turn phrase-bank entries into a Plan.

A Plan is what a question needs from the haystack: the question and answer texts, the evidence
exchanges (one per answer session) and the day offset of each answer session. How the six types
place their evidence follows upstream LongMemEval (shared/docs/upstream-protocol.md §1.2): the
evidence turn is a user turn, except for single-session-assistant (the assistant turn);
knowledge-update has an old and a newer value; multi-session spreads 2–3 values over as many
sessions; temporal-reasoning answers are computed from the session dates. Abstention questions
("_abs") ask for something that was never said, keep related answer sessions, and answer with the
abstention prefix plus what was said instead.

Every random choice goes through ``ctx.rng`` in a fixed order: the order is part of the sample's
bytes (tests/longmemeval/sample/test_generator.py pins them).
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from mnemetric.longmemeval.sample.banks import Banks, Event, Exchange, Fact, Tally, Update, draw_slots, load_banks
from mnemetric.longmemeval.sample.dates import WEEKDAY_NAMES

QUESTION_TYPES = ("single-session-user", "single-session-assistant", "single-session-preference",
                  "temporal-reasoning", "knowledge-update", "multi-session")
"""The generator's own order (synthetic sets cycle through it); the same six as upstream."""
GPT4_TYPES = ("temporal-reasoning", "multi-session")
"""Types whose question ids may carry upstream's "gpt4_" prefix."""


@dataclass(frozen=True)
class Evidence:
    """One answer session's key exchange; ``mark`` names the role whose turn has has_answer=true."""

    topic: str
    exchange: Exchange
    mark: str
    """"user", "assistant", or "" (a related session with no evidence turn, for abstentions)."""
    fixed: Mapping[str, str] = field(default_factory=dict)
    """Topic slot values pinned for the context exchanges around the evidence."""


@dataclass(frozen=True)
class Ctx:
    rng: random.Random
    banks: Banks
    abstain: bool
    span: int
    """Sessions fall on day offsets 0..span from ``start``."""
    qday: int
    """Day offset of the question (always after ``span``)."""
    start: date

    def date(self, day: int) -> date:
        return self.start + timedelta(days=day)


@dataclass(frozen=True)
class Plan:
    question: str
    answer: str | int
    evidence: list[Evidence]
    days: list[int]
    """Day offset of each evidence session (parallel to ``evidence``)."""


@dataclass(frozen=True)
class Scenario:
    name: str
    build: Callable[[Ctx], Plan]
    abstains: bool
    """Whether the scenario has an abstention variant."""


def cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _days(ctx: Ctx, n: int) -> list[int]:
    return sorted(ctx.rng.sample(range(ctx.span + 1), n))


def _ask(ctx: Ctx, entry: Fact | Update, fill: Callable[[str], str]) -> tuple[str, str]:
    if ctx.abstain:
        return fill(entry.abs_question), ctx.banks.abstention_prefix + fill(entry.abs_answer)
    return fill(entry.question), fill(entry.answer)


# ---------------------------------------------------------------- single-session and knowledge-update


def single_session(ctx: Ctx, entry: Fact, mark: str) -> Plan:
    """single-session-user / -assistant / -preference: one exchange states the fact (``mark``'s turn)."""
    values = draw_slots(ctx.rng, entry.slots)
    fill = functools.partial(_fill, values=values)
    fixed = {k: fill(t) for k, t in entry.fixed.items()}
    ev = Evidence(entry.topic, Exchange(fill(entry.exchange.user), fill(entry.exchange.assistant)), mark, fixed)
    question, answer = _ask(ctx, entry, fill)
    return Plan(question, answer, [ev], _days(ctx, 1))


def knowledge_update(ctx: Ctx, entry: Update) -> Plan:
    """knowledge-update: the old value in one session, the new one in a later session."""
    values = draw_slots(ctx.rng, entry.slots)
    fill = functools.partial(_fill, values=values)
    old = Evidence(entry.topic, Exchange(fill(entry.old.user), fill(entry.old.assistant)), "user")
    new = Evidence(entry.topic, Exchange(fill(entry.new.user), fill(entry.new.assistant)), "user")
    question, answer = _ask(ctx, entry, fill)
    return Plan(question, answer, [old, new], _days(ctx, 2))


def _fill(template: str, values: dict[str, Any]) -> str:
    return template.format(**values)


# ---------------------------------------------------------------- temporal-reasoning


def _yours(text: str) -> str:
    """The speaker's phrase addressed back to them ("ran my race" -> "ran your race")."""
    return text.replace("my ", "your ")


def _event_ev(event: Event, mark: str = "user") -> Evidence:
    return Evidence(event.topic, event.exchange, mark)


def _abs_events(ctx: Ctx, e1: Event, e2: Event, e3: Event) -> tuple[list[Evidence], str]:
    """Evidence for an abstention over events: e1 is asked about, e2 is not, e3 never happened."""
    said = ctx.banks.temporal_abstention.format(asked=_yours(e1.past), missing=_yours(e3.past))
    return [_event_ev(e1), _event_ev(e2, "")], ctx.banks.abstention_prefix + said


def tr_which_first(ctx: Ctx) -> Plan:
    """Which of two events came first (answer: the earlier one's gerund, capitalised)."""
    t = ctx.banks.temporal["which_first"]
    e1, e2, e3 = ctx.rng.sample(ctx.banks.events, 3)
    days = _days(ctx, 2)
    if ctx.abstain:
        evidence, answer = _abs_events(ctx, e1, e2, e3)
        pair = [e1.gerund, e3.gerund] if ctx.rng.random() < 0.5 else [e3.gerund, e1.gerund]
        return Plan(t["question"].format(a=pair[0], b=pair[1]), answer, evidence, days)
    pair = [e1.gerund, e2.gerund] if ctx.rng.random() < 0.5 else [e2.gerund, e1.gerund]
    question = t["question"].format(a=pair[0], b=pair[1])
    return Plan(question, cap(e1.gerund), [_event_ev(e1), _event_ev(e2)], days)


def tr_days_between(ctx: Ctx) -> Plan:
    """Days between two events: n = (date2 - date1).days; n + 1 (counting the last day) also accepted."""
    t = ctx.banks.temporal["days_between"]
    e1, e2, e3 = ctx.rng.sample(ctx.banks.events, 3)
    d1 = ctx.rng.randint(0, ctx.span - 4)
    d2 = ctx.rng.randint(d1 + 3, ctx.span)
    if ctx.abstain:
        evidence, answer = _abs_events(ctx, e1, e2, e3)
        return Plan(t["question"].format(a=e1.past, b=e3.past), answer, evidence, [d1, d2])
    n = (ctx.date(d2) - ctx.date(d1)).days
    answer = t["answer"].format(n=n, n_inclusive=n + 1)
    return Plan(t["question"].format(a=e1.past, b=e2.past), answer, [_event_ev(e1), _event_ev(e2)], [d1, d2])


def tr_days_ago(ctx: Ctx) -> Plan:
    """Days from an event to the question date: n = (question date - event date).days."""
    t = ctx.banks.temporal["days_ago"]
    event = ctx.rng.choice(ctx.banks.events)
    day = ctx.rng.randint(0, ctx.span)
    n = (ctx.date(ctx.qday) - ctx.date(day)).days
    return Plan(t["question"].format(event=event.past), t["answer"].format(n=n), [_event_ev(event)], [day])


def tr_bought_ago(ctx: Ctx) -> Plan:
    """What was bought k days before the question (k one of the bank's time_ago phrases)."""
    t = ctx.banks.temporal["bought_ago"]
    bought = ctx.rng.choice(ctx.banks.purchases)
    ago = ctx.rng.choice([k for k in ctx.banks.time_ago if k <= ctx.qday])
    question = t["question"].format(category=bought.category, ago=ctx.banks.time_ago[ago])
    return Plan(question, cap(bought.item), [Evidence(bought.topic, bought.exchange, "user")], [ctx.qday - ago])


def tr_order_of_three(ctx: Ctx) -> Plan:
    """Three events asked in a shuffled order; the answer lists them chronologically."""
    t = ctx.banks.temporal["order_of_three"]
    events = ctx.rng.sample(ctx.banks.events, 3)
    shown = ctx.rng.sample(events, 3)
    question = t["question"].format(a=shown[0].gerund, b=shown[1].gerund, c=shown[2].gerund)
    answer = t["answer"].format(a=events[0].gerund, b=events[1].gerund, c=events[2].gerund)
    return Plan(question, answer, [_event_ev(e) for e in events], _days(ctx, 3))


def tr_weekday(ctx: Ctx) -> Plan:
    """The English weekday name of an event's date."""
    t = ctx.banks.temporal["weekday"]
    event = ctx.rng.choice(ctx.banks.events)
    day = ctx.rng.randint(0, ctx.span)
    return Plan(t["question"].format(event=event.past), WEEKDAY_NAMES[ctx.date(day).weekday()],
                [_event_ev(event)], [day])


# ---------------------------------------------------------------- multi-session


def _tally_evidence(ctx: Ctx, tally: Tally, values: list[Any], **extra: list[Any]) -> list[Evidence]:
    """One evidence exchange per session, each from a different template; {x} is that session's value."""
    chosen = ctx.rng.sample(tally.exchanges, len(values))
    out = []
    for i, (ex, value) in enumerate(zip(chosen, values)):
        fields = {"x": value, **{k: v[i] for k, v in extra.items()}}
        out.append(Evidence(tally.topic, Exchange(ex.user.format(**fields), ex.assistant.format(**fields)), "user"))
    return out


def _tally_plan(ctx: Ctx, tally: Tally, evidence: list[Evidence], answer: str | int) -> Plan:
    t = tally.templates
    if ctx.abstain:
        return Plan(t["abs_question"], ctx.banks.abstention_prefix + t["abs_answer"], evidence,
                    _days(ctx, len(evidence)))
    return Plan(t["question"], answer, evidence, _days(ctx, len(evidence)))


def ms_board_games(ctx: Ctx) -> Plan:
    """Games bought across sessions (one session may name two); the answer is a bare JSON number,
    as in some real instances."""
    tally = ctx.banks.tallies["board_games"]
    n = ctx.rng.randint(2, 3)
    games = ctx.rng.sample(tally.values, n + 1)
    values, total = games[:n], n
    if ctx.rng.random() < 0.5:
        values[0], total = f"{games[0]} and {games[n]}", n + 1
    return _tally_plan(ctx, tally, _tally_evidence(ctx, tally, values), total)


def ms_concerts(ctx: Ctx) -> Plan:
    """Ticket prices across sessions; answer = their sum as "$1,234"."""
    tally = ctx.banks.tallies["concerts"]
    n = ctx.rng.randint(2, 3)
    amounts = ctx.rng.sample(tally.values, n)
    bands = ctx.rng.sample(tally.bands, n)
    evidence = _tally_evidence(ctx, tally, amounts, band=bands)
    return _tally_plan(ctx, tally, evidence, tally.templates["answer"].format(total=sum(amounts)))


def ms_volunteering(ctx: Ctx) -> Plan:
    """Hours (2–6 each) across sessions; answer = their sum."""
    tally = ctx.banks.tallies["volunteering"]
    n = ctx.rng.randint(2, 3)
    hours = [ctx.rng.randint(2, 6) for _ in range(n)]
    evidence = _tally_evidence(ctx, tally, [str(h) for h in hours])
    return _tally_plan(ctx, tally, evidence, tally.templates["answer"].format(total=sum(hours)))


def ms_cycling(ctx: Ctx) -> Plan:
    """Ride distances across sessions (repeats allowed); answer = their sum in km."""
    tally = ctx.banks.tallies["cycling"]
    n = ctx.rng.randint(2, 3)
    km = [ctx.rng.choice(tally.values) for _ in range(n)]
    evidence = _tally_evidence(ctx, tally, [str(k) for k in km])
    return _tally_plan(ctx, tally, evidence, tally.templates["answer"].format(total=sum(km)))


def ms_work_trips(ctx: Ctx) -> Plan:
    """Distinct cities across sessions; answer = how many (as text)."""
    tally = ctx.banks.tallies["work_trips"]
    n = ctx.rng.randint(2, 3)
    evidence = _tally_evidence(ctx, tally, ctx.rng.sample(tally.values, n))
    return _tally_plan(ctx, tally, evidence, tally.templates["answer"].format(total=n))


def ms_purchases(ctx: Ctx) -> Plan:
    """Items bought across sessions (the temporal purchase bank); answer lists them in told order."""
    tally = ctx.banks.tallies["purchases"]
    n = ctx.rng.randint(2, 3)
    bought = ctx.rng.sample(ctx.banks.purchases, n)
    items = [p.item for p in bought]
    answer = cap(", ".join(items[:-1]) + f" and {items[-1]}")
    evidence = [Evidence(p.topic, p.exchange, "user") for p in bought]
    return _tally_plan(ctx, tally, evidence, answer)


# ---------------------------------------------------------------- registry


def build_scenarios(banks: Banks) -> dict[str, tuple[Scenario, ...]]:
    """The scenarios of each question type, in a fixed order (the sample picks them by position)."""
    def entries(qtype: str, mark: str) -> tuple[Scenario, ...]:
        return tuple(Scenario(f"{qtype}[{i}]", functools.partial(single_session, entry=e, mark=mark), e.abstains)
                     for i, e in enumerate(banks.facts[qtype]))

    fixed = {
        "temporal-reasoning": ((tr_which_first, True), (tr_days_between, True), (tr_days_ago, False),
                               (tr_bought_ago, False), (tr_order_of_three, False), (tr_weekday, False)),
        "multi-session": ((ms_board_games, True), (ms_concerts, True), (ms_volunteering, False),
                          (ms_cycling, True), (ms_work_trips, False), (ms_purchases, False)),
    }
    named = {qtype: tuple(Scenario(f.__name__, f, abstains) for f, abstains in pairs) for qtype, pairs in fixed.items()}
    return {
        "single-session-user": entries("single-session-user", "user"),
        "single-session-assistant": entries("single-session-assistant", "assistant"),
        "single-session-preference": entries("single-session-preference", "user"),
        "temporal-reasoning": named["temporal-reasoning"],
        "knowledge-update": tuple(Scenario(f"knowledge-update[{i}]", functools.partial(knowledge_update, entry=e),
                                           e.abstains) for i, e in enumerate(banks.updates)),
        "multi-session": named["multi-session"],
    }


@functools.cache
def default_scenarios() -> dict[str, tuple[Scenario, ...]]:
    """``build_scenarios`` over the package's banks (once per process)."""
    return build_scenarios(load_banks())
