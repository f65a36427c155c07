"""Stage judge: label every hypothesis → <hypotheses>.eval-results-<alias> (the custody record of verdicts).

Questions without a verdict (the reader's failures, carried over, and the judge's non-answers) go
to ``<judged>.failures.jsonl`` (always written); the usage sidecar holds the cost of the work. The
run's model calls go through ONE executor (params ``executor`` + ``llm``: one budget, one usage ledger).
``executor.shard`` (``K/N``) judges one shard of the questions (:mod:`mnemetric.longmemeval.shards`).
"""

from __future__ import annotations

import time
from contextlib import closing

from mnemetric.config import build
from mnemetric.execute import build_executor
from mnemetric.llm.failures import accuracy_pair, failures_path, read_failures
from mnemetric.llm.run_log import finish_stage_run
from mnemetric.llm.usage import write_usage
from mnemetric.longmemeval.components import Judge, judge_file, write_judged
from mnemetric.longmemeval.hypotheses import read_hypotheses
from mnemetric.longmemeval.questions import read_questions
from mnemetric.longmemeval.shards import judge_shard_run, judge_sharded
from mnemetric.params import stage_params
from mnemetric.shard import manifest_path, record_manifest
from mnemetric.stages import run
from mnemetric.stages._partial import end_partial

PARAMS = ["judge", "executor", "llm", "paths.questions", "paths.hypotheses", "paths.judged", "paths.judge_usage"]


def main() -> None:
    p = stage_params(PARAMS)
    judge: Judge = build(p["judge"], "params.yaml judge")
    hyp_file = p["paths.hypotheses"]
    hyps = [h.record for h in read_hypotheses(hyp_file)]  # validated: file, line, field
    refs = {q.question_id: q.reference for q in read_questions(p["paths.questions"])}
    carried = read_failures(failures_path(hyp_file))
    start = time.monotonic()
    shard, lines, fails = None, None, None
    with closing(build_executor(p["executor"], p["llm"])) as executor:
        if getattr(executor, "shard", None) is None and not manifest_path(hyp_file).exists():
            judged = judge_file(judge, hyps, refs, hyp_file, executor, carried)
        else:
            shard = judge_shard_run(getattr(executor, "shard", None), p["judge"], hyp_file, refs, p["paths.questions"])
            judged, lines, fails = judge_sharded(judge, hyps, refs, hyp_file, executor, carried, shard)
    finish_stage_run("judge", executor.usage, start, judged.failures, total=len(hyps) + len(carried))
    record_manifest(shard, p["paths.judged"], lines, fails)
    write_judged(p["paths.judged"], judged)
    write_usage(p["paths.judge_usage"], executor.usage.work)
    print(f"judge: {judge.name}: {len(judged.lines)} judgments, {len(judged.failures)} failed → {p['paths.judged']}")
    correct = sum(bool(j["autoeval_label"]["label"]) for j in judged.lines)
    end_partial("judge", judged.failures, len(hyps) + len(carried), p["llm"].get("allow_partial", False),
                accuracy_pair(correct, len(judged.lines), len(judged.failures)))


if __name__ == "__main__":
    run(main)
