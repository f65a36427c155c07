"""The local process pool (mnemetric.execute.pool.map_ordered): order, big messages both ways, errors and a worker
that dies, on real forked processes."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from mnemetric.errors import InputError, MnemetricError
from mnemetric.execute.pool import RemoteTraceback, WorkerDied, map_ordered

BIG = 1 << 20  # 1 MiB: 16 times a pipe's buffer


def _echo(text: str) -> str:
    return text


def test_chunks_and_replies_bigger_than_a_pipe_arrive_in_order():
    """Each chunk sent and each reply is several MiB: this process sends a worker its next chunk while that worker
    is still sending a reply (the worker reads its chunks on a thread of its own, or both would wait for ever)."""
    texts = [chr(65 + i % 26) * BIG for i in range(48)]
    assert list(map_ordered(_echo, texts, 2)) == texts


def _uneven(item: int) -> int:
    import time

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


def _pid(_item: int) -> int:
    return os.getpid()


def test_the_workers_end_with_the_map_when_the_caller_stops_reading():
    results = map_ordered(_pid, range(200), 2)
    first = next(results)
    assert first != os.getpid()
    results.close()  # the caller stopped reading: the workers are ended, none left running
    stat = Path(f"/proc/{first}/stat")
    assert not stat.exists() or stat.read_text(encoding="utf-8").rsplit(")", 1)[1].split()[0] in ("Z", "X")
