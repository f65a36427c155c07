"""The two LLM checkers against the local OpenAI-compatible server (real HTTP, the one LLM client), on
STAND-IN checker texts; and the offline lexical stand-in. Expected values by hand. The judge's reply-text
rule (content stripped, or text parts joined, never reasoning) over HTTP, and an opt-in differential test
against upstream's _call_chat_completion (MNEMETRIC_LONGMEMEVAL_V2_DIR; sha256 verified; skipped without)."""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

import pytest

from mnemetric.llm import message_text
from mnemetric.longmemeval_v2 import upstream_text as ut
from mnemetric.longmemeval_v2.llm_checkers import CHECKER_TEXT_FROM, CheckCase, LLMCheckers, OfflineChecker
from mnemetric.longmemeval_v2.upstream_text import checker_texts
from tests.longmemeval_v2.executing import Bound, executor
from tests.support.openai_server import FakeOpenAIServer
from tests.support.standin_v2 import ABS_SYSTEM, QA_STAND_IN, abs_user
from tests.support.upstream_v2 import upstream_v2_function

TEXTS = checker_texts(QA_STAND_IN)


def judge(messages):
    user = messages[-1]["content"]
    if "MANGLED" in user:
        return "I cannot decide."
    if "FENCED" in user:
        return '```json\n{"label": 0, "reason": "no"}\n```'
    return '{"label": 1, "reason": "fine"}'


def checkers(server, tmp_path):
    return Bound(LLMCheckers(TEXTS, base_url=server.base_url), executor(tmp_path, server.base_url))


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
    assert (out[0].reason, out[1].reason, out[2].reason, out[3].reason) == ("fine", None, "no", None)  # kept
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


# ---------------------------------------------------------------- the judge's reply-text rule
class PartsServer(FakeOpenAIServer):
    """The local server; the judge's message is reshaped by the gold answer in the user text."""

    SHAPES = {
        "gold-parts": {"content": [{"type": "text", "text": '{"label": '}, {"type": "text", "text": '1}'}]},
        "gold-thought": {"content": "", "reasoning": '{"label": 1}'},
        "gold-padded": {"content": ' \n {"label": 0} \n'},
    }

    def chat_payload(self, body):
        payload = super().chat_payload(body)
        user = body["messages"][-1]["content"]
        shape = next(v for k, v in self.SHAPES.items() if k in user)
        for choice in payload["choices"]:
            choice["message"].update(shape)
        return payload


def test_judge_text_parts_joined_reasoning_never_read(tmp_path):
    cases = [CheckCase("llm_gotchas_checker", "errors-gotchas", f"q-{g}", g, "some reply", "some reply")
             for g in PartsServer.SHAPES]
    with PartsServer() as server:
        out = checkers(server, tmp_path).check_all(cases)
    assert [o.verdict for o in out] == [True, None, False]
    # '{"label": ' + "\n" + '1}' is the JSON {"label": 1}; the thought-only reply is no answer (upstream
    # would return "" and abort); the padded one is stripped.
    assert out[1].failed == "judge gave no answer: content is empty" and out[0].failed is None


# ---------------------------------------------------------------- opt-in: against upstream's own function
@pytest.fixture(scope="module")
def upstream_call():
    return upstream_v2_function(ut.QA_EVAL_METRICS_PATH, "_call_chat_completion")


def _upstream_text(call, message: dict[str, Any]) -> str | None:
    """upstream's text for a reply whose first message is ``message``; None where upstream raises."""
    reply = SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(**message))])
    client = SimpleNamespace(chat=SimpleNamespace(completions=SimpleNamespace(create=lambda **_: reply)))
    try:
        return call(client=client, model="m", messages=[], max_completion_tokens=1, reasoning_effort=None,
                    temperature=None, top_p=None, timeout_seconds=1.0)
    except ValueError:
        return None


def _random_message(rng: random.Random) -> dict[str, Any]:
    def text() -> Any:
        return rng.choice([None, "", " ", "\n", 3, "a", " b ", "x\ny ", '{"label": 1}', "é 🙂"])
    content = rng.choice([text(), [rng.choice([{"type": "text", "text": text()}, {"type": "image_url"}, text()])
                                   for _ in range(rng.randint(0, 4))]])
    return {"content": content, "reasoning": text()}


def test_rule_equals_upstream_call_chat_completion(upstream_call):
    rng = random.Random(531)
    blanks = 0
    for case in range(2000):
        message = _random_message(rng)
        ours = message_text(message, CHECKER_TEXT_FROM)
        theirs = _upstream_text(upstream_call, message)
        if theirs == "":  # a blank content string: upstream returns "", ours is a non-answer (documented)
            blanks += 1
            assert ours is None, (case, message)
        else:
            assert (ours[0] if ours else None) == theirs, (case, message)
    assert blanks > 0
