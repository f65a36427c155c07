"""Workers benchmark (issue 16 items 3 and 5): bm25-upstream retrieval on 1 vs 2 pool workers, and on a Dask
LocalCluster (2 worker processes, one thread each) vs the pool.

    python tests/bench/workers.py [questions] [sessions] [repeats]    # prints JSON; default 500, 48 and 1

A synthetic S-shaped set (mnemetric.longmemeval.sample.generate_synthetic) is written and adapted (session-v3)
in a temporary folder; each configuration runs in a fresh interpreter (this file with --worker), which starts
its executor (for Dask: the LocalCluster), then times ``write_retrieval`` over every question at session
granularity (``retrieve_s``: reading the adapted records, retrieval, contexts, writing both files); ``start_s``
is the executor's start (the cluster's, for Dask) and ``wall_s`` the whole subprocess. The logs' sha256 must
be equal across configurations (byte-identical outputs). Not a pytest module.
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = {"pool-1": ("immediate", 1), "pool-2": ("immediate", 2), "dask-2": ("dask", 2)}


def _worker(mode: str, adapted: Path, out: Path) -> dict[str, Any]:
    import yaml

    from mnemetric.config import build
    from mnemetric.execute import build_executor
    from mnemetric.longmemeval.adapted import read_adapted_lines
    from mnemetric.longmemeval.retrieve import write_retrieval

    option, workers = CONFIGS[mode]
    section = yaml.safe_load((ROOT / "conf" / "executor" / f"{option}.yaml").read_text(encoding="utf-8"))
    memory = build(yaml.safe_load((ROOT / "conf" / "memory" / "bm25-upstream.yaml").read_text(encoding="utf-8")),
                   "bm25-upstream")
    t0 = time.perf_counter()
    executor = build_executor({**section, "workers": workers}, {}, progress=False)
    if option == "dask":
        executor.dask_client  # start the LocalCluster before the clock of the retrieval
    t1 = time.perf_counter()
    n = write_retrieval(memory, read_adapted_lines(adapted), granularity="session", k=10, budget=6000, log=out,
                        contexts=out.with_suffix(".ctx.jsonl"), executor=executor)
    t2 = time.perf_counter()
    executor.close()
    return {"questions": n, "start_s": round(t1 - t0, 2), "retrieve_s": round(t2 - t1, 2),
            "sha256": hashlib.sha256(out.read_bytes()).hexdigest()}


def _run(mode: str, adapted: Path, out: Path, cache: Path) -> dict[str, Any]:
    env = {**os.environ, "TQDM_DISABLE": "1", "MNEMETRIC_CACHE_DIR": str(cache)}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", mode, str(adapted), str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{mode} failed:\n{proc.stderr[-4000:]}")
    return {"wall_s": round(time.perf_counter() - t0, 2), **json.loads(proc.stdout.strip().splitlines()[-1])}


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 2)


def bench_workers(questions: int = 500, sessions: int = 48, seed: int = 20241014,
                  repeats: int = 1) -> dict[str, Any]:
    """``repeats`` rounds, each running pool-1, pool-2 and dask-2 in turn: each figure is the median over the rounds,
    and each ratio the median of the rounds' paired ratios (pairing keeps a ratio meaningful when the machine's
    speed drifts between rounds)."""
    from mnemetric.longmemeval.adapt import adapt_file
    from mnemetric.longmemeval.adapted import SessionAdapter
    from mnemetric.longmemeval.sample import generate_synthetic, write_instances

    rounds: list[dict[str, Any]] = []
    shas: set[str] = set()
    with tempfile.TemporaryDirectory(prefix="mnemetric-bench-workers-") as tmp:
        folder = Path(tmp)
        raw, adapted = folder / "synthetic.json", folder / "synthetic.adapted.jsonl"
        write_instances(raw, generate_synthetic(questions, sessions, seed))
        adapt_file(SessionAdapter("session-v3", "mnemetric.longmemeval-session/v3"), raw, adapted)
        for k in range(max(1, repeats)):
            runs = {mode: _run(mode, adapted, folder / f"{mode}.jsonl", folder / "cache") for mode in CONFIGS}
            shas |= {r.pop("sha256") for r in runs.values()}
            print(f"  round {k + 1}: {runs}", file=sys.stderr, flush=True)
            rounds.append(runs)
    figures = {mode: {"questions": rounds[0][mode]["questions"],
                      **{key: _median([r[mode][key] for r in rounds]) for key in ("wall_s", "start_s", "retrieve_s")},
                      "retrieve_s_rounds": [r[mode]["retrieve_s"] for r in rounds]} for mode in CONFIGS}
    speedups = [r["pool-1"]["retrieve_s"] / r["pool-2"]["retrieve_s"] for r in rounds]
    dask_ratios = [r["dask-2"]["retrieve_s"] / r["pool-2"]["retrieve_s"] for r in rounds]
    return {
        "what": "bm25-upstream retrieval (session granularity) over a synthetic S-shaped set: pool of 1 and 2 "
                "worker processes (executor=immediate, executor.workers), and a Dask LocalCluster of 2 worker "
                "processes x 1 thread (executor=dask)",
        "dataset": {"questions": questions, "sessions_per_question": sessions, "seed": seed, "adapter": "session-v3"},
        "rounds": len(rounds),
        "runs": figures,
        "byte_identical": len(shas) == 1,
        "speedup_2_workers_vs_1": _median(speedups),
        "speedup_2_workers_vs_1_rounds": [round(x, 2) for x in speedups],
        "dask_vs_pool_2": _median(dask_ratios),
        "dask_vs_pool_2_rounds": [round(x, 2) for x in dask_ratios],
        "targets": {"speedup_2_workers_vs_1": ">= 1.7 on an idle 2-core machine", "dask_vs_pool_2": "<= 1.3"},
        "notes": "retrieve_s excludes the interpreter start and (start_s) the executor's start: a LocalCluster "
                 "takes start_s once per run; wall_s is the whole subprocess. Figures are medians over the rounds, "
                 "ratios the medians of each round's paired ratio",
    }


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        print(json.dumps(_worker(sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4]))))
    else:
        sys.path.insert(0, str(ROOT))
        args = dict(zip(("questions", "sessions", "repeats"), (int(x) for x in sys.argv[1:4])))
        print(json.dumps(bench_workers(**args), indent=2))
