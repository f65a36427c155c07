"""metrics/v2-latency.json and what feeds it: the call tally of timed queries (a warm cache is seen and marks the
run), memory build time and the memory's own model calls, the LAFS gate, carrying a measurement over."""

from __future__ import annotations

import pytest

from mnemetric.execute import ModelCall
from mnemetric.llm.tally import CallTally, tallying
from mnemetric.longmemeval_v2.data_custody import DataCheck
from mnemetric.longmemeval_v2.lafs import lafs_summary
from mnemetric.longmemeval_v2.latency import SCHEMA, latency_record, machine, read_previous, write_latency
from mnemetric.longmemeval_v2.steps import Latencies, memory_step
from mnemetric.longmemeval_v2.tokens import O200kCounter
from mnemetric.longmemeval_v2.validate import haystack_path
from tests.conftest import ROOT
from tests.longmemeval_v2.executing import executor
from tests.support.openai_server import FakeOpenAIServer

SAMPLE = ROOT / "data" / "sample-v2"


class AskingMemory:
    """A memory whose query asks a model (through a real executor) and returns its reply as one text item."""

    name = "asking"

    def __init__(self, ex, base_url):
        self.ex, self.base_url, self.n = ex, base_url, 0

    def insert(self, trajectory) -> None:
        self.n += 1

    def query(self, text, image=None):
        call = ModelCall.chat(role="memory", model="gpt-4o-mini", base_url=self.base_url,
                              messages=[{"role": "user", "content": f"{self.n} trajectories; {text}"}])
        return [{"type": "text", "value": self.ex.run([call], progress=False)[0].text}]


def _measure(tmp_path, server):
    ex = executor(tmp_path)  # one response cache for both runs (tmp_path/c.sqlite)
    try:
        return memory_step(SAMPLE, haystack_path(SAMPLE, "small"), ("web", "enterprise"),
                           lambda: AskingMemory(ex, server.base_url), counter=O200kCounter(), max_tokens=200_000,
                           system="asking")
    finally:
        ex.close()


def test_a_warm_cache_serving_timed_calls_is_seen_and_the_memory_side_work_is_the_same(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeOpenAIServer() as server:
        rows, cold = _measure(tmp_path, server)
        sent = server.count
        _, warm = _measure(tmp_path, server)
        assert server.count == sent == 14  # the warm run sent nothing
    assert set(cold.cache_served.values()) == {0} and set(warm.cache_served.values()) == {1}
    assert {d: t.requests_sent for d, t in cold.memory_side.items()} == {"web": 7, "enterprise": 7}
    assert {d: (t.requests_sent, t.cache_served) for d, t in warm.memory_side.items()} == {"web": (0, 7),
                                                                                        "enterprise": (0, 7)}
    for d in ("web", "enterprise"):  # the cost of the work is the same cold or warm
        assert cold.memory_side[d].prompt_tokens == warm.memory_side[d].prompt_tokens > 0
        assert cold.memory_side[d].work_responses == warm.memory_side[d].work_responses == 7
    # the sample shares one haystack per domain: one build each, timed; the other questions reuse it
    assert sorted(1 for s in cold.build.values() if s > 0) == [1, 1]
    assert all(r.tokens_by_type["text"]["items"] == 1 and r.tokens_by_type["image"] == {"items": 0, "tokens": 0}
               for r in rows)
    doc = latency_record(option="sample", memory="asking", memory_sha256="a" * 64, domains=("web", "enterprise"),
                         latencies=warm, previous=None, accuracy=0.5, tier="small", data=None, official=True)
    assert doc["cache"] == {"timed_cache_served": 14, "warm": True} and doc["official"] is False
    assert doc["lafs"]["computed"] is False and doc["lafs"]["reason"].startswith("warm: a cache served 14")


def test_tallies_nest_and_count_nothing_outside(tmp_path):
    from mnemetric.llm.tally import note

    note(requests_sent=1)  # no open tally: nothing to count into
    with tallying() as outer:
        note(cache_served=2)
        with tallying() as inner:
            note(requests_sent=1, usd=0.5)
    assert (outer.cache_served, outer.requests_sent, outer.usd) == (2, 1, 0.5)
    assert (inner.cache_served, inner.requests_sent) == (0, 1)
    assert CallTally.from_record(outer.to_record()) == outer


def test_a_workers_tally_comes_back_with_its_result_and_counts_once_where_it_is_merged():
    """What a pool or Dask worker does (:func:`tallied`: a fresh context, even in this very thread) and what the
    caller does with the record (:func:`merge`): the calls count once, in the tallies open where it is merged."""
    from mnemetric.llm.tally import merge, note, tallied

    def work():
        note(requests_sent=2, prompt_tokens=30, usd=0.25)
        return "done"

    with tallying() as outer:
        result, record = tallied(work)
        assert outer.requests_sent == 0  # an inherited open tally does not count the worker's calls
        merge(record)
        merge(record)  # two results, two records
    assert result == "done" and (outer.requests_sent, outer.prompt_tokens, outer.usd) == (4, 60, 0.5)
    merge(record)  # no tally open: nothing to count into


def _latencies() -> Latencies:
    lat = Latencies()
    for i, s in enumerate((0.1, 0.2, 0.3)):
        lat.seconds["web", f"w{i}"] = (s, 0.0)
        lat.build["web", f"w{i}"] = 0.5 if i == 0 else 0.0
    for i, s in enumerate((1.0, 3.0)):
        lat.seconds["enterprise", f"e{i}"] = (s, 0.0)
        lat.build["enterprise", f"e{i}"] = 0.25
    return lat


def _verified() -> DataCheck:
    return DataCheck(custody_file="data/custody/v2-small.json", custody_sha256="e" * 64, files_sha256="f" * 64,
                     files_checked=3, sha256_verified=True)


def test_latency_stats_and_the_lafs_gate(tmp_path):
    kw = dict(option="small", memory="bm25", memory_sha256="b" * 64, domains=("web", "enterprise"), accuracy=0.62,
              tier="small", official=False)
    doc = latency_record(latencies=_latencies(), previous=None, data=None, **kw)
    q = doc["query_seconds"]
    assert q["web"] == {"n": 3, "avg_seconds": pytest.approx(0.2), "p50_seconds": 0.2, "p95_seconds": 0.3,
                        "max_seconds": 0.3, "total_seconds": pytest.approx(0.6)}
    assert q["combined"]["n"] == 5 and q["combined"]["avg_seconds"] == pytest.approx(4.6 / 5)
    assert q["combined"]["p50_seconds"] == 0.3 and q["combined"]["max_seconds"] == 3.0
    assert doc["memory_build"] == {"web": {"builds": 1, "total_seconds": 0.5},
                                   "enterprise": {"builds": 2, "total_seconds": 0.5}}
    assert set(doc["machine"]) == {"system", "machine", "cpu_model", "cpu_count", "python", "implementation"}
    assert doc["machine"] == machine() and "node" not in str(doc["machine"])
    assert doc["lafs"]["computed"] is False and "not the verified official tier" in doc["lafs"]["reason"]
    assert doc["lafs"]["lafs_gain"] is None  # null, with the reason
    one = latency_record(latencies=_latencies(), previous=None, data=_verified(), **{**kw, "domains": ("web",)})
    assert one["query_seconds"]["combined"] is None and "needs both domains" in one["lafs"]["reason"]
    ok = latency_record(latencies=_latencies(), previous=None, data=_verified(), **kw)
    expected = lafs_summary("small", [(62.0, q["combined"]["avg_seconds"], "x")])
    assert ok["lafs"]["computed"] and ok["lafs"]["lafs_gain"] == expected["lafs_gain"]
    assert ok["lafs"]["accuracy_percentage_points"] == 62.0 and ok["lafs"]["reason"] is None


def test_a_measurement_is_carried_only_for_the_same_memory_rows(tmp_path):
    kw = dict(option="small", memory="bm25", domains=("web", "enterprise"), accuracy=0.62, tier="small",
              data=_verified(), official=True)
    first = latency_record(memory_sha256="c" * 64, latencies=_latencies(), previous=None, **kw)
    write_latency(tmp_path / "v2-latency.json", first)
    previous = read_previous(tmp_path / "v2-latency.json")
    assert previous["schema"] == SCHEMA and previous["official"] is True
    carried = latency_record(memory_sha256="c" * 64, latencies=None, previous=previous, **{**kw, "accuracy": 0.7})
    assert carried["source"] == {"memory_rows_sha256": "c" * 64, "carried": True}
    assert carried["query_seconds"] == first["query_seconds"] and carried["lafs"]["accuracy_percentage_points"] == 70.0
    other = latency_record(memory_sha256="d" * 64, latencies=None, previous=previous, **kw)
    assert other["measured"] is False and other["query_seconds"] is None and other["official"] is False
    assert "dvc repro --force --single-item v2_memory v2_metrics" in other["not_measured_reason"]
    assert other["lafs"]["computed"] is False and other["lafs"]["reason"].startswith("latency not measured")
    assert read_previous(tmp_path / "absent.json") is None
