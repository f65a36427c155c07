"""The V2 reader against the local OpenAI-compatible server (real HTTP through the one LLM client), on
STAND-IN upstream texts (tests/support/standin_v2.py), and the offline reader. Expected values by hand."""

from __future__ import annotations

import base64

import pytest

from mnemetric.longmemeval_v2.reader import OfflineReader, OpenAIReader, ReaderInput
from mnemetric.longmemeval_v2.upstream_text import reader_texts
from tests.longmemeval_v2.executing import Bound, executor
from tests.support.openai_server import Fault, FakeOpenAIServer
from tests.support.standin_v2 import HARNESS_STAND_IN, INTRO, QUESTION_HEAD, WEB_PROMPT

TEXTS = reader_texts(HARNESS_STAND_IN)
PNG = b"\x89PNG\r\n\x1a\n tiny"


def reply_for(messages):
    question = messages[-1]["content"][-1]
    if question.get("type") == "image_url":
        return "It is the blue one. \\boxed{blue}"
    return "\\boxed{UNKNOWN}" if "nothing" in question["text"] else "I think \\boxed{Meadow Post}"


@pytest.fixture()
def server():
    with FakeOpenAIServer(reply=reply_for) as s:
        yield s


def reader(server, tmp_path):
    return Bound(OpenAIReader(TEXTS, base_url=server.base_url), executor(tmp_path, server.base_url))


def inputs(tmp_path):
    (tmp_path / "q.png").write_bytes(PNG)
    (tmp_path / "m.jpg").write_bytes(b"jpeg!")
    return [ReaderInput("web", [{"type": "text", "value": "free shipping: Meadow Post"}], "Which is free?", None),
            ReaderInput("web", [], "nothing stored?", None),
            ReaderInput("web", [{"type": "image", "value": str(tmp_path / "m.jpg")}], "Which colour?",
                        str(tmp_path / "q.png"))]


def test_requests_answers_and_images_as_data_urls(server, tmp_path):
    replies = reader(server, tmp_path).answer_all(inputs(tmp_path))
    assert [r.response_parsed_boxed for r in replies] == ["Meadow Post", "UNKNOWN", "blue"]
    assert replies[0].response_raw == "I think \\boxed{Meadow Post}" and replies[0].failed is None
    assert replies[0].usage["total_tokens"] == replies[0].usage["prompt_tokens"] + replies[0].usage["completion_tokens"]
    bodies = [r.body for r in server.requests]
    assert len(bodies) == 3
    first = next(b for b in bodies if b["messages"][1]["content"][-1]["text"].endswith("Which is free?"))
    assert first["messages"][0] == {"role": "system", "content": WEB_PROMPT}
    assert first["messages"][1]["content"] == [{"type": "text", "text": INTRO},
                                               {"type": "text", "text": "free shipping: Meadow Post"},
                                               {"type": "text", "text": QUESTION_HEAD + "Which is free?"}]
    assert first["model"] == "Qwen/Qwen3.5-9B" and first["temperature"] == 0.6 and first["top_p"] == 0.95
    assert first["max_tokens"] == 20000 and first["top_k"] == 20  # extra_body is merged into the body
    image = next(b for b in bodies if b["messages"][1]["content"][-1].get("type") == "image_url")
    parts = image["messages"][1]["content"]
    assert parts[1] == {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,"
                                                                  + base64.b64encode(b"jpeg!").decode()}}
    assert parts[-1]["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(PNG).decode()


def test_rerun_sends_zero_requests(server, tmp_path):
    items = inputs(tmp_path)
    first = reader(server, tmp_path).answer_all(items)
    sent = server.count
    again = reader(server, tmp_path).answer_all(items)
    assert server.count == sent == 3
    assert [r.response_raw for r in again] == [r.response_raw for r in first] and all(r.cached for r in again)


def test_null_reply_is_a_failed_question_never_an_answer(tmp_path):
    with FakeOpenAIServer(non_answer_for=lambda body: "null_content") as server:
        replies = reader(server, tmp_path).answer_all(inputs(tmp_path)[:1])
    assert replies[0].response_raw is None and replies[0].response_parsed_boxed is None
    assert "content is null" in replies[0].failed


def test_bad_request_is_an_empty_answer_with_zero_usage(tmp_path):
    with FakeOpenAIServer() as server:
        server.add_faults(Fault.status_code(400))
        replies = reader(server, tmp_path).answer_all(inputs(tmp_path)[:1])
    assert replies[0].response_raw == "" and replies[0].failed is None
    assert replies[0].usage == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


def test_offline_reader():
    r = OfflineReader()
    assert not r.official
    mem = [{"type": "text", "value": "line one about kettles\nFree Meadow Post shipping on orders over 50 USD"}]
    assert r.answer(ReaderInput("web", mem, "Which shipping is free on orders over 50 USD?", None)) == \
        "\\boxed{Free Meadow Post shipping on orders over 50 USD}"
    assert r.answer(ReaderInput("web", [], "Which shipping?", None)) == "\\boxed{UNKNOWN}"
    assert r.answer(ReaderInput("web", [{"type": "text", "value": "zzz"}], "Which shipping?", None)) == "\\boxed{UNKNOWN}"
    mc = "Where are coupons? A. Catalog menu B. Marketing menu C. Reports"
    assert r.answer(ReaderInput("web", [{"type": "text", "value": "open Marketing then Cart Price Rules"}], mc,
                                None)) == "\\boxed{B}"


def test_official_only_with_the_run_eval_reader_and_pinned_texts(tmp_path):
    # stand-in texts are never pinned, so no stand-in reader is official, whatever its settings
    assert not OpenAIReader(TEXTS).official
    assert not OpenAIReader(TEXTS, params={"enable_thinking": False}).official
