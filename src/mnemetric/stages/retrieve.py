"""Stage retrieve: run the memory system over the suite → upstream retrievallog + reader contexts.

The work is ``mnemetric.longmemeval.retrieve.write_retrieval`` (the one path `mnemetric retrieve`
takes too). The adapted file is read once; the records outside the suite are skipped unparsed. The
usage sidecar holds the cost of the work of any model the memory system calls (embeddings); the
run's counters (sent, hits, seconds) go to the terminal and the run log."""

from __future__ import annotations

import time

from mnemetric.config import build
from mnemetric.llm.budget import UsageStats
from mnemetric.llm.run_log import finish_stage_run
from mnemetric.llm.usage import write_usage
from mnemetric.longmemeval.adapted import read_adapted
from mnemetric.longmemeval.memory import MemorySystem
from mnemetric.longmemeval.retrieve import write_retrieval
from mnemetric.longmemeval.suite import read_suite
from mnemetric.params import stage_params
from mnemetric.stages import run

PARAMS = ["memory", "retrieval", "llm", "paths.adapted", "paths.suite", "paths.retrieval_log", "paths.contexts",
          "paths.retrieve_usage"]


def main() -> None:
    p = stage_params(PARAMS)
    memory: MemorySystem = build(p["memory"], "params.yaml memory")
    stats, start = UsageStats(), time.monotonic()
    records = list(read_adapted(p["paths.adapted"], only=read_suite(p["paths.suite"]).question_ids))
    r = p["retrieval"]
    n = write_retrieval(memory, records, granularity=r["granularity"], k=r["context_k"], budget=r["context_tokens"],
                        log=p["paths.retrieval_log"], contexts=p["paths.contexts"], total=len(records),
                        llm=p["llm"], stats=stats)
    finish_stage_run("retrieve", stats, start, total=n)
    write_usage(p["paths.retrieve_usage"], stats.work)  # the cost of the work, never per-run counters
    print(f"retrieve: {memory.name} over {n} questions → {p['paths.retrieval_log']}")


if __name__ == "__main__":
    run(main)
