"""Embeddings in the format the caller asked for (mnemetric.llm.embed_wire): a base64 request is sent as base64,
keyed apart from a float one, decoded exactly and handed back byte for byte; the float default is unchanged.

The loopback server here answers the two formats with different vectors, as the real API may
(openai/openai-python#1064): a float reply re-encoded to base64 would not be the server's base64 bytes."""

from __future__ import annotations

import base64
import json
import struct
from typing import Any

import openai
import pytest

from mnemetric.execute import ImmediateExecutor
from mnemetric.execute.calls import ModelCall
from mnemetric.llm.batch_files import cache_row, request_body, request_line
from mnemetric.llm.embed_wire import decode_vector, encode_base64
from mnemetric.llm.proxy import ModelProxy
from mnemetric.llm.replies import parse_embeddings_response
from mnemetric.llm.types import MalformedResponse
from tests.support.openai_server import FakeOpenAIServer

BITS = (0x3DCCCCCD, 0x3DCCCCCE, 0x00000001, 0x80000000, 0x7F7FFFFF, 0xBEAAAAAB, 0x3F800001, 0x33D6BF95)
"""float32 bit patterns: 0.1f and its neighbour, the smallest subnormal, -0.0, the largest float32, -1/3, 1 + ulp,
~1e-7 — values a short decimal repr (e.g. ``%.7g``) would not bring back bit for bit."""
WIRE = struct.pack(f"<{len(BITS)}I", *BITS)
B64 = base64.b64encode(WIRE).decode("ascii")
VALUES = list(struct.unpack(f"<{len(BITS)}f", WIRE))
FLOATS = [v + 3e-4 for v in (0.1, 0.1, 0.0, -0.0, 1.0, -1 / 3, 1.0, 1e-7)]
"""The float reply: near, not equal (the API's formats differ by up to ~3e-4)."""
LLM = {"max_concurrency": 1, "timeout": 10, "max_attempts": 1, "non_answer_attempts": 1}


class TwoFormatServer(FakeOpenAIServer):
    def embeddings_payload(self, body: dict[str, Any]) -> dict[str, Any]:
        texts = [body["input"]] if isinstance(body["input"], str) else body["input"]
        vector: Any = B64 if body.get("encoding_format") == "base64" else FLOATS
        usage = {"prompt_tokens": len(texts), "total_tokens": len(texts)}
        return {"object": "list", "model": body["model"], "usage": usage,
                "data": [{"object": "embedding", "index": i, "embedding": vector} for i in range(len(texts))]}


@pytest.fixture()
def server(tmp_path, monkeypatch):
    monkeypatch.setenv("MNEMETRIC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with TwoFormatServer() as s:
        yield s


def _library(proxy: ModelProxy) -> openai.OpenAI:
    return openai.OpenAI(base_url=proxy.base_url, api_key=proxy.api_key, max_retries=0)


def test_a_library_asking_base64_gets_the_servers_bytes_live_and_from_the_cache(server):
    for run in range(2):  # the second run is answered from the response cache
        with ImmediateExecutor(LLM, progress=False) as ex, ModelProxy(ex, base_url=server.base_url) as proxy:
            with proxy.attribute(system="toy", phase="ingest", question_id="q1"):
                raw = _library(proxy).embeddings.create(model="m-embed", input=["alpha"], encoding_format="base64")
                default = _library(proxy).embeddings.create(model="m-embed", input=["alpha"])  # the SDK asks base64
                floats = _library(proxy).embeddings.create(model="m-embed", input=["alpha"], encoding_format="float")
        assert raw.data[0].embedding == B64, run  # byte for byte what the server sent
        assert default.data[0].embedding == VALUES  # the SDK's own decoding of the same bytes
        assert floats.data[0].embedding == FLOATS  # a float request gets the float reply
    assert [(r.body["input"], r.body["encoding_format"]) for r in server.requests] == [
        (["alpha"], "base64"), (["alpha"], "float")]


def test_the_executor_sends_the_calls_format_and_keys_it(server):
    b64 = ModelCall.embedding(role="memory", model="m-embed", text="alpha", base_url=server.base_url,
                              encoding_format="base64")
    flt = ModelCall.embedding(role="memory", model="m-embed", text="alpha", base_url=server.base_url)
    assert b64.key != flt.key and b64.encoding_format == "base64" and flt.encoding_format == "float"
    assert ModelCall.embedding(role="memory", model="m-embed", text="alpha", base_url=server.base_url,
                               encoding_format="float").key == flt.key  # "float" named or not: one request
    with ImmediateExecutor(LLM, progress=False) as ex:
        out_b64, out_flt = ex.run([b64, flt], progress=False)
    assert list(out_b64.embedding) == VALUES and encode_base64(out_b64.embedding) == B64
    assert list(out_flt.embedding) == FLOATS
    assert out_b64.params_sent == {"encoding_format": "base64"} and out_flt.params_sent == {}
    assert sorted((r.body["input"], r.body["encoding_format"]) for r in server.requests) == [
        (["alpha"], "base64"), (["alpha"], "float")]
    with pytest.raises(ValueError, match="encoding_format"):
        ModelCall.embedding(role="memory", model="m-embed", text="alpha", encoding_format="int8")


def test_the_float_default_keeps_its_key_and_bodies():
    """Pinned before base64 was served: the float default's cache key and batch line are what they were."""
    call = ModelCall.embedding(role="embeddings", model="text-embedding-3-small", text="hello",
                               base_url="https://api.openai.com/v1", params={"dimensions": 8})
    assert call.key == "a92ff7c9ffa5581b95f951bea24cd2d793bdc5cad5983971f70a7a0bdda62662"
    assert request_line(call.key, call.payload) == (
        b'{"body":{"dimensions":8,"encoding_format":"float","input":"hello","model":"text-embedding-3-small"},'
        b'"custom_id":"a92ff7c9ffa5581b95f951bea24cd2d793bdc5cad5983971f70a7a0bdda62662","method":"POST",'
        b'"url":"/v1/embeddings"}\n')
    assert ModelCall.embedding(role="embeddings", model="text-embedding-3-small", text="hello",
                               base_url="https://api.openai.com/v1").key == \
        "9b67437b5a7afca805f1b6e3798c6a13902df6ffd06547cf6517596f3c8c3bef"


def test_a_batch_line_carries_the_calls_format_and_a_base64_result_is_decoded_exactly():
    call = ModelCall.embedding(role="memory", model="m", text="hello", base_url="http://x/v1", encoding_format="base64")
    assert request_body(call.payload) == {"model": "m", "input": "hello", "encoding_format": "base64"}
    reply = {"model": "m", "data": [{"embedding": B64}], "usage": {"prompt_tokens": 2}}
    row = cache_row("embeddings", reply, {"batch": "b"})
    assert row["embedding"] == VALUES and encode_base64(row["embedding"]) == B64


@pytest.mark.parametrize("bad", ["AAAA=", "AAAAAAA=",  # bad padding; 5 bytes (not whole float32s)
                                 "not base64!", ["x"], None, True])
def test_a_vector_that_is_neither_numbers_nor_float32_base64_is_malformed(bad):
    assert decode_vector(bad) is None
    with pytest.raises(MalformedResponse, match="neither a list of numbers nor base64"):
        parse_embeddings_response(b'{"data": [{"embedding": %s}]}' % json.dumps(bad).encode(), 1)
