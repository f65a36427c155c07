"""The offline lexical judge: hand-made cases for each rule."""

from __future__ import annotations

import pytest

from mnemetric.errors import InputError
from mnemetric.longmemeval.judge.lexical import (
    LexicalJudge,
    answer_matches,
    gold_alternatives,
    lexical_label,
    normalize,
    preference_overlap,
    token_f1,
)


def test_normalize_drops_case_punctuation_and_articles():
    assert normalize("The Eiffel Tower, in PARIS!") == "eiffel tower in paris"
    assert normalize("It cost $1,000.") == "it cost 1000"
    assert normalize(15) == "15"


@pytest.mark.parametrize("gold, hyp, ok", [
    ("Paris", "You told me you moved to Paris last year.", True),
    ("the blue notebook", "It was a blue notebook.", True),
    ("Paris", "You moved to Lyon.", False),
    ("4", "You have 14 plants.", False),           # word-bounded: 4 is not inside 14
    (15, "That took about 15 weeks in total.", True),  # a bare-number gold
    ("15", "fifteen weeks", True),                  # number words count as numbers
    ("3", "3.0 hours", True),
    ("25:50 (or 25 minutes and 50 seconds)", "Your time was 25 minutes and 50 seconds.", True),
    ("25:50 (or 25 minutes and 50 seconds)", "It was 25:50.", True),
    ("Sunday morning yoga", "morning yoga on Sunday", True),  # token F1 = 1.0
    ("red wool scarf from grandma", "a scarf", False),
])
def test_answer_matching(gold, hyp, ok):
    assert answer_matches(gold, hyp) is ok


def test_gold_alternatives():
    assert gold_alternatives("25:50 (or 25 minutes and 50 seconds)") == [
        "25 50 or 25 minutes and 50 seconds", "25 50", "25 minutes and 50 seconds"]


def test_token_f1():
    assert token_f1("a b c", "a b c") == 1.0
    assert token_f1("a b", "a b c d") == pytest.approx(2 * 1.0 * 0.5 / 1.5)
    assert token_f1("", "a") == 0.0


@pytest.mark.parametrize("hyp, ok", [
    ("There is not enough information to answer.", True),
    ("I don\u2019t know which day that was.", True),
    ("You never said; it is not mentioned in our chats.", True),
    ("I cannot tell from the history.", True),
    ("There is no information about a second trip.", True),
    ("You went on Tuesday.", False),
])
@pytest.mark.task("longmemeval", "abstention")
def test_abstention_questions_need_an_abstention_phrase(hyp, ok):
    assert lexical_label("q1_abs", "temporal-reasoning", "The user never mentioned a second trip.", hyp) is ok


@pytest.mark.task("longmemeval", "abstention")
def test_abs_is_checked_before_the_type():
    # the gold text appears verbatim, but an _abs question is only correct when it abstains
    assert lexical_label("q_abs", "single-session-user", "Paris", "Paris") is False


@pytest.mark.task("longmemeval", "single-session-preference")
def test_preference_is_a_content_word_overlap_floor():
    rubric = "The user would prefer suggestions involving hiking trails near Denver and vegetarian picnic food."
    good = "Try the hiking trails near Denver and pack a vegetarian picnic."
    bad = "Here are some popular movies to watch this weekend."
    assert preference_overlap(rubric, good) >= 0.3
    assert lexical_label("p1", "single-session-preference", rubric, good) is True
    assert lexical_label("p1", "single-session-preference", rubric, bad) is False
    assert preference_overlap("the a an", good) == 0.0


def test_unknown_type_is_an_error():
    with pytest.raises(InputError, match="unknown question_type"):
        lexical_label("q1", "abstention", "x", "x")


def test_judge_object_is_never_official():
    judge = LexicalJudge()
    assert judge.official_equivalence is False
    assert judge.autoeval_label("q1", "multi-session", "How many?", 3, "three") == {
        "model": "mnemetric-lexical-v1", "label": True}
