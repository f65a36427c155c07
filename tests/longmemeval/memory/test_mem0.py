"""mem0 (extra ``mem0``) end to end against the loopback OpenAI server: the real library, its real OpenAI
clients over HTTP, replies shaped as mem0 expects (tests/support/memory_library_replies.py)."""

from __future__ import annotations

import importlib.util
import json

import pytest

from mnemetric.errors import ConfigError, PluginError
from mnemetric.longmemeval.memory import Retrieved
from mnemetric.longmemeval.retrieve import write_retrieval
from mnemetric.longmemeval.scoring.score_retrieval import write_retrieval_scores

from tests.longmemeval.memory.library_fixtures import DIMS, small_records
from tests.support.memory_library_replies import LibraryServer

from mnemetric.longmemeval.memory.mem0_memory import Mem0

pytestmark = pytest.mark.skipif(importlib.util.find_spec("mem0") is None,
                                reason='mem0ai is not installed: pip install -e ".[mem0]" (about 15 s)')


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    """Two questions of the bundled sample on small haystacks (library_fixtures), adapted (v3: dated)."""
    return small_records(tmp_path_factory.mktemp("mem0"), questions=2)


@pytest.fixture()
def server(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("MEM0_DIR", str(tmp_path / "mem0"))
    with LibraryServer(embedding_dim=DIMS, unknown_models={"no-such-model"}) as srv:
        yield srv


def mem0(server, **kw) -> Mem0:
    return Mem0(base_url=server.base_url, embedding_dims=DIMS, **kw)


def test_retrieval_completes_and_is_scored(records, server, tmp_path):
    log = tmp_path / "retrieval.jsonl"
    n = write_retrieval(mem0(server), records, granularity="session", k=5, budget=4000, log=log)
    assert n == 2
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert all(line["retrieval_results"]["ranked_items"] for line in lines)
    files = write_retrieval_scores(log, granularity="session", profile="longmemeval-session-upstream-v1",
                                   ks=[5, 10], headline=tmp_path / "retrieval.json")
    headline = json.loads((tmp_path / "retrieval.json").read_text())
    assert files and "session" in json.dumps(headline)
    extraction = [b for b in server.chat_bodies() if "Memory Extractor" in b["messages"][0]["content"]]
    assert len(extraction) == sum(len(r.memory.sessions) for r in records)  # one add() per session
    first = records[0].memory.sessions[0]
    assert f"## Current Date\n{first.date}" in extraction[0]["messages"][-1]["content"]  # the frozen clock


def test_the_same_questions_send_the_same_requests_so_a_rerun_hits_the_cache(records, server, tmp_path):
    for name in ("one", "two"):
        write_retrieval(mem0(server), records[:1], granularity="turn", k=5, budget=4000, log=tmp_path / name)
    keys = server.keys()
    half = len(keys) // 2
    assert half and keys[:half] == keys[half:]
    assert (tmp_path / "one").read_bytes() == (tmp_path / "two").read_bytes()


def test_turn_granularity_maps_memories_back_to_their_chunk(records, server):
    memory = mem0(server, chunk_turns=2, roles=["user"])
    memory.reset()
    session = records[0].memory.sessions[0]
    memory.ingest(session)
    ranked = memory.retrieve(records[0].memory.query, "turn")
    assert ranked and all(r.session_id == session.session_id for r in ranked)
    assert all(session.messages[r.turn_index].role == "user" for r in ranked)


def test_a_library_error_names_the_memory_system_the_question_and_the_call(records, server, tmp_path):
    with pytest.raises(PluginError) as err:
        write_retrieval(mem0(server, llm_model="no-such-model"), records[:1], granularity="session", k=5,
                        budget=4000, log=tmp_path / "log.jsonl")
    text = str(err.value)
    assert "memory system mem0" in text and records[0].eval.question_id in text
    assert f"ingest(session {records[0].memory.sessions[0].session_id})" in text and "no-such-model" in text
    assert not (tmp_path / "log.jsonl").exists()


def test_ids_the_haystack_does_not_have_are_a_clear_error(records, server, tmp_path, monkeypatch):
    monkeypatch.setattr(Mem0, "ranked", lambda self, hits, g: [Retrieved("s999")])
    with pytest.raises(PluginError, match="session_id 's999' was never ingested"):
        write_retrieval(mem0(server), records[:1], granularity="session", k=5, budget=4000,
                        log=tmp_path / "log.jsonl")
    assert not (tmp_path / "log.jsonl").exists()


def test_a_missing_library_names_the_extra(monkeypatch):
    import builtins
    import sys

    real = builtins.__import__

    def no_mem0(name, *args, **kwargs):
        if name.startswith("mem0"):
            raise ImportError(f"No module named {name!r}")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_mem0)
    for key in [k for k in sys.modules if k == "mem0" or k.startswith("mem0.")]:
        monkeypatch.delitem(sys.modules, key)
    with pytest.raises(ConfigError, match=r'pip install -e "\.\[mem0\]"'):
        Mem0()


def test_through_the_model_proxy_a_rerun_sends_0_requests(records, tmp_path, monkeypatch):
    from mnemetric.execute import ImmediateExecutor
    from mnemetric.llm.proxy import ModelProxy

    monkeypatch.setenv("MNEMETRIC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    llm = {"max_concurrency": 1, "timeout": 10, "max_attempts": 1, "non_answer_attempts": 1}
    sent = []
    with LibraryServer(embedding_dim=DIMS) as srv:
        for name in ("one", "two"):
            with ImmediateExecutor(llm, progress=False) as ex, ModelProxy(ex, base_url=srv.base_url) as proxy:
                write_retrieval(Mem0(embedding_dims=DIMS), records[:1], granularity="session", k=5, budget=4000,
                                log=tmp_path / name, executor=ex)
                work = json.dumps(proxy.ledger.work())
            sent.append(srv.count)
    assert sent[0] > 0 and sent[1] == sent[0]  # the rerun: every request answered by the cache
    assert (tmp_path / "one").read_bytes() == (tmp_path / "two").read_bytes()
    assert '"mem0"' in work and '"ingest"' in work and '"query"' in work  # attributed by the harness


def test_the_fingerprint_and_the_manifest_name_the_library_and_its_version():
    import importlib.metadata

    from mnemetric.fingerprint import fingerprint
    from mnemetric.longmemeval.family import memory_block

    fp = fingerprint("mnemetric.longmemeval.memory.mem0_memory.Mem0")
    assert fp.libraries == {"mem0ai": importlib.metadata.version("mem0ai")}
    assert fp.to_record()["libraries"] == fp.libraries
    assert fingerprint("mnemetric.longmemeval.memory.bm25.BM25").libraries is None  # unchanged for the rest
    block = memory_block({"name": "mem0"}, fp.to_record())
    assert block["libraries"] == fp.libraries and block["fingerprint_sha256"] == fp.sha256
