"""Graphiti on Kuzu (extra ``graphiti``) end to end against the loopback OpenAI server: the real library and
database, its OpenAI clients over HTTP, json_schema structured outputs answered from the schemas it sends
(tests/support/memory_library_replies.py)."""

from __future__ import annotations

import importlib.util
import json

import pytest

from mnemetric.errors import ConfigError, PluginError
from mnemetric.longmemeval.memory.graphiti_memory import Graphiti, session_time
from mnemetric.longmemeval.retrieve import write_retrieval

from tests.longmemeval.memory.library_fixtures import DIMS, small_records
from tests.support.memory_library_replies import LibraryServer

pytestmark = pytest.mark.skipif(importlib.util.find_spec("graphiti_core") is None,
                                reason='graphiti-core is not installed: pip install -e ".[graphiti]" (about 5 s)')


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    return small_records(tmp_path_factory.mktemp("graphiti"), questions=1, others=2)


@pytest.fixture()
def server(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with LibraryServer(embedding_dim=DIMS, unknown_models={"no-such-model"}) as srv:
        yield srv


def graphiti(server, **kw) -> Graphiti:
    return Graphiti(base_url=server.base_url, embedding_dims=DIMS, **kw)


def test_retrieval_completes_and_a_rerun_sends_the_same_requests(records, server, tmp_path):
    for name in ("one", "two"):
        n = write_retrieval(graphiti(server), records, granularity="session", k=5, budget=4000,
                            log=tmp_path / name)
        assert n == 1
    line = json.loads((tmp_path / "one").read_text())
    assert line["retrieval_results"]["ranked_items"] and line["retrieval_results"]["metrics"]["session"]
    keys = server.keys()
    assert keys[: len(keys) // 2] == keys[len(keys) // 2:]  # byte-identical: the cache answers a rerun
    schemas = [b["response_format"]["type"] for b in server.chat_bodies()]
    assert schemas and set(schemas) == {"json_schema"}
    first = records[0].memory.sessions[0]
    assert any(str(session_time(first.date).date()) in b["messages"][-1]["content"] for b in server.chat_bodies())


def test_a_library_error_names_the_memory_system_the_question_and_the_call(records, server, tmp_path):
    with pytest.raises(PluginError) as err:
        write_retrieval(graphiti(server, llm_model="no-such-model", small_llm_model="no-such-model"), records,
                        granularity="turn", k=5, budget=4000, log=tmp_path / "log.jsonl")
    text = str(err.value)
    assert "memory system graphiti" in text and records[0].eval.question_id in text and "ingest(session" in text
    assert not (tmp_path / "log.jsonl").exists()


def test_session_dates_are_the_reference_time_never_the_clock():
    assert session_time("2023/05/20 (Sat) 02:21").isoformat() == "2023-05-20T02:21:00+00:00"
    assert session_time(None).year == 2000


def test_a_missing_api_key_without_the_proxy_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY is not set"):
        Graphiti().reset()
