"""Workers benchmark (issue 16 items 3 and 5): bm25-upstream retrieval on 1 vs 2 pool workers, and on a Dask
LocalCluster (2 worker processes, one thread each) vs the pool.

    python tests/bench/workers.py [questions] [sessions]     # prints JSON; default 500 and 48

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


def bench_workers(questions: int = 500, sessions: int = 48, seed: int = 20241014) -> dict[str, Any]:
    from mnemetric.longmemeval.adapt import adapt_file
    from mnemetric.longmemeval.adapted import SessionAdapter
    from mnemetric.longmemeval.sample import generate_synthetic, write_instances

    with tempfile.TemporaryDirectory(prefix="mnemetric-bench-workers-") as tmp:
        folder = Path(tmp)
        raw, adapted = folder / "synthetic.json", folder / "synthetic.adapted.jsonl"
        write_instances(raw, generate_synthetic(questions, sessions, seed))
        adapt_file(SessionAdapter("session-v3", "mnemetric.longmemeval-session/v3"), raw, adapted)
        runs: dict[str, Any] = {}
        for mode in CONFIGS:
            env = {**os.environ, "TQDM_DISABLE": "1", "MNEMETRIC_CACHE_DIR": str(folder / "cache")}
            t0 = time.perf_counter()
            proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", mode, str(adapted),
                                   str(folder / f"{mode}.jsonl")], cwd=ROOT, env=env, capture_output=True, text=True)
            if proc.returncode != 0:
                raise RuntimeError(f"{mode} failed:\n{proc.stderr[-4000:]}")
            runs[mode] = {"wall_s": round(time.perf_counter() - t0, 2),
                          **json.loads(proc.stdout.strip().splitlines()[-1])}
            print(f"  {mode}: {runs[mode]}", file=sys.stderr, flush=True)
    shas = {r.pop("sha256") for r in runs.values()}
    one, two, dask = (runs[m]["retrieve_s"] for m in ("pool-1", "pool-2", "dask-2"))
    return {
        "what": "bm25-upstream retrieval (session granularity) over a synthetic S-shaped set: pool of 1 and 2 "
                "worker processes (executor=immediate, executor.workers), and a Dask LocalCluster of 2 worker "
                "processes x 1 thread (executor=dask)",
        "dataset": {"questions": questions, "sessions_per_question": sessions, "seed": seed, "adapter": "session-v3"},
        "runs": runs,
        "byte_identical": len(shas) == 1,
        "speedup_2_workers_vs_1": round(one / two, 2) if two else None,
        "dask_vs_pool_2": round(dask / two, 2) if two else None,
        "targets": {"speedup_2_workers_vs_1": ">= 1.7 on an idle 2-core machine", "dask_vs_pool_2": "<= 1.3"},
        "notes": "retrieve_s excludes the interpreter start and (start_s) the executor's start: a LocalCluster "
                 "takes start_s once per run; wall_s is the whole subprocess",
    }


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        print(json.dumps(_worker(sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4]))))
    else:
        sys.path.insert(0, str(ROOT))
        args = [int(x) for x in sys.argv[1:3]]
        print(json.dumps(bench_workers(*args), indent=2))
