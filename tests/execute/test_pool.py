"""The local process pool (mnemetric.execute.pool.map_ordered): order, big messages both ways, errors and a worker
that dies, on real forked processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mnemetric.errors import InputError, Interrupted, MnemetricError
from mnemetric.execute.pool import RemoteTraceback, WorkerDied, map_ordered
from tests.support.processes import process_ended

BIG = 1 << 22  # 4 MiB: 4 times the pool's pipe buffer, 64 times the default one


BOTH_WAYS = f"""
from mnemetric.execute.pool import map_ordered

def echo(text):
    return text

if __name__ == "__main__":
    texts = [chr(65 + i % 26) * {BIG} for i in range(48)]
    assert list(map_ordered(echo, texts, 2)) == texts
    print("ok")
"""


def test_chunks_and_replies_bigger_than_a_pipe_arrive_in_order(tmp_path):
    """Each chunk sent and each reply is 16 MiB: this process sends a worker its next chunk while that worker is
    still sending a reply (the worker reads its chunks on a thread of its own, or both would wait for ever: run in
    a process of its own, so a deadlock fails the test instead of hanging the suite)."""

    script = tmp_path / "both_ways.py"
    script.write_text(BOTH_WAYS, encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def _uneven(item: int) -> int:
    time.sleep(0.05 if item % 8 < 4 else 0.0)  # every other chunk of 4 is slow
    return item * item


def test_results_keep_the_input_order_whatever_order_the_workers_finish_in():
    assert list(map_ordered(_uneven, range(64), 3)) == [i * i for i in range(64)]


def _fails_at(item: int) -> int:
    if item == 13:
        raise InputError("data.json", "question 'q13'", "answer", "missing")
    if item == 17:
        raise ZeroDivisionError("a bug in a plug-in")
    return item


def test_a_user_error_comes_back_by_message_and_status_and_a_bug_with_the_workers_traceback():
    with pytest.raises(MnemetricError, match=r"data\.json: question 'q13': field 'answer': missing") as caught:
        list(map_ordered(_fails_at, range(16), 2))
    assert caught.value.exit_code == 2
    with pytest.raises(ZeroDivisionError) as bug:
        list(map_ordered(_fails_at, range(14, 32), 2))
    assert isinstance(bug.value.__cause__, RemoteTraceback) and "_fails_at" in str(bug.value.__cause__)


def _dies_at(item: int) -> int:
    if item == 9:
        os.kill(os.getpid(), signal.SIGKILL)  # as the kernel's out-of-memory killer would
    return item


def test_a_worker_that_dies_is_a_clear_error_naming_its_exit_status_and_the_fix():
    with pytest.raises(WorkerDied, match=r"ended \(exit status -9\).*\n  fix: .*--workers 1") as caught:
        list(map_ordered(_dies_at, range(40), 2))
    assert caught.value.exit_code == 1


def _terms_at(item: int) -> int:
    if item == 9:
        os.kill(os.getpid(), signal.SIGTERM)  # as `timeout` or `docker stop` do to the whole process group
    return item


def test_a_worker_ended_by_sigterm_is_an_interrupt_not_a_crash():
    with pytest.raises(Interrupted) as caught:
        list(map_ordered(_terms_at, range(40), 2))
    assert caught.value.exit_code == 143


def _slow_pid(_item: int) -> int:
    time.sleep(0.25)
    return os.getpid()


def test_the_workers_end_at_once_when_the_caller_stops_reading():
    """The caller takes one result and closes the map: both workers are ended then (terminated), not left to
    finish the 2 chunks of 4 questions of 0.25 s each that were sent to each of them."""
    if not Path("/proc/self/stat").exists():
        pytest.skip("reads /proc")
    results = map_ordered(_slow_pid, range(200), 2)
    first = next(results)
    seen = {first}
    seen.update(pid for pid, _ in zip(results, range(4)))  # the first chunk of each worker
    assert len(seen) == 2 and os.getpid() not in seen
    began = time.monotonic()
    results.close()
    assert time.monotonic() - began < 1.5  # ended, not waited for (their queued work: 2 s each)
    assert all(process_ended(pid) for pid in seen)


ORPHANED = """
import os, sys, time
from mnemetric.execute.pool import map_ordered

def slow_pid(_item):
    time.sleep(0.5)
    return os.getpid()

if __name__ == "__main__":
    seen = set()
    for pid in map_ordered(slow_pid, range(200), 2):
        seen.add(pid)
        if len(seen) == 2:
            print(*sorted(seen), flush=True)
            time.sleep(60)  # killed here, with 2 chunks of 4 questions (4 s) sent to each worker
"""


def test_workers_end_at_once_when_their_parent_is_killed(tmp_path):
    """SIGKILL leaves the parent no chance to end its workers: each sees its chunk pipe close and ends then, its
    queued chunks dropped, rather than working on (4 s here) for nobody and failing to send the replies."""
    if not Path("/proc/self/stat").exists():
        pytest.skip("reads /proc")
    script = tmp_path / "orphaned.py"
    script.write_text(ORPHANED, encoding="utf-8")
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    workers = [int(pid) for pid in parent.stdout.readline().split()]
    assert len(workers) == 2, parent.stderr.read()
    parent.kill()
    parent.wait()
    end = time.monotonic() + 2.0
    while not all(process_ended(pid) for pid in workers) and time.monotonic() < end:
        time.sleep(0.02)
    assert all(process_ended(pid) for pid in workers)
    assert "Traceback" not in parent.stderr.read()
