"""Stage v2_metrics: the last V2 step — per_question rows, aggregation, web + enterprise, summary, manifest.

Joins the step files (memory.jsonl, read.jsonl, check.jsonl under ``paths.v2_steps``) into upstream's
per_question rows (:func:`mnemetric.longmemeval_v2.steps.assemble`), aggregates each domain, combines both and
decides official_equivalence (:func:`mnemetric.longmemeval_v2.run.finish`) from the facts the steps recorded.

metrics/v2.json (DVC-tracked, :class:`~mnemetric.longmemeval_v2.metrics_file.V2Metrics`): accuracy with
Clopper–Pearson intervals per domain and combined, counts, memory-context tokens, official_equivalence
``{value, reasons}``. metrics/run-v2.json (:mod:`mnemetric.longmemeval_v2.manifest`) names the data (the custody
check), the reader, checker, token counter and memory with the parameters their requests were sent with — all
from tracked files. Query latency and the LAFS gain are measurements of this machine: with v2_memory's latency
sidecar at hand, the full run (upstream's per_question.jsonl and aggregated_metrics.json per domain, the
combination, the summary with latency and LAFS) goes to the untracked ``paths.v2_runs`` and the terminal. Step
files of one shard (``executor.shard``) are scored as they are and the run is not official, with the reason
``shard K/N ...`` (join the parts with `mnemetric merge` for the whole run:
:mod:`mnemetric.longmemeval_v2.step_shards`).
"""

from __future__ import annotations

from pathlib import Path

from mnemetric.longmemeval_v2.data_custody import verify_root
from mnemetric.longmemeval_v2.detail import DETAIL_PATH, detail_record, write_detail
from mnemetric.longmemeval_v2.family import FAMILY
from mnemetric.longmemeval_v2.latency import PATH as LATENCY_PATH
from mnemetric.longmemeval_v2.latency import latency_record, read_previous, write_latency
from mnemetric.longmemeval_v2.manifest import v2_manifest, write_manifest
from mnemetric.longmemeval_v2.memory import QUESTION_ONLY
from mnemetric.longmemeval_v2.metrics_file import V2Metrics, write_metrics
from mnemetric.longmemeval_v2.obtain import custody_path
from mnemetric.longmemeval_v2.run import finish, write_run
from mnemetric.longmemeval_v2.step_files import StepFiles, latency_file, read_component_facts, read_memory_facts
from mnemetric.longmemeval_v2.step_rows import CheckRow, MemoryRow, ReadRow, read_rows
from mnemetric.longmemeval_v2.step_shards import shard_reason
from mnemetric.longmemeval_v2.steps import Latencies, assemble, memory_file_sha256, params_sent_sets
from mnemetric.longmemeval_v2.validate import QUESTIONS_FILE
from mnemetric.params import stage_params
from mnemetric.stages import run

PARAMS = ["benchmark.name", "v2", "paths.custody_dir", "paths.v2_steps", "paths.v2_runs", "paths.metrics_v2",
          "paths.run_manifest_v2"]
"""paths.v2_runs: the untracked run folder (latency and LAFS live there)."""


def main() -> None:
    p = stage_params(PARAMS)
    files, v2 = StepFiles.at(p["paths.v2_steps"]), p["v2"]
    memory, read = read_rows(files.rows("memory"), MemoryRow), read_rows(files.rows("read"), ReadRow)
    check = read_rows(files.rows("check"), CheckRow)
    mf = read_memory_facts(files.facts("memory"))
    verify_root(custody_path(p["paths.custody_dir"], v2["name"]), Path(v2["data_root"]), only=(QUESTIONS_FILE,))
    facts = {"reader": read_component_facts(files.facts("read"), "read").component,
             "checker": read_component_facts(files.facts("check"), "check").component,
             "token_counter": mf.token_counter}
    latencies = Latencies.read(latency_file(p["paths.v2_runs"]), memory_file_sha256(files.rows("memory")))
    rows = assemble(Path(v2["data_root"]), memory, read, check, latencies)
    settings = {**mf.settings, "reader": facts["reader"]["name"], "checker": facts["checker"]["name"]}
    settings.setdefault("memory_query_context", QUESTION_ONLY)  # a memory step recorded before the key existed
    settings = {k: settings[k] for k in ("haystack", "tier", "domains", "memory", "memory_query_context", "reader",
                                         "checker", "token_counter", "memory_context_max_tokens")}
    part = next((r for r in map(shard_reason, (files.rows(s) for s in ("memory", "read", "check"))) if r), None)
    result = finish(settings, rows, facts, data=mf.data, images=mf.images, subset=mf.settings.get("subset"),
                    shard=part)
    both = (result.combined or next(iter(result.aggregated.values()))).to_record()
    write_metrics(p["paths.metrics_v2"], V2Metrics.of(FAMILY.name, p["benchmark.name"] == FAMILY.name, v2["name"],
                                                      result.summary, both))
    manifest = v2_manifest(v2, result.summary, p["paths.run_manifest_v2"], data=mf.data, facts=facts,
                           fingerprint_sha256=mf.memory.get("fingerprint_sha256"),
                           reader_params_sent=params_sent_sets(read), judge_params_sent=params_sent_sets(check),
                           protocol=result.protocol)
    write_manifest(p["paths.run_manifest_v2"], manifest)
    rows_sha = memory_file_sha256(files.rows("memory"))
    timing = latency_record(option=v2["name"], memory=settings["memory"], memory_sha256=rows_sha,
                            domains=settings["domains"], latencies=latencies, previous=read_previous(LATENCY_PATH),
                            accuracy=None if result.combined is None else result.combined.overall.overall_full_set,
                            tier=settings["tier"], data=mf.data,
                            official=result.summary.official_equivalence.value)
    write_latency(LATENCY_PATH, timing)
    write_detail(DETAIL_PATH, detail_record(v2["name"], settings["memory"], memory, check, rows))
    acc = result.summary.headline.accuracy["overall_full_set"]
    query = timing["query_seconds"] or {}
    q = (query.get("combined") or next(iter(query.values()), None) or {}).get("avg_seconds")
    lafs = timing["lafs"]["lafs_gain"] if timing["lafs"]["computed"] else f"none ({timing['lafs']['reason']})"
    if latencies is None:
        measured = (f"no latency sidecar for these memory rows (the untracked run folder is not written); "
                    + (f"query latency {q} s carried" if timing["measured"] else timing["not_measured_reason"]))
    else:
        write_run(p["paths.v2_runs"], result, v2)  # + upstream's run_args.json and runtime_inputs/ per domain
        measured = f"query latency {q} s{' (WARM cache)' if timing['cache']['warm'] else ''}"
    measured += f", LAFS gain {lafs} → {LATENCY_PATH}"
    print(f"v2_metrics: {v2['name']}: overall_full_set {acc.value!r} ({acc.correct}/{acc.n}), {measured} "
          f"→ {p['paths.metrics_v2']}")


if __name__ == "__main__":
    run(main)
