"""The reply-text rules of the LLM layer (``text_from``): "content" (default, unchanged) and the opt-in
"content_or_reasoning" (content, else joined text parts, else ``message.reasoning``).

Pure cases are worked by hand; a property test compares :func:`message_text` with a naive second
implementation written here; the client cases run over real HTTP against the local server, whose
messages a small subclass reshapes (content null / "" / a list of parts, a ``reasoning`` field).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemetric.llm import ChatRequest, LLMClient, ResponseCache, message_text, non_answer_reason, plan
from tests.support.batch import run_batch  # noqa: E402
from tests.support.openai_server import FakeOpenAIServer

CR = "content_or_reasoning"


# -- pure: worked examples ---------------------------------------------------------------------
@pytest.mark.parametrize("message, expected", [
    ({"content": "  Paris  ", "reasoning": "thinking"}, ("Paris", "content")),          # content wins
    ({"content": "", "reasoning": "  from thought \n"}, ("from thought", "reasoning")),
    ({"content": None, "reasoning": "r"}, ("r", "reasoning")),
    ({"content": "   ", "reasoning": "   "}, None),                                      # both empty
    ({"content": None}, None),
    ({"content": [{"type": "text", "text": " a "}, {"type": "image_url"}, {"type": "text", "text": "  "},
                  {"type": "text", "text": "b"}], "reasoning": "r"}, ("a\nb", "content_parts")),
    ({"content": [{"type": "text", "text": " "}, "stray", {"text": 5}], "reasoning": "r"}, ("r", "reasoning")),
    ({"content": [], "reasoning": None}, None),
    ({"content": "", "reasoning_content": "only the other field"}, None),                # not read
    ({"content": 7, "reasoning": "r"}, ("r", "reasoning")),
])
def test_content_or_reasoning_by_hand(message, expected):
    assert message_text(message, CR) == expected


@pytest.mark.parametrize("message, expected", [
    ({"content": "  Paris  ", "reasoning": "x"}, ("  Paris  ", "content")),             # not stripped
    ({"content": "", "reasoning": "x"}, None),
    ({"content": [{"type": "text", "text": "a"}]}, None),
])
def test_default_rule_reads_content_only(message, expected):
    assert message_text(message) == expected


def test_non_answer_reason_per_rule():
    reply = {"choices": [{"index": 0, "message": {"content": "", "reasoning": "r"}, "finish_reason": "stop"}]}
    assert non_answer_reason(reply) == "content is empty"
    assert non_answer_reason(reply, CR) is None
    reply["choices"][0]["message"]["reasoning"] = " "
    assert non_answer_reason(reply, CR) == "no text in content or reasoning (content is empty)"
    reply["choices"][0]["message"]["content"] = [{"type": "text", "text": " "}]
    assert non_answer_reason(reply, CR) == "no text in content or reasoning (content parts have no text)"
    reply["choices"][0]["message"]["content"] = None
    assert non_answer_reason(reply, CR) == "no text in content or reasoning (content is null)"
    reply["choices"][0]["finish_reason"] = "content_filter"
    assert non_answer_reason(reply, CR) == "finish_reason 'content_filter'"
    with pytest.raises(ValueError, match="text_from"):
        non_answer_reason(reply, "reasoning_content")


# -- pure: property against a naive second implementation -------------------------------------
def naive(message: dict[str, Any]) -> tuple[str, str] | None:
    content = message.get("content")
    if type(content) is str and len(content.strip()) > 0:
        return content.strip(), "content"
    if type(content) is list:
        kept = []
        for part in content:
            if type(part) is dict and type(part.get("text")) is str and part["text"].strip() != "":
                kept.append(part["text"].strip())
        if kept:
            return "\n".join(kept), "content_parts"
    reasoning = message.get("reasoning")
    if type(reasoning) is str and reasoning.strip() != "":
        return reasoning.strip(), "reasoning"
    return None


texts = st.one_of(st.none(), st.integers(), st.sampled_from(["", " ", "\n\t", " a ", "b\n", "x y"]), st.text())
parts = st.one_of(st.fixed_dictionaries({"type": st.just("text"), "text": texts}),
                  st.fixed_dictionaries({"type": st.just("image_url")}), texts)
messages = st.fixed_dictionaries({"content": st.one_of(texts, st.lists(parts, max_size=5))},
                                 optional={"reasoning": texts, "reasoning_content": texts})


@given(messages)
def test_message_text_equals_a_naive_reading(message):
    assert message_text(message, CR) == naive(message)


# -- the client over real HTTP -------------------------------------------------------------------
class ShapedServer(FakeOpenAIServer):
    """The local server, with each reply's ``message`` updated by ``shape(user text)`` (a dict)."""

    def __init__(self, shape, **kw):
        super().__init__(**kw)
        self.shape = shape

    def chat_payload(self, body):
        payload = super().chat_payload(body)
        for choice in payload["choices"]:
            choice["message"].update(self.shape(body["messages"][-1]["content"]))
        return payload


SHAPES = {
    "from reasoning": {"content": "", "reasoning": "  thought: \\boxed{B} "},
    "null content": {"content": None, "reasoning": "late answer"},
    "neither": {"content": "  ", "reasoning": ""},
    "content wins": {"content": " the answer ", "reasoning": "ignored"},
    "parts": {"content": [{"type": "text", "text": "one "}, {"type": "text", "text": " two"}], "reasoning": "r"},
    "other field": {"content": "", "reasoning_content": "vLLM's older field"},
}


@pytest.fixture()
def server():
    with ShapedServer(lambda text: SHAPES[text]) as s:
        yield s


def client(server, tmp_path) -> LLMClient:
    return LLMClient(base_url=server.base_url, api_key="sk-test", cache=ResponseCache(tmp_path / "c.sqlite"),
                     backoff_base=0.01, backoff_cap=0.02, non_answer_attempts=2)


def ask(text: str, text_from: str = CR) -> ChatRequest:
    return ChatRequest("m", [{"role": "user", "content": text}], {"temperature": 0}, text_from=text_from)


def test_reasoning_is_the_answer_and_a_rerun_sends_nothing(server, tmp_path):
    first = run_batch(client(server, tmp_path), [ask("from reasoning"), ask("null content")])
    assert [(r.ok, r.text, r.text_source) for r in first] == [
        (True, "thought: \\boxed{B}", "reasoning"), (True, "late answer", "reasoning")]
    assert server.count == 2 and not any(r.cached for r in first)
    again = run_batch(client(server, tmp_path), [ask("from reasoning"), ask("null content")])
    assert server.count == 2  # zero requests: both were cached
    assert [(r.text, r.text_source, r.cached) for r in again] == [
        ("thought: \\boxed{B}", "reasoning", True), ("late answer", "reasoning", True)]
    assert plan([ask("from reasoning")], client(server, tmp_path).cache, base_url=server.base_url)["cached"] == 1


def test_neither_is_a_non_answer_never_cached(server, tmp_path):
    for text in ("neither", "other field"):
        result = run_batch(client(server, tmp_path), [ask(text)])[0]
        assert not result.ok and result.reason == "no text in content or reasoning (content is empty)"
        assert result.text == "" and result.text_source is None and result.attempts == 2
    assert server.count == 4  # two bounded attempts each, and nothing stored
    run_batch(client(server, tmp_path), [ask("neither")])
    assert server.count == 6


def test_content_wins_and_parts_are_joined(server, tmp_path):
    won, parts = run_batch(client(server, tmp_path), [ask("content wins"), ask("parts")])
    assert (won.text, won.text_source) == ("the answer", "content")
    assert (parts.text, parts.text_source) == ("one\ntwo", "content_parts")


def test_the_default_rule_is_unchanged(server, tmp_path):
    results = run_batch(client(server, tmp_path), [ask("from reasoning", "content"), ask("content wins", "content"),
                                                       ask("parts", "content")])
    assert [r.reason for r in results] == ["content is empty", None, "content is not a string (list)"]
    assert (results[1].text, results[1].text_source) == (" the answer ", "content")  # as sent, not stripped


def test_a_reasoning_answer_is_not_an_answer_to_a_default_reader(server, tmp_path):
    """Same request, same cache key: the stored reply is read by each caller's own rule."""
    c = client(server, tmp_path)
    assert run_batch(c, [ask("from reasoning")])[0].ok
    assert server.count == 1
    assert run_batch(c, [ask("from reasoning", "content")])[0].reason == "content is empty"
    assert server.count == 3  # evicted and asked again (two bounded attempts)
    mixed = run_batch(c, [ask("content wins"), ask("content wins", "content")])
    assert [r.text for r in mixed] == ["the answer", " the answer "]  # not merged into one copy


def test_chat_takes_text_from_and_rejects_an_unknown_rule(server, tmp_path):
    import asyncio

    c = client(server, tmp_path)

    async def both():
        try:
            ok = await c.chat("m", [{"role": "user", "content": "null content"}], text_from=CR, temperature=0)
            with pytest.raises(ValueError, match="text_from"):
                await c.chat("m", [{"role": "user", "content": "null content"}], text_from="reasoning_content")
            return ok
        finally:
            await c.aclose_transport()

    assert asyncio.run(both()).text == "late answer"
    assert "text_from" not in server.requests[0].body  # a rule of ours, never sent
    assert ChatRequest.coerce({"model": "m", "messages": [], "text_from": CR, "temperature": 0}) == \
        ChatRequest("m", [], {"temperature": 0}, CR)


# -- "content_or_parts": the content string stripped, or string text parts joined; never reasoning ----
CP = "content_or_parts"


@pytest.mark.parametrize("message, expected", [
    ({"content": "  1 \n", "reasoning": "0"}, ("1", "content")),                         # stripped
    ({"content": "", "reasoning": "  from thought "}, None),                            # reasoning never read
    ({"content": " \n\t"}, None),                                                       # blank: a non-answer
    ({"content": None, "reasoning": "r"}, None),
    ({"content": 7}, None),
    # parts are not stripped one by one; empty string parts still add their "\n"; non-dicts skipped
    ({"content": [{"type": "text", "text": " a "}, {"type": "text", "text": ""}, "stray", {"text": 5},
                  {"type": "text", "text": "b "}]}, ("a \n\nb", "content_parts")),
    ({"content": [{"type": "text", "text": " "}, {"type": "text", "text": "\n"}], "reasoning": "r"}, None),
    ({"content": [], "reasoning": "r"}, None),
])
def test_content_or_parts_by_hand(message, expected):
    assert message_text(message, CP) == expected


def test_content_or_parts_non_answer_reasons():
    reply = {"choices": [{"index": 0, "message": {"content": " ", "reasoning": "1"}, "finish_reason": "stop"}]}
    assert non_answer_reason(reply, CP) == "content is empty"
    reply["choices"][0]["message"]["content"] = [{"type": "text", "text": "  "}]
    assert non_answer_reason(reply, CP) == "content parts have no text"
    reply["choices"][0]["message"]["content"] = None
    assert non_answer_reason(reply, CP) == "content is null"
    reply["choices"][0]["message"]["content"] = [{"type": "text", "text": "x"}]
    assert non_answer_reason(reply, CP) is None
    reply["choices"][0]["message"]["refusal"] = "no"
    assert non_answer_reason(reply, CP) == "refusal: no"


def naive_content_or_parts(message: dict[str, Any]) -> tuple[str, str] | None:
    content = message.get("content")
    if type(content) is str:
        text = content.strip()
        return (text, "content") if len(text) > 0 else None
    if type(content) is list:
        joined = ""
        first = True
        for part in content:
            if type(part) is dict and type(part.get("text")) is str:
                joined = part["text"] if first else joined + "\n" + part["text"]
                first = False
        joined = joined.strip()
        if len(joined) > 0:
            return joined, "content_parts"
    return None


@given(messages)
def test_content_or_parts_equals_a_naive_reading(message):
    assert message_text(message, CP) == naive_content_or_parts(message)


def test_content_or_parts_over_http_reads_no_reasoning_and_caches(tmp_path):
    shapes = {"parts": {"content": [{"type": "text", "text": " 1"}, {"type": "text", "text": "x "}]},
              "padded": {"content": "  yes \n", "reasoning": "no"},
              "thought only": {"content": "", "reasoning": "an answer in reasoning"}}
    with ShapedServer(lambda text: shapes[text]) as s:
        results = run_batch(client(s, tmp_path), [ask(t, CP) for t in shapes])
        assert [(r.text, r.text_source, r.reason) for r in results] == [
            ("1\nx", "content_parts", None), ("yes", "content", None), ("", None, "content is empty")]
        sent = s.count
        assert sent == 4  # the thought-only reply is asked twice (non_answer_attempts=2), never cached
        again = run_batch(client(s, tmp_path), [ask(t, CP) for t in ("parts", "padded")])
        assert s.count == sent and all(r.cached for r in again)
