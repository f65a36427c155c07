"""Stage fingerprint: the code fingerprint of every chosen component → data/fingerprints/.

DVC reruns a stage when a dependency's bytes change. A component built by ``_target_`` may live in
another package, outside the stages' ``deps``; this stage writes one small file per component, and the stages
that use a component depend on its file — so they rerun exactly when that component's code changed, and not
otherwise. The stage itself depends on the folders the chosen code is read from, ``src/mnemetric`` and
``plugins`` (dvc.yaml), so a no-op ``dvc repro`` runs nothing; code elsewhere is read when the stage runs
(``dvc repro -f fingerprint`` after editing it).

Which components: the ``fingerprints`` (params section -> file stem; LongMemEval: adapter, memory,
reader, judge; LongMemEval-V2: ``v2.memory`` -> v2-memory.json) of the families named on the command
line (``python -m mnemetric.stages.fingerprint longmemeval longmemeval-v2``; from the family registry,
:func:`mnemetric.family.families_from_args`), plus the run's executor (``executor`` -> executor.json: how
model calls are sent is a component too). A new family adds its own stage
(``python -m mnemetric.stages.fingerprint quiz``; pass ``--no-executor`` when another stage already
fingerprints the executor). Every component names its class by ``_target_``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from mnemetric.family import Family, conf_families, families_from_args
from mnemetric.fingerprint import component_target, fingerprint
from mnemetric.io import write_json_atomic
from mnemetric.params import stage_params
from mnemetric.stages import run

EXECUTOR = {"executor": "executor"}
"""The run's executor (conf group ``executor``) -> data/fingerprints/executor.json."""
NO_EXECUTOR = "--no-executor"


def components(families: Sequence[Family] | None = None, *, executor: bool = False) -> dict[str, str]:
    """params section -> fingerprint file stem, over the families (in family order; default: every family
    of the registry), then the executor when ``executor``."""
    fams = conf_families() if families is None else families
    out = {section: stem for f in fams for section, stem in dict(f.fingerprints).items()}
    return {**out, **(EXECUTOR if executor else {})}


def _parse(args: Sequence[str]) -> tuple[tuple[Family, ...], bool]:
    names = [a for a in args if a != NO_EXECUTOR]
    return families_from_args(names), NO_EXECUTOR not in args


def params_for(args: Sequence[str]) -> list[str]:
    """The stage's declared params for its command-line arguments (family names, ``--no-executor``)."""
    families, executor = _parse(args)
    return [*components(families, executor=executor), "paths.fingerprints"]


def main(argv: Sequence[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else list(argv)
    families, executor = _parse(args)
    p = stage_params(params_for(args))
    out = Path(p["paths.fingerprints"])
    for section, stem in components(families, executor=executor).items():
        spec = p[section]
        fp = fingerprint(component_target(spec), where=f"params.yaml {section}._target_")
        write_json_atomic(out / f"{stem}.json", {"component": section, "name": spec.get("name"), **fp.to_record()})
        print(f"fingerprint: {section} {spec.get('name')}: {fp.sha256[:12]} ({len(fp.files)} modules)")


if __name__ == "__main__":
    run(main)
