"""Issue 16 for LongMemEval-V2: `mnemetric v2 run --executor/--workers` (the bytes of one worker, batch = live, a
Dask cluster = immediate, on Dask with workers null too), a shared-haystack memory queried in order in the main
process, and the memory's own model calls tallied alike with 1 worker, 2 and a Dask LocalCluster.

The measured query latencies are the one thing a run does not repeat, so each test pins the harness clock
(``perf_counter`` → 0.0, inherited by the forked workers): every other byte must match."""

from __future__ import annotations

import functools
import os
import types
from pathlib import Path

import pytest

from mnemetric.cli import main
from mnemetric.execute import ImmediateExecutor, ModelCall
from mnemetric.execute.dask import DaskExecutor
from mnemetric.llm import ResponseCache
from mnemetric.longmemeval_v2 import harness
from mnemetric.longmemeval_v2.steps import memory_step
from mnemetric.longmemeval_v2.tokens import O200kCounter
from tests.conftest import ROOT
from tests.support.openai_server import FakeOpenAIServer

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


class DaskSpy(DaskExecutor):
    """The Dask executor, counting the maps it ran (an executor option by _target_, for `v2 run --executor FILE`)."""

    maps = 0

    def map(self, task, items, *, desc="questions"):
        type(self).maps += 1
        return super().map(task, items, desc=desc)


def test_v2_run_on_a_dask_cluster_with_workers_null_writes_the_bytes_of_immediate(tmp_path, capsys, still_clock):
    option = tmp_path / "dask-spy.yaml"  # threads (processes: false) so that the pinned clock holds in the workers
    option.write_text(f"_target_: {__name__}.DaskSpy\n_partial_: true\nname: dask\nworkers: null\n"
                      "processes: false\ngrace_seconds: 30\nshard: null\naddress: null\n", encoding="utf-8")
    _v2_run(capsys, tmp_path / "immediate")
    DaskSpy.maps = 0
    _v2_run(capsys, tmp_path / "dask", "--executor", str(option))
    assert DaskSpy.maps == 2  # one map per domain: workers null (or an address) runs on the cluster too
    assert _files(tmp_path / "immediate") == _files(tmp_path / "dask")


class CallingMemory:
    """A picklable memory that asks a model in its query through an executor it opens where it runs (a worker
    process when mapped), over a response cache of its own run (``cache``)."""

    name = "calling"

    def __init__(self, base_url: str, cache: str):
        self.base_url, self.cache, self.n = base_url, cache, 0

    def insert(self, trajectory) -> None:
        self.n += 1

    def query(self, text, image=None):
        call = ModelCall.chat(role="memory", model="gpt-4o-mini", base_url=self.base_url,
                              messages=[{"role": "user", "content": f"{self.n} trajectories; {text}"}])
        with ImmediateExecutor({}, progress=False, cache=ResponseCache(self.cache)) as ex:
            return [{"type": "text", "value": ex.run([call], progress=False)[0].text}]


def test_the_memory_side_calls_count_the_same_on_1_worker_2_and_dask(tmp_path, monkeypatch):
    from mnemetric.longmemeval_v2.validate import haystack_path

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    runs = {}
    with FakeOpenAIServer() as server:
        def measure(tag, mapper):
            factory = functools.partial(CallingMemory, server.base_url, str(tmp_path / f"{tag}.sqlite"))
            with mapper:
                runs[tag] = memory_step(SAMPLE, haystack_path(SAMPLE, "medium"), ("web", "enterprise"), factory,
                                        counter=O200kCounter(), max_tokens=2000, system="calling", mapper=mapper)

        pool = Spy(workers=2, progress=False)
        measure("one", ImmediateExecutor(workers=1, progress=False))
        measure("two", pool)
        measure("dask", DaskExecutor(workers=2, progress=False))  # worker processes: the task is pickled
    assert pool.mapped == 2  # one map per domain (medium: a memory per question)
    (rows, one), (two_rows, two), (dask_rows, dask) = runs["one"], runs["two"], runs["dask"]
    assert rows == two_rows == dask_rows and rows
    side = {tag: {d: t.to_record() for d, t in lat.memory_side.items()} for tag, (_, lat) in runs.items()}
    assert side["one"]["web"]["requests_sent"] == 7 and side["one"]["web"]["prompt_tokens"] > 0
    assert side["one"] == side["two"] == side["dask"]  # each run cold on its own cache: the same calls, counted
    assert one.cache_served == two.cache_served == dask.cache_served


def _stage_files(ws: Path) -> dict[str, bytes]:
    """The V2 stages' tracked outputs: the step files and the metrics (no measured latency in them)."""
    files = [*sorted((ws / "data" / "v2-runs").glob("*")), ws / "metrics" / "v2.json", ws / "metrics" / "run-v2.json"]
    return {p.relative_to(ws).as_posix(): p.read_bytes() for p in files if p.is_file()}


def test_the_v2_stages_on_dask_write_the_bytes_of_immediate(tmp_path, monkeypatch):
    """Stage v2_memory with -S executor=dask (workers null: the LocalCluster's processes) maps the medium haystack's
    per-question memories on the cluster; every step file and metrics file is immediate's."""
    from mnemetric.stages import v2_check, v2_memory, v2_metrics, v2_prepare, v2_read
    from tests.longmemeval_v2.test_selection import _stage_workspace

    got = {}
    for tag, overrides in (("immediate", ()), ("dask", ("executor=dask", f"executor._target_={__name__}.DaskSpy"))):
        ws, params = _stage_workspace(tmp_path / tag, monkeypatch, "v2.haystack=medium", *overrides)
        assert params["executor"]["workers"] is None
        DaskSpy.maps = 0
        for stage in (v2_prepare, v2_memory, v2_read, v2_check, v2_metrics):
            stage.main()
        assert DaskSpy.maps == (2 if tag == "dask" else 0)
        got[tag] = _stage_files(ws)
    assert got["immediate"] == got["dask"]
    assert {"data/v2-runs/memory.jsonl", "data/v2-runs/check.jsonl", "metrics/v2.json",
            "metrics/run-v2.json"} <= set(got["dask"])
