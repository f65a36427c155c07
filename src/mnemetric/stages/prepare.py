"""Stage prepare: obtain the variant's file into data/raw/, verified, plus data/custody/<variant>.json."""

from __future__ import annotations

from pathlib import Path

from mnemetric.custody.dataset import Variant, failed_record, obtain, write_dataset_custody
from mnemetric.errors import MnemetricError
from mnemetric.params import stage_params
from mnemetric.stages import run

PARAMS = ["variant", "paths.raw_dir", "paths.downloads_dir", "paths.custody_dir"]


def main() -> None:
    p = stage_params(PARAMS)
    variant = Variant.from_params(p["variant"])
    custody_path = Path(p["paths.custody_dir"]) / f"{variant.name}.json"
    try:
        dest, record = obtain(variant, Path(p["paths.raw_dir"]), Path(p["paths.downloads_dir"]))
    except MnemetricError as exc:
        write_dataset_custody(custody_path, failed_record(variant, exc))
        raise
    write_dataset_custody(custody_path, record)
    print(f"prepare: {variant.name}: {dest} verified (sha256 {record.sha256})")


if __name__ == "__main__":
    run(main)
