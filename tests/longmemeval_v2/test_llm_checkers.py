"""The two LLM checkers against the local OpenAI-compatible server (real HTTP, the one LLM client), on
STAND-IN checker texts; and the offline lexical stand-in. Expected values by hand."""

from __future__ import annotations

from mnemetric.llm import LLMClient, ResponseCache
from mnemetric.longmemeval_v2.llm_checkers import CheckCase, LLMCheckers, OfflineChecker
from mnemetric.longmemeval_v2.upstream_text import checker_texts
from tests.support.openai_server import FakeOpenAIServer
from tests.support.standin_v2 import ABS_SYSTEM, QA_STAND_IN, abs_user

TEXTS = checker_texts(QA_STAND_IN)


def judge(messages):
    user = messages[-1]["content"]
    if "MANGLED" in user:
        return "I cannot decide."
    if "FENCED" in user:
        return '```json\n{"label": 0, "reason": "no"}\n```'
    return '{"label": 1, "reason": "fine"}'


def checkers(server, tmp_path):
    client = LLMClient(base_url=server.base_url, api_key="sk-test", cache=ResponseCache(tmp_path / "c.sqlite"),
                       max_attempts=4, backoff_base=0.05)
    return LLMCheckers(client, TEXTS)


CASES = [
    CheckCase("llm_abstention_checker", "static-environment-abs", " Why is the sky green? ", "It is not green.",
              "It is not. \\boxed{The sky is not green}", "The sky is not green"),
    CheckCase("llm_gotchas_checker", "errors-gotchas", "q2", "gold2", "MANGLED reply", "MANGLED"),
    CheckCase("llm_gotchas_checker", "errors-gotchas", "q3", "gold3", "FENCED", "FENCED"),
    CheckCase("llm_gotchas_checker", "errors-gotchas", "q4", "gold4", "   ", ""),  # precheck: no call
    CheckCase("llm_abstention_checker", "static-environment", "q5", "g", "r", "r"),  # not -abs: upstream aborts
]


def test_verdicts_failures_and_the_request(tmp_path):
    with FakeOpenAIServer(reply=judge) as server:
        out = checkers(server, tmp_path).check_all(CASES)
        bodies = [r.body for r in server.requests]
    assert [o.verdict for o in out] == [True, None, False, False, None]
    assert out[0].failed is None and "no 0/1 label" in out[1].failed and out[2].failed is None
    assert out[3].failed is None and not out[3].called and "-abs" in out[4].failed
    assert len(bodies) == 3  # cases 4 and 5 send nothing
    first = next(b for b in bodies if b["messages"][0]["content"] == ABS_SYSTEM)
    assert first["messages"][1]["content"] == abs_user("Why is the sky green?", "It is not green.",
                                                       "It is not. \\boxed{The sky is not green}",
                                                       "The sky is not green")
    assert first["model"] == "gpt-5.2" and first["reasoning_effort"] == "medium"
    assert first["max_completion_tokens"] == 4096 and "temperature" not in first


def test_rerun_sends_zero_requests(tmp_path):
    with FakeOpenAIServer(reply=judge) as server:
        first = checkers(server, tmp_path).check_all(CASES)
        sent = server.count
        again = checkers(server, tmp_path).check_all(CASES)
        assert server.count == sent == 3
    assert again == first


def test_null_judge_reply_is_a_failed_question(tmp_path):
    with FakeOpenAIServer(non_answer_for=lambda body: "null_content") as server:
        out = checkers(server, tmp_path).check_all(CASES[:1])
    assert out[0].verdict is None and "judge gave no answer" in out[0].failed


def test_offline_checker():
    c = OfflineChecker()
    assert not c.official
    abs_case = CASES[0]
    assert c.check(abs_case).verdict is True  # "not" in the parsed answer
    agree = CheckCase("llm_abstention_checker", "static-environment-abs", "q", "g", "\\boxed{green}", "green")
    assert c.check(agree).verdict is False
    gotcha = CheckCase("llm_gotchas_checker", "errors-gotchas", "q", "Title must be at least 5 characters",
                       "You need a title of 5 characters", "x")
    # gold content words: title, must, least, 5, characters -> 3 of 5 said ("title", "5", "characters")
    assert c.check(gotcha).verdict is True
    miss = CheckCase("llm_gotchas_checker", "errors-gotchas", "q", "Title must be at least 5 characters",
                     "post it", "x")
    assert c.check(miss).verdict is False
    assert c.check(CASES[4]).failed and c.check(CASES[3]).verdict is False
