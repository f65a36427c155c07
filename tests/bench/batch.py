"""Live vs batch: the same chat calls through the immediate executor and through the Batch-API executor, against
the loopback server (tests/support/openai_server.py, its Files and Batches API: tests/support/batch_server.py).

    python tests/bench/run.py --only batch [--questions N] [--latency-ms MS]

Each executor gets its own empty response cache and ledger. Measured: wall seconds, requests sent live, requests
the server ran in batches, the cost of the work (usd; the price table's ``batch_discount`` is OpenAI's 0.5), and a
rerun of each on its own cache (must send 0). The batch server moves one state per poll (poll_interval 0.01 s),
so its wall time is the client's overhead (upload, poll, download, cache writes), not OpenAI's turnaround
(up to 24 h). ``kill_9``: a run killed with SIGKILL in each batch state, resumed, then rerun
(tests/support/batch_kill.py): the requests paid twice and the rerun's requests, both 0 when the ledger works.
Not a pytest module.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _once(make, calls) -> tuple[float, Any, Any]:
    with make() as ex:
        start = time.perf_counter()
        out = ex.run(calls)
        return time.perf_counter() - start, out, ex.usage


def bench_batch(questions: int = 500, latency_ms: int = 100) -> dict[str, Any]:
    from mnemetric.execute import ImmediateExecutor
    from mnemetric.execute.batch import BatchExecutor
    from mnemetric.llm.cache import ResponseCache
    from tests.support.batch_run import PRICES, calls
    from tests.support.openai_server import FakeOpenAIServer

    os.environ.setdefault("OPENAI_API_KEY", "sk-bench-batch")
    llm = {"prices": PRICES}
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAIServer(latency=latency_ms / 1000.0) as server:
        server.batch.auto = True
        work = calls(server.base_url, questions)
        live_cache, batch_cache = Path(tmp, "live", "c.sqlite3"), Path(tmp, "batch", "c.sqlite3")

        def live():
            return ImmediateExecutor(llm, progress=False, cache=ResponseCache(live_cache))

        def batch():
            return BatchExecutor(llm, progress=False, poll_interval=0.01, cache=ResponseCache(batch_cache),
                                 ledger=str(Path(tmp, "batch", "ledger.sqlite3")))

        live_s, live_out, live_usage = _once(live, work)
        sent_live = server.count
        batch_s, batch_out, batch_usage = _once(batch, work)
        _, _, live_again = _once(live, work)
        _, _, batch_again = _once(batch, work)
        live_usd, batch_usd = live_usage.work.to_dict()["usd"], batch_usage.work.to_dict()["usd"]
        return {"command": f"python tests/bench/run.py --only batch --questions {questions} --latency-ms {latency_ms}",
                "requests": questions, "server_latency_ms": latency_ms,
                "live": {"seconds": round(live_s, 3), "requests_sent": sent_live, "usd": live_usd},
                "batch": {"seconds": round(batch_s, 3), "requests_in_batches": len(server.batch.submitted),
                          "requests_run": len(server.batch.executed), "usd": batch_usd,
                          "batches": len(server.batch.batches)},
                "cost_ratio_batch_over_live": batch_usd / live_usd if live_usd else None,
                "same_texts": [o.text for o in live_out] == [o.text for o in batch_out],
                "rerun_sent": {"live": live_again.requests_sent, "batch": batch_again.requests_sent},
                "kill_9": bench_kill_9()}


def bench_kill_9(n: int = 20) -> dict[str, Any]:
    """kill -9 of a batch run in each batch state, then a resume and a rerun, each on its own empty cache and
    loopback server (tests/support/batch_kill.py): the requests submitted or run twice (must be 0), and the
    rerun's requests (must be 0)."""
    from tests.support.batch_kill import STATES, resume_after_kill
    from tests.support.openai_server import FakeOpenAIServer

    out: dict[str, Any] = {"requests": n}
    for state in STATES:
        with tempfile.TemporaryDirectory() as tmp, FakeOpenAIServer() as server:
            before = os.environ.get("MNEMETRIC_CACHE_DIR")
            os.environ["MNEMETRIC_CACHE_DIR"] = tmp  # the forked run's and the resume's cache and ledger
            try:
                out[state] = resume_after_kill(server, Path(tmp), n, state)
            finally:
                if before is None:
                    os.environ.pop("MNEMETRIC_CACHE_DIR", None)
                else:
                    os.environ["MNEMETRIC_CACHE_DIR"] = before
    out["paid_twice"] = sum(out[s]["submitted_twice"] + out[s]["run_twice"] for s in STATES)
    return out


if __name__ == "__main__":
    import json

    print(json.dumps(bench_batch(int(sys.argv[1]) if len(sys.argv) > 1 else 500), indent=2))
