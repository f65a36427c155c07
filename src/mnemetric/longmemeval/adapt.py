"""Adapting a whole LongMemEval file: stream its instances, adapt each, write the adapted JSONL atomically.

The library side of stage ``adapt`` and of ``mnemetric adapt`` (one path for both).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from mnemetric.io import atomic_open
from mnemetric.longmemeval.adapted import SessionAdapter
from mnemetric.longmemeval.instance import iter_instances
from mnemetric.longmemeval.instance_checks import DataWarning


@dataclass
class WarningTally:
    """Counts data warnings (odd but usable input) and keeps the first, in constant memory."""

    count: int = 0
    first: DataWarning | None = None

    def __call__(self, warning: DataWarning) -> None:
        self.count += 1
        self.first = self.first or warning

    def summary(self, source: Path | str) -> str:
        return (f"{self.count} data warning(s) (odd but usable input; nothing was dropped), the first:\n  {self.first}"
                f"\n  `mnemetric validate {source}` lists them all")


def adapt_file(adapter: SessionAdapter, source: Path, out: Path,
               on_warning: Callable[[DataWarning], None] | None = None) -> int:
    """Adapt every instance of ``source`` into ``out`` (JSONL, written atomically). Any problem in the
    file stops it with every problem listed (up to 50, then a count) and nothing written."""
    n = 0
    with atomic_open(out) as fh:
        instances = tqdm(iter_instances(source, on_warning), desc=f"adapt ({adapter.name})", unit="q", disable=None)
        for position, inst in enumerate(instances):
            fh.write(json.dumps(adapter.adapt(inst, position).to_record(), ensure_ascii=False))
            fh.write("\n")
            n += 1
    return n
