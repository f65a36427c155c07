"""Stage answer: the reader answers each question from its context → upstream hypotheses JSONL.

Questions whose reply was a non-answer go to ``<hypotheses>.failures.jsonl`` (always written);
the usage sidecar holds the cost of the work; the run's counters go to the run log. The job itself is
:func:`mnemetric.longmemeval.answer.answer_file` (the same as `mnemetric answer`); the run's model calls
go through ONE executor (params ``executor`` + ``llm``: one budget, one usage ledger). ``executor.shard``
(``K/N``) answers one shard of the questions (:mod:`mnemetric.longmemeval.shards`; `mnemetric merge` joins).
"""

from __future__ import annotations

import time
from contextlib import closing

from mnemetric.config import build
from mnemetric.execute import build_executor
from mnemetric.llm.run_log import finish_stage_run
from mnemetric.longmemeval.answer import Queries, answer_file, write_answered
from mnemetric.longmemeval.components import Reader
from mnemetric.longmemeval.questions import read_questions
from mnemetric.longmemeval.shards import answer_shard_run, answer_sharded
from mnemetric.params import stage_params
from mnemetric.shard import manifest_path, record_manifest
from mnemetric.stages import run
from mnemetric.stages._partial import end_partial

PARAMS = ["reader", "executor", "llm", "paths.questions", "paths.contexts", "paths.hypotheses", "paths.answer_usage"]


def main() -> None:
    p = stage_params(PARAMS)
    reader: Reader = build(p["reader"], "params.yaml reader")
    start = time.monotonic()
    shard, lines, fails = None, None, None
    with closing(build_executor(p["executor"], p["llm"])) as executor:
        queries = Queries.of_questions(p["paths.questions"])
        if getattr(executor, "shard", None) is None and not manifest_path(p["paths.contexts"]).exists():
            answered = answer_file(reader, p["paths.contexts"], queries, executor)
        else:
            universe = [(q.question_id, q.question_type) for q in read_questions(p["paths.questions"])]
            shard = answer_shard_run(getattr(executor, "shard", None), p["reader"], p["paths.contexts"], universe,
                                     p["paths.questions"])
            answered, lines, fails = answer_sharded(reader, p["paths.contexts"], queries, executor, shard)
    total = len(answered.hypotheses) + len(answered.failures)
    finish_stage_run("answer", executor.usage, start, answered.failures, total=total)
    record_manifest(shard, p["paths.hypotheses"], lines, fails)
    write_answered(p["paths.hypotheses"], p["paths.answer_usage"], answered, executor.usage.work)
    print(f"answer: {reader.name}: {len(answered.hypotheses)} hypotheses, {len(answered.failures)} failed "
          f"→ {p['paths.hypotheses']}")
    end_partial("answer", answered.failures, total, p["llm"].get("allow_partial", False))


if __name__ == "__main__":
    run(main)
