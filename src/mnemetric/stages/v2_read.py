"""Stage v2_read: the reader answers each question from its memory context → ``<paths.v2_steps>/read.jsonl``.

The reader (``v2.reader``) builds the calls; the run's executor (the ``executor`` option, default immediate,
with the ``llm:`` settings: one budget and one usage ledger for this stage run) sends them. Each row keeps the
request's sha256 and the parameters sent. Beside it: read.json (the reader's facts), read-usage.json (the
cost of the work); the run's counters go to the run log. The images the reader sends (question images, image
memory items) are checked first against the data root's custody record. A sharded memory.jsonl (stage v2_memory
with ``executor.shard``) is answered as it is — the shard's rows — and read.jsonl gets its shard manifest
(:mod:`mnemetric.longmemeval_v2.step_shards`).
"""

from __future__ import annotations

import time

from mnemetric.execute import build_executor
from mnemetric.llm.failures import QuestionFailure
from mnemetric.llm.run_log import finish_stage_run
from mnemetric.llm.usage import write_usage
from mnemetric.longmemeval_v2.data_custody import verify_root
from mnemetric.longmemeval_v2.facts import reader_facts
from mnemetric.longmemeval_v2.obtain import custody_path
from mnemetric.longmemeval_v2.pipeline import component
from mnemetric.longmemeval_v2.step_files import ComponentFacts, StepFiles, write_facts
from mnemetric.longmemeval_v2.step_rows import MemoryRow, read_rows, write_rows
from mnemetric.longmemeval_v2.step_shards import carried_shard, write_carried_manifest
from mnemetric.longmemeval_v2.steps import image_files, read_step
from mnemetric.params import stage_params
from mnemetric.stages import run
from mnemetric.stages._partial import end_partial

PARAMS = ["v2.name", "v2.data_root", "v2.reader", "executor", "llm", "paths.custody_dir", "paths.v2_steps"]


def main() -> None:
    p = stage_params(PARAMS)
    files = StepFiles.at(p["paths.v2_steps"])
    reader = component({"reader": p["v2.reader"]}, "reader")
    memory = read_rows(files.rows("memory"), MemoryRow)
    verify_root(custody_path(p["paths.custody_dir"], p["v2.name"]), p["v2.data_root"],
                only=image_files(memory, p["v2.data_root"]))
    start = time.monotonic()
    executor = build_executor(p["executor"], p["llm"])
    try:
        shard = carried_shard("v2_read", getattr(executor, "shard", None), [files.rows("memory")],
                              {"reader": p["v2.reader"]})
        rows = read_step(memory, reader, executor, reader.texts)
        failures = [QuestionFailure(r.question_id, "v2_read", r.failed, r.request_sha256, getattr(reader, "model", None)
                                    or reader.name) for r in rows if r.failed]
        finish_stage_run("v2_read", executor.usage, start, failures, total=len(rows))
        write_carried_manifest(shard, files.rows("read"), rows)
        write_rows(files.rows("read"), rows)
        write_facts(files.facts("read"), ComponentFacts("read", reader_facts(reader, reader.texts)))
        write_usage(files.usage("read"), executor.usage.work)
    finally:
        executor.close()
    print(f"v2_read: {reader.name}: {len(rows) - len(failures)} answer(s), {len(failures)} failed → {files.rows('read')}")
    end_partial("v2_read", failures, len(rows), p["llm"].get("allow_partial", False))


if __name__ == "__main__":
    run(main)
