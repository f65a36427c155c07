"""Stage qa_metrics: aggregate the judged file as print_qa_metrics.py does → three files.

* ``paths.metrics_qa`` (metrics/qa.json, a DVC metric): the headline, point numbers only;
* metrics/detail/qa.json (next to it, under detail/; a plain output): intervals with their
  methods, n, per-type MDD, provenance, coverage, failures and ``cost``, the cost of the work;
* metrics/plots/qa_per_type.json (under plots/): rows for the bar_ci plot.

Failed questions (``<judged>.failures.jsonl``) are counted, named and kept out of every number;
while any question failed the run is not official. The job is
:func:`mnemetric.longmemeval.scoring.qa_report.score_judged_file` + ``write_qa_files`` (the same as
`mnemetric score-qa`).
"""

from __future__ import annotations

import dataclasses
import sys

from mnemetric.llm.failures import describe
from mnemetric.llm.usage import read_usage
from mnemetric.longmemeval.errata import errata_block
from mnemetric.longmemeval.questions import read_questions
from mnemetric.longmemeval.scoring.qa_report import detail_path, score_judged_file, write_qa_files
from mnemetric.params import stage_params
from mnemetric.stages import run

PARAMS = ["judge.name", "reader.name", "memory.name", "variant.name", "suite.name", "scoring.bootstrap", "errata",
          "paths.questions", "paths.judged", "paths.retrieve_usage", "paths.answer_usage", "paths.judge_usage",
          "paths.metrics_qa"]


def main() -> None:
    p = stage_params(PARAMS)
    ref_types = {q.question_id: q.question_type for q in read_questions(p["paths.questions"])}  # the suite's
    names = {"reader": p["reader.name"], "memory": p["memory.name"], "variant": p["variant.name"],
             "suite": p["suite.name"]}
    usage = [read_usage(p[k]) for k in ("paths.retrieve_usage", "paths.answer_usage", "paths.judge_usage")]
    scored = score_judged_file(p["paths.judged"], ref_types, names=names, judge=p["judge.name"],
                               resamples=p["scoring.bootstrap"]["resamples"], seed=p["scoring.bootstrap"]["seed"],
                               reference_file=p["paths.questions"], usage=usage)
    metrics = scored.detail
    if p["errata"]["enabled"]:  # opt-in; the official numbers above are untouched
        metrics = dataclasses.replace(metrics, errata_sensitivity=errata_block(
            p["errata"]["file"], p["variant.name"], scored.judged, ref_types))
    write_qa_files(p["paths.metrics_qa"], metrics, names=names)
    if scored.failures:
        print(f"qa_metrics: {len(scored.failures)} question(s) FAILED and are in no number (not official):\n"
              f"{describe(scored.failures)}", file=sys.stderr)
    print(f"qa_metrics: overall {metrics.overall} task_averaged {metrics.task_averaged} over "
          f"{len(scored.judged)} judged question(s) → {p['paths.metrics_qa']} "
          f"(detail: {detail_path(p['paths.metrics_qa'])})")


if __name__ == "__main__":
    run(main)
