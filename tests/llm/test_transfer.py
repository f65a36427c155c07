"""`mnemetric cache export|import`: responses and embedding vectors move by key, twice adds 0, a damaged or
truncated file is refused naming file and line with nothing written."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest

from mnemetric.errors import InputError
from mnemetric.llm import ChatRequest, LLMClient
from mnemetric.llm.cache import CACHE_FILENAME, VECTORS_FILENAME, ResponseCache, VectorStore
from mnemetric.llm.transfer import export_cache, import_cache
from tests.support.batch import embed_batch, run_batch
from tests.support.openai_server import FakeOpenAIServer


def _requests(n: int = 3) -> list[ChatRequest]:
    return [ChatRequest("gpt-4o-mini", [{"role": "user", "content": f"question {i}"}]) for i in range(n)]


@pytest.fixture()
def source(tmp_path, monkeypatch):
    """A cache filled by real clients against the loopback server (chat + embeddings) and a vector store;
    the server stays up (its URL is part of every key)."""
    root = tmp_path / "machine-1"
    monkeypatch.setenv("MNEMETRIC_CACHE_DIR", str(root))
    with FakeOpenAIServer() as server:
        client = LLMClient(base_url=server.base_url, api_key="sk-test-EXPORT", role="reader")
        run_batch(client, _requests())
        client.close()
        client = LLMClient(base_url=server.base_url, api_key="sk-test-EXPORT", role="embeddings")
        embed_batch(client, "emb-test", ["alpha", "beta"])
        client.close()
        store = VectorStore(root / VECTORS_FILENAME)
        store.put_many([(f"{i:064x}", 3, np.arange(3, dtype=np.float32).tobytes()) for i in range(2)])
        store.close()
        yield root, server


def _dump(root):
    with sqlite3.connect(root / CACHE_FILENAME) as db:
        resp = sorted(db.execute("SELECT key, kind, model, request_json, response_json, created_at, stage "
                                 "FROM responses").fetchall())
    with sqlite3.connect(root / VECTORS_FILENAME) as db:
        vecs = sorted(db.execute("SELECT key, dim, vec FROM embeddings").fetchall())
    return resp, vecs


def test_export_import_moves_every_row_and_twice_adds_nothing(source, tmp_path, monkeypatch):
    source, server = source
    out = tmp_path / "cache-export.jsonl"
    moved = export_cache(out, source)
    assert (moved.responses, moved.embeddings, moved.skipped) == (5, 2, 0)  # 3 chat + 2 embeddings responses
    assert b"sk-test-EXPORT" not in out.read_bytes()
    target = tmp_path / "machine-2"
    first = import_cache(out, target)
    assert (first.responses_added, first.embeddings_added) == (5, 2)
    assert _dump(target) == _dump(source)
    again = import_cache(out, target)
    assert (again.responses, again.responses_added, again.embeddings_added) == (5, 0, 0)
    # the imported responses answer the same requests: a client on machine 2 sends nothing
    monkeypatch.setenv("MNEMETRIC_CACHE_DIR", str(target))
    sent = server.count
    client = LLMClient(base_url=server.base_url, api_key="sk-test", role="reader")
    run_batch(client, _requests())
    client.close()
    assert server.count == sent


def _alter_reply(line: str) -> str:
    """The line with its response's (last) message content changed: the request, so the key, unchanged."""
    head, mark, tail = line.rpartition('"content": "')
    return head + mark + "X" + tail


def test_a_damaged_or_truncated_file_is_refused_by_line_and_nothing_is_written(source, tmp_path):
    source = source[0]
    out = tmp_path / "cache-export.jsonl"
    export_cache(out, source)
    lines = out.read_text().splitlines(keepends=True)
    q = next(i for i, line in enumerate(lines) if '"question' in line)
    target = tmp_path / "machine-2"
    with ResponseCache(target / CACHE_FILENAME) as cache:   # an empty cache: it must stay empty
        assert cache.import_rows([]) == 0
    cases = {
        "truncated": ("".join(lines[:3]) + lines[3][:40], r"line 4.*not valid JSON"),
        "no end record": ("".join(lines[:-1]), rf"line {len(lines) - 1}.*end.*truncated"),
        "altered request": ("".join(lines[:q]) + lines[q].replace('"question', '"Question', 1) + "".join(lines[q + 1:]),
                            rf"line {q + 1}.*key.*not the sha256 of the request"),
        "altered response": ("".join(lines[:q]) + _alter_reply(lines[q]) + "".join(lines[q + 1:]),
                             rf"line {len(lines)}.*end.*changed or lost"),
        "bad vector": ("".join(lines[:-2]) + json.dumps({**json.loads(lines[-2]), "vector": "AAAA"}) + "\n" + lines[-1],
                       rf"line {len(lines) - 1}.*vector"),
        "wrong counts": ("".join(lines[:-1]) + json.dumps({**json.loads(lines[-1]), "responses": 9}) + "\n",
                         rf"line {len(lines)}.*end record"),
        "not an export": ('{"schema": "other"}\n', r"line 1.*schema"),
    }
    for name, (text, pattern) in cases.items():
        bad = tmp_path / f"{name.replace(' ', '-')}.jsonl"
        bad.write_text(text)
        with pytest.raises(InputError, match=pattern) as err:
            import_cache(bad, target)
        assert str(bad) in str(err.value), name
        assert len(ResponseCache(target / CACHE_FILENAME)) == 0, name
        assert not (target / VECTORS_FILENAME).exists(), name


def test_cli_export_filters_and_a_bad_import_exits_without_traceback(source, tmp_path, capsys, monkeypatch):
    from mnemetric.cli import main

    out = tmp_path / "embedding-responses.jsonl"
    assert main(["cache", "export", str(out), "--stage", "embeddings", "--no-embeddings"]) == 0
    assert "exported 2 response(s) and 0 embedding vector(s)" in capsys.readouterr().out
    out.write_text(out.read_text()[:-5])
    monkeypatch.setenv("MNEMETRIC_CACHE_DIR", str(tmp_path / "machine-2"))
    assert main(["cache", "import", str(out)]) != 0
    err = capsys.readouterr().err
    assert err.startswith(f"error: {out}: line 4") and "Traceback" not in err
    assert not (tmp_path / "machine-2" / CACHE_FILENAME).exists()
