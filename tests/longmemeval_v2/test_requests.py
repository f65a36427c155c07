"""Reader and LLM-checker request builders, on texts extracted from STAND-IN upstream files.

Expected values are written out by hand (or built by a naive loop inside the test); the texts are
our stand-in words (tests/support/standin_v2.py), never upstream's.
"""

from __future__ import annotations

import base64

import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemetric.errors import ConfigError, InputError, PluginError
from mnemetric.longmemeval_v2.requests import (
    checker_messages,
    checker_params,
    checker_precheck,
    image_data_url,
    reader_log_messages,
    reader_messages,
    reader_params,
    response_text,
)
from mnemetric.longmemeval_v2.upstream_text import checker_texts, reader_texts
from tests.support.openai_server import FakeOpenAIServer
from tests.support.standin_v2 import (
    ABS_SYSTEM,
    EMPTY_MARKER,
    ENTERPRISE_PROMPT,
    GOT_SYSTEM,
    HARNESS_STAND_IN,
    INTRO,
    QA_STAND_IN,
    QUESTION_HEAD,
    WEB_PROMPT,
    abs_user,
    got_user,
)

READER = reader_texts(HARNESS_STAND_IN)
CHECKERS = checker_texts(QA_STAND_IN)
PNG = b"\x89PNG\r\n\x1a\n fake image bytes"
PNG_B64 = "iVBORw0KGgogZmFrZSBpbWFnZSBieXRlcw=="  # standard base64 of PNG (checked against the stdlib below)


@pytest.fixture()
def images(tmp_path):
    (tmp_path / "shot.png").write_bytes(PNG)
    (tmp_path / "photo.jpg").write_bytes(b"jpg")
    (tmp_path / "blob.unknownext").write_bytes(b"?")
    (tmp_path / "noext").write_bytes(b"")
    return tmp_path


# ---------------------------------------------------------------- reader messages


def test_data_urls(images):
    assert base64.b64encode(PNG).decode() == PNG_B64
    assert image_data_url(images / "shot.png") == "data:image/png;base64," + PNG_B64
    assert image_data_url(images / "photo.jpg") == "data:image/jpeg;base64,anBn"
    assert image_data_url(images / "blob.unknownext") == "data:image/png;base64,Pw=="
    assert image_data_url(str(images / "noext")) == "data:image/png;base64,"
    with pytest.raises(InputError, match="does not exist"):
        image_data_url(images / "missing.png")


def test_reader_messages_worked_example(images):
    items = [{"type": "text", "value": "State 1: cart has 2 mugs."}, {"type": "image", "value": str(images / "shot.png")},
             {"type": "text", "value": "  kept as is  "}]
    messages = reader_messages("web", items, "How many mugs?", images / "photo.jpg", READER)
    assert messages == [
        {"role": "system", "content": WEB_PROMPT},
        {"role": "user", "content": [
            {"type": "text", "text": "## Stand-in recollections:\n"},
            {"type": "text", "text": "State 1: cart has 2 mugs."},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64," + PNG_B64}},
            {"type": "text", "text": "  kept as is  "},
            {"type": "text", "text": "\n\n## Stand-in question:\nHow many mugs?"},
            {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,anBn"}},
        ]},
    ]


def test_empty_memory_puts_the_marker_in_the_intro_part():
    messages = reader_messages("enterprise", [], "Which queue?", None, READER)
    assert messages == [
        {"role": "system", "content": ENTERPRISE_PROMPT},
        {"role": "user", "content": [
            {"type": "text", "text": "## Stand-in recollections:\n[nothing stored]"},
            {"type": "text", "text": "\n\n## Stand-in question:\nWhich queue?"},
        ]},
    ]


def test_log_messages_name_image_paths_and_read_no_file(tmp_path):
    items = [{"type": "image", "value": str(tmp_path / "never-created.png")}]
    log = reader_log_messages("web", items, "Q", str(tmp_path / "q.png"), READER)
    assert log[1]["content"] == [
        {"type": "text", "text": INTRO},
        {"type": "image_path", "image_path": str(tmp_path / "never-created.png")},
        {"type": "text", "text": QUESTION_HEAD + "Q"},
        {"type": "image_path", "image_path": str(tmp_path / "q.png")},
    ]
    with pytest.raises(InputError):  # the real request needs the file
        reader_messages("web", items, "Q", None, READER)


def test_items_may_be_objects_with_type_and_value():
    class Item:
        def __init__(self, type_, value):
            self.type, self.value = type_, value

    messages = reader_messages("web", [Item("text", "a")], "Q", None, READER)
    assert messages[1]["content"][1] == {"type": "text", "text": "a"}


@pytest.mark.parametrize("item", [{"type": "audio", "value": "x"}, {"type": "text", "value": 3}, {"value": "x"}])
def test_bad_items_are_plugin_errors(item):
    with pytest.raises(PluginError, match="query item 1"):
        reader_messages("web", [{"type": "text", "value": "ok"}, item], "Q", None, READER)


def test_unknown_domain_is_a_config_error():
    with pytest.raises(ConfigError, match="'shop' is not a LongMemEval-V2 domain"):
        reader_messages("shop", [], "Q", None, READER)


TEXT = st.text(max_size=30)


@settings(max_examples=200)
@given(st.lists(TEXT, max_size=6), TEXT, st.sampled_from(["web", "enterprise"]))
def test_text_only_messages_equal_a_naive_build(values, question, domain):
    parts = [{"type": "text", "text": INTRO + ("" if values else EMPTY_MARKER)}]
    for value in values:
        parts.append({"type": "text", "text": value})
    parts.append({"type": "text", "text": QUESTION_HEAD + question})
    expected = [{"role": "system", "content": {"web": WEB_PROMPT, "enterprise": ENTERPRISE_PROMPT}[domain]},
                {"role": "user", "content": parts}]
    items = [{"type": "text", "value": v} for v in values]
    assert reader_messages(domain, items, question, None, READER) == expected
    assert reader_log_messages(domain, items, question, None, READER) == expected


# ---------------------------------------------------------------- reader params


def test_run_eval_defaults_with_a_base_url():
    assert reader_params(base_url="http://localhost:8023/v1") == {
        "model": "Qwen/Qwen3.5-9B", "max_tokens": 20000, "temperature": 0.6, "top_p": 0.95, "extra_body": {"top_k": 20}}


def test_without_a_base_url_the_key_is_max_completion_tokens():
    params = reader_params(base_url=None)
    assert "max_tokens" not in params and params["max_completion_tokens"] == 20000
    assert reader_params(base_url="")["max_completion_tokens"] == 20000  # an empty URL counts as unset


def test_thinking_off_only_for_the_exact_model_behind_a_base_url():
    off = reader_params(base_url="http://x/v1", enable_thinking=False)
    assert off["extra_body"] == {"top_k": 20, "chat_template_kwargs": {"enable_thinking": False}}
    assert reader_params("qwen/qwen3.5-9b", base_url="http://x/v1", enable_thinking=False)["extra_body"] == {"top_k": 20}
    assert reader_params(base_url=None, enable_thinking=False)["extra_body"] == {"top_k": 20}


def test_optional_params_and_key_order():
    params = reader_params("m", base_url="u", temperature=None, top_p=None, top_k=None)
    assert params == {"model": "m", "max_tokens": 20000}  # no extra_body when it would be empty
    full = reader_params("m", base_url=None, reasoning_effort="low", presence_penalty=0.5, repetition_penalty=1.1,
                         max_tokens=7)
    assert list(full) == ["model", "max_completion_tokens", "reasoning_effort", "temperature", "top_p",
                          "presence_penalty", "extra_body"]
    assert full["extra_body"] == {"top_k": 20, "repetition_penalty": 1.1} and full["max_completion_tokens"] == 7


def test_the_request_arrives_as_built(images):
    """Through the real openai SDK to a local server: top_k merged into the body, parts unchanged."""
    params = reader_params(base_url="x", enable_thinking=False)
    messages = reader_messages("web", [{"type": "image", "value": str(images / "shot.png")}], "Q?", None, READER)
    with FakeOpenAIServer() as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
        client.chat.completions.create(messages=messages, **params)
        body = server.requests[0].body
    assert body == {"model": "Qwen/Qwen3.5-9B", "messages": messages, "max_tokens": 20000, "temperature": 0.6,
                    "top_p": 0.95, "top_k": 20, "chat_template_kwargs": {"enable_thinking": False}}


# ---------------------------------------------------------------- response text


@pytest.mark.parametrize("message, expected", [
    ({"content": "  \\boxed{4}  "}, "\\boxed{4}"),
    ({"content": "   ", "reasoning": " thought "}, "thought"),
    ({"content": [{"type": "text", "text": " a "}, {"type": "text", "text": "  "}, {"type": "text", "text": "b"}]},
     "a\nb"),
    ({"content": [{"type": "image_url"}, "stray", {"text": 5}], "reasoning": "r"}, "r"),
    ({"content": [], "reasoning": None}, None),
    ({"content": None, "reasoning": "   "}, None),
    ({"content": "", "reasoning_content": "other servers' field is not read"}, None),
    ({}, None),
])
def test_response_text(message, expected):
    assert response_text(message) == expected


# ---------------------------------------------------------------- checkers


@pytest.mark.parametrize("raw, gold, call", [
    ("x", "y", True), ("  ", "y", False), ("", "y", False), (None, "y", False), ("x", "", False),
    ("x", " \n", False), ("x", None, False), ("x", 0, True), ("x", 15, True),
])
def test_precheck(raw, gold, call):
    assert checker_precheck(raw, gold) is call


def test_checker_messages_worked_example():
    messages = checker_messages("llm_abstention_checker", "  Why is the sky green?\n", " It is not green. ",
                                "  Long reply... \\boxed{It is blue}  ", " It is blue ", CHECKERS)
    assert messages == [
        {"role": "system", "content": ABS_SYSTEM},
        {"role": "user", "content": abs_user("Why is the sky green?", "It is not green.",
                                             "Long reply... \\boxed{It is blue}", "It is blue")},
    ]


def test_empty_parsed_answer_falls_back_to_the_raw_response_and_numbers_become_text():
    messages = checker_messages("llm_gotchas_checker", None, 15, " raw ", "   ", CHECKERS)
    assert messages[0] == {"role": "system", "content": GOT_SYSTEM}
    assert messages[1]["content"] == got_user("", "15", "raw", "raw")


def test_checker_messages_refuse_what_upstream_never_sends():
    with pytest.raises(ValueError, match="without a call"):
        checker_messages("llm_gotchas_checker", "Q", "G", "  ", "A", CHECKERS)
    with pytest.raises(ConfigError, match="not an LLM checker"):
        checker_messages("mc_choice_match", "Q", "G", "R", "A", CHECKERS)


def test_checker_params():
    assert checker_params() == {"model": "gpt-5.2", "max_completion_tokens": 4096, "reasoning_effort": "medium"}
    assert checker_params("m", None, 10) == {"model": "m", "max_completion_tokens": 10}
