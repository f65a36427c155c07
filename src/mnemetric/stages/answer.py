"""Stage answer: the reader answers each question from its context → upstream hypotheses JSONL.

Questions whose reply was a non-answer go to ``<hypotheses>.failures.jsonl`` (always written);
the usage sidecar holds the cost of the work; the run's counters go to the run log.
"""

from __future__ import annotations

import time

from mnemetric.config import build
from mnemetric.errors import InputError
from mnemetric.io import write_jsonl_atomic
from mnemetric.llm.budget import UsageStats
from mnemetric.llm.usage import write_usage
from mnemetric.llm.failures import failures_path, write_failures
from mnemetric.llm.run_log import finish_stage_run
from mnemetric.longmemeval.adapted import read_adapted
from mnemetric.longmemeval.components import Reader, llm_factory
from mnemetric.longmemeval.contexts import read_contexts
from mnemetric.params import stage_params
from mnemetric.stages import run

PARAMS = ["reader", "llm", "paths.adapted", "paths.contexts", "paths.hypotheses", "paths.answer_usage"]


def main() -> None:
    p = stage_params(PARAMS)
    reader: Reader = build(p["reader"], "params.yaml reader")
    contexts = read_contexts(p["paths.contexts"])  # validated: file, line, field
    queries_by_id = {r.eval.question_id: r.memory.query for r in read_adapted(p["paths.adapted"])}
    for n, c in enumerate(contexts, start=1):
        if c.question_id not in queries_by_id:
            raise InputError(p["paths.contexts"], f"line {n} ({c.question_id})", "question_id",
                             f"not a question of {p['paths.adapted']}", fix="rerun `dvc repro retrieve`")
    queries = [queries_by_id[c.question_id] for c in contexts]
    stats, start = UsageStats(), time.monotonic()
    answered = reader.answer(queries, contexts, llm_factory(p["llm"], stats))
    finish_stage_run("answer", stats, start, answered.failures, total=len(contexts))
    write_jsonl_atomic(p["paths.hypotheses"], answered.hypotheses)
    write_failures(failures_path(p["paths.hypotheses"]), answered.failures)
    write_usage(p["paths.answer_usage"], stats.work)
    print(f"answer: {reader.name}: {len(answered.hypotheses)} hypotheses, {len(answered.failures)} failed "
          f"→ {p['paths.hypotheses']}")


if __name__ == "__main__":
    run(main)
