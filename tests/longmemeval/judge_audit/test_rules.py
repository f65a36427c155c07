"""The adversarial rules are pure functions applied only where they apply; controls pick donors by a fixed rule."""

from __future__ import annotations

import pytest

from mnemetric.longmemeval.judge_audit.adversarial import (
    RULES,
    contradicted,
    date_phrase,
    expected,
    hedged,
    off_by_one_date,
    vague,
)
from mnemetric.longmemeval.judge_audit.items import donor_of, item_sets, negative_controls, positive_controls
from mnemetric.longmemeval.reference import Reference

SSU, TR, PREF = "single-session-user", "temporal-reasoning", "single-session-preference"


@pytest.mark.parametrize("gold, moved", [
    ("24 days", "25 days"), ("It took 3 weeks.", "4 weeks"), ("12 hours", "13 hours"), ("Friday", "Saturday"),
    ("on Sunday", "Monday"), ("May 3rd", "May 4th"), ("March 31", "March 30"), ("the 21st of June", "22nd of June"),
    ("2023-05-03", "2023-05-04"), ("2023/05/29", "2023/05/28"), ("Sept. 11", "Sept. 12"),
    ("5 sets of 8 reps", None), ("Kestrel Games", None), ("$1,575", None),
])
def test_off_by_one_moves_the_first_date_like_phrase(gold, moved):
    assert off_by_one_date(gold, SSU, "q1") == moved


def test_the_first_phrase_wins_and_day_counts_are_flagged():
    assert date_phrase("3 days. 4 days (including the last day) is also acceptable.") == ("3 days", "4 days", True)
    assert date_phrase("Tuesday, after 2 years") == ("Tuesday", "Wednesday", False)
    assert date_phrase("2 years")[2] is False


def test_the_text_rules_wrap_the_gold_in_fixed_wording():
    assert vague("Miso", SSU, "q1").startswith("It was one of the things") and "Miso" not in vague("Miso", SSU, "q1")
    assert hedged("Mr. Tanaka.", SSU, "q1") == "I am not sure. It might be Mr. Tanaka, but it could just as well be something else."
    assert contradicted(15, SSU, "q1") == "It was not 15."


@pytest.mark.parametrize("name", list(RULES))
def test_no_rule_applies_to_abstention_preference_or_an_empty_gold(name):
    rule = RULES[name]
    assert rule("24 days", SSU, "q1_abs") is None
    assert rule("The user would prefer 3 days of rest", PREF, "q2") is None
    assert rule("  ", SSU, "q3") is None
    assert rule("24 days", SSU, "q4") is not None  # applies to a factual gold
    assert rule("24 days", SSU, "q4") == rule("24 days", SSU, "q4")  # pure


def test_expected_verdicts():
    assert expected("hedged", "24 days", TR) is False
    assert expected("off_by_one_date", "24 days", TR) is None  # upstream's temporal rubric tolerates it
    assert expected("off_by_one_date", "24 days", SSU) is False
    assert expected("off_by_one_date", "Friday", TR) is False  # a weekday is not a tolerated count


REFS = {"a1": Reference("a1", SSU, "Cat?", "Miso"), "a2": Reference("a2", SSU, "Dog?", "miso!"),
        "a3": Reference("a3", TR, "How long?", "24 days"), "a4": Reference("a4", SSU, "Bird?", "Kiwi"),
        "z_abs": Reference("z_abs", SSU, "Fish?", "You never mentioned a fish."),
        "p1": Reference("p1", PREF, "Dinner?", "The user would prefer vegan food")}


def test_donors_are_deterministic_and_never_the_same_gold():
    assert donor_of("a1", REFS) == "a4"  # a2's gold normalizes to a1's; a4 is the next of the same type
    assert donor_of("a4", REFS) == "a1"  # cyclic, sorted ids
    assert donor_of("z_abs", REFS) == "a1"  # an abstention question takes a confident answer
    assert donor_of("a3", REFS) == "a4"  # no other temporal question: any type, not abstention
    assert donor_of("p1", REFS) == "a1"  # after p1 (sorted, cyclic): z_abs is skipped
    neg = {i.question_id: (i.donor, i.hypothesis, i.expected) for i in negative_controls(REFS)}
    assert neg["a1"] == ("a4", "Kiwi", False)
    assert {i.question_id: (i.hypothesis, i.expected) for i in positive_controls(REFS)}["a3"] == ("24 days", True)


def test_item_sets_hold_one_answer_per_question():
    sets = item_sets([{"question_id": q, "hypothesis": "x"} for q in sorted(REFS)], REFS)
    assert list(sets)[:3] == ["run", "positive", "negative"]
    assert {s for s in sets if s.startswith("adversarial:")} == {f"adversarial:{r}" for r in RULES}
    for items in sets.values():
        assert len({i.question_id for i in items}) == len(items)
    assert [i.question_id for i in sets["adversarial:off_by_one_date"]] == ["a3"]
    assert sets["adversarial:off_by_one_date"][0].expected is None
