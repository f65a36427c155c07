"""Stage run_manifest FAMILY: where a family's numbers came from → its run manifest (deterministic).

``python -m mnemetric.stages.run_manifest longmemeval`` (dvc.yaml) writes metrics/run.json: the family
named on the command line comes from the family registry (:func:`mnemetric.family.families_from_args`,
the ``benchmark`` conf group); it says where its manifest goes (``run_manifest``), the params its
``manifest_sections`` read (``manifest_params``: this stage's dvc.yaml params) and those sections, read
from the run's files (LongMemEval: dataset, suite, adapter, memory system, reader and judge — the models
the server returned and the parameters actually sent, as the output lines record them — retrieval budget
requested and delivered, scoring profile, versions, counts); :func:`mnemetric.custody.manifest.build_manifest`
frames them with the publishability gate. A new family adds its own stage with its own name.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from mnemetric.custody.manifest import frame_manifest, write_run_manifest
from mnemetric.errors import ConfigError
from mnemetric.family import one_family
from mnemetric.params import nest, stage_params
from mnemetric.stages import run


def params_for(args: Sequence[str]) -> list[str]:
    """The stage's declared params for its command-line arguments: what the family's manifest sections read."""
    return list(one_family(args).manifest_params)


def main(argv: Sequence[str] | None = None) -> None:
    family = one_family(sys.argv[1:] if argv is None else argv)
    if family.manifest_sections is None or family.run_manifest is None:
        raise ConfigError("benchmark", f"the {family.name!r} family builds no run manifest here (no manifest "
                          "sections, or no run_manifest path)", fix="run this stage only for a family that has them")
    manifest = frame_manifest(family, family.manifest_sections(nest(stage_params(list(family.manifest_params)))))
    write_run_manifest(family.run_manifest, manifest)
    gate = manifest.official_equivalence
    why = "" if gate.value else ":\n  " + "\n  ".join(gate.reasons)
    print(f"run_manifest: official_equivalence {str(gate.value).lower()}{why}\n→ {family.run_manifest}")


if __name__ == "__main__":
    run(main)
