"""Stage inventory: the upstream task inventory as a product of evidence → data/inventory/upstream-task-inventory.json.

Inputs: the seed's descriptive text (data/inventory/base.json), the run manifest of each family
(``Family.run_manifest``: metrics/run.json, metrics/run-v2.json of stage v2_metrics; those that exist, at
least one), the metrics files the families' tasks are measured in
(metrics/detail/qa.json, metrics/v2.json), the cross-check evidence (data/custody/crosscheck.json)
when present, and the tests' ``@pytest.mark.task`` markers from their committed index
(data/inventory/task-markers.json, :data:`mnemetric.custody.task_markers.MARKERS_FILE`, kept equal to tests/ by a
test), so that editing a test reruns no stage. The families are every
option of the ``benchmark`` conf group (:func:`mnemetric.family.conf_families`). Every status is
recomputed by :func:`mnemetric.custody.inventory.derive` (its docstring has the rules) and the
inventory written by its typed writer (:mod:`mnemetric.custody.inventory_file`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mnemetric.custody.inventory import derive, metrics_files
from mnemetric.custody.inventory_file import read_inventory, write_inventory
from mnemetric.custody.task_markers import MARKERS_FILE, read_markers
from mnemetric.custody.manifest import read_json_file
from mnemetric.errors import InputError
from mnemetric.family import Family, conf_families
from mnemetric.stages import run

PARAMS: list[str] = []
BASE = "data/inventory/base.json"
OUT = "data/inventory/upstream-task-inventory.json"
CROSSCHECK = "data/custody/crosscheck.json"


def metrics_docs(files: list[str]) -> dict[str, Any]:
    """Each metrics file that exists, by its repo path."""
    return {path: read_json_file(path) for path in files if Path(path).is_file()}


def run_manifests(families: list[Family]) -> list[dict[str, Any]]:
    """Each family's run manifest that exists (with its ``path``); none at all is an InputError."""
    paths = [f.run_manifest for f in families if f.run_manifest]
    found = [path for path in paths if Path(path).is_file()]
    if not found:
        raise InputError(", ".join(paths) or "(no family names a run manifest)", "<file>", "<file>", "does not exist",
                         fix="run the pipeline (dvc repro) first")
    return [{**read_json_file(path), "path": path} for path in found]


def main() -> None:
    families = list(conf_families())
    manifests = run_manifests(families)
    crosscheck = {**read_json_file(CROSSCHECK), "path": CROSSCHECK} if Path(CROSSCHECK).is_file() else None
    inventory = derive(read_inventory(BASE), run_manifests=manifests, crosscheck=crosscheck,
                       markers=read_markers(MARKERS_FILE),
                       metrics=metrics_docs(metrics_files(families)), families=families)
    write_inventory(OUT, inventory)
    tasks = [t for f in inventory.families for t in f.tasks]
    counts = {s: sum(t.coverage_status == s for t in tasks) for s in ("measured", "mapped", "unmapped")}
    print(f"inventory: {', '.join(f'{n} {s}' for s, n in counts.items())}; complete {json.dumps(inventory.complete)}"
          f" → {OUT}")


if __name__ == "__main__":
    run(main)
