"""Stage fingerprint: the code fingerprint of every chosen component → data/fingerprints/.

DVC reruns a stage when a dependency's bytes change. A component built by ``_target_`` may live in
another package, outside the stages' ``deps``; this stage writes one small file per component, and the stages
that use a component depend on its file — so they rerun exactly when that component's code changed, and not
otherwise. The stage itself depends on the folders the chosen code is read from, ``src/mnemetric`` and
``plugins`` (dvc.yaml), so a no-op ``dvc repro`` runs nothing; code elsewhere is read when the stage runs
(``dvc repro -f fingerprint`` after editing it).
"""

from __future__ import annotations

from pathlib import Path

from mnemetric.fingerprint import component_target, fingerprint
from mnemetric.io import write_json_atomic
from mnemetric.params import stage_params
from mnemetric.stages import run

PARAMS = ["adapter", "memory", "reader", "judge", "v2.memory", "paths.fingerprints"]

DEFAULT_MODULES = {"reader": "mnemetric.longmemeval.reader.run", "judge": "mnemetric.longmemeval.judge.run"}
"""Components chosen by ``kind:`` rather than ``_target_``: the library module that dispatches them."""


def main() -> None:
    p = stage_params(PARAMS)
    out = Path(p["paths.fingerprints"])
    for component in ("adapter", "memory", "reader", "judge"):
        section = p[component]
        target = component_target(section, DEFAULT_MODULES.get(component))
        fp = fingerprint(target, where=f"params.yaml {component}._target_")
        write_json_atomic(out / f"{component}.json", {"component": component, "name": section.get("name"),
                                                       **fp.to_record()})
        print(f"fingerprint: {component} {section.get('name')}: {fp.sha256[:12]} ({len(fp.files)} modules)")
    v2_memory(p["v2.memory"], out)


def v2_memory(section: dict, out: Path) -> None:
    """The LongMemEval-V2 memory option (``v2.memory``, built by ``_target_``) → <out>/v2-memory.json; stage v2_memory
    depends on it and records its sha256 in metrics/run-v2.json."""
    fp = fingerprint(component_target(section, None), where="params.yaml v2.memory._target_")
    write_json_atomic(out / "v2-memory.json", {"component": "v2.memory", "name": section.get("name"), **fp.to_record()})
    print(f"fingerprint: v2.memory {section.get('name')}: {fp.sha256[:12]} ({len(fp.files)} modules)")


if __name__ == "__main__":
    run(main)
