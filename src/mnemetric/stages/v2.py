"""Stage v2: one LongMemEval-V2 evaluation (the ``v2`` option) → metrics/v2.json (+ the run folder).

metrics/v2.json (DVC-tracked): accuracy with Clopper–Pearson intervals per domain and combined,
counts, memory-context tokens, official_equivalence with its reasons. Query latency and the LAFS
gain are measurements of this machine, so they are not in a tracked file: the full run —
upstream's per_question.jsonl and aggregated_metrics.json per domain, the web + enterprise
combination, the summary with latency and LAFS — goes to the untracked folder
``.mnemetric/v2-run/`` and the terminal. The data root is verified when stage v2_prepare's custody
record says so (data/custody/v2-<name>.json).
"""

from __future__ import annotations

import json

from mnemetric.io import write_json_atomic
from mnemetric.longmemeval_v2.obtain import custody_path, is_verified
from mnemetric.longmemeval_v2.pipeline import by_category, run_from_settings, tracked_summary, v2_manifest
from mnemetric.longmemeval_v2.run import write_run
from mnemetric.params import stage_params
from mnemetric.stages import run

PARAMS = ["benchmark.name", "v2", "llm", "paths.v2_runs", "paths.metrics_v2", "paths.run_manifest_v2",
          "paths.custody_dir"]
"""paths.v2_runs: the untracked run folder (latency and LAFS live there)."""


def main() -> None:
    p = stage_params(PARAMS)
    custody = json.loads(custody_path(p["paths.custody_dir"], p["v2"]["name"]).read_text(encoding="utf-8"))
    verified = is_verified(custody)
    result = run_from_settings(p["v2"], p["llm"], data_verified=verified)
    write_run(p["paths.v2_runs"], result)
    both = result.combined or next(iter(result.aggregated.values()))
    write_json_atomic(p["paths.metrics_v2"], {"benchmark": p["benchmark.name"], "v2": p["v2"]["name"],
                                              **tracked_summary(result.summary),
                                              "by_category": by_category(both)})
    write_json_atomic(p["paths.run_manifest_v2"], v2_manifest(p["v2"], result.summary, p["paths.run_manifest_v2"],
                                                              data_verified=verified))
    block = result.summary["combined"] or next(iter(result.summary["domains"].values()))
    acc = block["accuracy"]["overall_full_set"]
    lafs = result.summary.get("lafs") or {}
    print(f"v2: {p['v2']['name']}: overall_full_set {acc['value']!r} ({acc['correct']}/{acc['n']}), query latency "
          f"{(result.summary['combined'] or {}).get('memory_query_avg_seconds')} s, LAFS gain {lafs.get('lafs_gain')} "
          f"(measured, untracked: {p['paths.v2_runs']}) → {p['paths.metrics_v2']}")


if __name__ == "__main__":
    run(main)
