"""Stage v2_prepare: the data root of the ``v2`` option, verified, and its custody record.

The bundled sample (``source: bundled``) is committed: only its custody is recorded (every file's
sha256). The official tiers (``source: huggingface``) get exactly what the run needs downloaded into
``data_root`` (data/v2/<tier>/: resumable, each file checked against its pin; HF_ENDPOINT / HF_TOKEN
honoured), failing closed before any download when ``official`` and a needed file cannot be verified.
Either way → data/custody/v2-<name>.json (written only once the root is obtained and valid, never over
the record of another root), against which the V2 steps check every data file before use.
"""

from __future__ import annotations

from mnemetric.longmemeval_v2.obtain import custody_path, prepare
from mnemetric.params import stage_params
from mnemetric.stages import run

PARAMS = ["v2", "paths.custody_dir"]


def main() -> None:
    p = stage_params(PARAMS)
    out = custody_path(p["paths.custody_dir"], p["v2"]["name"])
    record = prepare(p["v2"], out)
    files = record["files"]
    verified = sum(1 for f in files if f.get("verified"))
    print(f"v2_prepare: {p['v2']['name']}: {p['v2']['data_root']}: {len(files)} file(s), {verified} verified "
          f"against the dataset pins → {out}")


if __name__ == "__main__":
    run(main)
