"""per_question.jsonl rows: upstream keys in upstream order, Mnemetric extras kept after them, every
problem named by file, line and field (upstream-v2-protocol.md §6)."""

from __future__ import annotations

import json

import pytest

from mnemetric.errors import InputError
from mnemetric.longmemeval_v2.per_question import (UPSTREAM_KEYS, PerQuestionRow, read_per_question,
                                                   write_per_question)

from tests.longmemeval_v2.rows import row, write_rows

HARNESS_ORDER = [  # harness.py, the per-question record of the scoring pass, written out by hand
    "index", "stream_index", "question_id", "question_type", "category", "is_abstention_problem", "eval_function",
    "question_text", "question_image", "haystack_ids", "memory_context", "memory_query_duration_seconds",
    "memory_post_query_duration_seconds", "memory_post_query_metadata", "memory_context_original_token_count",
    "memory_context_token_count", "memory_context_was_truncated", "prompt_messages", "answer_gold", "response_raw",
    "response_parsed_boxed", "is_unknown", "score", "score_bool", "usage", "timestamp_utc"]


def parse(raw, line=3):
    return PerQuestionRow.from_record(raw, file="pq.jsonl", line=line)


def test_keys_in_upstream_order_and_round_trip():
    assert list(UPSTREAM_KEYS) == HARNESS_ORDER
    raw = row("q1", correct=True, query=0.25)
    parsed = parse(raw)
    assert parsed.to_record() == raw and list(parsed.to_record()) == HARNESS_ORDER
    assert parsed.score_bool is True and parsed.usage.total_tokens == 15 and parsed.haystack_ids == ("t1", "t2")
    assert parsed.failed is None


def test_extras_follow_the_upstream_keys():
    raw = {"failed": "judge reply unparseable", "mnemetric_trace": {"a": 1}} | row("q1")
    rec = parse(raw).to_record()
    assert list(rec) == HARNESS_ORDER + ["failed", "mnemetric_trace"]
    assert rec["failed"] == "judge reply unparseable" and parse(raw).failed == "judge reply unparseable"


def test_failed_row_may_have_nulls_after_the_query():
    raw = row("q1", failed="empty reader text") | {k: None for k in HARNESS_ORDER[10:]}
    parsed = parse(raw)
    assert parsed.score is None and parsed.usage is None and parsed.to_record() == raw
    with pytest.raises(InputError, match="field 'haystack_ids'"):
        parse(raw | {"haystack_ids": None})


@pytest.mark.parametrize("change, fieldname", [
    ({"score": None}, "score"),                                   # null only in failed rows
    ({"index": True}, "index"),
    ({"index": -1}, "index"),
    ({"question_id": ""}, "question_id"),
    ({"haystack_ids": ["t1", 2]}, "haystack_ids"),
    ({"memory_query_duration_seconds": -0.5}, "memory_query_duration_seconds"),
    ({"memory_query_duration_seconds": "1.0"}, "memory_query_duration_seconds"),
    ({"score": 0.5}, "score"),
    ({"usage": {"prompt_tokens": 1, "completion_tokens": 2}}, "usage"),
    ({"usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 1.5}}, "usage.total_tokens"),
    ({"failed": ""}, "failed"),
    ({"failed": None}, "failed"),
])
def test_bad_fields_are_named(change, fieldname):
    with pytest.raises(InputError) as err:
        parse(row("q9") | change)
    where = "line 3" if fieldname == "question_id" else "line 3 (q9)"
    assert f"pq.jsonl: {where}: field '{fieldname}'" in str(err.value)


def test_missing_key_is_named():
    raw = row("q9")
    del raw["response_parsed_boxed"]
    with pytest.raises(InputError, match="field 'response_parsed_boxed': missing"):
        parse(raw)
    with pytest.raises(InputError, match="line 3: field '<row>'"):
        parse([1, 2])


@pytest.mark.parametrize("change, fieldname", [
    ({"category": "dynamic"}, "category"),
    ({"question_type": "temporal-reasoning"}, "question_type"),
    ({"is_abstention_problem": True}, "is_abstention_problem"),
    ({"is_unknown": True}, "is_unknown"),                          # parsed answer is not UNKNOWN
    ({"score": 1.0}, "score"),                                     # disagrees with score_bool false
    ({"memory_context_was_truncated": True}, "memory_context_was_truncated"),
])
def test_upstream_invariants(change, fieldname):
    with pytest.raises(InputError, match=f"field '{fieldname}'"):
        parse(row("q9") | change)


def test_abstention_needs_an_abs_type_and_unknown_never_scores():
    with pytest.raises(InputError, match="needs an -abs question type"):
        parse(row("q9", "procedure", abstention=True))
    bad = row("q9", unknown=True) | {"score": 1.0, "score_bool": True}
    with pytest.raises(InputError, match="field 'score_bool'"):
        parse(bad)
    # a non-abstention eval function on an -abs type is allowed (upstream checks one direction only)
    assert parse(row("q9", "procedure-abs", abstention=False)).is_abstention_problem is False


def test_reader_streams_names_lines_and_refuses_repeats(tmp_path):
    path = tmp_path / "per_question.jsonl"
    path.write_text(json.dumps(row("a")) + "\n\n" + json.dumps(row("b")) + "\n")
    assert [r.question_id for r in read_per_question(path)] == ["a", "b"]
    path.write_text(json.dumps(row("a")) + "\n" + json.dumps(row("a")) + "\n")
    with pytest.raises(InputError, match="line 2 \\(a\\): field 'question_id': repeats the question of line 1"):
        list(read_per_question(path))
    path.write_text(json.dumps(row("a")) + "\n{cut off")
    with pytest.raises(InputError, match="line 2: field '<json>'"):
        list(read_per_question(path))
    with pytest.raises(InputError, match="does not exist"):
        list(read_per_question(tmp_path / "missing.jsonl"))


def test_writer_writes_upstream_bytes(tmp_path):
    raws = [row("é-1", question_text="Qué?"), row("b", failed="judge reply unparseable")]
    src = write_rows(tmp_path / "in.jsonl", raws)
    out = tmp_path / "out.jsonl"
    assert write_per_question(out, read_per_question(src)) == 2
    text = out.read_text(encoding="utf-8")
    assert text == src.read_text(encoding="utf-8")
    assert "\\u00e9-1" in text and text.isascii()
