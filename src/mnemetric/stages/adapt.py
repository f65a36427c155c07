"""Stage adapt: data/raw/<file> → data/adapted/<variant>.jsonl (memory view | eval view)."""

from __future__ import annotations

import sys
from pathlib import Path

from mnemetric.config import build
from mnemetric.longmemeval.adapt import WarningTally, adapt_file
from mnemetric.longmemeval.adapted import SessionAdapter
from mnemetric.params import stage_params
from mnemetric.stages import run

PARAMS = ["adapter", "variant.file", "paths.raw_dir", "paths.adapted"]


def main() -> None:
    p = stage_params(PARAMS)
    adapter: SessionAdapter = build(p["adapter"], "params.yaml adapter")
    source = Path(p["paths.raw_dir"]) / p["variant.file"]
    warnings = WarningTally()
    n = adapt_file(adapter, source, Path(p["paths.adapted"]), on_warning=warnings)
    print(f"adapt: {n} questions → {p['paths.adapted']} ({adapter.schema})")
    if warnings.count:
        print(f"adapt: {warnings.summary(source)}", file=sys.stderr)


if __name__ == "__main__":
    run(main)
