"""Stage run_manifest: where this run's numbers came from → metrics/run.json (deterministic).

Dataset, suite, adapter, memory system, reader and judge (the models the server returned and the
parameters actually sent, read back from the LLM cache), retrieval budget requested and delivered,
scoring profile, versions, counts, and the publishability gate (see :mod:`mnemetric.custody.manifest`).
metrics/run.json is the LongMemEval (V1) run's manifest: this door passes the V1 family object.
"""

from __future__ import annotations

from mnemetric.custody.manifest import build_manifest, gather_inputs, nest
from mnemetric.io import write_json_atomic
from mnemetric.longmemeval.family import FAMILY
from mnemetric.params import stage_params
from mnemetric.stages import run

PARAMS = ["variant", "suite", "adapter", "memory", "reader", "judge", "retrieval", "scoring.name",
          "paths.custody_dir", "paths.suite", "paths.fingerprints", "paths.contexts", "paths.hypotheses",
          "paths.judged"]
OUT = "metrics/run.json"


def main() -> None:
    manifest = build_manifest(gather_inputs(nest(stage_params(PARAMS))), FAMILY)
    write_json_atomic(OUT, manifest)
    gate = manifest["official_equivalence"]
    why = "" if gate["value"] else ":\n  " + "\n  ".join(gate["reasons"])
    print(f"run_manifest: official_equivalence {str(gate['value']).lower()}{why}\n→ {OUT}")


if __name__ == "__main__":
    run(main)
