"""Suites: the suite record typed once (round trip, validation, exact bytes) and the stratified choice."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemetric.errors import InputError
from mnemetric.longmemeval.suite import QuestionMeta, SuiteRecord, SuiteSpec, read_suite, select, suite_record, write_suite

IDS = ["q1", "q2_abs", "q3"]
IDS_SHA = hashlib.sha256(b"q1\nq2_abs\nq3").hexdigest()  # the ids joined by newlines, by hand
RECORD = {"suite": "development", "variant": "s", "kind": "stratified", "seed": 7, "size": 3,
          "ids_sha256": IDS_SHA, "question_ids": IDS}
EXPECTED_BYTES = (
    '{\n  "suite": "development",\n  "variant": "s",\n  "kind": "stratified",\n  "seed": 7,\n  "size": 3,\n'
    f'  "ids_sha256": "{IDS_SHA}",\n  "question_ids": [\n    "q1",\n    "q2_abs",\n    "q3"\n  ]\n}}\n'
)


def test_round_trip_of_a_hand_written_record():
    rec = SuiteRecord.from_record(RECORD, file="suite.json")
    assert rec == SuiteRecord("development", "s", "stratified", 7, ("q1", "q2_abs", "q3"))
    assert (rec.size, rec.ids_sha256) == (3, IDS_SHA)
    assert json.dumps(rec.to_record()) == json.dumps(RECORD)


def test_the_written_file_has_the_hand_written_bytes(tmp_path: Path):
    spec = SuiteSpec("development", "stratified", per_type=1, abstention=1, seed=7)
    out = tmp_path / "s-development.json"
    write_suite(out, suite_record(spec, "s", IDS))
    assert out.read_text(encoding="utf-8") == EXPECTED_BYTES
    assert read_suite(out) == SuiteRecord.from_record(RECORD, file="x")


@pytest.mark.parametrize("change, field, words", [
    ({"suite": None}, "suite", "expected a string"),
    ({"kind": "random"}, "kind", "expected one of"),
    ({"seed": "7"}, "seed", "expected an integer"),
    ({"seed": True}, "seed", "expected an integer"),
    ({"size": 4}, "size", "question_ids holds 3"),
    ({"ids_sha256": "0" * 64}, "ids_sha256", "not the sha256"),
    ({"question_ids": "q1"}, "question_ids", "expected a list"),
    ({"question_ids": ["q1", 2, "q3"]}, "question_ids[1]", "non-empty string"),
    ({"question_ids": ["q1", "q1", "q3"]}, "question_ids", "duplicate question id 'q1'"),
])
def test_each_validation_error_names_file_and_field(change, field, words):
    with pytest.raises(InputError) as err:
        SuiteRecord.from_record(RECORD | change, file="data/suites/s-development.json")
    p = err.value.problem
    assert (p.file, p.record, p.field) == ("data/suites/s-development.json", "<file>", field) and words in p.message


def test_a_missing_key_and_a_broken_file(tmp_path: Path):
    with pytest.raises(InputError) as err:
        SuiteRecord.from_record({k: v for k, v in RECORD.items() if k != "variant"}, file="f")
    assert (err.value.problem.field, err.value.problem.message) == ("variant", "missing")
    bad = tmp_path / "s.json"
    bad.write_text('{"suite": "full",\n  "variant"', encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_suite(bad)
    assert (err.value.problem.record, err.value.problem.field) == ("line 2", "<json>")


TYPES = ("single-session-user", "multi-session", "temporal-reasoning")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(TYPES), st.booleans()), max_size=25), st.integers(0, 4),
       st.integers(0, 4), st.integers(0, 10**6))
def test_stratified_choice_takes_min_of_quota_and_pool_per_type_in_file_order(qs, per_type, abstention, seed):
    questions = [QuestionMeta(f"q{i}" + ("_abs" if a else ""), t, a) for i, (t, a) in enumerate(qs)]
    spec = SuiteSpec("development", "stratified", per_type=per_type, abstention=abstention, seed=seed)
    chosen = select(spec, questions)
    by_id = {q.question_id: q for q in questions}
    assert chosen == [q.question_id for q in questions if q.question_id in set(chosen)]  # file order, no repeats
    for t in TYPES:
        pool = [q for q in questions if q.question_type == t and not q.abstention]
        assert sum(1 for c in chosen if by_id[c] in pool) == min(per_type, len(pool))
    assert sum(by_id[c].abstention for c in chosen) == min(abstention, sum(q.abstention for q in questions))
    assert select(spec, questions) == chosen  # the seed decides
    assert select(SuiteSpec("full", "full"), questions) == [q.question_id for q in questions]
