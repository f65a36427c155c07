"""Stage custody_manifest FAMILY: the sha256 of every file of a family's run → data/custody/outputs.sha256.json.

``python -m mnemetric.stages.custody_manifest longmemeval`` (dvc.yaml): the files are the named family's
(``Family.output_files``, reading its ``output_params``; LongMemEval: the raw dataset, adapted data,
retrieval log, contexts, hypotheses and judgments, with their failures sidecars); `mnemetric verify`
re-hashes them (see :mod:`mnemetric.custody.sha256_manifest`). ``--out PATH`` writes another family's
manifest elsewhere.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from mnemetric.custody.sha256_manifest import DEFAULT_PATH, build, workspace_opener, write_sha256_manifest
from mnemetric.errors import ConfigError
from mnemetric.family import one_family
from mnemetric.params import nest, stage_params
from mnemetric.stages import option, run


def params_for(args: Sequence[str]) -> list[str]:
    """The stage's declared params for its command-line arguments: what the family's output files are read from."""
    return list(one_family(option(args, "--out", str(DEFAULT_PATH))[0]).output_params)


def main(argv: Sequence[str] | None = None) -> None:
    args, out = option(sys.argv[1:] if argv is None else argv, "--out", str(DEFAULT_PATH))
    family = one_family(args)
    if family.output_files is None:
        raise ConfigError("benchmark", f"the {family.name!r} family names no output files",
                          fix="run this stage only for a family that has them")
    manifest = build(list(family.output_files(nest(stage_params(list(family.output_params))))), workspace_opener())
    write_sha256_manifest(out, manifest)
    print(f"custody_manifest: sha256 of {len(manifest.files)} file(s) → {out}")


if __name__ == "__main__":
    run(main)
