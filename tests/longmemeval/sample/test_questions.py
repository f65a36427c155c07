"""Question builders: every scenario of every question type gives a valid instance with the evidence
layout of its type; small hand-worked plans check the texts and the arithmetic."""

from __future__ import annotations

import dataclasses
import random
from datetime import date, timedelta

import pytest

from mnemetric.longmemeval.instance_checks import check_instance
from mnemetric.longmemeval.rules import QUESTION_TYPES as UPSTREAM_TYPES
from mnemetric.longmemeval.sample.banks import Exchange, Fact, Pick, Update, load_banks
from mnemetric.longmemeval.sample.bundled import SAMPLE_PROFILE
from mnemetric.longmemeval.sample.haystack import Spec, build_instance
from mnemetric.longmemeval.sample.questions import (
    QUESTION_TYPES,
    Ctx,
    default_scenarios,
    knowledge_update,
    ms_concerts,
    ms_purchases,
    single_session,
    tr_bought_ago,
    tr_days_between,
    tr_order_of_three,
    tr_weekday,
)

PREFIX = "The information provided is not enough. "
CASES = [(qtype, scenario, abstain)
         for qtype, scenarios in default_scenarios().items()
         for scenario in scenarios
         for abstain in ((False, True) if scenario.abstains else (False,))]


def test_the_six_upstream_types_each_have_scenarios_and_abstentions_where_upstream_has_them():
    scenarios = default_scenarios()
    assert set(QUESTION_TYPES) == set(UPSTREAM_TYPES) and tuple(scenarios) == QUESTION_TYPES
    assert {t: len(s) for t, s in scenarios.items()} == {
        "single-session-user": 7, "single-session-assistant": 6, "single-session-preference": 7,
        "temporal-reasoning": 6, "knowledge-update": 6, "multi-session": 6}
    with_abs = {t for t, s in scenarios.items() if any(x.abstains for x in s)}
    assert with_abs == {"single-session-user", "temporal-reasoning", "knowledge-update", "multi-session"}


def evidence(record: dict) -> list[list[dict]]:
    """has_answer=true turns of each answer session, in haystack order."""
    return [[t for t in s if t["has_answer"]] for sid, s in
            zip(record["haystack_session_ids"], record["haystack_sessions"]) if "answer" in sid]


@pytest.mark.parametrize("qtype, scenario, abstain", CASES,
                         ids=[f"{s.name}{'-abs' if a else ''}" for _, s, a in CASES])
def test_each_builder_gives_a_valid_instance(qtype, scenario, abstain):
    for seed in range(4):
        spec = Spec(qtype, scenario, abstain, gpt4=seed % 2 == 1, quirk=seed == 3)
        record = build_instance(random.Random(seed), load_banks(), spec, SAMPLE_PROFILE, set()).to_record()
        assert check_instance(record, "<generated>", 0) == []
        assert record["question_type"] == qtype
        assert record["question_id"].endswith("_abs") == abstain
        assert record["answer_session_ids"] == [s for s in record["haystack_session_ids"] if "answer" in s]
        assert str(record["answer"]).startswith(PREFIX) == abstain
        marks = evidence(record)
        if abstain:
            assert all("_abs_" in sid for sid in record["answer_session_ids"])
        if qtype == "single-session-assistant":
            assert [[t["role"] for t in m] for m in marks] == [["assistant"]]
        elif qtype.startswith("single-session"):
            assert [[t["role"] for t in m] for m in marks] == [["user"]]
        elif qtype == "knowledge-update":
            assert [[t["role"] for t in m] for m in marks] == [["user"], ["user"]]
        elif qtype == "multi-session":
            assert len(marks) in (2, 3) and all([t["role"] for t in m] == ["user"] for m in marks)
        elif abstain:  # temporal abstention: the asked-about event, plus a related session without evidence
            assert sorted(len(m) for m in marks) == [0, 1]
        else:
            assert 1 <= len(marks) <= 3 and all([t["role"] for t in m] == ["user"] for m in marks)


# ---------------------------------------------------------------------------------- worked plans


def ctx(seed: int = 0, abstain: bool = False, banks=None, start: date = date(2023, 1, 2)) -> Ctx:
    return Ctx(random.Random(seed), banks or load_banks(), abstain, span=30, qday=33, start=start)


FACT = Fact(topic="pets", slots={"name": Pick(("Rex",))}, fixed={"pet": "dog"},
            exchange=Exchange("I named my puppy {name}.", "{name} is a fine name."),
            question="What is my puppy called?", answer="{name}",
            abs_question="What is my kitten called?", abs_answer="You told me about {name}, a puppy.")


def test_single_session_worked_example():
    plan = single_session(ctx(), FACT, "user")
    assert (plan.question, plan.answer) == ("What is my puppy called?", "Rex")
    (ev,) = plan.evidence
    assert (ev.topic, ev.exchange, ev.mark, dict(ev.fixed)) == (
        "pets", Exchange("I named my puppy Rex.", "Rex is a fine name."), "user", {"pet": "dog"})
    assert len(plan.days) == 1 and 0 <= plan.days[0] <= 30


def test_single_session_abstention_worked_example():
    plan = single_session(ctx(abstain=True), FACT, "assistant")
    assert plan.question == "What is my kitten called?"
    assert plan.answer == "The information provided is not enough. You told me about Rex, a puppy."
    assert plan.evidence[0].mark == "assistant"  # the related session keeps its evidence turn


def test_knowledge_update_worked_example():
    entry = Update("fitness", {"n": Pick((("3", "5"),))}, Exchange("I run {n[0]} times a week.", "Good."),
                   Exchange("Now I run {n[1]} times a week.", "Great."), "How often do I run now?",
                   "{n[1]} times a week", None, None)
    plan = knowledge_update(ctx(), entry)
    assert [e.exchange.user for e in plan.evidence] == ["I run 3 times a week.", "Now I run 5 times a week."]
    assert plan.answer == "5 times a week"
    assert plan.days == sorted(plan.days) and len(set(plan.days)) == 2


@pytest.mark.parametrize("seed", range(20))
def test_days_between_counts_calendar_days(seed):
    plan = tr_days_between(ctx(seed))
    d1, d2 = plan.days
    assert 3 <= d2 - d1
    assert plan.answer == f"{d2 - d1} days. {d2 - d1 + 1} days (including the last day) is also acceptable."


@pytest.mark.parametrize("seed", range(20))
def test_weekday_is_the_english_name_of_the_event_date(seed):
    start = date(2023, 1, 2) + timedelta(days=seed * 5)
    plan = tr_weekday(ctx(seed, start=start))
    day = start + timedelta(days=plan.days[0])
    assert plan.answer == ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"][day.weekday()]


@pytest.mark.parametrize("seed", range(20))
def test_bought_ago_phrase_matches_the_days(seed):
    plan = tr_bought_ago(ctx(seed))
    ago = {7: "a week ago", 10: "ten days ago", 14: "two weeks ago", 21: "three weeks ago"}[33 - plan.days[0]]
    assert plan.question.endswith(f" buy {ago}?")
    assert plan.answer[0].isupper() and plan.answer.lower() in plan.evidence[0].exchange.user.lower()


@pytest.mark.parametrize("seed", range(10))
def test_order_of_three_lists_the_events_chronologically(seed):
    plan = tr_order_of_three(ctx(seed))
    banks = load_banks()
    gerunds = [next(e.gerund for e in banks.events if e.exchange == ev.exchange) for ev in plan.evidence]
    assert plan.days == sorted(plan.days) and len(set(plan.days)) == 3
    assert plan.answer == f"First {gerunds[0]}, then {gerunds[1]}, and finally {gerunds[2]}."


@pytest.mark.parametrize("seed", range(10))
def test_concert_total_is_summed_and_formatted_with_a_thousands_comma(seed):
    banks = load_banks()
    concerts = dataclasses.replace(banks.tallies["concerts"], values=(700, 700, 700))
    plan = ms_concerts(ctx(seed, banks=dataclasses.replace(banks, tallies={**banks.tallies, "concerts": concerts})))
    assert plan.answer == {2: "$1,400", 3: "$2,100"}[len(plan.evidence)]
    assert all("$700" in ev.exchange.user for ev in plan.evidence)


def test_purchases_answer_joins_the_items_in_told_order():
    plan = ms_purchases(ctx(3))
    items = [next(p.item for p in load_banks().purchases if p.exchange == ev.exchange) for ev in plan.evidence]
    expected = ", ".join(items[:-1]) + " and " + items[-1]
    assert plan.answer == expected[0].upper() + expected[1:]
