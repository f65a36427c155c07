"""Stage v2: one LongMemEval-V2 evaluation (the ``v2`` option) → metrics/v2.json (+ the run folder).

metrics/v2.json (DVC-tracked): accuracy with Clopper–Pearson intervals per domain and combined,
counts, memory-context tokens, official_equivalence with its reasons. Query latency and the LAFS
gain are measurements of this machine, so they are not in a tracked file: the full run —
upstream's per_question.jsonl and aggregated_metrics.json per domain, the web + enterprise
combination, the summary with latency and LAFS — goes to the untracked folder
``.mnemetric/v2-run/`` and the terminal. The data root is verified when stage v2_prepare's custody
record says so (data/custody/v2-<name>.json). metrics/run-v2.json (:func:`~mnemetric.longmemeval_v2.pipeline.v2_manifest`)
names the data (repo, revision, the custody record's sha256), the reader, checker, token counter and memory
(with its code fingerprint from stage fingerprint's v2-memory.json).
"""

from __future__ import annotations

import json

from mnemetric.fingerprint import read_fingerprint
from mnemetric.io import write_json_atomic
from mnemetric.longmemeval_v2.family import FAMILY
from mnemetric.longmemeval_v2.obtain import custody_path, is_verified
from mnemetric.longmemeval_v2.pipeline import by_category, run_from_settings, tracked_summary, v2_manifest
from mnemetric.longmemeval_v2.run import write_run
from mnemetric.params import stage_params
from mnemetric.stages import run

PARAMS = ["benchmark.name", "v2", "llm", "paths.v2_runs", "paths.metrics_v2", "paths.run_manifest_v2",
          "paths.custody_dir", "paths.fingerprints"]
"""paths.v2_runs: the untracked run folder (latency and LAFS live there); paths.fingerprints: stage
fingerprint's v2-memory.json (the memory's code fingerprint, recorded in metrics/run-v2.json)."""

V2_MEMORY_FINGERPRINT = "v2-memory"
"""<paths.fingerprints>/v2-memory.json, written by stage fingerprint."""


def main() -> None:
    p = stage_params(PARAMS)
    custody_file = custody_path(p["paths.custody_dir"], p["v2"]["name"])
    custody_bytes = custody_file.read_bytes()
    verified = is_verified(json.loads(custody_bytes))
    fingerprint = read_fingerprint(p["paths.fingerprints"], V2_MEMORY_FINGERPRINT)
    result = run_from_settings(p["v2"], p["llm"], data_verified=verified)
    write_run(p["paths.v2_runs"], result)
    both = result.combined or next(iter(result.aggregated.values()))
    write_json_atomic(p["paths.metrics_v2"], {"benchmark": FAMILY.name, "headline": p["benchmark.name"] == FAMILY.name,
                                              "v2": p["v2"]["name"],
                                              **tracked_summary(result.summary),
                                              "by_category": by_category(both)})
    manifest = v2_manifest(p["v2"], result.summary, p["paths.run_manifest_v2"], data_verified=verified,
                           facts=result.provenance, custody_file=custody_file.as_posix(), custody=custody_bytes,
                           fingerprint_sha256=fingerprint)
    write_json_atomic(p["paths.run_manifest_v2"], manifest)
    block = result.summary["combined"] or next(iter(result.summary["domains"].values()))
    acc = block["accuracy"]["overall_full_set"]
    lafs = result.summary.get("lafs") or {}
    print(f"v2: {p['v2']['name']}: overall_full_set {acc['value']!r} ({acc['correct']}/{acc['n']}), query latency "
          f"{(result.summary['combined'] or {}).get('memory_query_avg_seconds')} s, LAFS gain {lafs.get('lafs_gain')} "
          f"(measured, untracked: {p['paths.v2_runs']}) → {p['paths.metrics_v2']}")


if __name__ == "__main__":
    run(main)
