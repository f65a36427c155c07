"""Issue 16 item 3: SIGINT / SIGTERM keep paid work and leave no temp files.

A real `mnemetric` subprocess against the loopback OpenAI server (with a delay): the signal arrives while
requests are in flight; the run waits for them (grace), exits 128 + signal with one line and no traceback,
and a rerun sends none of what was in flight. SIGTERM during retrieve removes the temporary files of the
outputs being written (two ``.tmp`` were left before)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.support.openai_server import FakeOpenAIServer
from tests.support.processes import process_ended

N = 20


def _inputs(folder: Path) -> tuple[Path, Path]:
    from tests.longmemeval.answer_fixtures import adapted_record, context_record

    adapted, contexts = folder / "adapted.jsonl", folder / "contexts.jsonl"
    qids = [f"q{i:02d}" for i in range(N)]
    adapted.write_text("".join(json.dumps(adapted_record(q, f"What is item {q}?")) + "\n" for q in qids),
                       encoding="utf-8")
    contexts.write_text("".join(json.dumps(context_record(q, [("user", f"item {q} is blue")])) + "\n" for q in qids),
                        encoding="utf-8")
    return contexts, adapted


def _env(tmp_path: Path, server: FakeOpenAIServer) -> dict[str, str]:
    return {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test", "TQDM_DISABLE": "1",
            "MNEMETRIC_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}


def _wait(predicate, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError("timed out waiting")
        time.sleep(0.02)


def _answer(tmp_path: Path, env: dict, contexts: Path, adapted: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "mnemetric.cli", "answer", str(contexts), "--adapted", str(adapted),
                             "--reader", "openai", "--out", str(tmp_path / "hyp.jsonl"), "--max-concurrency", "8"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_waits_for_the_requests_in_flight_and_a_rerun_does_not_resend_them(tmp_path, sig):
    contexts, adapted = _inputs(tmp_path)
    with FakeOpenAIServer(latency=2.0) as server:
        env = _env(tmp_path, server)
        proc = _answer(tmp_path, env, contexts, adapted)
        _wait(lambda: server.count >= 8)  # the first 8 are in flight (2 s each)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 128 + sig, err
        lines = [line for line in err.splitlines() if line.strip() and not line.startswith("answer:")]  # no bars
        assert len(lines) == 1 and lines[0].startswith(f"error: interrupted by {signal.Signals(sig).name}"), err
        assert "Traceback" not in err
        first = server.keys()
        # nothing new started after the signal (8 in flight; more only if this test saw them late), and
        # every request sent was answered: those in flight finished, their answers went to the cache
        assert 8 <= len(first) < N and server.answered == len(first)
        assert not (tmp_path / "hyp.jsonl").exists()
        assert not list(tmp_path.glob(".*.tmp"))

        rerun = subprocess.run([sys.executable, "-m", "mnemetric.cli", "answer", str(contexts), "--adapted",
                                str(adapted), "--reader", "openai", "--out", str(tmp_path / "hyp.jsonl")],
                               cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        assert rerun.returncode == 0, rerun.stderr
        again = server.keys()[len(first):]
    assert len(again) == N - len(first) and not set(again) & set(first)  # nothing paid twice
    assert len((tmp_path / "hyp.jsonl").read_text(encoding="utf-8").splitlines()) == N


def test_the_grace_is_bounded_and_a_second_signal_stops_at_once(tmp_path):
    contexts, adapted = _inputs(tmp_path)
    with FakeOpenAIServer(latency=30.0) as server:
        env = _env(tmp_path, server)
        proc = _answer(tmp_path, env, contexts, adapted)
        _wait(lambda: server.count >= 8)
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        assert proc.poll() is None  # waiting for the requests in flight
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "Traceback" not in err and "unanswered" in err


SLOW_MEMORY = """\
import os, time
from mnemetric.longmemeval.memory.simple import FullContext

class SlowMemory(FullContext):
    def retrieve(self, query, granularity):
        with open("retrieving", "a") as fh:  # one line per question begun (its process id): the test signals
            fh.write(f"{os.getpid()}\\n")     # once a question is being retrieved on each process
        time.sleep(3)  # the signal arrives while a question is being retrieved, not as the run ends
        return super().retrieve(query, granularity)
"""


@pytest.mark.parametrize("workers,executor", [(1, "immediate"), (2, "immediate"), (2, "dask")])
def test_sigterm_during_retrieve_leaves_no_temp_files(tmp_path, workers, executor):
    """One process, or the pool (``--workers 2``: the questions are retrieved on the workers): exit 143, one line
    and no traceback (of this process or a worker's), both outputs' temporary files removed, and the workers ended
    with the run: no question begun after the signal (before, the pool's workers went on through the questions
    sent to them: 4 per task), none left running. So with ``--executor dask`` (a LocalCluster of 2 workers)."""
    if executor == "dask":
        pytest.importorskip("distributed")
    (tmp_path / "slow_memory.py").write_text(SLOW_MEMORY, encoding="utf-8")
    (tmp_path / "slow.yaml").write_text("_target_: slow_memory.SlowMemory\nname: slow\n", encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    env = {**os.environ, "TQDM_DISABLE": "1", "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{tmp_path}"}
    proc = subprocess.Popen([sys.executable, "-m", "mnemetric.cli", "retrieve",
                             str(ROOT / "data/sample/longmemeval_sample.json"), "--memory", str(tmp_path / "slow.yaml"),
                             "--granularity", "session", "--out", str(out / "log.jsonl"), "--contexts",
                             str(out / "ctx.jsonl"), "--workers", str(workers), "--executor", executor],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def begun() -> list[int]:
        marks = tmp_path / "retrieving"
        return [int(x) for x in marks.read_text(encoding="utf-8").split()] if marks.exists() else []

    _wait(lambda: len(set(begun())) == workers)  # the outputs being written, a question retrieved on each process
    assert len(list(out.glob(".*.tmp"))) == 2
    before = len(begun())
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "Traceback" not in err and err.strip().startswith("error: interrupted by SIGTERM"), err
    assert len(err.strip().splitlines()) == 1, err
    assert list(out.iterdir()) == []
    retrievers = set(begun())
    assert (retrievers == {proc.pid}) == (workers == 1), retrievers  # with 2, the questions ran on the workers
    # each process was 3 s into its question when signalled: at most one more begun per process if this test saw
    # its first one late (the pool's workers went on with 3 more each, and the tasks queued for them, before)
    assert len(begun()) <= before + workers, (before, begun())
    _wait(lambda: all(process_ended(pid) for pid in retrievers))  # no worker left running


def test_a_signal_raised_inside_c_code_is_still_an_interrupt():
    """CPython reports a signal handler's exception raised inside a C call as a SystemError whose cause
    is the interrupt; the doors print the interrupt's line and status for it, and nothing else."""
    from mnemetric.errors import Interrupted, interrupt_message, interrupt_of

    stop = Interrupted(signal.SIGTERM)
    wrapped = SystemError("<method 'get' of 'dict' objects> returned a result with an exception set")
    wrapped.__cause__ = stop
    assert interrupt_of(wrapped) is stop
    text, code = interrupt_message(wrapped)
    assert code == 128 + signal.SIGTERM and text.startswith("error: interrupted by SIGTERM")
    assert interrupt_of(SystemError("a real bug")) is None
    assert interrupt_of(ValueError("x")) is None


class _SignalsInItsFinalizer:
    """An object whose finalizer is where SIGTERM reaches this process (as a Dask future's ``__del__`` may be)."""

    def __del__(self):
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(10_000):  # the handler runs here, inside the finalizer
            pass


def test_a_signal_during_a_finalizer_is_raised_at_the_next_check_instead_of_dropped(monkeypatch):
    """The door's handler raises Interrupted where the signal lands; inside a finalizer Python hands the exception
    to sys.unraisablehook and goes on, so the run would never stop (a Dask run, signalled, waited for ever). Within
    deferred_interrupts the signal is recorded and raised by check(); the door's handler is back afterwards."""
    import threading

    from mnemetric.errors import Interrupted, deferred_interrupts, install_interrupts, restore_interrupts

    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers are set on the main thread")
    dropped: list[BaseException] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda hook: dropped.append(hook.exc_value))
    previous = install_interrupts()
    try:
        _SignalsInItsFinalizer()  # finalized at once: the Interrupted is dropped, nothing raised here
        assert [type(exc) for exc in dropped] == [Interrupted]
        door = signal.getsignal(signal.SIGTERM)
        with pytest.raises(Interrupted) as caught:
            with deferred_interrupts() as stop:
                _SignalsInItsFinalizer()
                assert stop.signum == signal.SIGTERM and len(dropped) == 1
                stop.check()
        assert caught.value.signum == signal.SIGTERM and caught.value.exit_code == 143
        assert signal.getsignal(signal.SIGTERM) is door
        with pytest.raises(Interrupted):  # recorded and not checked: raised on leaving
            with deferred_interrupts():
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)
        with pytest.raises(Interrupted) as caught:  # a second signal: at once
            with deferred_interrupts():
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(0.05)
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)
                raise AssertionError("the second signal did not stop the block")
        assert caught.value.signum == signal.SIGTERM
        with pytest.raises(Interrupted) as caught:  # an error after the signal: the run still ends as signalled
            with deferred_interrupts():
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(0.05)
                raise ValueError("a later error")
        assert caught.value.exit_code == 143 and isinstance(caught.value.__cause__, ValueError)
        assert signal.getsignal(signal.SIGTERM) is door
    finally:
        restore_interrupts(previous)


def test_a_signal_inside_the_fast_json_parser_stops_the_read_instead_of_falling_back(tmp_path, monkeypatch):
    """The fast path falls back to the strict reader on any error; an interrupt is not an error of the file."""
    import mnemetric.jsonstream as jsonstream
    from mnemetric.errors import Interrupted

    path = tmp_path / "items.json"
    path.write_text('[{"a": 1}, {"a": 2}]', encoding="utf-8")

    def interrupted_parser(fh, chunk):
        yield {"a": 1}
        wrapped = SystemError("<built-in method next> returned a result with an exception set")
        wrapped.__cause__ = Interrupted(signal.SIGTERM)
        raise wrapped

    monkeypatch.setattr(jsonstream, "fast_items", interrupted_parser)
    items = jsonstream.iter_json_items(path)
    assert next(items) == ({"a": 1}, ())
    with pytest.raises(Interrupted):
        next(items)
