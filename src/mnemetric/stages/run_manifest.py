"""Stage run_manifest: where this run's numbers came from → metrics/run.json (deterministic).

metrics/run.json is the LongMemEval (V1) run's manifest: this door takes the ``longmemeval`` family
from the family registry (:func:`mnemetric.family.family_named`, the ``benchmark`` conf group), whose
``manifest_sections`` read the run's files — dataset, suite, adapter, memory system, reader and judge
(the models the server returned and the parameters actually sent, as the output lines record them),
retrieval budget requested and delivered, scoring profile, versions, counts — and
:func:`mnemetric.custody.manifest.build_manifest` frames them with the publishability gate.
"""

from __future__ import annotations

from mnemetric.custody.manifest import build_manifest, nest
from mnemetric.errors import ConfigError
from mnemetric.family import family_named
from mnemetric.io import write_json_atomic
from mnemetric.params import stage_params
from mnemetric.stages import run

PARAMS = ["variant", "suite", "adapter", "memory", "reader", "judge", "retrieval", "scoring.name",
          "paths.custody_dir", "paths.suite", "paths.fingerprints", "paths.contexts", "paths.hypotheses",
          "paths.judged"]
FAMILY_NAME = "longmemeval"
OUT = "metrics/run.json"


def main() -> None:
    family = family_named(FAMILY_NAME)
    if family.manifest_sections is None or family.run_manifest != OUT:
        raise ConfigError("benchmark", f"the {FAMILY_NAME!r} option does not build {OUT} (its family has no "
                          "manifest sections, or names another run manifest)", fix="restore conf/benchmark/longmemeval.yaml")
    manifest = build_manifest(family, family.manifest_sections(nest(stage_params(PARAMS))))
    write_json_atomic(OUT, manifest)
    gate = manifest["official_equivalence"]
    why = "" if gate["value"] else ":\n  " + "\n  ".join(gate["reasons"])
    print(f"run_manifest: official_equivalence {str(gate['value']).lower()}{why}\n→ {OUT}")


if __name__ == "__main__":
    run(main)
