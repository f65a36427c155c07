"""Stage data_metrics: metrics/data.json — what was evaluated, verified from which bytes."""

from __future__ import annotations

from mnemetric.custody.dataset import read_dataset_custody
from mnemetric.io import write_json_atomic
from mnemetric.longmemeval.data_stats import haystack_stats, type_counts
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
    meta = [(q.question_type, q.abstention) for q in index]
    sizes = [(q.sessions, q.turns) for q in index]
    suite_meta = [(q.question_type, q.abstention) for q in index if q.question_id in in_suite]
    metrics = {
        "variant": {"name": p["variant.name"], "revision": p["variant.revision"] or "bundled",
                    "sha256": p["variant.sha256"], "sha256_verified": custody.verified},
        "adapter": {"name": p["adapter.name"], "schema": p["adapter.schema"]},
        "questions": type_counts(meta),
        "haystack": haystack_stats(sizes),
        "suite": {"name": suite.suite, "size": suite.size, "ids_sha256": suite.ids_sha256,
                  "questions": type_counts(suite_meta)},
    }
    write_json_atomic(p["paths.metrics_data"], metrics)
    print(f"data_metrics: {metrics['questions']['total']} questions, suite {suite.suite} = {suite.size}")


if __name__ == "__main__":
    run(main)
