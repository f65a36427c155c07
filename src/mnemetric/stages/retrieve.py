"""Stage retrieve: run the memory system over the suite → upstream retrievallog + reader contexts.

The work is ``mnemetric.longmemeval.retrieve.write_retrieval`` (the one path `mnemetric retrieve`
takes too). The adapted file is read once, one record at a time (never held whole: GBs at M); the
records outside the suite are skipped unparsed. The suite's question ids and types in file order (a shard's
assignment needs them before the first question) come from the question index (``paths.question_index``),
not from a pass over the adapted file. A
memory system that calls models (embeddings) does so through the run's ONE executor (params
``executor`` + ``llm``). The usage sidecar holds the cost of that work; the run's counters (sent,
hits, seconds) go to the terminal and the run log. A memory system that declares UsesModelProxy (a
third-party library) gets the loopback model proxy (params ``memory_llm``) around its questions; its cost
per phase (ingest, query) is ``paths.memory_cost`` (every run writes it: zeros for a system without the
proxy; only what the inputs decide) and this run's facts (hit rate, seconds) go to the run log. ``executor.workers`` runs the questions on a pool
(same bytes); ``executor.shard`` (``K/N``) runs one shard of the suite's questions (see `mnemetric merge`)."""

from __future__ import annotations

import time
from contextlib import closing

from mnemetric.config import build
from mnemetric.execute import build_executor
from mnemetric.llm.memory_cost import finish_memory_run, serving, write_memory_cost
from mnemetric.llm.memory_cost_file import part_ref
from mnemetric.llm.run_log import finish_stage_run
from mnemetric.llm.usage import write_usage
from mnemetric.longmemeval.adapted import AdaptedRecords
from mnemetric.longmemeval.memory import MemorySystem
from mnemetric.longmemeval.memory.base import uses_model_proxy
from mnemetric.longmemeval.retrieve import write_retrieval
from mnemetric.longmemeval.suite import read_suite, suite_universe
from mnemetric.params import stage_params
from mnemetric.shard import ShardRun
from mnemetric.stages import run

PARAMS = ["memory", "retrieval", "executor", "llm", "memory_llm", "paths.adapted", "paths.suite",
          "paths.question_index", "paths.retrieval_log", "paths.contexts", "paths.retrieve_usage", "paths.memory_cost"]


def main() -> None:
    p = stage_params(PARAMS)
    memory: MemorySystem = build(p["memory"], "params.yaml memory")
    start = time.monotonic()
    index = p["paths.question_index"]
    records = AdaptedRecords(p["paths.adapted"], suite_universe(index, read_suite(p["paths.suite"]).question_ids),
                             index=index)  # streamed once, never held
    r = p["retrieval"]
    with closing(build_executor(p["executor"], p["llm"])) as executor:
        shard = ShardRun.start("retrieve", getattr(executor, "shard", None), records.universe,
                               data_file=p["paths.adapted"], config={"memory": p["memory"], "retrieval": r})
        with serving(uses_model_proxy(memory), executor, p["memory_llm"], memory.name) as proxy:
            n = write_retrieval(memory, records.lines(), granularity=r["granularity"], k=r["context_k"],
                                budget=r["context_tokens"], log=p["paths.retrieval_log"], contexts=p["paths.contexts"],
                                total=len(records), executor=executor, shard=shard)
    finish_memory_run("retrieve", memory.name, proxy)
    finish_stage_run("retrieve", executor.usage, start, total=n)
    write_usage(p["paths.retrieve_usage"], executor.usage.work)  # the cost of the work, never per-run counters
    write_memory_cost(p["paths.memory_cost"], memory.name, proxy,  # the same: what the inputs decide (a shard's:
                      part_ref(shard.shard, (p["paths.retrieval_log"], p["paths.contexts"])))  # bound to its outputs
    print(f"retrieve: {memory.name} over {n} questions → {p['paths.retrieval_log']}")


if __name__ == "__main__":
    run(main)
