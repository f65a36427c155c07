"""Stage v2_check: score each answer with upstream's checkers → ``<paths.v2_steps>/check.jsonl``.

Deterministic checkers run here; the LLM checkers (``v2.checker``) build the judge calls and the run's executor
sends them (the ``executor`` option with the ``llm:`` settings: one budget and one usage ledger for this stage
run). Gold answers come from the data root's questions.jsonl, checked first against its custody record. Each
row keeps the judge request's sha256 and the parameters sent. Beside it: check.json (the checker's facts),
check-usage.json (the cost of the work); the run's counters go to the run log. Editing the checker reruns this
stage and v2_metrics only. Sharded memory.jsonl and read.jsonl (one shard, ``executor.shard``) are checked as they
are and check.jsonl gets their shard manifest (:mod:`mnemetric.longmemeval_v2.step_shards`).
"""

from __future__ import annotations

import time
from pathlib import Path

from mnemetric.execute import build_executor
from mnemetric.llm.failures import QuestionFailure
from mnemetric.llm.run_log import finish_stage_run
from mnemetric.llm.usage import write_usage
from mnemetric.longmemeval_v2.data_custody import verify_root
from mnemetric.longmemeval_v2.facts import checker_facts
from mnemetric.longmemeval_v2.obtain import custody_path
from mnemetric.longmemeval_v2.pipeline import component
from mnemetric.longmemeval_v2.step_files import ComponentFacts, StepFiles, write_facts
from mnemetric.longmemeval_v2.step_rows import MemoryRow, ReadRow, read_rows, write_rows
from mnemetric.longmemeval_v2.step_shards import carried_shard, write_carried_manifest
from mnemetric.longmemeval_v2.steps import check_step
from mnemetric.longmemeval_v2.validate import QUESTIONS_FILE
from mnemetric.params import stage_params
from mnemetric.stages import run
from mnemetric.stages._partial import end_partial

PARAMS = ["v2.name", "v2.data_root", "v2.checker", "executor", "llm", "paths.custody_dir", "paths.v2_steps"]


def main() -> None:
    p = stage_params(PARAMS)
    root, files = Path(p["v2.data_root"]), StepFiles.at(p["paths.v2_steps"])
    verify_root(custody_path(p["paths.custody_dir"], p["v2.name"]), root, only=(QUESTIONS_FILE,))
    checker = component({"checker": p["v2.checker"]}, "checker")
    memory, read = read_rows(files.rows("memory"), MemoryRow), read_rows(files.rows("read"), ReadRow)
    start = time.monotonic()
    executor = build_executor(p["executor"], p["llm"])
    try:
        shard = carried_shard("v2_check", getattr(executor, "shard", None), [files.rows("memory"), files.rows("read")],
                              {"checker": p["v2.checker"]})
        rows = check_step(root, memory, read, checker, executor)
        failures = [QuestionFailure(r.question_id, "v2_check", r.failed, r.request_sha256,
                                    getattr(checker, "model", None) or checker.name)
                    for r, answered in zip(rows, read) if r.failed and not answered.failed]
        finish_stage_run("v2_check", executor.usage, start, failures, total=sum(1 for r in read if not r.failed))
        write_carried_manifest(shard, files.rows("check"), rows)
        write_rows(files.rows("check"), rows)
        write_facts(files.facts("check"), ComponentFacts("check", checker_facts(checker)))
        write_usage(files.usage("check"), executor.usage.work)
    finally:
        executor.close()
    print(f"v2_check: {checker.name}: {sum(1 for r in rows if r.score_bool)} of {len(rows)} correct, "
          f"{len(failures)} judge failure(s) → {files.rows('check')}")
    end_partial("v2_check", failures, sum(1 for r in read if not r.failed), p["llm"].get("allow_partial", False))


if __name__ == "__main__":
    run(main)
