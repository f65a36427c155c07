"""Stage fingerprint (always runs): the code fingerprint of every chosen component → data/fingerprints/.

DVC reruns a stage when a dependency's bytes change. A component built by ``_target_`` may live in
another package, outside dvc.yaml's ``deps``; this stage runs every time (``always_changed``), writes
one small file per component, and the stages that use a component depend on its file — so they
rerun exactly when that component's code (or its package version) changed, and not otherwise.

Which components: each family's ``fingerprints`` (params section -> file stem; LongMemEval:
adapter, memory, reader, judge; LongMemEval-V2: ``v2.memory`` -> v2-memory.json), over the
``benchmark`` conf group (:func:`mnemetric.family.conf_families`). Every component names its class
by ``_target_``.
"""

from __future__ import annotations

from pathlib import Path

from mnemetric.family import Family, conf_families
from mnemetric.fingerprint import component_target, fingerprint
from mnemetric.io import write_json_atomic
from mnemetric.params import stage_params
from mnemetric.stages import run


def components(families: tuple[Family, ...] | None = None) -> dict[str, str]:
    """params section -> fingerprint file stem, over the families (in family order)."""
    fams = conf_families() if families is None else families
    return {section: stem for f in fams for section, stem in dict(f.fingerprints).items()}


PARAMS = [*components(), "paths.fingerprints"]


def main() -> None:
    p = stage_params(PARAMS)
    out = Path(p["paths.fingerprints"])
    for section, stem in components().items():
        spec = p[section]
        fp = fingerprint(component_target(spec), where=f"params.yaml {section}._target_")
        write_json_atomic(out / f"{stem}.json", {"component": section, "name": spec.get("name"), **fp.to_record()})
        print(f"fingerprint: {section} {spec.get('name')}: {fp.sha256[:12]} ({len(fp.files)} modules)")


if __name__ == "__main__":
    run(main)
