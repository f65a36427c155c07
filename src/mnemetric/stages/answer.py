"""Stage answer: the reader answers each question from its context → upstream hypotheses JSONL.

Questions whose reply was a non-answer go to ``<hypotheses>.failures.jsonl`` (always written);
the usage sidecar holds the cost of the work; the run's counters go to the run log. The job itself is
:func:`mnemetric.longmemeval.answer.answer_file` (the same as `mnemetric answer`).
"""

from __future__ import annotations

import time

from mnemetric.config import build
from mnemetric.llm.budget import UsageStats
from mnemetric.llm.run_log import finish_stage_run
from mnemetric.longmemeval.answer import Queries, answer_file, write_answered
from mnemetric.longmemeval.components import Reader, llm_factory
from mnemetric.params import stage_params
from mnemetric.stages import run

PARAMS = ["reader", "llm", "paths.questions", "paths.contexts", "paths.hypotheses", "paths.answer_usage"]


def main() -> None:
    p = stage_params(PARAMS)
    reader: Reader = build(p["reader"], "params.yaml reader")
    stats, start = UsageStats(), time.monotonic()
    answered = answer_file(reader, p["paths.contexts"], Queries.of_questions(p["paths.questions"]),
                           llm_factory(p["llm"], stats))
    total = len(answered.hypotheses) + len(answered.failures)
    finish_stage_run("answer", stats, start, answered.failures, total=total)
    write_answered(p["paths.hypotheses"], p["paths.answer_usage"], answered, stats.work)
    print(f"answer: {reader.name}: {len(answered.hypotheses)} hypotheses, {len(answered.failures)} failed "
          f"→ {p['paths.hypotheses']}")


if __name__ == "__main__":
    run(main)
