"""The contexts file typed once: round trip, validation naming file/line/field, exact bytes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mnemetric.errors import InputError
from mnemetric.longmemeval.contexts import (
    Context,
    ContextItem,
    ContextMessage,
    context_line,
    read_contexts,
    write_contexts,
)

# Hand-written, in the layout the retrieve stage writes (keys in this order).
SESSION_LINE = {
    "question_id": "q1", "memory": "bm25", "granularity": "session", "k": 2, "budget_tokens": 12,
    "tokenizer": "wordpunct-v1", "tokens": 9,
    "items": [{"session_id": "s002", "upstream_session_id": "answer_ab12", "turn_index": None,
               "date": "2023/05/20 (Sat) 02:21",
               "messages": [{"role": "user", "content": "My cat is Miso."},
                            {"role": "assistant", "content": "Nice — café!"}],
               "truncated": False}],
}
TURN_LINE = {
    "question_id": "q2_abs", "memory": "dense", "granularity": "turn", "k": 1, "budget_tokens": 3,
    "tokenizer": "wordpunct-v1", "tokens": 3,
    "items": [{"session_id": "s001", "upstream_session_id": "sharegpt_x_0", "turn_index": 4, "date": None,
               "messages": [{"role": "user", "content": "I play cello"}], "truncated": True}],
}
EXPECTED_BYTES = (
    '{"question_id": "q1", "memory": "bm25", "granularity": "session", "k": 2, "budget_tokens": 12, '
    '"tokenizer": "wordpunct-v1", "tokens": 9, "items": [{"session_id": "s002", "upstream_session_id": '
    '"answer_ab12", "turn_index": null, "date": "2023/05/20 (Sat) 02:21", "messages": [{"role": "user", '
    '"content": "My cat is Miso."}, {"role": "assistant", "content": "Nice — café!"}], "truncated": false}]}\n'
    '{"question_id": "q2_abs", "memory": "dense", "granularity": "turn", "k": 1, "budget_tokens": 3, '
    '"tokenizer": "wordpunct-v1", "tokens": 3, "items": [{"session_id": "s001", "upstream_session_id": '
    '"sharegpt_x_0", "turn_index": 4, "date": null, "messages": [{"role": "user", "content": "I play cello"}], '
    '"truncated": true}]}\n'
)


def test_a_hand_written_record_parses_to_the_expected_fields_and_back():
    ctx = Context.from_record(SESSION_LINE, file="c.jsonl", line=1)
    assert ctx == Context("q1", "bm25", "session", 2, 12, "wordpunct-v1", 9, (
        ContextItem("s002", "answer_ab12", None, "2023/05/20 (Sat) 02:21",
                    (ContextMessage("user", "My cat is Miso."), ContextMessage("assistant", "Nice — café!")), False),))
    assert ctx.to_record() == SESSION_LINE
    assert list(ctx.to_record()) == list(SESSION_LINE)  # key order too
    assert Context.from_record(TURN_LINE, file="c.jsonl", line=2).to_record() == TURN_LINE


def test_written_bytes_equal_the_hand_written_file(tmp_path: Path):
    out = tmp_path / "contexts.jsonl"
    n = write_contexts(out, [Context.from_record(r, file="x", line=i) for i, r in enumerate((SESSION_LINE, TURN_LINE), 1)])
    assert n == 2 and out.read_text(encoding="utf-8") == EXPECTED_BYTES
    assert "".join(context_line(c) for c in read_contexts(out)) == EXPECTED_BYTES


def test_reading_a_file_keeps_order_and_skips_blank_lines(tmp_path: Path):
    f = tmp_path / "c.jsonl"
    f.write_text(EXPECTED_BYTES.replace("\n", "\n\n", 1), encoding="utf-8")
    assert [c.question_id for c in read_contexts(f)] == ["q1", "q2_abs"]


def _bad(mutate) -> dict:
    raw = json.loads(json.dumps(SESSION_LINE))
    mutate(raw)
    return raw


@pytest.mark.parametrize("mutate, field, words", [
    (lambda r: r.pop("question_id"), "question_id", "missing"),
    (lambda r: r.update(question_id=""), "question_id", "empty"),
    (lambda r: r.update(memory=3), "memory", "expected a string"),
    (lambda r: r.update(granularity="round"), "granularity", "expected one of"),
    (lambda r: r.update(k=True), "k", "expected an integer"),
    (lambda r: r.update(k=0), "items", "1 items but k is 0"),
    (lambda r: r.update(budget_tokens=-1), "budget_tokens", "expected >= 0"),
    (lambda r: r.update(tokens=13), "tokens", "exceed budget_tokens 12"),
    (lambda r: r.pop("tokenizer"), "tokenizer", "missing"),
    (lambda r: r.update(items={}), "items", "expected a list"),
    (lambda r: r["items"].__setitem__(0, "s002"), "items[0]", "expected a JSON object"),
    (lambda r: r["items"][0].pop("upstream_session_id"), "items[0].upstream_session_id", "missing"),
    (lambda r: r["items"][0].update(turn_index=-1), "items[0].turn_index", "expected >= 0"),
    (lambda r: r["items"][0].update(turn_index="3"), "items[0].turn_index", "an integer or null"),
    (lambda r: r["items"][0].update(date=20230520), "items[0].date", "a string or null"),
    (lambda r: r["items"][0].update(truncated="no"), "items[0].truncated", "true or false"),
    (lambda r: r["items"][0]["messages"][1].pop("role"), "items[0].messages[1].role", "missing"),
    (lambda r: r["items"][0]["messages"][0].update(content=None), "items[0].messages[0].content", "a string"),
])
def test_each_validation_error_names_file_line_and_field(mutate, field, words):
    with pytest.raises(InputError) as err:
        Context.from_record(_bad(mutate), file="runs/contexts.jsonl", line=7)
    p = err.value.problem
    assert (p.file, p.field) == ("runs/contexts.jsonl", field)
    assert p.record.startswith("line 7") and words in p.message
    if field != "question_id":
        assert p.record == "line 7 (q1)"  # the question is named once known


def test_file_errors_name_the_line(tmp_path: Path):
    f = tmp_path / "c.jsonl"
    f.write_text(EXPECTED_BYTES + '{"question_id": "q3", "memory"\n', encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_contexts(f)
    assert (err.value.problem.record, err.value.problem.field) == ("line 3", "<json>")
    f.write_text(EXPECTED_BYTES + EXPECTED_BYTES.splitlines(keepends=True)[0], encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_contexts(f)
    assert (err.value.problem.record, err.value.problem.field) == ("line 3 (q1)", "question_id")
    assert "duplicate" in err.value.problem.message


def test_a_missing_file_says_which_stage_makes_it(tmp_path: Path):
    with pytest.raises(InputError) as err:
        read_contexts(tmp_path / "none.jsonl")
    assert "dvc repro retrieve" in str(err.value)
