"""Stage data_metrics: metrics/data.json — what was evaluated, verified from which bytes.

Reads the custody record, the suite and the question index (stage suite): never the adapted file."""

from __future__ import annotations

from mnemetric.custody.dataset import read_dataset_custody
from mnemetric.longmemeval.data_stats import DataMetrics, TypeCounts, haystack_spreads, write_data_metrics
from mnemetric.longmemeval.suite import read_question_index, read_suite
from mnemetric.params import stage_params
from mnemetric.stages import run

PARAMS = ["variant.name", "variant.revision", "variant.sha256", "adapter.name", "adapter.schema",
          "paths.question_index", "paths.suite", "paths.custody_dir", "paths.metrics_data"]


def main() -> None:
    p = stage_params(PARAMS)
    custody = read_dataset_custody(f"{p['paths.custody_dir']}/{p['variant.name']}.json")
    suite = read_suite(p["paths.suite"])
    in_suite = set(suite.question_ids)
    index = read_question_index(p["paths.question_index"])
    sessions, turns = haystack_spreads([(q.sessions, q.turns) for q in index])
    metrics = DataMetrics(
        p["variant.name"], p["variant.revision"] or "bundled", p["variant.sha256"], custody.verified,
        p["adapter.name"], p["adapter.schema"], TypeCounts.of((q.question_type, q.abstention) for q in index),
        sessions, turns, suite.suite, suite.size, suite.ids_sha256,
        TypeCounts.of((q.question_type, q.abstention) for q in index if q.question_id in in_suite))
    write_data_metrics(p["paths.metrics_data"], metrics)
    print(f"data_metrics: {metrics.questions.total} questions, suite {suite.suite} = {suite.size}")


if __name__ == "__main__":
    run(main)
