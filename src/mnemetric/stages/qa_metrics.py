"""Stage qa_metrics: aggregate the judged file as print_qa_metrics.py does → three files.

* ``paths.metrics_qa`` (metrics/qa.json, a DVC metric): the headline, point numbers only;
* metrics/detail/qa.json (next to it, under detail/; a plain output): intervals with their
  methods, n, per-type MDD, provenance, coverage, failures and ``cost``, the cost of the work;
* metrics/plots/qa_per_type.json (under plots/): rows for the bar_ci plot.

Failed questions (``<judged>.failures.jsonl``) are counted, named and kept out of every number;
while any question failed the run is not official.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mnemetric.io import write_json_atomic
from mnemetric.llm.failures import describe, failures_path, read_failures
from mnemetric.llm.usage import read_usage
from mnemetric.longmemeval.adapted import read_adapted
from mnemetric.longmemeval.errata import errata_block
from mnemetric.longmemeval.hypotheses import read_judged
from mnemetric.longmemeval.scoring.qa_report import cost_block, judge_traces, per_type_plot_rows, qa_headline, qa_report
from mnemetric.longmemeval.suite import read_suite
from mnemetric.params import stage_params
from mnemetric.stages import run

PARAMS = ["judge.name", "reader.name", "memory.name", "variant.name", "suite.name", "scoring.bootstrap", "errata",
          "paths.adapted", "paths.suite", "paths.judged", "paths.retrieve_usage", "paths.answer_usage", "paths.judge_usage",
          "paths.metrics_qa"]


def detail_path(metrics_qa: str | Path) -> Path:
    """metrics/qa.json → metrics/detail/qa.json."""
    path = Path(metrics_qa)
    return path.parent / "detail" / path.name


def plot_path(metrics_qa: str | Path) -> Path:
    """metrics/qa.json → metrics/plots/qa_per_type.json."""
    return Path(metrics_qa).parent / "plots" / "qa_per_type.json"


def main() -> None:
    p = stage_params(PARAMS)
    suite = set(read_suite(p["paths.suite"]).question_ids)
    ref_types = {r.eval.question_id: r.eval.question_type for r in read_adapted(p["paths.adapted"])
                 if r.eval.question_id in suite}
    judged, failures = read_judged(p["paths.judged"]), read_failures(failures_path(p["paths.judged"]))
    traces = judge_traces([j.judge_trace for j in judged])
    report = qa_report(judged, ref_types, judge=p["judge.name"], traces=traces,
                       resamples=p["scoring.bootstrap"]["resamples"], seed=p["scoring.bootstrap"]["seed"],
                       file=p["paths.judged"], reference_file=p["paths.adapted"], failures=failures)
    usage = [read_usage(p[k]) for k in ("paths.retrieve_usage", "paths.answer_usage", "paths.judge_usage")]
    names = {"reader": p["reader.name"], "memory": p["memory.name"], "variant": p["variant.name"],
             "suite": p["suite.name"]}
    metrics = {**names, **report, "cost": cost_block(*usage)}
    if p["errata"]["enabled"]:  # opt-in; the official numbers above are untouched
        metrics["errata_sensitivity"] = errata_block(p["errata"]["file"], p["variant.name"], judged, ref_types)
    write_json_atomic(detail_path(p["paths.metrics_qa"]), metrics)
    write_json_atomic(plot_path(p["paths.metrics_qa"]), per_type_plot_rows(metrics))
    write_json_atomic(p["paths.metrics_qa"], {**names, "judge": p["judge.name"], **qa_headline(metrics)})
    if failures:
        print(f"qa_metrics: {len(failures)} question(s) FAILED and are in no number (not official):\n"
              f"{describe(failures)}", file=sys.stderr)
    print(f"qa_metrics: overall {metrics['overall']} task_averaged {metrics['task_averaged']} over "
          f"{len(judged)} judged question(s) → {p['paths.metrics_qa']} "
          f"(detail: {detail_path(p['paths.metrics_qa'])})")


if __name__ == "__main__":
    run(main)
