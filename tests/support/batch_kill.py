"""kill -9 of a batch run at a chosen batch state, then a resume (tests/execute/test_batch_kill.py and the batch
section of ``make bench``): a run of :func:`tests.support.batch_run.calls` in a forked process (everything
imported, the real openai SDK over HTTP to the loopback server), ended by SIGKILL when the server's batch
reaches the state, so no handler and no cleanup of the run's runs (the ledger keeps only what was committed).

The states: ``validating`` (the run created the batch and polls it), ``in_progress``, ``finalizing``, and
``completed`` with the output file's download held (killed while downloading: nothing stored yet).
"""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

from mnemetric.execute.batch import BatchExecutor
from tests.support.batch_run import PRICES, calls

STATES = ("validating", "in_progress", "finalizing", "completed")


class Killed(BaseException):
    """Stands for SIGKILL at one exact instruction, raised in this process (no handler of ours runs: the ledger
    keeps what was committed)."""


def until(what, timeout: float = 60.0) -> None:
    """Wait (polling every 10 ms) until ``what()`` is true; AssertionError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not what():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.01)


def spawn(server, n: int) -> int:
    """A batch run of ``n`` calls in its own (forked) process; its pid. The cache and ledger are
    ``$MNEMETRIC_CACHE_DIR``'s."""
    pid = os.fork()
    if pid == 0:  # the child: run, and leave without running the parent's cleanup
        code = 1
        try:
            with BatchExecutor({"prices": PRICES}, poll_interval=0.01, progress=False) as ex:
                ex.run(calls(server.base_url, n))
            code = 0
        finally:
            os._exit(code)
    return pid


def kill(pid: int) -> None:
    """SIGKILL ``pid`` and reap it (it must have died of the signal)."""
    os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


def kill_at(server, n: int, state: str) -> str:
    """Start a run, kill -9 it when its batch is at ``state`` (the server moves only when told: ``auto`` off);
    the batch id. ``completed``: killed while downloading the output file."""
    api = server.batch
    proc = spawn(server, n)
    until(lambda: api.batches and api.retrieves.get(api.only(), 0) >= 2)  # created, and polled
    bid = api.only()
    if state == "completed":
        api.hold.clear()
        api.advance(bid, "completed")
        until(lambda: api.downloads)
    elif state != "validating":
        seen = api.retrieves[bid]
        api.advance(bid, state)
        until(lambda: api.retrieves[bid] >= seen + 2)  # the run saw the state
    kill(proc)
    api.hold.set()
    return bid


def resume_after_kill(server, cache_dir: Path, n: int, state: str) -> dict[str, Any]:
    """kill -9 at ``state``, a resume in this process, then a rerun: what each paid (the server's counts)."""
    api = server.batch
    kill_at(server, n, state)
    api.auto = True  # the resume's batch moves on by itself
    with BatchExecutor({"prices": PRICES}, poll_interval=0.01, progress=False) as ex:
        texts = [o.text for o in ex.run(calls(server.base_url, n))]
    with BatchExecutor({"prices": PRICES}, poll_interval=0.01, progress=False) as ex:
        ex.run(calls(server.base_url, n))
        rerun_sent = ex.usage.requests_sent
    keys = [c.key for c in calls(server.base_url, n)]
    return {"submitted_twice": sum(v - 1 for v in Counter(api.submitted).values() if v > 1),
            "run_twice": sum(v - 1 for v in Counter(api.executed).values() if v > 1),
            "all_answered": texts == [f"echo: q{i}" for i in range(n)] and sorted(set(api.executed)) == sorted(keys),
            "batches": len(api.batches), "sent_live": server.count, "rerun_sent": rerun_sent}
