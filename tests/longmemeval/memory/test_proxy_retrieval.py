"""V1 retrieval with a memory system that wraps a third-party library (UsesModelProxy): the harness serves the
model proxy around its questions, the library (tests/support/proxy_memory.py: the openai SDK, nothing of
Mnemetric's LLM layer) reaches the loopback fake OpenAI server through it, and the cost lands per phase."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mnemetric.cli.data import load_adapter
from mnemetric.errors import ConfigError
from mnemetric.execute import ImmediateExecutor
from mnemetric.llm.budget import BudgetExceeded
from mnemetric.llm.memory_cost import finish_memory_run, serving, write_memory_cost
from mnemetric.llm.proxy import NoModelProxy
from mnemetric.llm.proxy_ledger import CLOCK_DATE, RANDOM_ID
from mnemetric.llm.run_log import read_run_log
from mnemetric.longmemeval.instance import iter_instances
from mnemetric.longmemeval.retrieve import write_retrieval
from tests.conftest import ROOT
from tests.support.loopback import serve_isolated
from tests.support.proxy_memory import ToyLibraryMemory
from tests.test_cli_retrieval import cli, ok

SAMPLE = ROOT / "data" / "sample" / "longmemeval_sample.json"
LLM = {"max_concurrency": 2, "timeout": 10, "max_attempts": 2, "non_answer_attempts": 1,
       "prices": {"toy-chat": {"input": 1.0, "output": 2.0}, "toy-embed": {"input": 0.1, "output": 0.0}}}


@pytest.fixture()
def server(tmp_path, monkeypatch):
    monkeypatch.setenv("MNEMETRIC_RUN_LOG", str(tmp_path / "run-log.jsonl"))
    yield from serve_isolated(tmp_path, monkeypatch, "sk-test-REAL")


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> Path:
    """Two questions of the bundled sample with the smallest haystacks (12 sessions each)."""
    path = tmp_path_factory.mktemp("data") / "two.json"
    sample = json.loads(SAMPLE.read_text(encoding="utf-8"))
    path.write_text(json.dumps([sample[1], sample[9]]), encoding="utf-8")
    return path


def _records(dataset: Path):
    adapter = load_adapter("session-v3")
    return [adapter.adapt(inst, i) for i, inst in enumerate(iter_instances(dataset))]


def _run(memory, records, out: Path, base_url: str, **llm):
    with ImmediateExecutor({**LLM, **llm}, progress=False) as ex:
        with serving(True, ex, {"base_url": base_url}, memory.name) as proxy:
            write_retrieval(memory, records, granularity="session", k=5, budget=500, log=out / "log.jsonl",
                            executor=ex)
        finish_memory_run("retrieve", memory.name, proxy)
        write_memory_cost(out / "memory_cost.json", memory.name, proxy)
    return proxy


def test_a_rerun_of_an_unchanged_experiment_sends_no_request(server, small, tmp_path):
    records = _records(small)
    sessions = sum(len(r.memory.sessions) for r in records)
    cold, warm = tmp_path / "cold", tmp_path / "warm"
    first = _run(ToyLibraryMemory(), records, cold, server.base_url)
    sent = server.count
    assert sent == 2 * sessions + len(records) > 0  # chat + embeddings per session, one embedding per query
    second = _run(ToyLibraryMemory(), records, warm, server.base_url)
    assert server.count == sent  # nothing sent
    assert second.ledger.this_run()["total"]["hit_rate"] == 1.0 and second.ledger.sent == 0
    for name in ("log.jsonl", "memory_cost.json"):
        assert (cold / name).read_bytes() == (warm / name).read_bytes(), name
    cost = json.loads((warm / "memory_cost.json").read_text())
    assert cost["uses_model_proxy"] is True and cost["replayable"] is True and cost["volatile"] == []
    phases = cost["systems"]["toy-library"]
    assert phases["ingest"]["requests"] == {"chat": sessions, "embeddings": sessions}
    assert phases["query"]["requests"] == {"chat": 0, "embeddings": len(records)}
    assert set(phases) == {"ingest", "query"}  # nothing outside the harness's phases
    assert cost["requests"] == {"chat": sessions, "embeddings": sessions + len(records)}
    usage = cost["usage"]
    assert usage["per_model"]["toy-chat"]["responses"] == sessions and usage["usd"] > 0
    assert "seconds" not in json.dumps(cost) and "hit_rate" not in json.dumps(cost)  # run facts stay untracked
    logged = [e for e in read_run_log() if e["stage"] == "retrieve-memory"]
    assert [e["memory_proxy"]["total"]["hit_rate"] for e in logged] == [0.0, 1.0]
    assert logged[-1]["memory_proxy"]["systems"]["toy-library"]["ingest"]["seconds"] >= 0


@pytest.mark.parametrize(("option", "kind"), [("clock", CLOCK_DATE), ("random_ids", RANDOM_ID)])
def test_prompts_that_vary_mark_the_run_not_reproducible_by_replay(server, small, tmp_path, capsys, option, kind):
    records = _records(small)[:1]
    _run(ToyLibraryMemory(**{option: True}), records, tmp_path / "a", server.base_url)
    sent = server.count
    proxy = _run(ToyLibraryMemory(**{option: True}), records, tmp_path / "b", server.base_url)
    cost = json.loads((tmp_path / "b" / "memory_cost.json").read_text())
    assert cost["replayable"] is False and cost["volatile"] == [kind]
    assert cost == json.loads((tmp_path / "a" / "memory_cost.json").read_text())  # the verdict itself is stable
    rate = proxy.ledger.this_run()["total"]["hit_rate"]
    if option == "random_ids":
        assert server.count > sent and rate < 1.0  # the chat requests missed the cache: measured, reported
    assert "NOT reproducible by replay" in capsys.readouterr().err


def test_the_budget_stops_retrieval_and_no_output_is_half_written(server, small, tmp_path):
    with pytest.raises(BudgetExceeded, match="max_requests=3"):
        _run(ToyLibraryMemory(), _records(small), tmp_path, server.base_url, budget={"max_requests": 3})
    assert server.count == 3
    assert not (tmp_path / "log.jsonl").exists()


def test_a_proxy_memory_without_a_proxy_is_a_clear_error(small, tmp_path):
    with pytest.raises(NoModelProxy, match="no model proxy is running: this memory system needs one"):
        write_retrieval(ToyLibraryMemory(), _records(small), granularity="session", k=5, budget=500,
                        log=tmp_path / "log.jsonl")
    assert not (tmp_path / "log.jsonl").exists()


def test_an_unknown_memory_llm_setting_is_named(tmp_path):
    with pytest.raises(ConfigError, match="memory_llm.ports"):
        with serving(True, None, {"ports": 1}, "x"):
            pass


def test_mnemetric_retrieve_serves_the_proxy_and_writes_the_cost(server, small, tmp_path):
    conf = tmp_path / "toy.yaml"
    conf.write_text("_target_: tests.support.proxy_memory.ToyLibraryMemory\nname: toy-library\n"  # priced models:
                    "chat_model: gpt-4o-mini-2024-07-18\nembed_model: gpt-4o-mini-2024-07-18\n", encoding="utf-8")
    env = {"OPENAI_BASE_URL": server.base_url, "MNEMETRIC_RUN_LOG": str(tmp_path / "run-log.jsonl")}
    args = ("retrieve", small, "--memory", conf, "--granularity", "turn", "--conf", tmp_path / "no-conf")
    proc = ok(cli(*args, "--out", tmp_path / "a.jsonl", "--memory-cost", tmp_path / "a.json", env=env))
    assert "through the model proxy" in proc.stderr and "hit rate 0.0%" in proc.stderr
    sent = server.count
    proc = ok(cli(*args, "--out", tmp_path / "b.jsonl", "--memory-cost", tmp_path / "b.json", env=env))
    assert server.count == sent and "hit rate 100.0%" in proc.stderr
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()


def test_retrieve_shards_memory_costs_merge_into_the_unsharded_record(server, small, tmp_path):
    """`retrieve --shard K/2 --memory-cost` per shard, then `merge --memory-cost`: the log is the unsharded bytes and
    the record its requests and tokens exactly (each question's haystack is its own: summed), dollars up to float
    rounding; a count that is not one per part, a record of another run (bound to other bytes) or of an unsharded
    one, or the flag on parts that are not retrieve's, is refused."""
    from tests.longmemeval_v2.test_stage_shards import _usd, _without_usd

    conf = tmp_path / "toy.yaml"
    conf.write_text("_target_: tests.support.proxy_memory.ToyLibraryMemory\nname: toy-library\n"
                    "chat_model: gpt-4o-mini-2024-07-18\nembed_model: gpt-4o-mini-2024-07-18\n", encoding="utf-8")
    env = {"OPENAI_BASE_URL": server.base_url, "MNEMETRIC_RUN_LOG": str(tmp_path / "run-log.jsonl")}
    args = ("retrieve", small, "--memory", conf, "--granularity", "session", "--conf", tmp_path / "no-conf")
    ok(cli(*args, "--out", tmp_path / "whole.jsonl", "--memory-cost", tmp_path / "whole.json", env=env))
    for k in (1, 2):
        ok(cli(*args, "--shard", f"{k}/2", "--out", tmp_path / f"p{k}.jsonl", "--memory-cost", tmp_path / f"c{k}.json",
               env=env))
    parts = (tmp_path / "p2.jsonl", tmp_path / "p1.jsonl")
    proc = ok(cli("merge", "--out", tmp_path / "m.jsonl", *parts, "--memory-cost", tmp_path / "c1.json",
                  tmp_path / "c2.json", env=env))
    assert "memory cost of the 2 part(s)" in proc.stdout
    assert (tmp_path / "m.jsonl").read_bytes() == (tmp_path / "whole.jsonl").read_bytes()
    got = json.loads((tmp_path / "m.jsonl.memory-cost.json").read_text())
    want = json.loads((tmp_path / "whole.json").read_text())
    assert got["requests"]["chat"] > 0 and got["usage"]["usd"] > 0
    assert [json.loads((tmp_path / f"c{k}.json").read_text())["requests"] for k in (1, 2)] != [want["requests"]] * 2
    assert _without_usd(got) == _without_usd(want) and _usd(got) == pytest.approx(_usd(want), rel=1e-12)
    assert json.loads((tmp_path / "c1.json").read_text())["part"]["shard"] == "1/2" and "part" not in want
    ok(cli(*args, "--shard", "1/2", "--granularity", "turn", "--out", tmp_path / "other.jsonl", "--memory-cost",
           tmp_path / "other.json", env=env))  # another run's shard 1: its record is bound to other bytes
    nowhere = (parts[0], tmp_path / "nowhere.jsonl")  # a PART that does not exist: named, no traceback
    for given, extra, named in ((parts, (tmp_path / "c1.json",), "1 record(s) for 2 part(s)"),
                                (parts, (tmp_path / "other.json", tmp_path / "c2.json"), "none of the PARTs given"),
                                (parts, (tmp_path / "whole.json", tmp_path / "c2.json"), "not a shard's record"),
                                (nowhere, (tmp_path / "c1.json", tmp_path / "c2.json"), "nowhere.jsonl"),
                                (parts, (), "--memory-cost-out")):
        flags = ("--memory-cost", *extra) if extra else ("--memory-cost-out", tmp_path / "x.json")
        proc = cli("merge", "--out", tmp_path / "bad.jsonl", *given, *flags, env=env)
        assert proc.returncode != 0 and named in proc.stderr and "Traceback" not in proc.stderr
        assert not (tmp_path / "bad.jsonl").exists()
