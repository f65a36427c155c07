"""The serialised bytes: streamed JSON equals json.dumps of the whole list; writes are atomic."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from mnemetric.longmemeval.instance import Instance, Session, Turn
from mnemetric.longmemeval.sample.output import instances_sha256, json_list_chunks, write_instances


def naive(items: list) -> str:
    return json.dumps(items, indent=2, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("items", [[], [{"a": "café", "b": [1, {"c": None}], "d": []}], [1, "x\ny", {}]])
def test_chunks_equal_json_dumps_of_the_list(items):
    assert "".join(json_list_chunks(iter(items))) == naive(items)


INSTANCE = Instance("0a1b2c3d", "multi-session", "How many?", 3, "2023/05/20 (Sat) 02:21",
                    (Session("answer_0a1b2c3d_1", "2023/05/19 (Fri) 10:00",
                             (Turn("user", "Two — é", True), Turn("assistant", "Ok.", False))),
                     Session("ultrachat_123456", "2023/05/19 (Fri) 11:00", (Turn("user", "Hi", None),))),
                    ("answer_0a1b2c3d_1",))


def test_one_instance_worked_example(tmp_path):
    out = tmp_path / "one.json"
    n, sha = write_instances(out, [INSTANCE])
    text = out.read_text(encoding="utf-8")
    assert text == """[
  {
    "question_id": "0a1b2c3d",
    "question_type": "multi-session",
    "question": "How many?",
    "answer": 3,
    "question_date": "2023/05/20 (Sat) 02:21",
    "haystack_session_ids": [
      "answer_0a1b2c3d_1",
      "ultrachat_123456"
    ],
    "haystack_dates": [
      "2023/05/19 (Fri) 10:00",
      "2023/05/19 (Fri) 11:00"
    ],
    "haystack_sessions": [
      [
        {
          "role": "user",
          "content": "Two — é",
          "has_answer": true
        },
        {
          "role": "assistant",
          "content": "Ok.",
          "has_answer": false
        }
      ],
      [
        {
          "role": "user",
          "content": "Hi"
        }
      ]
    ],
    "answer_session_ids": [
      "answer_0a1b2c3d_1"
    ]
  }
]
"""
    assert (n, sha) == (1, hashlib.sha256(out.read_bytes()).hexdigest())
    assert instances_sha256([INSTANCE]) == (n, sha)


def test_an_interrupted_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    out = tmp_path / "sample.json"
    out.write_text("old\n", encoding="utf-8")

    def broken():
        yield INSTANCE
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_instances(out, broken())
    assert out.read_text(encoding="utf-8") == "old\n"
    assert os.listdir(tmp_path) == ["sample.json"]


def test_empty_list():
    assert instances_sha256([]) == (0, hashlib.sha256(b"[]\n").hexdigest())
