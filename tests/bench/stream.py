"""Benchmark sections ``stream`` and ``reuse`` (issue 16, items 1 and 2), called by run.py.

``stream``: an M-shaped synthetic file (``mnemetric sample --synthetic Q --sessions 500``: M's 500
sessions per haystack, so one item is M-sized; Q questions, 500 = M's count) is written to a temporary
folder; then each command below runs ``--repeats`` times, the commands interleaved round by round, each
a fresh process whose wall time and peak RSS come from ``os.wait4`` (the kernel's accounting of that
one process; ``/usr/bin/time -v`` reports the same ru_maxrss):

* baselines: ``json.load`` of the whole file; ijson ``yajl2_c`` alone (``ijson.items``, plain dicts);
* the readers: Mnemetric's reader (ijson + the strict guards) and the strict pure-Python reader
  alone (main's reader before issue 16, kept as the fallback that names every flaw);
* ``mnemetric validate`` and ``mnemetric adapt`` (the CLI, interpreter start and imports included), each
  also with the strict reader swapped in (before), and the two adapted files compared byte for byte;
* the rest of a full M pass: ``mnemetric retrieve`` (bm25-upstream, session granularity, one worker) over
  the file and ``mnemetric score-retrieval`` of its log; the pass's peak is the largest of validate, adapt,
  retrieve and score (issue 16: <= 1 GiB).

``reuse``: the S-shaped set (run.py's ``--questions`` x ``--sessions``, 500 x 48 by default) is adapted
and each question's documents are keyed as the embedding store keys them (sha256 of backend id and
text): the reuse ratio is the share of texts a question needs that an earlier question already
embedded. Then dense (MiniLM) retrieval over the first ``--reuse-questions`` questions, three ways, each
a fresh process: ``off`` (nothing read from the store: every haystack embedded whole, as upstream does),
``cold`` (an empty store, reused across questions) and ``warm`` (the same store again); the three logs
are compared.
"""

from __future__ import annotations

import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
STRICT = ("import sys, mnemetric.jsonstream as j, mnemetric.longmemeval.instance as i; "
          "i.iter_json_items = j.strict_items; from mnemetric.cli import main; sys.exit(main(sys.argv[1:]))")
SCAN = "import sys; from mnemetric.longmemeval.instance import scan_file; scan_file(sys.argv[1], lambda finding: None)"
CLI = "import sys; from mnemetric.cli import main; sys.exit(main(sys.argv[1:]))"
READERS = {
    "json.load": "import json, sys; json.load(open(sys.argv[1], 'rb'))",
    "ijson yajl2_c alone": ("import ijson, sys; assert ijson.backend == 'yajl2_c'; "
                            "[0 for _ in ijson.items(open(sys.argv[1], 'rb'), 'item', use_float=True)]"),
    "mnemetric reader": "import sys; from mnemetric.jsonstream import iter_json_items; [0 for _ in iter_json_items(sys.argv[1])]",
    "strict reader (before)": "import sys; from mnemetric.jsonstream import strict_items; [0 for _ in strict_items(sys.argv[1])]",
}


def measure(cmd: list[str], env: dict[str, str]) -> dict[str, float]:
    """Wall seconds and peak RSS (MiB) of one process (ru_maxrss of that process alone, via wait4)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read() if proc.stderr else b""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    if code not in (0,):
        raise RuntimeError(f"{' '.join(cmd)} exited {code}:\n{err.decode(errors='replace')[-3000:]}")
    return {"wall_s": wall, "peak_mib": usage.ru_maxrss / 1024, "cpu_s": usage.ru_utime + usage.ru_stime}


def summary(runs: list[dict[str, float]]) -> dict[str, Any]:
    out: dict[str, Any] = {"runs": len(runs)}
    for key in ("wall_s", "peak_mib", "cpu_s"):
        values = [r[key] for r in runs]
        out[key] = {"min": round(min(values), 2), "median": round(statistics.median(values), 2),
                    "max": round(max(values), 2)}
    return out


def bench_stream(args: Any) -> dict[str, Any]:
    started = datetime.now(timezone.utc)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "TQDM_DISABLE": "1"}
    with tempfile.TemporaryDirectory(prefix="mnemetric-bench-m-") as tmp:
        folder = Path(tmp)
        m_file = folder / "m-shaped.json"
        t0 = time.perf_counter()
        subprocess.run([PY, "-c", CLI, "sample", "--synthetic", str(args.m_questions), "--sessions", "500",
                        "--seed", str(args.seed), "--out", str(m_file)], cwd=ROOT, env=env, check=True,
                       stdout=subprocess.DEVNULL)
        gen_s = time.perf_counter() - t0
        # The package's bytecode, written as an install writes it: under PYTHONDONTWRITEBYTECODE (set on some
        # machines) every timed process would otherwise compile each module it imports from source again.
        subprocess.run([PY, "-m", "compileall", "-q", str(ROOT / "src")], cwd=ROOT, env=env, check=True,
                       stdout=subprocess.DEVNULL)
        m = str(m_file)
        out_new, out_old = folder / "adapted.new.jsonl", folder / "adapted.strict.jsonl"
        commands: dict[str, list[str]] = {name: [PY, "-c", code, m] for name, code in READERS.items()}
        commands |= {
            "mnemetric validate": [PY, "-c", CLI, "validate", m],
            "mnemetric validate, strict reader (before)": [PY, "-c", STRICT, "validate", m],
            "validate in process (scan_file, no CLI)": [PY, "-c", SCAN, m],
            "mnemetric adapt": [PY, "-c", CLI, "adapt", m, "--out", str(out_new)],
            "mnemetric adapt, strict reader (before)": [PY, "-c", STRICT, "adapt", m, "--out", str(out_old)],
            "mnemetric retrieve (bm25-upstream, session)": [
                PY, "-c", CLI, "retrieve", m, "--memory", "bm25-upstream", "--granularity", "session", "--workers",
                "1", "--out", str(folder / "log.jsonl")],
            "mnemetric score-retrieval": [
                PY, "-c", CLI, "score-retrieval", str(folder / "log.jsonl"), "--granularity", "session", "--profile",
                "longmemeval-session-upstream-v1", "--out", str(folder / "retrieval.json")],
            "interpreter + mnemetric CLI imports (mnemetric --help)": [PY, "-c", CLI, "--help"],
        }
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in commands}
        for round_ in range(args.repeats):
            for name, cmd in commands.items():
                runs[name].append(measure(cmd, env))
                r = runs[name][-1]
                print(f"  [{round_ + 1}/{args.repeats}] {name:<58} {r['wall_s']:7.2f} s wall {r['cpu_s']:7.2f} s cpu "
                      f"{r['peak_mib']:8.1f} MiB",
                      flush=True)
        same = hashlib.sha256(out_new.read_bytes()).hexdigest() == hashlib.sha256(out_old.read_bytes()).hexdigest()
        size_mib = m_file.stat().st_size / 2**20
    figures = {name: {"command": " ".join(_shown(cmd, m, folder)), **summary(r)} for name, (cmd, r) in
               zip(commands, ((commands[n], runs[n]) for n in commands))}
    med = {name: f["wall_s"]["median"] for name, f in figures.items()}
    peak = {name: f["peak_mib"]["median"] for name, f in figures.items()}
    cpu = {name: f["cpu_s"]["median"] for name, f in figures.items()}
    targets = {
        "validate peak <= 100 MiB": peak["mnemetric validate"] <= 100,
        "validate no slower than json.load (median wall)": med["mnemetric validate"] <= med["json.load"],
        "validate no slower than json.load (median cpu)": cpu["mnemetric validate"] <= cpu["json.load"],
        "adapt peak <= 200 MiB": peak["mnemetric adapt"] <= 200,
        "full pass (validate + adapt + bm25 retrieval + scoring) peak <= 1 GiB": max(
            peak[n] for n in ("mnemetric validate", "mnemetric adapt", "mnemetric retrieve (bm25-upstream, session)",
                              "mnemetric score-retrieval")) <= 1024,
    }
    return {
        "date": started.isoformat(timespec="seconds"),
        "duration_s": round((datetime.now(timezone.utc) - started).total_seconds(), 1),
        "command": "python tests/bench/run.py " + " ".join(args.argv),
        "machine": _machine(),
        "dataset": {"generator": "mnemetric sample --synthetic", "questions": args.m_questions,
                    "sessions_per_question": 500, "seed": args.seed, "file_mib": round(size_mib, 1),
                    "generate_s": round(gen_s, 1)},
        "notes": ("each figure: min/median/max over --repeats fresh processes, interleaved; wall_s and cpu_s of "
                  "the whole process (interpreter start and imports included); peak_mib = ru_maxrss of that "
                  "process (os.wait4). The CLI rows include the CLI's own import cost (see the --help row). "
                  "src/ is byte-compiled first (python -m compileall), as an install does."),
        "figures": figures,
        "adapted_identical_to_strict_reader": same,
        "targets": targets,
    }


def _shown(cmd: list[str], m: str, folder: Path) -> list[str]:
    return [("python" if c == PY else c.replace(m, "M.json").replace(str(folder) + "/", "")) for c in cmd]


def _machine() -> dict[str, Any]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from run import machine

    import ijson
    return {**machine(), "ijson": ijson.__version__, "ijson_backend": ijson.backend}


# ------------------------------------------------------------------ section: reuse


class _Hashed:
    """Counts what a model would be asked (vectors from sha256: the ratio depends on the keys alone)."""

    backend_id = "minilm:sentence-transformers/all-MiniLM-L6-v2:alone"

    def embed(self, texts: list[str], executor: Any = None) -> Any:
        import numpy as np
        return np.asarray([np.frombuffer(hashlib.sha256(t.encode()).digest()[:16], np.uint8) / 255.0 for t in texts],
                          dtype=np.float32)


def reuse_ratio(adapted: Path, granularity: str, store: Path) -> dict[str, Any]:
    """texts each question asks the store for vs texts embedded, over the whole set in file order."""
    from mnemetric.embeddings import EmbeddingCache
    from mnemetric.longmemeval.adapted import read_adapted
    from mnemetric.longmemeval.memory.dense import Dense
    from mnemetric.longmemeval.retrieve import write_retrieval
    dense = Dense()
    dense.embedder, dense.cache = _Hashed(), EmbeddingCache(store)
    write_retrieval(dense, read_adapted(adapted), granularity=granularity, k=10, budget=6000,
                    log=store.with_suffix(".log.jsonl"))
    seen, embedded = dense.cache.texts_seen, dense.cache.texts_embedded
    return {"texts_seen": seen, "texts_embedded": embedded, "reused": seen - embedded,
            "reuse_ratio": round(1 - embedded / seen, 4)}


def dense_worker(argv: list[str]) -> int:
    """``--dense MODE ADAPTED GRANULARITY LOG N``: MiniLM retrieval over the first N questions; prints JSON."""
    import itertools
    import json

    mode, adapted, granularity, log, n = argv
    from mnemetric.embeddings import EmbeddingCache
    from mnemetric.longmemeval.adapted import read_adapted
    from mnemetric.longmemeval.memory.dense import Dense
    from mnemetric.longmemeval.retrieve import write_retrieval
    if mode == "off":  # nothing read from the store: every haystack embedded whole (upstream's way)
        EmbeddingCache._get = lambda self, keys: {}
    dense = Dense()
    dense.embedder.embed(["load the model"])  # outside the store and the timing
    t0 = time.perf_counter()
    write_retrieval(dense, itertools.islice(read_adapted(adapted), int(n)), granularity=granularity, k=10,
                    budget=6000, log=log)
    print(json.dumps({"retrieve_s": round(time.perf_counter() - t0, 2), "texts_seen": dense.cache.texts_seen,
                      "texts_embedded": dense.cache.texts_embedded}))
    return 0


def bench_reuse(args: Any) -> dict[str, Any]:
    import json
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from run import make_dataset

    started = datetime.now(timezone.utc)
    with tempfile.TemporaryDirectory(prefix="mnemetric-bench-reuse-") as tmp:
        folder = Path(tmp)
        adapted, dataset = make_dataset(folder, args.questions, args.sessions, args.seed)
        ratios = {g: reuse_ratio(adapted, g, folder / f"ratio-{g}" / "embeddings.sqlite3")
                  for g in ("session", "turn")}
        print(f"reuse: {ratios}", flush=True)
        dense: dict[str, Any] = {}
        logs: dict[str, bytes] = {}
        for mode, cache in (("off", "store-off"), ("cold", "store"), ("warm", "store")):
            log = folder / f"log-{mode}.jsonl"
            env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "TQDM_DISABLE": "1",
                   "MNEMETRIC_CACHE_DIR": str(folder / cache)}
            cmd = [PY, str(Path(__file__).resolve()), "--dense", mode, str(adapted), "turn", str(log),
                   str(args.reuse_questions)]
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
            if proc.returncode:
                raise RuntimeError(f"dense {mode} failed:\n{proc.stderr[-3000:]}")
            dense[mode] = {"command": f"python tests/bench/stream.py --dense {mode} ADAPTED turn LOG "
                                      f"{args.reuse_questions}", "wall_s": round(time.perf_counter() - t0, 2),
                           **json.loads(proc.stdout.strip().splitlines()[-1])}
            logs[mode] = log.read_bytes()
            print(f"  dense {mode}: {dense[mode]}", flush=True)
        lines = {mode: data.splitlines() for mode, data in logs.items()}
        differ = {f"{a} vs {b}": sum(x != y for x, y in zip(lines[a], lines[b]))
                  for a, b in (("off", "cold"), ("cold", "warm"), ("off", "warm"))}
    return {
        "date": started.isoformat(timespec="seconds"),
        "duration_s": round((datetime.now(timezone.utc) - started).total_seconds(), 1),
        "command": "python tests/bench/run.py " + " ".join(args.argv),
        "machine": _machine(), "dataset": dataset,
        "notes": ("reuse_ratio: share of the texts the questions ask the embedding store for (documents + "
                  "query, deduplicated within a question) that an earlier question had embedded, over the whole "
                  "set in file order, keyed as the store keys them. dense: MiniLM over the first "
                  "reuse_questions questions at turn granularity (where texts recur); off = nothing read from the store (every "
                  "haystack embedded whole), cold = empty store reused across questions, warm = the same store "
                  "again; log_lines_differing counts retrieval-log lines that are not the same bytes."),
        "reuse": ratios, "reuse_questions": args.reuse_questions, "dense": dense,
        "log_lines_differing": differ,
    }


if __name__ == "__main__":
    if sys.argv[1:2] == ["--dense"]:
        sys.exit(dense_worker(sys.argv[2:]))
