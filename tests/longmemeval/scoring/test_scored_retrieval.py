"""The typed scored-retrieval result (scoring/scored_retrieval.py): hand-written records, round trips,
errors naming file, record and field.

Worked example: q1 (has a user target) scores recall_all@1 0 / 1 at session / turn, q2_abs 1 / 1
(left out by both rules), q3 (no user target) 1 / 0. exclude_abs keeps q1, q3: session (0 + 1) / 2 =
0.5, turn (1 + 0) / 2 = 0.5; exclude_abs_and_no_user_target keeps q1 only: 0.0 and 1.0.
"""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemetric.errors import InputError
from mnemetric.longmemeval.scoring.scored_retrieval import QuestionFacts, RuleAverage, ScoredRetrieval
from mnemetric.official import OfficialEquivalence
from tests.support.edits import set_at

PER_QUESTION = {
    "q1": {"session": {"recall_all@1": 0.0}, "turn": {"recall_all@1": 1.0}},
    "q2_abs": {"session": {"recall_all@1": 1.0}, "turn": {"recall_all@1": 1.0}},
    "q3": {"session": {"recall_all@1": 1.0}, "turn": {"recall_all@1": 0.0}},
}
FACTS = {"q1": QuestionFacts("multi-session", True), "q2_abs": QuestionFacts("temporal-reasoning", True),
         "q3": QuestionFacts("single-session-assistant", False)}
EXPECTED = {
    "profile": "longmemeval-session-upstream-v1", "official_equivalence": {"value": True, "reasons": []}, "granularity": "turn",
    "per_question": PER_QUESTION,
    "questions": {"q1": {"question_type": "multi-session", "has_user_target": True},
                  "q2_abs": {"question_type": "temporal-reasoning", "has_user_target": True},
                  "q3": {"question_type": "single-session-assistant", "has_user_target": False}},
    "aggregate": {
        "exclude_abs": {"n": 2, "excluded": 1, "session": {"recall_all@1": 0.5}, "turn": {"recall_all@1": 0.5}},
        "exclude_abs_and_no_user_target": {"n": 1, "excluded": 2, "session": {"recall_all@1": 0.0},
                                           "turn": {"recall_all@1": 1.0}},
    },
}


def built() -> ScoredRetrieval:
    return ScoredRetrieval.build("longmemeval-session-upstream-v1", OfficialEquivalence(True), "turn", PER_QUESTION, FACTS)


def test_build_gives_the_hand_written_record():
    scored = built()
    assert scored.to_record() == EXPECTED
    assert json.dumps(scored.to_record()) == json.dumps(EXPECTED)  # key order too
    assert scored.exclude_abs == RuleAverage(2, 1, {"session": {"recall_all@1": 0.5}, "turn": {"recall_all@1": 0.5}})
    assert scored.average("exclude_abs_and_no_user_target").n == 1
    assert scored.question_types() == {"q1": "multi-session", "q2_abs": "temporal-reasoning",
                                       "q3": "single-session-assistant"}


def test_round_trip_through_json():
    text = json.dumps(EXPECTED)
    back = ScoredRetrieval.from_record(json.loads(text), file="scored.json")
    assert back == built()
    assert json.dumps(back.to_record()) == text


values = st.one_of(st.none(), st.floats(0, 1, allow_nan=False))


@given(st.dictionaries(st.sampled_from(["a", "b_abs", "c", "d"]),
                       st.tuples(values, values, st.booleans()), min_size=1))
def test_round_trip_of_any_result(rows):
    per_q = {q: {"session": {"recall_all@5": s, "ndcg_any@5": t}} for q, (s, t, _) in rows.items()}
    facts = {q: QuestionFacts("multi-session", u) for q, (_, _, u) in rows.items()}
    scored = ScoredRetrieval.build("p", OfficialEquivalence.of(["p is not upstream's"]), "session", per_q, facts)
    assert ScoredRetrieval.from_record(json.loads(json.dumps(scored.to_record())), file="f") == scored
    # naive second implementation of exclude_abs: plain mean over non-_abs questions with a value
    kept = [s for q, (s, _, _) in rows.items() if "_abs" not in q and s is not None]
    want = sum(kept) / len(kept) if kept else None
    got = scored.exclude_abs.levels["session"]["recall_all@5"]
    assert got == pytest.approx(want) if want is not None else got is None
    assert scored.exclude_abs.n == sum("_abs" not in q for q in rows)


def broken(path: tuple, value) -> dict:
    return set_at(copy.deepcopy(EXPECTED), path, value)


@pytest.mark.parametrize("path, value, record, field", [
    (("profile",), KeyError, "<root>", "profile"),
    (("official_equivalence",), "yes", "<root>", "official_equivalence"),
    (("granularity",), "paragraph", "<root>", "granularity"),
    (("per_question", "q3", "session", "recall_all@1"), "0.5", "q3", "per_question.session.recall_all@1"),
    (("per_question", "q1", "page"), {}, "q1", "per_question.page"),
    (("questions", "q3", "has_user_target"), 1, "q3", "questions.has_user_target"),
    (("questions", "q3"), KeyError, "<root>", "questions"),
    (("aggregate", "exclude_abs", "n"), -1, "<root>", "aggregate.exclude_abs.n"),
    (("aggregate", "exclude_abs_and_no_user_target"), KeyError, "<root>", "aggregate.exclude_abs_and_no_user_target"),
])
def test_bad_record_names_file_record_and_field(path, value, record, field):
    with pytest.raises(InputError) as info:
        ScoredRetrieval.from_record(broken(path, value), file="scored.json")
    err = info.value
    assert (err.problem.file, err.problem.record, err.problem.field) == ("scored.json", record, field), str(err)


def test_not_an_object_is_an_input_error():
    with pytest.raises(InputError, match="expected a JSON object"):
        ScoredRetrieval.from_record([1, 2], file="scored.json", line=3)
