"""Stage custody_manifest: the sha256 of every file of the run → data/custody/outputs.sha256.json.

The files are the ``longmemeval`` family's (``Family.output_files``, taken from the family registry):
the raw dataset, adapted data, retrieval log, contexts, hypotheses and judgments (with their
failures sidecars); `mnemetric verify` re-hashes them (see :mod:`mnemetric.custody.sha256_manifest`).
"""

from __future__ import annotations

from mnemetric.custody.manifest import nest
from mnemetric.custody.sha256_manifest import DEFAULT_PATH, build, workspace_opener, write_sha256_manifest
from mnemetric.errors import ConfigError
from mnemetric.family import family_named
from mnemetric.params import stage_params
from mnemetric.stages import run

PARAMS = ["variant.file", "paths.raw_dir", "paths.adapted", "paths.retrieval_log", "paths.contexts",
          "paths.hypotheses", "paths.judged"]
FAMILY_NAME = "longmemeval"


def main() -> None:
    family = family_named(FAMILY_NAME)
    if family.output_files is None:
        raise ConfigError("benchmark", f"the {FAMILY_NAME!r} family names no output files",
                          fix="restore conf/benchmark/longmemeval.yaml")
    manifest = build(list(family.output_files(nest(stage_params(PARAMS)))), workspace_opener())
    write_sha256_manifest(DEFAULT_PATH, manifest)
    print(f"custody_manifest: sha256 of {len(manifest.files)} file(s) → {DEFAULT_PATH}")


if __name__ == "__main__":
    run(main)
