"""The per-question files between the V2 steps: typed rows that read back what was written, and errors that name
file, line, question and field."""

from __future__ import annotations

import pytest

from mnemetric.errors import InputError
from mnemetric.longmemeval_v2.step_rows import CheckRow, MemoryRow, ReadRow, read_rows, write_rows

IDENTITY = {"index": 0, "stream_index": 0, "question_id": "q1", "question_type": "procedure", "category": "procedure",
            "is_abstention_problem": False, "eval_function": "norm_phrase_set_match", "question_text": "How?",
            "question_image": None, "haystack_ids": ["t1"]}
SHA = "a" * 64


def test_rows_round_trip(tmp_path):
    memory = [MemoryRow("web", IDENTITY, ({"type": "text", "value": "v"},), None, 5, 5)]
    read = [ReadRow("web", "q1", "\\boxed{x}", {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}, (),
                    "content", SHA, {"temperature": 0.6})]
    check = [CheckRow("web", "q1", "llm_gotchas_checker", "x", False, None, SHA, {"max_completion_tokens": 4096},
                      failed="judge reply has no 0/1 label")]
    for rows, kind in ((memory, MemoryRow), (read, ReadRow), (check, CheckRow)):
        write_rows(tmp_path / "f.jsonl", rows)
        assert read_rows(tmp_path / "f.jsonl", kind) == rows


@pytest.mark.parametrize("line, field, message", [
    ('{"domain": "web", "question_id": "q1", "response_raw": null, "usage": {"prompt_tokens": 0, "completion_tokens": 0, '
     '"total_tokens": 0}, "prompt_messages": [], "text_source": null, "request_sha256": null, "params_sent": null}',
     "response_raw", "a response or a failure reason"),
    ('{"domain": "web", "question_id": "q1", "response_raw": "x", "usage": {"prompt_tokens": 0, "completion_tokens": 0, '
     '"total_tokens": 0}, "prompt_messages": [], "text_source": null, "request_sha256": "abc", "params_sent": {}}',
     "request_sha256", "64 lowercase hex"),
    ('{"domain": "web", "question_id": "q1", "response_raw": "x", "usage": {"prompt_tokens": -1, "completion_tokens": 0, '
     '"total_tokens": 0}, "prompt_messages": [], "text_source": null, "request_sha256": null, "params_sent": null}',
     "usage.prompt_tokens", "non-negative"),
])
def test_a_bad_read_row_names_its_line_and_field(tmp_path, line, field, message):
    (tmp_path / "read.jsonl").write_text(line + "\n")
    with pytest.raises(InputError) as err:
        read_rows(tmp_path / "read.jsonl", ReadRow)
    assert (err.value.problem.record, err.value.problem.field) == ("line 1 (q1)", field) and message in str(err.value)


def test_a_repeated_question_is_refused(tmp_path):
    row = CheckRow("web", "q1", "mc_choice_match", "A", False, True)
    write_rows(tmp_path / "check.jsonl", [row, row])
    with pytest.raises(InputError, match="repeats the question of line 1"):
        read_rows(tmp_path / "check.jsonl", CheckRow)
