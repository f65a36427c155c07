"""Stage v2_memory: the first V2 step — check the data root against its custody record, then query the memory.

Every data file is hashed again and compared with stage v2_prepare's custody record
(data/custody/v2-<name>.json, :func:`mnemetric.longmemeval_v2.data_custody.verify_root`): a file that changed
since stops the run, named; a file that matches its record but not its pin (or the sample's SHA256SUMS) is
named in the facts and makes the run not official. Then the root is validated and each question's memory
queried (only those ``v2.subset`` chooses, :mod:`mnemetric.longmemeval_v2.selection`: a subset run is never
official; :func:`mnemetric.longmemeval_v2.steps.memory_step`; per-question memories on the executor's workers when
``executor.workers`` > 1 or with ``-S executor=dask``) → ``<paths.v2_steps>/memory.jsonl`` and
``memory.json`` (DVC outputs); what was measured (query and build seconds, timed answers a cache served, the
memory's own model calls) → ``<paths.v2_runs>/latency.json`` (untracked; stage v2_metrics sums it up in
metrics/v2-latency.json). A memory that calls models (the CallsModels capability: ``dense`` with ``backend:
openai``) does so through this stage run's ONE executor (the ``executor`` option with the ``llm:`` settings: its
``llm.budget`` stops the run when spent) and is built and queried in this process; memory-usage.json holds the
cost of that work (DVC output; zeros for a memory that calls none) and the run's counters go to the run log.
A memory whose own OpenAI clients call models (UsesModelProxy: upstream's rag, agentrunbook_r) talks to the loopback
model proxy over that executor (the same budget, cache and ledger); memory-cost.json (DVC output) holds its requests
per phase (ingest, query), ``uses_model_proxy: false`` and zeros for any other memory; this run's hit rate goes to
stderr and the run log. ``executor.shard`` (``K/N``) queries one shard of the chosen questions (stratified by domain
and question type, as `mnemetric v2 run --shard`) and writes memory.jsonl.shard.json beside the rows; the later
stages carry it and `mnemetric merge` joins the parts (:mod:`mnemetric.longmemeval_v2.step_shards`).
"""

from __future__ import annotations

import time
from pathlib import Path

from mnemetric.execute import build_executor
from mnemetric.fingerprint import read_fingerprint
from mnemetric.io import write_json_atomic
from mnemetric.llm.memory_cost import memory_cost_record
from mnemetric.llm.run_log import finish_stage_run
from mnemetric.llm.usage import write_usage
from mnemetric.longmemeval_v2.data_custody import verify_root
from mnemetric.longmemeval_v2.facts import counter_facts
from mnemetric.longmemeval_v2.manifest import memory_facts
from mnemetric.longmemeval_v2.obtain import custody_path
from mnemetric.longmemeval_v2.pipeline import component, memory_factory
from mnemetric.longmemeval_v2.run import run_settings, subset_reason
from mnemetric.longmemeval_v2.selection import Selection
from mnemetric.longmemeval_v2.step_files import MemoryFacts, StepFiles, latency_file, write_facts
from mnemetric.longmemeval_v2.step_rows import write_rows
from mnemetric.longmemeval_v2.step_shards import memory_shard_run, write_memory_manifest
from mnemetric.longmemeval_v2.upstream_memory import query_context_of
from mnemetric.longmemeval_v2.steps import memory_file_sha256, memory_step
from mnemetric.longmemeval_v2.validate import QUESTIONS_FILE, TRAJECTORIES_FILE, haystack_path, require_valid_root
from mnemetric.params import stage_params
from mnemetric.stages import run

PARAMS = ["v2.name", "v2.data_root", "v2.haystack", "v2.domains", "v2.max_tokens", "v2.images", "v2.memory",
          "v2.token_counter", "v2.subset", "executor", "llm", "paths.custody_dir", "paths.fingerprints", "paths.v2_steps",
          "paths.v2_runs"]
V2_MEMORY_FINGERPRINT = "v2-memory"
"""<paths.fingerprints>/v2-memory.json, written by stage fingerprint."""


def main() -> None:
    p = stage_params(PARAMS)
    root, images = Path(p["v2.data_root"]), bool(p["v2.images"])
    data = verify_root(custody_path(p["paths.custody_dir"], p["v2.name"]), root)
    require_valid_root(root, p["v2.haystack"], check_images=images)
    factory, name = memory_factory({"memory": p["v2.memory"]})
    counter = component({"token_counter": p["v2.token_counter"]}, "token_counter")
    hpath, domains = haystack_path(root, p["v2.haystack"]), tuple(dict.fromkeys(p["v2.domains"]))
    select = Selection.of(p["v2.subset"])  # v2.subset: a development subset (never official), None: every question
    # the run's one executor: a CallsModels memory's calls (budget, ledger); its workers build per-question memories
    # of the other memories (workers > 1, or dask)
    start, executor = time.monotonic(), build_executor(p["executor"], p["llm"])
    try:
        shard = memory_shard_run(getattr(executor, "shard", None), root, domains, select,
                                 data_files=[root / QUESTIONS_FILE, hpath, root / TRAJECTORIES_FILE],
                                 config={k: p[k] for k in PARAMS if k.startswith("v2.") and k != "v2.data_root"})
        rows, latencies = memory_step(root, hpath, domains, factory, counter=counter,
                                      max_tokens=int(p["v2.max_tokens"]), system=name, images_on=images,
                                      select=select, mapper=executor, keep=shard.keep if shard is not None else None)
        finish_stage_run("v2_memory", executor.usage, start, total=len(rows))
    finally:
        executor.close()
    files = StepFiles.at(p["paths.v2_steps"])
    write_memory_manifest(shard, files.rows("memory"), rows)  # before the rows: a crash between is refused by merge
    write_rows(files.rows("memory"), rows)
    write_usage(files.usage("memory"), executor.usage.work)  # the cost of the work, never per-run counters
    write_json_atomic(files.memory_cost(), latencies.memory_cost or memory_cost_record(name, None))
    settings = run_settings(hpath, p["v2.haystack"], domains, memory=name, reader="", checker="",
                            token_counter=counter.name, max_tokens=int(p["v2.max_tokens"]),
                            memory_query_context=query_context_of(p["v2.memory"]))
    for key in ("reader", "checker"):
        settings.pop(key)
    if select is not None:  # stage v2_metrics adds it to the not-official reasons
        settings["subset"] = subset_reason(root, domains, select,  # a shard's: the whole run's count
                                           len(shard.universe) if shard is not None else len(rows))
    fingerprint = read_fingerprint(p["paths.fingerprints"], V2_MEMORY_FINGERPRINT)
    write_facts(files.facts("memory"), MemoryFacts(settings, images, data, counter_facts(counter),
                                                   memory_facts(p["v2.memory"], fingerprint)))
    latencies.write(latency_file(p["paths.v2_runs"]), memory_file_sha256(files.rows("memory")))
    unverified = f"; NOT verified: {', '.join(data.unverified)}" if data.unverified else ""
    part = f" (shard {shard.shard} of {len(shard.universe)})" if shard is not None else ""
    print(f"v2_memory: {name}: {len(rows)} question(s){part}, {data.files_checked} data file(s) match their custody "
          f"record{unverified} → {files.rows('memory')}")


if __name__ == "__main__":
    run(main)
