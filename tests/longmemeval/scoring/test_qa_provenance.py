"""official_equivalence of a judged file: model asked and resolved, request parameters, prompt set."""

from __future__ import annotations

from mnemetric.longmemeval.judge.upstream_prompts import PROMPT_SET_SHA256, SHA256
from mnemetric.longmemeval.judgments import JudgeCall, JudgeParams, JudgeTrace, judge_provenance
from mnemetric.longmemeval.scoring.qa_report import judge_traces

OK = {"temperature": 0, "max_tokens": 10, "n": 1}
M = "gpt-4o-2024-08-06"


def test_the_official_setup_is_official():
    p = judge_provenance([M, M], PROMPT_SET_SHA256, SHA256, requested_models=[M, M], params=[OK, OK])
    assert p["official_equivalence"] is True and p["reasons"] == []


def test_another_prompt_set_is_not_official():
    p = judge_provenance([M], "0" * 64, SHA256, requested_models=[M], params=[OK])
    assert p["official_equivalence"] is False and "prompt set" in p["reasons"][0]


def test_other_request_parameters_are_not_official():
    p = judge_provenance([M], PROMPT_SET_SHA256, SHA256, requested_models=[M], params=[OK | {"temperature": 0.7}])
    assert p["official_equivalence"] is False and "parameters" in p["reasons"][0]


def test_a_renamed_request_or_a_renamed_reply_is_not_official():
    assert judge_provenance([M], "x", SHA256, requested_models=["my-alias"], params=[OK])["official_equivalence"] is False
    assert judge_provenance(["gpt-4o-mini-2024-07-18"], "x", SHA256)["official_equivalence"] is False


def test_prompts_from_another_file_are_not_official():
    assert judge_provenance([M], "x", "0" * 64, requested_models=[M], params=[OK])["official_equivalence"] is False


def _trace(prompt_set: str, endpoint: str | None) -> JudgeTrace:
    return JudgeTrace("upstream-gpt-4o", JudgeCall(prompt_set, SHA256, M, JudgeParams(0, 10, 1), endpoint, "r" * 64,
                                                   "yes", 50, 1, 0.0001))


def test_traces_collect_every_line():
    t = judge_traces([_trace("a", "https://api.openai.com/v1"), _trace("b", None), None])
    assert t["judge"] == "upstream-gpt-4o" and t["prompt_set_sha256"] == "a" and t["source_sha256"] == SHA256
    assert t["prompt_set_sha256s"] == ["a", "b"] and t["requested_models"] == [M, M] and t["params"] == [OK, OK]
    assert t["endpoints"] == ["https://api.openai.com/v1"] and judge_traces([])["judge"] == "unknown"


def test_traces_of_a_file_judged_elsewhere_or_offline():
    assert judge_traces([None, None]) == {"judge": "unknown", "prompt_set_sha256": None, "source_sha256": None,
                                          "prompt_set_sha256s": [], "requested_models": [], "params": [], "endpoints": []}
    lexical = judge_traces([JudgeTrace.offline("lexical")])
    assert lexical["judge"] == "lexical" and lexical["prompt_set_sha256"] is None and lexical["params"] == []
