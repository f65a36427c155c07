"""Stage data_metrics: metrics/data.json — what was evaluated, verified from which bytes."""

from __future__ import annotations

import json

from mnemetric.io import write_json_atomic
from mnemetric.longmemeval.adapted import read_adapted
from mnemetric.longmemeval.data_stats import haystack_stats, type_counts
from mnemetric.longmemeval.suite import read_suite
from mnemetric.params import stage_params
from mnemetric.stages import run

PARAMS = ["variant.name", "variant.revision", "variant.sha256", "adapter.name", "adapter.schema",
          "paths.adapted", "paths.suite", "paths.custody_dir", "paths.metrics_data"]


def main() -> None:
    p = stage_params(PARAMS)
    with open(f"{p['paths.custody_dir']}/{p['variant.name']}.json", encoding="utf-8") as fh:
        custody = json.load(fh)
    suite = read_suite(p["paths.suite"])
    in_suite = set(suite.question_ids)
    meta, sizes, suite_meta = [], [], []
    for r in read_adapted(p["paths.adapted"]):
        pair = (r.eval.question_type, r.eval.abstention)
        meta.append(pair)
        sizes.append((len(r.memory.sessions), sum(len(s.messages) for s in r.memory.sessions)))
        if r.eval.question_id in in_suite:
            suite_meta.append(pair)
    metrics = {
        "variant": {"name": p["variant.name"], "revision": p["variant.revision"] or "bundled",
                    "sha256": p["variant.sha256"], "sha256_verified": bool(custody.get("verified"))},
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
