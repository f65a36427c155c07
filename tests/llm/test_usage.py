"""The usage sidecar typed once: round trip, validation naming file and field, exact bytes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mnemetric.errors import InputError
from mnemetric.llm.budget import ModelPrice, WorkUsage
from mnemetric.llm.usage import ModelUsage, UsageRecord, read_usage, write_usage
from tests.support.edits import set_at

# Hand-computed: 2 responses of gpt-4o at 1000 + 10 tokens each, priced 2.5 / 10 USD per 1M:
# (2000 x 2.5 + 20 x 10) / 1e6 = 0.0052; one unpriced response of "mini" (5 + 1 tokens).
EXPECTED_BYTES = """{
  "responses": 3,
  "prompt_tokens": 2005,
  "completion_tokens": 21,
  "usd": 0.0052,
  "unpriced_models": [
    "mini-x"
  ],
  "per_model": {
    "gpt-4o": {
      "responses": 2,
      "prompt_tokens": 2000,
      "completion_tokens": 20,
      "usd": 0.0052,
      "resolved_models": [
        "gpt-4o-2024-08-06"
      ]
    },
    "mini": {
      "responses": 1,
      "prompt_tokens": 5,
      "completion_tokens": 1,
      "usd": 0.0,
      "resolved_models": [
        "mini-x"
      ]
    }
  }
}
"""
EMPTY_BYTES = ('{\n  "responses": 0,\n  "prompt_tokens": 0,\n  "completion_tokens": 0,\n  "usd": 0.0,\n'
               '  "unpriced_models": [],\n  "per_model": {}\n}\n')


def _work() -> WorkUsage:
    work = WorkUsage()
    work.add("mini", "mini-x", 5, 1, None)
    work.add("gpt-4o", "gpt-4o-2024-08-06", 1000, 10, ModelPrice(2.5, 10.0), responses=2)
    return work


def test_the_written_sidecar_has_the_hand_written_bytes(tmp_path: Path):
    out = tmp_path / "judge-usage.json"
    record = write_usage(out, _work())
    assert out.read_text(encoding="utf-8") == EXPECTED_BYTES
    assert record == UsageRecord(3, 2005, 21, 0.0052, ("mini-x",), (
        ModelUsage("gpt-4o", 2, 2000, 20, 0.0052, ("gpt-4o-2024-08-06",)), ModelUsage("mini", 1, 5, 1, 0.0, ("mini-x",))))
    write_usage(out, WorkUsage())
    assert out.read_text(encoding="utf-8") == EMPTY_BYTES


def test_round_trip_of_a_hand_written_sidecar(tmp_path: Path):
    f = tmp_path / "u.json"
    f.write_text(EXPECTED_BYTES, encoding="utf-8")
    rec = read_usage(f)
    assert json.dumps(rec.to_record(), indent=2) + "\n" == EXPECTED_BYTES
    assert write_usage(tmp_path / "again.json", rec) == rec
    assert (tmp_path / "again.json").read_text(encoding="utf-8") == EXPECTED_BYTES


def _changed(path: tuple[str, ...], value) -> dict:
    return set_at(json.loads(EXPECTED_BYTES), path, value)


@pytest.mark.parametrize("path, value, field, words", [
    (("responses",), KeyError, "responses", "missing"),
    (("responses",), -1, "responses", "non-negative integer"),
    (("prompt_tokens",), 2004, "prompt_tokens", "not the per-model sum 2005"),
    (("usd",), 1.0, "usd", "not the per-model sum"),
    (("usd",), "0.0052", "usd", "non-negative number"),
    (("unpriced_models",), "mini-x", "unpriced_models", "list of strings"),
    (("per_model",), [], "per_model", "expected a JSON object"),
    (("per_model",), KeyError, "per_model", "missing"),
    (("per_model", "mini", "completion_tokens"), 1.5, "per_model.mini.completion_tokens", "non-negative integer"),
    (("per_model", "gpt-4o", "resolved_models"), KeyError, "per_model.gpt-4o.resolved_models", "missing"),
    (("per_model", "gpt-4o", "usd"), True, "per_model.gpt-4o.usd", "non-negative number"),
])
def test_each_validation_error_names_file_and_field(path, value, field, words):
    with pytest.raises(InputError) as err:
        UsageRecord.from_record(_changed(path, value), file="data/runs/judge-usage.json")
    p = err.value.problem
    assert (p.file, p.record, p.field) == ("data/runs/judge-usage.json", "<file>", field) and words in p.message


def test_a_missing_or_broken_sidecar_is_one_message(tmp_path: Path):
    with pytest.raises(InputError) as err:
        read_usage(tmp_path / "none.json")
    assert err.value.problem.record == "<file>"
    (tmp_path / "cut.json").write_text('{\n  "responses": 3,\n', encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_usage(tmp_path / "cut.json")
    assert err.value.problem.field == "<json>"
