"""Stage retrieve: run the memory system over the suite → upstream retrievallog + reader contexts.

The usage sidecar holds the cost of the work of any model the memory system calls (embeddings);
the run's counters (sent, hits, seconds) go to the terminal and the run log."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tqdm import tqdm

from mnemetric.longmemeval.adapted import read_adapted
from mnemetric.io import atomic_open, write_json_atomic
from mnemetric.llm.budget import UsageStats
from mnemetric.llm.run_log import finish_stage_run
from mnemetric.longmemeval.memory import MemorySystem
from mnemetric.config import build
from mnemetric.params import stage_params
from mnemetric.longmemeval.harness import retrieve_all
from mnemetric.stages import run

PARAMS = ["memory", "retrieval", "llm", "paths.adapted", "paths.suite", "paths.retrieval_log", "paths.contexts",
          "paths.retrieve_usage"]


def main() -> None:
    p = stage_params(PARAMS)
    memory: MemorySystem = build(p["memory"], "params.yaml memory")
    stats, start = UsageStats(), time.monotonic()
    if hasattr(memory, "configure_llm"):  # systems that call a model spend under the run's llm settings
        memory.configure_llm(p["llm"], stats)
    ids = set(json.loads(Path(p["paths.suite"]).read_text())["question_ids"])
    records = [r for r in read_adapted(p["paths.adapted"]) if r.eval.question_id in ids]
    r = p["retrieval"]
    pairs = retrieve_all(memory, tqdm(records, desc=f"retrieve ({memory.name})", unit="q"),
                         r["granularity"], r["context_k"], r["context_tokens"])
    with atomic_open(p["paths.retrieval_log"]) as log, atomic_open(p["paths.contexts"]) as ctx:
        for line, context in pairs:
            log.write(json.dumps(line, ensure_ascii=False) + "\n")
            ctx.write(json.dumps(context, ensure_ascii=False) + "\n")
    finish_stage_run("retrieve", stats, start, total=len(records))
    write_json_atomic(p["paths.retrieve_usage"], stats.work.to_dict())  # the cost of the work, never per-run counters
    print(f"retrieve: {memory.name} over {len(records)} questions → {p['paths.retrieval_log']}")


if __name__ == "__main__":
    run(main)
