"""kill -9 of a batch run in each batch state, then a resume: no request is submitted (paid) twice.

One batch of 6 requests against the in-test loopback server, whose batch states move only when this
test says. A run in its own process (forked, the real openai SDK over HTTP) is
killed with SIGKILL while the batch is ``validating``; a second run resumes from the ledger and is
killed ``in_progress``; a third ``finalizing``; a fourth ``completed`` while it is downloading the
output file (not yet stored). A last run collects. The server saw each custom_id submitted once and
ran each once; the replies are in the cache; a rerun sends nothing. A run killed between creating the
batch and writing its id to the ledger adopts the batch on resume instead of creating a second one.
"""

from __future__ import annotations

import os
import signal
from collections import Counter

import pytest

from mnemetric.execute.batch import BatchExecutor
from mnemetric.execute.batch_remote import Remote
from mnemetric.llm.batch_ledger import Ledger
from mnemetric.llm.cache import ResponseCache
from tests.support.batch_kill import Killed, kill, spawn, until
from tests.support.batch_run import PRICES, calls
from tests.support.openai_server import FakeOpenAIServer

N = 6


@pytest.fixture()
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("MNEMETRIC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-BATCH")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with FakeOpenAIServer() as server:
        yield server, tmp_path / "cache"


def test_kill_9_in_every_state_then_resume_pays_nothing_twice(env):
    server, cache_dir = env
    api = server.batch
    # 1. validating: the run created the batch and polls it
    proc = spawn(server, N)
    until(lambda: api.batches and api.retrieves.get(api.only(), 0) >= 2)
    kill(proc)
    bid = api.only()
    for status in ("in_progress", "finalizing"):  # 2, 3: the resumed run polls the SAME batch
        proc = spawn(server, N)
        seen = api.retrieves[bid]
        api.advance(bid, status)
        until(lambda: api.retrieves[bid] >= seen + 2)
        kill(proc)
        assert list(api.batches) == [bid]
    # 4. completed, killed while downloading its output file (nothing stored yet)
    api.hold.clear()
    api.advance(bid, "completed")
    proc = spawn(server, N)
    until(lambda: api.downloads)
    kill(proc)
    api.hold.set()
    with ResponseCache(cache_dir / "llm-cache.sqlite3") as cache:
        assert len(cache) == 0
    # 5. the resume collects
    with BatchExecutor({"prices": PRICES}, poll_interval=0.01, progress=False) as ex:
        assert [o.text for o in ex.run(calls(server.base_url, N))] == [f"echo: q{i}" for i in range(N)]
        assert ex.usage.requests_sent == N  # counted by the run that received them
    keys = [c.key for c in calls(server.base_url, N)]
    assert Counter(api.submitted) == Counter(keys)  # each custom_id submitted once
    assert Counter(api.executed) == Counter(keys)   # and run (billed) once
    assert server.count == 0  # nothing went live
    # a rerun sends nothing
    with BatchExecutor({"prices": PRICES}, poll_interval=0.01, progress=False) as ex:
        assert [o.text for o in ex.run(calls(server.base_url, N))] == [f"echo: q{i}" for i in range(N)]
        assert ex.usage.requests_sent == 0 and ex.usage.cache_hits == N
    assert len(api.submitted) == N and len(api.batches) == 1


def test_killed_between_create_and_the_ledger_write_adopts_the_batch(env, monkeypatch):
    """A real SIGKILL at that instruction (in a forked run): no handler or cleanup runs, the ledger keeps "uploaded"
    with no batch id; the resume finds the batch at the server and adopts it instead of creating a second one."""
    server, cache_dir = env
    server.batch.auto = True
    real = Remote.record

    def record_then_die(self, slot, batch, **extra):
        if extra.get("state") == "submitted":
            os.kill(os.getpid(), signal.SIGKILL)  # the batch exists at the server; the ledger still says "uploaded"
        return real(self, slot, batch, **extra)

    monkeypatch.setattr(Remote, "record", record_then_die)
    pid = spawn(server, N)  # the forked run inherits the patch
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    monkeypatch.setattr(Remote, "record", real)
    with Ledger.beside(cache_dir / "llm-cache.sqlite3") as ledger:
        [slot] = ledger.slots()
        assert slot.state == "uploaded" and slot.batch_id is None
    assert len(server.batch.batches) == 1
    with BatchExecutor({"prices": PRICES}, poll_interval=0.01, progress=False) as ex:
        assert len(ex.run(calls(server.base_url, N))) == N
    assert len(server.batch.batches) == 1 and len(server.batch.submitted) == N


@pytest.mark.parametrize("settled_by", ["rerun", "status"])
def test_killed_between_storing_the_replies_and_marking_the_slot_done_is_settled(env, monkeypatch, capsys,
                                                                                settled_by):
    from mnemetric.cli import main
    from mnemetric.execute.batch_collect import SETTLED

    server, cache_dir = env
    server.batch.auto = True
    real = Ledger.finish

    def die(self, slot, **kw):
        raise Killed  # every reply is cached; the ledger still says "submitted"

    monkeypatch.setattr(Ledger, "finish", die)
    with BatchExecutor({"prices": PRICES}, poll_interval=0.01, progress=False) as ex, pytest.raises(Killed):
        ex.run(calls(server.base_url, N))
    monkeypatch.setattr(Ledger, "finish", real)
    with ResponseCache(cache_dir / "llm-cache.sqlite3") as cache:
        assert len(cache) == N
    with Ledger.beside(cache_dir / "llm-cache.sqlite3") as ledger:
        assert [s.state for s in ledger.slots()] == ["submitted"]
    bid = server.batch.only()
    if settled_by == "rerun":  # every call a cache hit: nothing sent, and the slot is settled
        with BatchExecutor({"prices": PRICES}, poll_interval=0.01, progress=False) as ex:
            assert [o.text for o in ex.run(calls(server.base_url, N))] == [f"echo: q{i}" for i in range(N)]
            assert ex.usage.requests_sent == 0 and ex.usage.cache_hits == N
        with Ledger.beside(cache_dir / "llm-cache.sqlite3") as ledger:
            assert [(s.state, s.note) for s in ledger.slots()] == [("done", SETTLED)]
    capsys.readouterr()
    assert main(["batch", "status"]) == 0
    assert "0 batch(es) not done" in capsys.readouterr().out
    assert main(["batch", "status", "--all", "--offline"]) == 0
    assert f"{bid}: done/completed m chat, {N}+0 of {N} done" in (out := capsys.readouterr().out) and SETTLED in out
    assert len(server.batch.submitted) == N and len(server.batch.batches) == 1


def test_a_batch_still_running_whose_replies_came_live_is_not_settled_until_it_ends(env, capsys):
    """Every request of a submitted batch answered meanwhile by a live run: the batch still runs (and bills) at the
    server, so neither the rerun (all cache hits) nor `batch status` marks its slot done, and `batch cancel`
    still takes it; once the server says it ended (here: cancelled), `batch status` settles it."""
    from mnemetric.cli import main
    from mnemetric.execute import ImmediateExecutor
    from mnemetric.execute.batch_collect import SETTLED
    from mnemetric.execute.batch_remote import BatchPending

    server, cache_dir = env
    with BatchExecutor({"prices": PRICES}, poll_interval=0.01, wait=False, progress=False) as ex, \
            pytest.raises(BatchPending):
        ex.run(calls(server.base_url, N))  # submitted; the server's batch stays validating
    bid = server.batch.only()
    with ImmediateExecutor({"prices": PRICES}, progress=False) as ex:
        ex.run(calls(server.base_url, N))  # the same requests, live: their replies are cached
    assert server.count == N
    with BatchExecutor({"prices": PRICES}, poll_interval=0.01, progress=False) as ex:
        assert ex.run(calls(server.base_url, N)) and ex.usage.requests_sent == 0 and ex.usage.cache_hits == N
    with Ledger.beside(cache_dir / "llm-cache.sqlite3") as ledger:
        assert [s.state for s in ledger.slots()] == ["submitted"]  # its batch is still running
    capsys.readouterr()
    for offline in (["--offline"], []):
        assert main(["batch", "status", *offline]) == 0
        assert f"{bid}: submitted/validating" in capsys.readouterr().out
    assert main(["batch", "cancel", bid]) == 0 and f"{bid}: cancelling" in capsys.readouterr().out
    assert main(["batch", "status"]) == 0 and f"{bid}: submitted/cancelling" in capsys.readouterr().out
    server.batch.advance(bid, "cancelled")
    assert main(["batch", "status"]) == 0
    assert "0 batch(es) not done" in capsys.readouterr().out
    with Ledger.beside(cache_dir / "llm-cache.sqlite3") as ledger:
        assert [(s.state, s.note) for s in ledger.slots()] == [("done", SETTLED)]
