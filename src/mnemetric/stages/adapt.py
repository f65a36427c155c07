"""Stage adapt: data/raw/<file> → data/adapted/<variant>.jsonl (memory view | eval view)."""

from __future__ import annotations

import json
from pathlib import Path

from tqdm import tqdm

from ..adapters import SessionAdapter
from ..data.longmemeval import iter_instances
from ..io import atomic_open
from ..config import build
from ..params import stage_params
from . import run

PARAMS = ["adapter", "variant.file", "paths.raw_dir", "paths.adapted"]


def main() -> None:
    p = stage_params(PARAMS)
    adapter: SessionAdapter = build(p["adapter"], "params.yaml adapter")
    source = Path(p["paths.raw_dir"]) / p["variant.file"]
    n = adapt_file(adapter, source, Path(p["paths.adapted"]))
    print(f"adapt: {n} questions → {p['paths.adapted']} ({adapter.schema})")


def adapt_file(adapter: SessionAdapter, source: Path, out: Path) -> int:
    n = 0
    with atomic_open(out) as fh:
        instances = tqdm(iter_instances(source), desc=f"adapt ({adapter.name})", unit="q", disable=None)
        for position, inst in enumerate(instances):
            fh.write(json.dumps(adapter.adapt(inst, position).to_json(), ensure_ascii=False))
            fh.write("\n")
            n += 1
    return n


if __name__ == "__main__":
    run(main)
