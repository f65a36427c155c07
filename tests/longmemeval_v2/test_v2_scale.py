"""Issue 16 for LongMemEval-V2: `mnemetric v2 run --executor/--workers` (the bytes of one worker, batch = live),
and a shared-haystack memory queried in order in the main process.

The measured query latencies are the one thing a run does not repeat, so each test pins the harness clock
(``perf_counter`` → 0.0, inherited by the forked workers): every other byte must match."""

from __future__ import annotations

import os
import types
from pathlib import Path

import pytest

from mnemetric.cli import main
from mnemetric.execute import ImmediateExecutor
from mnemetric.longmemeval_v2 import harness
from mnemetric.longmemeval_v2.steps import memory_step
from mnemetric.longmemeval_v2.tokens import O200kCounter
from tests.conftest import ROOT

SAMPLE = ROOT / "data" / "sample-v2"


@pytest.fixture
def still_clock(monkeypatch):
    monkeypatch.setattr(harness, "time", types.SimpleNamespace(perf_counter=lambda: 0.0))


def _files(folder: Path) -> dict[str, bytes]:
    """Every output's bytes but run_args.json's (the command line and its start time, untracked)."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != "run_args.json"}


def _v2_run(capsys, out: Path, *extra: str) -> str:
    code = main(["v2", "run", str(SAMPLE), "--haystack", "medium", "--memory", "bm25", "--token-counter", "o200k",
                 "--out", str(out), *extra])
    _, err = capsys.readouterr()
    assert code == 0, err
    return err


class Spy(ImmediateExecutor):
    """The immediate executor, counting the maps it ran (the pool really ran the per-question work)."""

    def map(self, task, items, *, desc="questions"):
        self.mapped = getattr(self, "mapped", 0) + 1
        return super().map(task, items, desc=desc)


def _memory():
    from mnemetric.config import build
    from mnemetric.longmemeval_v2.pipeline import option

    return build(option("memory", "bm25", SAMPLE), "v2.memory")


def test_a_shared_haystack_is_queried_in_order_here(still_clock):
    from mnemetric.longmemeval_v2.validate import haystack_path

    spy = Spy(workers=2, progress=False)
    got, _ = memory_step(SAMPLE, haystack_path(SAMPLE, "small"), ("web",), _memory, counter=O200kCounter(),
                         max_tokens=2000, system="bm25", mapper=spy)
    assert got and not hasattr(spy, "mapped")


def test_v2_run_on_2_workers_writes_the_bytes_of_1(tmp_path, capsys, still_clock):
    _v2_run(capsys, tmp_path / "one", "--workers", "1")
    _v2_run(capsys, tmp_path / "two", "--workers", "2", "--executor", "immediate")
    one, two = _files(tmp_path / "one"), _files(tmp_path / "two")
    assert one == two and "web/per_question.jsonl" in one


def test_v2_run_takes_the_batch_executor_and_refuses_an_unknown_one(tmp_path, capsys, still_clock):
    os.environ.setdefault("OPENAI_API_KEY", "sk-test")
    _v2_run(capsys, tmp_path / "live")
    _v2_run(capsys, tmp_path / "batch", "--executor", "batch")  # offline reader and checker: nothing to batch
    assert _files(tmp_path / "live") == _files(tmp_path / "batch")
    code = main(["v2", "run", str(SAMPLE), "--haystack", "medium", "--memory", "bm25", "--out", str(tmp_path / "x"),
                 "--executor", "no-such-executor"])
    assert code == 2 and "no-such-executor" in capsys.readouterr().err
