"""Many experiments at once, safely: DVC's queue runs each in its own temporary workspace.

Measured before: two `dvc exp run` in one workspace at once — the second rewrote params.yaml while the
first was running; the first's judge stage then ran the other judge. The README now says to run many
experiments with `dvc exp run --queue` + `dvc queue start -j N`; this test runs two queued experiments
with 2 workers against the same LLM cache and a local OpenAI-compatible server, and checks both results
and that no request was sent twice (the two experiments share most reader and judge requests).
"""

from __future__ import annotations

import collections
import json
import time

import pytest

from tests.support.openai_server import FakeOpenAIServer
from tests.support.standin_evaluate_qa import write_standin

pytestmark = pytest.mark.e2e


def reply(messages):
    text = messages[-1]["content"]
    if text.startswith("Grading job"):
        return "Yes." if "Miso" in text else "no"
    return "Based on the sessions, the answer is Miso."


def _wait_for_queue(repo, env, names: tuple[str, ...], timeout=900) -> str:
    """Wait until nothing is queued or running; return `dvc queue status`. Between the `dvc queue status` calls
    (each a dvc process, seconds of CPU taken from the experiments on a 2-core machine) it watches the cheap
    sign of success, every named experiment's ref under refs/exps; a failure shows at the next status call."""
    deadline = last_status = time.monotonic()
    deadline += timeout
    while time.monotonic() < deadline:
        refs = repo.run("git", "for-each-ref", "--format=%(refname)", "refs/exps").stdout.split()
        done = all(any(r.endswith(f"/{name}") for r in refs) for name in names)
        if time.monotonic() - last_status >= (2 if done else 15):  # done: the workers are finishing
            status, last_status = repo.dvc("queue", "status", env=env).stdout, time.monotonic()
            if "Running" not in status and "Queued" not in status:
                return status
        time.sleep(0.5)
    raise AssertionError(f"queue did not finish in {timeout}s:\n{repo.dvc('queue', 'status', env=env).stdout}")


def _exp_file(repo, name: str, path: str) -> dict:
    refs = repo.run("git", "for-each-ref", "--format=%(refname)", "refs/exps").stdout.split()
    match = [r for r in refs if r.endswith(f"/{name}")]
    assert len(match) == 1, refs
    return json.loads(repo.run("git", "show", f"{match[0]}:{path}").stdout)


def test_two_queued_experiments_with_two_workers_share_the_cache_and_send_each_request_once(committed_repro, tmp_path):
    dvc_repo = committed_repro  # the committed sample run: each queued experiment reruns what its params change
    sha = write_standin(tmp_path / "LongMemEval")
    common = ["-S", "reader=openai", "-S", "judge=upstream-gpt-4o", "-S", "suite=development",
              "-S", f"judge.longmemeval_dir={tmp_path / 'LongMemEval'}", "-S", f"judge.evaluate_qa_sha256={sha}"]
    with FakeOpenAIServer(reply=reply, model_map={"gpt-4o-2024-08-06": "gpt-4o-2024-08-06"}, latency=0.05) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test",
               "MNEMETRIC_CACHE_DIR": str(tmp_path / "shared-cache")}
        # each up to stage qa_metrics (reader and judge, the qa detail read below): the manifests, inventory and
        # report after it send no request
        dvc_repo.dvc("exp", "run", "--queue", "-n", "bm25", *common, "qa_metrics", env=env)
        dvc_repo.dvc("exp", "run", "--queue", "-n", "bm25up", *common, "-S", "memory=bm25-upstream", "qa_metrics",
                     env=env)
        dvc_repo.dvc("queue", "start", "-j", "2", env=env)
        status = _wait_for_queue(dvc_repo, env, ("bm25", "bm25up"))
        assert status.count("Success") == 2, status
        bodies = collections.Counter(server.keys())
    assert bodies and max(bodies.values()) == 1, [b for b, n in bodies.items() if n > 1][:3]
    for name, memory in (("bm25", "bm25"), ("bm25up", "bm25-upstream")):
        qa = _exp_file(dvc_repo, name, "metrics/detail/qa.json")
        assert qa["reader"] == "openai" and qa["memory"] == memory
        assert qa["judge"]["models"] == ["gpt-4o-2024-08-06"] and qa["n"] > 0


def test_queued_v2_experiments_bring_back_their_latency_measured_or_carried(committed_repro):
    """metrics/v2-latency.json under `dvc exp run --queue` + `dvc queue start` (each experiment in a temporary
    workspace of its own, where the untracked latency sidecar of the baseline is absent): one experiment changes the
    memory, so v2_memory reruns in the queue's workspace and the file holds that run's own measurement; the other
    changes only the checker, so v2_metrics carries the committed measurement of the same memory rows (persist).
    Both come back with their experiment, and `dvc exp show` lists them."""
    env = {"OPENAI_API_KEY": ""}  # the bundled V2 sample, offline
    base = committed_repro.json("metrics/v2-latency.json")
    assert base["measured"] is True and base["memory"] != "none"
    committed_repro.dvc("exp", "run", "--queue", "-n", "v2none", "-S", "v2/memory=none", "v2_metrics", env=env)
    committed_repro.dvc("exp", "run", "--queue", "-n", "v2lexical", "-S", "v2.checker.name=offline-lexical",
                        "v2_metrics", env=env)
    committed_repro.dvc("queue", "start", "-j", "2", env=env)
    status = _wait_for_queue(committed_repro, env, ("v2none", "v2lexical"))
    assert status.count("Success") == 2, status
    none = _exp_file(committed_repro, "v2none", "metrics/v2-latency.json")
    assert none["memory"] == "none" and none["measured"] is True and none["source"]["carried"] is False
    assert none["source"]["memory_rows_sha256"] != base["source"]["memory_rows_sha256"]
    assert none["query_seconds"]["combined"]["n"] == 14 and none["query_seconds"]["combined"]["avg_seconds"] > 0
    assert none["cache"] == {"timed_cache_served": 0, "warm": False}
    assert _exp_file(committed_repro, "v2none", "metrics/v2.json")["settings"]["memory"] == "none"
    lexical = _exp_file(committed_repro, "v2lexical", "metrics/v2-latency.json")
    assert lexical["source"] == {**base["source"], "carried": True} and lexical["measured"] is True
    assert lexical["query_seconds"] == base["query_seconds"] and lexical["machine"] == base["machine"]
    assert _exp_file(committed_repro, "v2lexical", "metrics/v2.json")["settings"]["checker"] == "offline-lexical"
    shown = json.loads(committed_repro.dvc("exp", "show", "--json", env=env).stdout)
    latency = {}
    for baseline in shown:
        for exp in baseline.get("experiments") or []:
            for rev in exp.get("revs") or []:
                data = (rev.get("data") or {}).get("metrics", {}).get("metrics/v2-latency.json", {}).get("data")
                if rev.get("name") in ("v2none", "v2lexical") and data:
                    latency[rev["name"]] = data["query_seconds"]["combined"]["avg_seconds"]
    assert latency == {"v2none": none["query_seconds"]["combined"]["avg_seconds"],
                       "v2lexical": base["query_seconds"]["combined"]["avg_seconds"]}, latency
