"""Judge throughput benchmark: the upstream judge path against a local FakeOpenAIServer.

    python tests/bench/judge.py [questions] [latency_ms] [repeats]   # prints JSON; default 500, 100 and 1

Synthetic questions (all six types plus abstention ids) and hypotheses are built in memory; the
judge templates come from the stand-in evaluate_qa.py (tests/support/standin_evaluate_qa.py),
written to a temporary checkout. Every request waits ``latency_ms`` at the server. Measurements:

* sequential: ``LLMClient(max_concurrency=1)``, one request at a time as upstream evaluate_qa.py
  sends them, with an empty cache;
* concurrent: ``LLMClient(max_concurrency=16)`` with a fresh, empty cache;
* default: ``LLMClient(max_concurrency=<llm.max_concurrency of conf/config.yaml>)``, the shipped default,
  with a fresh, empty cache (issue 16's target: >= 20x sequential at the default settings);
* warm: the concurrent run again on the same cache: nothing may be sent.

Each measurement uses its own temporary cache folder (warm reuses concurrent's, by definition).
Not a pytest module (pytest only collects test_*.py).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # the repository root, so ``tests.support`` imports
    sys.path.insert(0, str(ROOT))

TYPES = ("single-session-user", "single-session-assistant", "multi-session", "temporal-reasoning",
         "knowledge-update", "single-session-preference")
SPEC = {"name": "upstream-gpt-4o", "kind": "upstream", "model": "gpt-4o-2024-08-06",
        "temperature": 0, "max_tokens": 10, "n": 1}
API_KEY = "sk-bench-judge"


def synthetic(questions: int) -> tuple[list[dict], dict]:
    """``questions`` hypotheses and their References (every 10th is an abstention question)."""
    from mnemetric.longmemeval.reference import Reference

    hyps, refs = [], {}
    for i in range(questions):
        qid = f"bench{i:05d}" + ("_abs" if i % 10 == 9 else "")
        refs[qid] = Reference(qid, TYPES[i % len(TYPES)], f"What is fact number {i}?", f"fact {i}")
        hyps.append({"question_id": qid, "hypothesis": f"I think it is fact {i if i % 3 else i + 1}"})
    return hyps, refs


def reply(messages: list[dict]) -> str:
    """A short yes/no verdict, as the real judge (max_tokens 10) gives."""
    return "yes" if len(messages[-1]["content"]) % 2 else "no"


def judge_once(server, prompts, hyps, refs, cache_dir: Path, concurrency: int) -> dict[str, Any]:
    """One judge_upstream pass through a fresh LLMClient (an executor around it) on ``cache_dir``; wall
    time and counters."""
    from mnemetric.execute import ImmediateExecutor
    from mnemetric.longmemeval.judge.run import judge_upstream
    from mnemetric.llm import LLMClient, ResponseCache

    sent_before = server.count
    with ResponseCache(cache_dir / "llm-cache.sqlite3") as cache:
        client = LLMClient(base_url=server.base_url, api_key=API_KEY, max_concurrency=concurrency, cache=cache)
        start = time.perf_counter()
        judged = judge_upstream(hyps, refs, prompts, SPEC | {"base_url": server.base_url},
                                ImmediateExecutor.around(client), "<bench>")
        seconds = time.perf_counter() - start
    assert len(judged) == len(hyps)
    sent = server.count - sent_before
    return {"max_concurrency": concurrency, "seconds": round(seconds, 3),
            "requests_per_s": round(len(hyps) / seconds, 1), "requests_sent": sent,
            "cache_hits": client.stats.cache_hits, "server_max_in_flight": server.max_in_flight}


def default_concurrency() -> int:
    """``llm.max_concurrency`` as shipped (conf/config.yaml)."""
    import yaml

    return int(yaml.safe_load((ROOT / "conf" / "config.yaml").read_text(encoding="utf-8"))["llm"]["max_concurrency"])


def _median(values: list[float]) -> float:
    import statistics

    return round(statistics.median(values), 3)


def bench_judge(questions: int = 500, latency_ms: int = 100, repeats: int = 1) -> dict[str, Any]:
    """Sequential vs concurrent judge throughput, and a warm-cache rerun (see the module doc). ``repeats`` rounds
    of sequential, concurrent and default, each on fresh caches: each run's figures are those of the round with
    the median time, and each speedup the median of the rounds' paired speedups."""
    from mnemetric.longmemeval.judge.upstream_prompts import load_prompt_set
    from tests.support.openai_server import FakeOpenAIServer, _Handler
    from tests.support.standin_evaluate_qa import write_standin

    hyps, refs = synthetic(questions)
    rounds: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="mnemetric-bench-judge-") as tmp:
        tmp = Path(tmp)
        sha = write_standin(tmp / "LongMemEval")
        prompts = load_prompt_set(str(tmp / "LongMemEval"), tmp / "prompt-cache", download=False,
                                  expected_sha256=sha)
        with FakeOpenAIServer(latency=latency_ms / 1000.0, reply=reply) as server:
            for k in range(max(1, repeats)):
                got = {}
                for run, concurrency in (("sequential", 1), ("concurrent", 16), ("default", default_concurrency())):
                    server.max_in_flight = 0
                    got[run] = judge_once(server, prompts, hyps, refs, tmp / f"cache-{run}-{k}", concurrency)
                    assert got[run]["requests_sent"] == questions
                print(f"  round {k + 1}: " + ", ".join(f"{r} {v['seconds']} s" for r, v in got.items()),
                      file=sys.stderr, flush=True)
                rounds.append(got)
            server.max_in_flight = 0
            warm = judge_once(server, prompts, hyps, refs, tmp / "cache-concurrent-0", 16)
    assert warm["requests_sent"] == 0 and warm["cache_hits"] == questions
    figures = {}
    for run in ("sequential", "concurrent", "default"):
        by_time = sorted(rounds, key=lambda r: r[run]["seconds"])
        figures[run] = {**by_time[(len(by_time) - 1) // 2][run],
                       "seconds_rounds": [r[run]["seconds"] for r in rounds]}
    speedup = {run: [r["sequential"]["seconds"] / r[run]["seconds"] for r in rounds]
               for run in ("concurrent", "default")}
    default_x = _median(speedup["default"])
    return {"settings": {"questions": questions, "latency_ms": latency_ms, "model": SPEC["model"],
                         "server": "tests/support/openai_server.py FakeOpenAIServer (in process)",
                         "server_tcp_nodelay": bool(_Handler.disable_nagle_algorithm), "rounds": len(rounds)},
            **figures, "warm": warm,
            "speedup_concurrent_vs_sequential": round(_median(speedup["concurrent"]), 1),
            "speedup_default_vs_sequential": round(default_x, 1),
            "speedup_default_vs_sequential_rounds": [round(x, 1) for x in speedup["default"]],
            "targets": {"default settings >= 20x sequential": default_x >= 20},
            "sequential_overhead_ms_per_request":
                round(figures["sequential"]["seconds"] * 1000 / questions - latency_ms, 1)}


if __name__ == "__main__":
    args = dict(zip(("questions", "latency_ms", "repeats"), (int(a) for a in sys.argv[1:4])))
    print(json.dumps(bench_judge(**args), indent=2))
