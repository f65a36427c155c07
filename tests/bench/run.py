"""Mnemetric benchmarks (`make bench`): numbers land in tests/bench/results.json, one key per section.

    python tests/bench/run.py                        # every section, full scale
    python tests/bench/run.py --only retrieval --questions 50

Section ``retrieval``: a synthetic S-scale set (mnemetric.longmemeval.sample.generate_synthetic: 500
questions, 48 sessions of ~10 turns each by default) is written to a temporary folder and adapted
(session-v3); then bm25-upstream, bm25 and dense (all-MiniLM-L6-v2 in process) each run retrieval
over every question and score the log (score_retrieval_log, upstream profile), at session and turn
granularity. Each measured run is a fresh subprocess (this file with --worker), so its peak RSS
(getrusage ru_maxrss) is its own. Dense runs twice on one embedding cache folder: cold (empty
cache), then warm (same texts: nothing should be embedded).

Sections ``stream`` (streaming an M-shaped file: validate/adapt against json.load and ijson alone, peak
memory per process) and ``reuse`` (the embedding store's reuse ratio on S-shaped data; dense with the
store off, cold, warm) are in stream.py.

Sections are functions ``name(args) -> dict`` in SECTIONS; results.json is read, the section's key
replaced, and written back atomically, so other sections' numbers stay. Not a pytest module (pytest
only collects test_*.py).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mnemetric.longmemeval.scoring.scored_retrieval import ScoredRetrieval

ROOT = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).with_name("results.json")
SYSTEMS = ("bm25-upstream", "bm25", "dense")
PROFILE = "longmemeval-session-upstream-v1"
CONTEXT_K, CONTEXT_TOKENS = 10, 6000


# ------------------------------------------------------------------ common


def machine() -> dict[str, Any]:
    import numpy
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    info = {"nproc": os.cpu_count(), "usable_cpus": usable,
            "python": platform.python_version(), "platform": platform.platform(), "machine": platform.machine(),
            "numpy": numpy.__version__}
    try:
        import torch
        info |= {"torch": torch.__version__, "torch_threads": torch.get_num_threads()}
    except ImportError:
        pass
    return info


def peak_rss_mb() -> float:
    """This process's peak resident set size (ru_maxrss: KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)


def merge_results(path: Path, section: str, result: dict[str, Any]) -> None:
    """Read-modify-write: replace one section's key, keep every other section."""
    from mnemetric.io import write_json_atomic
    data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    data[section] = result
    write_json_atomic(path, data)


# ------------------------------------------------------------------ section: retrieval


def make_dataset(folder: Path, questions: int, sessions: int, seed: int) -> tuple[Path, dict[str, Any]]:
    """Write the synthetic set and its adapted records; return (adapted path, dataset facts)."""
    from mnemetric.longmemeval.adapted import SessionAdapter
    from mnemetric.longmemeval.sample import generate_synthetic, write_instances
    from mnemetric.longmemeval.adapt import adapt_file
    raw, adapted = folder / "synthetic.json", folder / "synthetic.adapted.jsonl"
    t0 = time.perf_counter()
    write_instances(raw, generate_synthetic(questions, sessions, seed))
    t1 = time.perf_counter()
    adapt_file(SessionAdapter("session-v3", "mnemetric.longmemeval-session/v3"), raw, adapted)
    t2 = time.perf_counter()
    facts = {"generator": "mnemetric.longmemeval.sample.generate_synthetic", "questions": questions,
             "sessions_per_question": sessions, "seed": seed, "adapter": "session-v3",
             "file_mb": round(raw.stat().st_size / 2**20, 1), "generate_s": round(t1 - t0, 2),
             "adapt_s": round(t2 - t1, 2), **corpus_size(adapted)}
    return adapted, facts


def corpus_size(adapted: Path) -> dict[str, Any]:
    from mnemetric.longmemeval.adapted import read_adapted
    sessions = turns = user_turns = 0
    for rec in read_adapted(adapted):
        sessions += len(rec.memory.sessions)
        for s in rec.memory.sessions:
            turns += len(s.messages)
            user_turns += sum(m.role == "user" for m in s.messages)
    return {"sessions": sessions, "turns": turns, "user_turns": user_turns}


def run_worker(system: str, adapted: Path, granularity: str, log: Path, cache: Path) -> dict[str, Any]:
    """One measured run in a fresh interpreter; returns its JSON report plus the wall time seen from here."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", system, "--adapted", str(adapted),
           "--granularity", granularity, "--log", str(log)]
    env = {**os.environ, "MNEMETRIC_CACHE_DIR": str(cache), "TQDM_DISABLE": "1"}
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"worker {system}/{granularity} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"wall_s": round(wall, 2), **report}


def bench_granularity(folder: Path, adapted: Path, granularity: str, questions: int,
                      systems: tuple[str, ...] = SYSTEMS) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for system in systems:
        log = folder / f"retrievallog_{granularity}_{system}.jsonl"
        if system != "dense":
            out[system] = run_worker(system, adapted, granularity, log, folder / "cache-unused")
        else:
            cache = folder / f"cache-{granularity}"  # cold: a new, empty folder
            cold = run_worker(system, adapted, granularity, log, cache)
            warm = run_worker(system, adapted, granularity, log, cache)
            warm["same_metrics_as_cold"] = warm["metrics"] == cold["metrics"]
            out[system] = {"cold": cold, "warm": warm}
        report(granularity, system, out[system], questions)
    return out


def report(granularity: str, system: str, result: dict[str, Any], questions: int) -> None:
    for label, r in ([("", result)] if "wall_s" in result else list(result.items())):
        extra = f" seen={r['texts_seen']} embedded={r['texts_embedded']}" if "texts_seen" in r else ""
        print(f"  {granularity:<8}{system:<14}{label:<5} wall {r['wall_s']:8.1f}s  retrieve {r['retrieve_s']:8.1f}s "
              f"({questions / max(r['retrieve_s'], 1e-9):7.1f} q/s)  score {r['score_s']:6.1f}s  "
              f"peak {r['peak_rss_mb']:7.1f} MB{extra}", flush=True)


def bench_retrieval(args: argparse.Namespace) -> dict[str, Any]:
    started = datetime.now(timezone.utc)
    with tempfile.TemporaryDirectory(prefix="mnemetric-bench-") as tmp:
        folder = Path(tmp)
        adapted, dataset = make_dataset(folder, args.questions, args.sessions, args.seed)
        print(f"retrieval: {dataset}", flush=True)
        runs = {g: bench_granularity(folder, adapted, g, args.questions, tuple(args.systems))
                for g in args.granularities}
    return {
        "date": started.isoformat(timespec="seconds"),
        "duration_s": round((datetime.now(timezone.utc) - started).total_seconds(), 1),
        "command": "python tests/bench/run.py " + " ".join(args.argv),
        "machine": machine(), "dataset": dataset, "profile": PROFILE,
        "context": {"k": CONTEXT_K, "tokens": CONTEXT_TOKENS},
        "notes": ("wall_s: the whole subprocess (interpreter start, imports, model load, retrieval, scoring); "
                  "retrieve_s: reading adapted records + retrieval + contexts + writing the log; "
                  "score_s: score_retrieval_log over the log; peak_rss_mb: ru_maxrss of that subprocess; "
                  "dense cold = empty embedding cache, warm = the same cache again"),
        "runs": runs,
    }


# ------------------------------------------------------------------ worker (one measured run)


def worker(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    from mnemetric.longmemeval.adapted import read_adapted
    from mnemetric.cli import load_memory
    from mnemetric.longmemeval.scoring.score_retrieval import score_retrieval_log
    from mnemetric.embeddings import MiniLMBackend
    from mnemetric.longmemeval.retrieve import write_retrieval
    memory = load_memory(args.worker, ROOT / "conf")
    if isinstance(getattr(memory, "embedder", None), MiniLMBackend):
        memory.embedder.embed(["load the model"])  # outside the cache: not counted as seen/embedded
    t1 = time.perf_counter()
    write_retrieval(memory, read_adapted(args.adapted), granularity=args.granularity, k=CONTEXT_K,
                    budget=CONTEXT_TOKENS, log=args.log)
    t2 = time.perf_counter()
    scored = score_retrieval_log(args.log, args.granularity, PROFILE)
    t3 = time.perf_counter()
    out = {"setup_s": round(t1 - t0, 2), "retrieve_s": round(t2 - t1, 2), "score_s": round(t3 - t2, 2),
           "questions": len(scored.per_question), "peak_rss_mb": peak_rss_mb(),
           "metrics": headline(scored)}
    cache = getattr(memory, "cache", None)
    if cache is not None:
        out |= {"texts_seen": cache.texts_seen, "texts_embedded": cache.texts_embedded}
    print(json.dumps(out))
    return 0


def headline(scored: ScoredRetrieval) -> dict[str, Any]:
    """recall_all@5/10 and ndcg_any@10 per level, both averaging rules."""
    from mnemetric.longmemeval.scoring.scored_retrieval import RULE_NAMES
    keep = ("recall_all@5", "recall_all@10", "ndcg_any@10")
    return {rule: {"n": agg.n, **{lv: {m: round(agg.levels[lv][m], 4) for m in keep}
                                  for lv in ("session", "turn") if lv in agg.levels}}
            for rule, agg in ((r, scored.average(r)) for r in RULE_NAMES)}


# ------------------------------------------------------------------ entry point

def bench_judge_section(args: argparse.Namespace) -> dict[str, Any]:
    """Judge throughput: sequential vs concurrent client against a 100 ms server, then a warm rerun."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from judge import bench_judge

    return {"command": "python tests/bench/run.py " + " ".join(args.argv), "machine": machine(),
            **bench_judge(questions=args.questions, latency_ms=args.latency_ms, repeats=args.repeats)}


def bench_workers_section(args: argparse.Namespace) -> dict[str, Any]:
    """Per-question work: 2 pool workers vs 1, and a Dask LocalCluster vs the pool (tests/bench/workers.py)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from workers import bench_workers

    return {"command": "python tests/bench/run.py " + " ".join(args.argv), "machine": machine(),
            **bench_workers(questions=args.questions, sessions=args.sessions, seed=args.seed,
                             repeats=args.repeats)}


def bench_stream_section(args: argparse.Namespace) -> dict[str, Any]:
    """Streaming M: validate/adapt time and peak memory against json.load and ijson alone (stream.py)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from stream import bench_stream

    return bench_stream(args)


def bench_reuse_section(args: argparse.Namespace) -> dict[str, Any]:
    """Embeddings done once: the reuse ratio on S-shaped data; dense with the store off, cold, warm (stream.py)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from stream import bench_reuse

    return bench_reuse(args)


def bench_batch_section(args: argparse.Namespace) -> dict[str, Any]:
    """Live vs batch: the same calls through the immediate and the Batch-API executor (batch.py)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from batch import bench_batch

    return {"machine": machine(), **bench_batch(questions=args.questions, latency_ms=args.latency_ms)}


SECTIONS = {"retrieval": bench_retrieval, "judge": bench_judge_section, "workers": bench_workers_section,
            "stream": bench_stream_section, "reuse": bench_reuse_section, "batch": bench_batch_section}


def _rows(name: str, r: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(figure, value, baseline measured in the same run) for the table ``make bench`` prints."""
    def get(*path: str) -> Any:
        node: Any = r
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        return node

    rows: list[tuple[str, str, str]] = []
    if name == "judge":
        seq = get("sequential", "seconds")
        for run in ("concurrent", "default"):
            if get(run, "seconds"):
                rows.append((f"judge, {get(run, 'max_concurrency')} in flight", f"{get(run, 'seconds')} s "
                             f"({seq / get(run, 'seconds'):.1f}x)", f"sequential {seq} s"))
        rows.append(("judge warm rerun", f"{get('warm', 'requests_sent')} requests", f"{get('warm', 'seconds')} s"))
    elif name.startswith("workers"):  # workers, workers-m
        one = get("runs", "pool-1", "retrieve_s")
        for run in ("pool-2", "dask-2"):
            rows.append((f"retrieve, {run}", f"{get('runs', run, 'retrieve_s')} s", f"pool-1 {one} s"))
        rows.append(("speedup, 2 workers vs 1", str(get("speedup_2_workers_vs_1")), ""))
        rows.append(("dask-2 / pool-2", str(get("dask_vs_pool_2")), ""))
        rows.append(("byte-identical", str(get("byte_identical")), ""))
    elif name == "stream":
        base = get("figures", "json.load")
        for fig, f in (get("figures") or {}).items():
            rows.append((fig, f"{f['wall_s']['median']} s, {f['peak_mib']['median']} MiB peak",
                         f"json.load {base['wall_s']['median']} s, {base['peak_mib']['median']} MiB" if base else ""))
    elif name == "reuse":
        off = get("dense", "off", "retrieve_s")
        for run in ("cold", "warm"):
            rows.append((f"dense, store {run}", f"{get('dense', run, 'retrieve_s')} s", f"store off {off} s"))
        for level in ("session", "turn"):
            rows.append((f"reuse ratio ({level})", str(get("reuse", level, "reuse_ratio")), ""))
        rows.append(("log lines differing", str(get("log_lines_differing")), ""))
    elif name == "batch":
        rows.append(("batch cost", f"${get('batch', 'usd')} ({get('cost_ratio_batch_over_live')} of live)",
                     f"live ${get('live', 'usd')}"))
        rows.append(("batch seconds", f"{get('batch', 'seconds')} s", f"live {get('live', 'seconds')} s"))
        rows.append(("rerun sends", str(get("rerun_sent")), ""))
        if get("kill_9") is not None:
            rows.append(("kill -9 in each batch state: requests paid twice", str(get("kill_9", "paid_twice")),
                         f"{get('kill_9', 'requests')} requests per state"))
    elif name.startswith("retrieval"):
        for level, systems in (get("runs") or {}).items():
            for system, v in systems.items():
                for label, one in ((("cold", v["cold"]), ("warm", v["warm"])) if "cold" in v else (("", v),)):
                    rows.append((f"{system} {level} {label}".rstrip(), f"{one['wall_s']} s, {one['peak_rss_mb']} MB",
                                 ""))
    for target, met in (get("targets") or {}).items():
        rows.append((f"target: {target}", str(met), ""))
    return rows


def print_table(name: str, result: dict[str, Any]) -> None:
    """One section as a table: each figure, its baseline, then the section's command and machine."""
    rows = _rows(name, result)
    width = max([len(f) for f, _, _ in rows] + [6])
    print(f"-- {name}: {result.get('command', '(command not recorded)')}")
    machine_ = result.get("machine") or {}
    print(f"   machine: {machine_.get('nproc', '?')} cores, python {machine_.get('python', '?')}, "
          f"{machine_.get('platform', '?')}")
    for fig, value, base in rows:
        print(f"   {fig:<{width}}  {value:<40}  {base}")


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", choices=sorted(SECTIONS), help="run one section (default: all)")
    p.add_argument("--out", type=Path, default=RESULTS, help="results file (default: %(default)s)")
    p.add_argument("--questions", type=int, default=500, help="synthetic questions (default: %(default)s)")
    p.add_argument("--sessions", type=int, default=48, help="sessions per haystack (default: %(default)s)")
    p.add_argument("--seed", type=int, default=20241014, help="generator seed (default: %(default)s)")
    p.add_argument("--latency-ms", type=int, default=100, help="judge server latency per reply (default: %(default)s)")
    p.add_argument("--granularities", type=lambda s: s.split(","), default=["session", "turn"],
                   help="comma-separated (default: session,turn)")
    p.add_argument("--systems", type=lambda s: s.split(","), default=list(SYSTEMS),
                   help="retrieval: comma-separated memory systems (default: %(default)s); with a subset, "
                        "--out should name another file, since the section is replaced whole")
    p.add_argument("--section", help="the key the numbers land under in --out (default: the section's name); "
                                     "e.g. retrieval-bm25 for a --systems subset beside the full section")
    p.add_argument("--m-questions", type=int, default=500,
                   help="stream: questions of the M-shaped file, 500 sessions each (default: %(default)s, ~385 MB)")
    p.add_argument("--repeats", type=int, default=3,
                   help="stream: runs of each command; workers, judge: rounds of their configurations (figures: "
                        "medians; ratios: medians of paired ratios) (default: %(default)s)")
    p.add_argument("--reuse-questions", type=int, default=50,
                   help="reuse: questions of the dense off/cold/warm runs (default: %(default)s)")
    p.add_argument("--table", action="store_true",
                   help="print the table of the figures already in --out (each section's command, machine and "
                        "baselines) and run nothing")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--adapted", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--granularity", help=argparse.SUPPRESS)
    p.add_argument("--log", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.argv = argv
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    if args.worker:
        return worker(args)
    if args.table:
        for name, result in json.loads(args.out.read_text(encoding="utf-8")).items():
            print_table(name, result)
        return 0
    for name in [args.only] if args.only else list(SECTIONS):
        print(f"== {name}", flush=True)
        result = SECTIONS[name](args)
        merge_results(args.out, args.section or name, result)
        print(f"== {name} → {args.out}", flush=True)
        print_table(args.section or name, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
