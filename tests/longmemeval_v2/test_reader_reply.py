"""The V2 reader's response text, as upstream harness.py extract_text_from_response_message reads it: the
stripped content, else its text parts joined, else ``message.reasoning`` — through the one LLM client
(real HTTP against the local server, whose messages a small subclass reshapes), on STAND-IN texts.

An opt-in differential test compares the client's rule with upstream's own function, compiled from a
checkout named by MNEMETRIC_LONGMEMEVAL_V2_DIR (sha256 verified first; skipped without one).
"""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

import pytest

from mnemetric.llm import message_text
from mnemetric.longmemeval_v2 import upstream_text as ut
from mnemetric.longmemeval_v2.reader import OpenAIReader, ReaderInput
from mnemetric.longmemeval_v2.upstream_text import reader_texts
from tests.longmemeval_v2.executing import executor
from tests.support.openai_server import FakeOpenAIServer
from tests.support.standin_v2 import HARNESS_STAND_IN
from tests.support.upstream_v2 import upstream_v2_function

TEXTS = reader_texts(HARNESS_STAND_IN)

SHAPES = {
    "thinking only?": {"content": "", "reasoning": "  Let me think. \\boxed{Meadow Post}\n"},
    "null then thought?": {"content": None, "reasoning": "\\boxed{UNKNOWN}"},
    "silent?": {"content": " \n", "reasoning": "   "},
    "other field?": {"content": "", "reasoning_content": "\\boxed{never read}"},
    "both?": {"content": " \\boxed{from content} ", "reasoning": "\\boxed{from reasoning}"},
    "parts?": {"content": [{"type": "text", "text": " I pick "}, {"type": "text", "text": ""},
                           {"type": "text", "text": "\\boxed{B} "}], "reasoning": "\\boxed{A}"},
}


class ShapedServer(FakeOpenAIServer):
    """The local server; each reply's message is updated by SHAPES[the question's last text part]."""

    def chat_payload(self, body):
        payload = super().chat_payload(body)
        question = body["messages"][-1]["content"][-1]["text"]
        for choice in payload["choices"]:
            choice["message"].update(next(v for k, v in SHAPES.items() if question.endswith(k)))
        return payload


@pytest.fixture()
def server():
    with ShapedServer() as s:
        yield s


def answer(server, tmp_path, *questions):
    ex = executor(tmp_path, server.base_url, backoff_base=0.01, backoff_cap=0.02, non_answer_attempts=2)
    return OpenAIReader(TEXTS, base_url=server.base_url).answer_all([ReaderInput("web", [], q, None) for q in questions], ex)


def test_empty_content_answers_from_reasoning_and_a_rerun_sends_nothing(server, tmp_path):
    first = answer(server, tmp_path, "thinking only?", "null then thought?")
    assert [(r.response_raw, r.response_parsed_boxed, r.text_source, r.failed) for r in first] == [
        ("Let me think. \\boxed{Meadow Post}", "Meadow Post", "reasoning", None),
        ("\\boxed{UNKNOWN}", "UNKNOWN", "reasoning", None)]
    assert server.count == 2 and not any(r.cached for r in first)
    again = answer(server, tmp_path, "thinking only?", "null then thought?")
    assert server.count == 2  # zero requests
    assert [(r.response_raw, r.cached) for r in again] == [(r.response_raw, True) for r in first]


def test_neither_content_nor_reasoning_is_a_failed_question(server, tmp_path):
    silent, other = answer(server, tmp_path, "silent?", "other field?")
    for reply in (silent, other):
        assert reply.response_raw is None and reply.response_parsed_boxed is None
        assert reply.failed == "reader gave no answer: no text in content or reasoning (content is empty)"
        assert reply.usage == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    assert server.count == 4  # the client's two bounded attempts each, never cached


def test_content_wins_over_reasoning(server, tmp_path):
    (reply,) = answer(server, tmp_path, "both?")
    assert (reply.response_raw, reply.response_parsed_boxed, reply.text_source) == (
        "\\boxed{from content}", "from content", "content")


def test_text_parts_are_joined(server, tmp_path):
    (reply,) = answer(server, tmp_path, "parts?")
    assert (reply.response_raw, reply.response_parsed_boxed, reply.text_source) == (
        "I pick\n\\boxed{B}", "B", "content_parts")


# ---------------------------------------------------------------- opt-in: against upstream's own function
@pytest.fixture(scope="module")
def upstream_extract():
    return upstream_v2_function(ut.HARNESS_PATH, "extract_text_from_response_message")


def _random_message(rng: random.Random) -> dict[str, Any]:
    def text() -> Any:
        return rng.choice([None, "", " ", "\n", 3, "a", " b ", "x\ny ", "\\boxed{c}", "é 🙂"])
    content = rng.choice([text(), [rng.choice([{"type": "text", "text": text()}, {"type": "image_url"}, text()])
                                   for _ in range(rng.randint(0, 4))]])
    message = {"content": content}
    for key in ("reasoning", "reasoning_content"):
        if rng.random() < 0.6:
            message[key] = text()
    return message


def test_rule_equals_upstream_extract_text_from_response_message(upstream_extract):
    rng = random.Random(2026)
    for case in range(2000):
        message = _random_message(rng)
        ours = message_text(message, "content_or_reasoning")
        assert (ours[0] if ours else "") == upstream_extract(SimpleNamespace(**message)), (case, message)
