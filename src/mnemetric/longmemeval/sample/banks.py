"""The phrase banks of the sample generator: package data (``banks/*.json``) read into typed records.

Every word of the generated sample comes from these files, all authored by Mnemetric (no upstream
text). Templates use ``str.format`` placeholders (``{name}``, ``{pet[0]}``, ``{total:,}``); each
placeholder must name a slot of its entry (or, for the scenario templates, a value the builder
supplies: ``SCENARIO_FIELDS``). A slot is a list (one value drawn with ``rng.choice``) or
``{"sample": k, "from": pool}`` (``rng.sample(pool, k)``: k distinct items of a named pool).

The files are read once (``load_banks``) through ``importlib.resources``, so they work from a
source checkout, an editable install or a wheel (pyproject.toml ships ``banks/*.json``). A
malformed file raises InputError naming the file, the entry and the field.
"""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from mnemetric.errors import InputError
from mnemetric.longmemeval.sample.bankfile import BankObject, bank_path

BANK_FILES = ("common.json", "topics.json", "single_session.json", "knowledge_update.json",
              "temporal.json", "multi_session.json")
FACT_TYPES = ("single-session-user", "single-session-assistant", "single-session-preference")
# The placeholders each temporal / multi-session builder supplies to its scenario's templates.
SCENARIO_FIELDS: dict[str, dict[str, set[str]]] = {
    "which_first": {"question": {"a", "b"}},
    "days_between": {"question": {"a", "b"}, "answer": {"n", "n_inclusive"}},
    "days_ago": {"question": {"event"}, "answer": {"n"}},
    "bought_ago": {"question": {"category", "ago"}},
    "order_of_three": {"question": {"a", "b", "c"}, "answer": {"a", "b", "c"}},
    "weekday": {"question": {"event"}},
    "board_games": {"question": set(), "abs_question": set(), "abs_answer": set()},
    "concerts": {"question": set(), "answer": {"total"}, "abs_question": set(), "abs_answer": set()},
    "volunteering": {"question": set(), "answer": {"total"}},
    "cycling": {"question": set(), "answer": {"total"}, "abs_question": set(), "abs_answer": set()},
    "work_trips": {"question": set(), "answer": {"total"}},
    "purchases": {"question": set()},
}
TALLY_EXCHANGE_FIELDS = {"x", "band"}


@dataclass(frozen=True)
class Pick:
    """A slot drawn with ``rng.choice(values)``."""

    values: tuple[Any, ...]

    def draw(self, rng: random.Random) -> Any:
        return rng.choice(self.values)


@dataclass(frozen=True)
class SampleOf:
    """A slot drawn with ``rng.sample(pool, k)``: k distinct items, in draw order."""

    pool: tuple[Any, ...]
    k: int

    def draw(self, rng: random.Random) -> list[Any]:
        return rng.sample(self.pool, self.k)


Slot = Pick | SampleOf


def draw_slots(rng: random.Random, slots: Mapping[str, Slot]) -> dict[str, Any]:
    """One value per slot, drawn in the file's slot order (the order is part of the determinism)."""
    return {name: slot.draw(rng) for name, slot in slots.items()}


@dataclass(frozen=True)
class Exchange:
    user: str
    assistant: str


@dataclass(frozen=True)
class Topic:
    name: str
    slots: Mapping[str, Slot]
    exchanges: tuple[Exchange, ...]


@dataclass(frozen=True)
class Fact:
    """A single-session entry: one exchange states the fact; question/answer ask for it."""

    topic: str
    slots: Mapping[str, Slot]
    fixed: Mapping[str, str]
    """Topic slots pinned for the surrounding context, as templates over this entry's slots."""
    exchange: Exchange
    question: str
    answer: str
    abs_question: str | None
    abs_answer: str | None

    @property
    def abstains(self) -> bool:
        return self.abs_question is not None


@dataclass(frozen=True)
class Update:
    """A knowledge-update entry: ``old`` states a value, ``new`` (a later session) changes it."""

    topic: str
    slots: Mapping[str, Slot]
    old: Exchange
    new: Exchange
    question: str
    answer: str
    abs_question: str | None
    abs_answer: str | None

    @property
    def abstains(self) -> bool:
        return self.abs_question is not None


@dataclass(frozen=True)
class Event:
    """A dated event: ``user`` says it happened "today"; past/gerund phrase it in questions."""

    past: str
    gerund: str
    exchange: Exchange
    topic: str


@dataclass(frozen=True)
class Purchase:
    category: str
    item: str
    exchange: Exchange
    topic: str


@dataclass(frozen=True)
class Tally:
    """A multi-session scenario: values told across sessions, aggregated by the answer."""

    topic: str | None
    values: tuple[Any, ...]
    bands: tuple[str, ...]
    exchanges: tuple[Exchange, ...]
    templates: Mapping[str, str]


@dataclass(frozen=True)
class Banks:
    abstention_prefix: str
    greetings: tuple[str, ...]
    topics: Mapping[str, Topic]
    facts: Mapping[str, tuple[Fact, ...]]
    """Single-session entries by question type."""
    updates: tuple[Update, ...]
    events: tuple[Event, ...]
    purchases: tuple[Purchase, ...]
    time_ago: Mapping[int, str]
    """Days before the question → the phrase used for it ("two weeks ago")."""
    temporal: Mapping[str, Mapping[str, str]]
    temporal_abstention: str
    tallies: Mapping[str, Tally]


@functools.cache
def load_banks() -> Banks:
    """Read and check every bank file of the package (once per process)."""
    folder = resources.files(__package__).joinpath("banks")
    return parse_banks({name: decode(name, folder.joinpath(name).read_text(encoding="utf-8")) for name in BANK_FILES})


def decode(name: str, text: str) -> Any:
    """One bank file's JSON; a syntax error names the file and line."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(bank_path(name), f"line {exc.lineno}", "<json>", f"not valid JSON ({exc.msg})") from None


def parse_banks(raw: Mapping[str, Any]) -> Banks:
    """Typed banks from the decoded files (``{file name: JSON value}``); pure, raises InputError."""
    common = BankObject.of_file(raw, "common.json").only("about", "abstention_prefix")
    top = BankObject.of_file(raw, "topics.json").only("about", "greetings", "topics")
    topics = {name: _topic(name, top.sub("topics", name)) for name in top.obj("topics")}
    ss = BankObject.of_file(raw, "single_session.json").only("about", "pools", *FACT_TYPES)
    ku = BankObject.of_file(raw, "knowledge_update.json").only("about", "knowledge-update")
    pools = {name: tuple(_tuples(values)) for name, values in ss.obj("pools").items()}
    tr = BankObject.of_file(raw, "temporal.json").only(
        "about", "events", "purchases", "time_ago", "abstention_answer", "scenarios")
    tr.only(*TEMPORAL_SCENARIOS, within="scenarios")
    ms = BankObject.of_file(raw, "multi_session.json").only("about", "scenarios").only(*TALLY_SCENARIOS, within="scenarios")
    return Banks(
        abstention_prefix=common.text("abstention_prefix", strip=False),
        greetings=tuple(top.texts("greetings")),
        topics=topics,
        facts={qtype: tuple(_fact(r, topics, pools) for r in ss.items(qtype)) for qtype in FACT_TYPES},
        updates=tuple(_update(r, topics) for r in ku.items("knowledge-update")),
        events=tuple(_event(r, topics) for r in tr.items("events")),
        purchases=tuple(_purchase(r, topics) for r in tr.items("purchases")),
        time_ago={r.integer("days"): r.text("phrase") for r in (t.only("days", "phrase") for t in tr.items("time_ago"))},
        temporal={name: _scenario(tr.sub("scenarios", name), name) for name in TEMPORAL_SCENARIOS},
        temporal_abstention=tr.template("abstention_answer", {"asked", "missing"}),
        tallies={name: _tally(ms.sub("scenarios", name), name, topics) for name in TALLY_SCENARIOS},
    )


TEMPORAL_SCENARIOS = ("which_first", "days_between", "days_ago", "bought_ago", "order_of_three", "weekday")
TALLY_SCENARIOS = ("board_games", "concerts", "volunteering", "cycling", "work_trips", "purchases")


# ---------------------------------------------------------------- entries


def _topic(name: str, r: BankObject) -> Topic:
    slots = _slots(r.only("slots", "exchanges"), {})
    return Topic(name, slots, tuple(_exchange(e.only("user", "assistant"), set(slots)) for e in r.items("exchanges")))


def _fact(r: BankObject, topics: Mapping[str, Topic], pools: Mapping[str, tuple]) -> Fact:
    r.only("topic", "fixed", "slots", "user", "assistant", "question", "answer", "abs_question", "abs_answer")
    topic = r.topic(topics)
    slots = _slots(r, pools)
    names = set(slots)
    fixed = {k: r.template_of(v, names, f"fixed.{k}") for k, v in r.obj("fixed", {}).items()}
    unknown = set(fixed) - set(topics[topic].slots)
    if unknown:
        raise r.error("fixed", f"{sorted(unknown)} are not slots of topic {topic!r}")
    abs_q, abs_a = r.abstention(names)
    return Fact(topic, slots, fixed, _exchange(r, names), r.template("question", names),
                r.template("answer", names), abs_q, abs_a)


def _update(r: BankObject, topics: Mapping[str, Topic]) -> Update:
    r.only("topic", "slots", "old_user", "old_assistant", "new_user", "new_assistant", "question", "answer",
           "abs_question", "abs_answer")
    topic = r.topic(topics)
    slots = _slots(r, {})
    names = set(slots)
    old = Exchange(r.template("old_user", names), r.template("old_assistant", names))
    new = Exchange(r.template("new_user", names), r.template("new_assistant", names))
    abs_q, abs_a = r.abstention(names)
    return Update(topic, slots, old, new, r.template("question", names), r.template("answer", names), abs_q, abs_a)


def _event(r: BankObject, topics: Mapping[str, Topic]) -> Event:
    r.only("past", "gerund", "user", "assistant", "topic")
    return Event(r.text("past"), r.text("gerund"), _exchange(r, set()), r.topic(topics))


def _purchase(r: BankObject, topics: Mapping[str, Topic]) -> Purchase:
    r.only("category", "item", "user", "assistant", "topic")
    return Purchase(r.text("category"), r.text("item"), _exchange(r, set()), r.topic(topics))


def _scenario(r: BankObject, name: str, *other: str) -> dict[str, str]:
    r.only(*SCENARIO_FIELDS[name], *other)
    return {key: r.template(key, fields) for key, fields in SCENARIO_FIELDS[name].items()}


def _tally(r: BankObject, name: str, topics: Mapping[str, Topic]) -> Tally:
    topic = r.topic(topics) if "topic" in r.raw else None
    exchanges = tuple(_exchange(e.only("user", "assistant"), TALLY_EXCHANGE_FIELDS)
                      for e in r.items("exchanges", optional=True))
    values = tuple(_tuples(r.array("values", [])))
    templates = _scenario(r, name, "topic", "values", "bands", "exchanges")
    return Tally(topic, values, tuple(r.texts("bands", [])), exchanges, templates)


def _exchange(r: BankObject, names: set[str]) -> Exchange:
    return Exchange(r.template("user", names), r.template("assistant", names))


def _slots(r: BankObject, pools: Mapping[str, tuple]) -> dict[str, Slot]:
    slots: dict[str, Slot] = {}
    for name, spec in r.obj("slots").items():
        if isinstance(spec, list) and spec:
            slots[name] = Pick(tuple(_tuples(spec)))
        elif _is_sample(spec, pools):
            slots[name] = SampleOf(pools[spec["from"]], spec["sample"])
        else:
            raise r.error(f"slots.{name}", "expected a non-empty list, or {\"sample\": k, \"from\": <pool>} with "
                                          f"0 < k <= the pool's size (pools: {sorted(pools) or 'none'}); got {spec!r}")
    return slots


def _is_sample(spec: Any, pools: Mapping[str, tuple]) -> bool:
    return (isinstance(spec, dict) and set(spec) == {"sample", "from"} and spec["from"] in pools
            and type(spec["sample"]) is int and 0 < spec["sample"] <= len(pools[spec["from"]]))


def _tuples(values: list[Any]) -> list[Any]:
    return [tuple(v) if isinstance(v, list) else v for v in values]
