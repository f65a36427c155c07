"""The judge trace (``mnemetric_judge``) typed once: round trip, validation, exact bytes of judged lines."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from mnemetric.errors import InputError
from mnemetric.execute import ANSWER, CallOutcome, ModelCall
from mnemetric.llm.types import Usage
from mnemetric.longmemeval.components import write_judged
from mnemetric.longmemeval.hypotheses import read_judged
from mnemetric.longmemeval.judge.run import Judged, Reference, _judged_line, judge_lexical
from mnemetric.longmemeval.judge.upstream_prompts import PromptSet
from mnemetric.longmemeval.judgments import JudgeCall, JudgeParams, JudgeTrace

CALL_RECORD = {"judge": "upstream-gpt-4o", "prompt_set_sha256": "p" * 64, "source_sha256": "s" * 64,
               "requested_model": "gpt-4o-2024-08-06", "params": {"temperature": 0, "max_tokens": 10, "n": 1},
               "endpoint": "http://127.0.0.1:8/v1", "request_sha256": "r" * 64,
               "params_sent": {"temperature": 0, "max_tokens": 10, "n": 1}, "response": "Yes.",
               "usage": {"prompt_tokens": 321, "completion_tokens": 2}, "cost_usd": 0.0008225}
OFFLINE_RECORD = {"judge": "lexical", "official_equivalence": False}


def test_both_shapes_round_trip_with_their_key_order():
    call = JudgeTrace.from_record(CALL_RECORD, file="j", line=1)
    assert call == JudgeTrace("upstream-gpt-4o", JudgeCall("p" * 64, "s" * 64, "gpt-4o-2024-08-06",
                                                           JudgeParams(0, 10, 1), "http://127.0.0.1:8/v1", "r" * 64,
                                                           "Yes.", 321, 2, 0.0008225,
                                                           {"temperature": 0, "max_tokens": 10, "n": 1}))
    assert json.dumps(call.to_record()) == json.dumps(CALL_RECORD)  # same keys, same order, same values
    offline = JudgeTrace.from_record(OFFLINE_RECORD, file="j", line=1)
    assert offline == JudgeTrace.offline("lexical") and offline.to_record() == OFFLINE_RECORD
    unpriced = CALL_RECORD | {"cost_usd": None, "endpoint": None}
    assert JudgeTrace.from_record(unpriced, file="j", line=1).to_record() == unpriced


def test_a_line_judged_before_params_sent_were_recorded_still_reads_and_says_so():
    old = _without("params_sent")
    trace = JudgeTrace.from_record(old, file="j", line=1)
    assert trace.call.params_sent is None
    assert json.dumps(trace.to_record()) == json.dumps(old)  # round trip: no key invented


def test_a_trace_is_one_shape_or_the_other():
    with pytest.raises(ValueError):
        JudgeTrace("x")
    with pytest.raises(ValueError):
        JudgeTrace("x", JudgeTrace.from_record(CALL_RECORD, file="j", line=1).call, official_equivalence=False)


def _without(key: str) -> dict:
    return {k: v for k, v in CALL_RECORD.items() if k != key}


@pytest.mark.parametrize("raw, field, words", [
    ("lexical", "mnemetric_judge", "expected a JSON object"),
    (_without("judge"), "mnemetric_judge.judge", "missing"),
    (_without("request_sha256"), "mnemetric_judge.request_sha256", "missing"),
    (CALL_RECORD | {"response": None}, "mnemetric_judge.response", "expected a string"),
    (CALL_RECORD | {"cost_usd": "0.1"}, "mnemetric_judge.cost_usd", "a number or null"),
    (CALL_RECORD | {"params": [0, 10, 1]}, "mnemetric_judge.params", "expected an object"),
    (CALL_RECORD | {"params_sent": "temperature=0"}, "mnemetric_judge.params_sent", "expected an object"),
    (CALL_RECORD | {"params": {"temperature": 0, "n": 1}}, "mnemetric_judge.params.max_tokens", "missing"),
    (CALL_RECORD | {"params": {"temperature": True, "max_tokens": 10, "n": 1}}, "mnemetric_judge.params.temperature",
     "expected a number"),
    (CALL_RECORD | {"usage": {"prompt_tokens": 1}}, "mnemetric_judge.usage.completion_tokens", "missing"),
    (CALL_RECORD | {"cached": True}, "mnemetric_judge.cached", "unexpected field"),
    (OFFLINE_RECORD | {"official_equivalence": True}, "mnemetric_judge.official_equivalence", "never official"),
    (OFFLINE_RECORD | {"response": "yes"}, "mnemetric_judge.response", "unexpected field"),
])
def test_each_validation_error_names_file_line_and_field(raw, field, words):
    with pytest.raises(InputError) as err:
        JudgeTrace.from_record(raw, file="hyp.jsonl.eval-results-gpt-4o", line=4)
    p = err.value.problem
    assert (p.file, p.record, p.field) == ("hyp.jsonl.eval-results-gpt-4o", "line 4", field) and words in p.message


def test_read_judged_types_the_trace_and_names_the_question(tmp_path: Path):
    f = tmp_path / "h.eval-results-x"
    lines = [{"question_id": "q1", "hypothesis": "a", "autoeval_label": {"model": "m", "label": True},
              "mnemetric_judge": CALL_RECORD},
             {"question_id": "q2", "hypothesis": "b", "autoeval_label": {"model": "m", "label": False}}]
    f.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    first, second = read_judged(f)
    assert first.judge_trace == JudgeTrace.from_record(CALL_RECORD, file="x", line=1) and second.judge_trace is None
    assert first.judge_trace.to_record() == CALL_RECORD
    assert not hasattr(first, "trace")  # the typed trace is the only form (no dict view)
    lines[1]["mnemetric_judge"] = {"judge": "lexical", "official_equivalence": "false"}
    f.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_judged(f)
    assert (err.value.problem.record, err.value.problem.field) == ("line 2 (q2)", "mnemetric_judge.official_equivalence")


def test_judged_files_have_the_hand_written_bytes(tmp_path: Path):
    """The lexical judge's line, and a model judge's line built from one chat result."""
    hyps = [{"question_id": "q1", "hypothesis": "Miso", "reader": "extractive"}]
    refs = {"q1": Reference("q1", "single-session-user", "What is my cat called?", "Miso")}
    out = tmp_path / "hyp.jsonl.eval-results-lexical"
    write_judged(out, Judged(judge_lexical(hyps, refs, "hyp.jsonl")))
    assert out.read_text(encoding="utf-8") == (
        '{"question_id": "q1", "hypothesis": "Miso", "reader": "extractive", "autoeval_label": {"model": '
        '"mnemetric-lexical-v1", "label": true}, "mnemetric_judge": {"judge": "lexical", "official_equivalence": false}}\n')

    templates = {"default": "Q {} A {} H {}"}
    prompt_sha = hashlib.sha256(json.dumps(templates, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    prompts = PromptSet(templates, "e" * 64)
    call = ModelCall.chat(role="judge", model="gpt-4o-2024-08-06", messages=[{"role": "user", "content": "x"}],
                          params={"temperature": 0, "max_tokens": 10, "n": 1}, base_url="http://127.0.0.1:9/v1/")
    res = CallOutcome(ANSWER, "ab" * 32, {"temperature": 0, "max_tokens": 10, "n": 1}, model="gpt-4o-2024-08-06",
                      text="yes", usage=Usage(70, 1), cost_usd=0.000185, cached=True)
    spec = {"name": "upstream-gpt-4o", "model": "gpt-4o-2024-08-06", "temperature": 0, "max_tokens": 10, "n": 1}
    line = _judged_line(hyps[0], call, res, prompts, spec)
    assert json.dumps(line, ensure_ascii=False) == (
        '{"question_id": "q1", "hypothesis": "Miso", "reader": "extractive", "autoeval_label": {"model": '
        '"gpt-4o-2024-08-06", "label": true}, "mnemetric_judge": {"judge": "upstream-gpt-4o", "prompt_set_sha256": '
        f'"{prompt_sha}", "source_sha256": "{"e" * 64}", "requested_model": "gpt-4o-2024-08-06", "params": '
        '{"temperature": 0, "max_tokens": 10, "n": 1}, "endpoint": "http://127.0.0.1:9/v1", "request_sha256": '
        f'"{"ab" * 32}", "params_sent": {{"temperature": 0, "max_tokens": 10, "n": 1}}, "response": "yes", '
        '"usage": {"prompt_tokens": 70, "completion_tokens": 1}, "cost_usd": 0.000185}}')
