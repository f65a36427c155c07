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

Mnemetric's own code is fingerprinted the same way, per stage: ``stages/<stage>.json`` holds the code
fingerprint of module ``mnemetric.stages.<stage>`` (its import closure, :func:`stage_code`), and the stage
depends on that one file instead of a dvc.yaml line per module (hundreds of per-file deps made a no-op
``dvc repro`` slow: DVC reads and checks each). Editing a module reruns exactly the stages that import it.
The stage records are written by the project's own fingerprint stage; a family's extra fingerprint stage
passes ``--no-stage-code`` (its stages are not modules of :mod:`mnemetric.stages`).
"""

from __future__ import annotations

import ast
import pkgutil
import sys
from collections.abc import Sequence
from pathlib import Path

import mnemetric.stages as stages_package
from mnemetric.family import Family, conf_families, families_from_args
from mnemetric.fingerprint import component_target, fingerprint, module_closure
from mnemetric.io import dumps_canonical, sha256_bytes, sha256_text, write_json_atomic
from mnemetric.params import stage_params
from mnemetric.stages import run

EXECUTOR = {"executor": "executor"}
"""The run's executor (conf group ``executor``) -> data/fingerprints/executor.json."""
NO_EXECUTOR = "--no-executor"
NO_STAGE_CODE = "--no-stage-code"
FLAGS = (NO_EXECUTOR, NO_STAGE_CODE)

FAMILY_REGISTRY = frozenset({"conf_families", "family_named", "build_family", "headline_family",
                             "families_from_args", "one_family"})
"""The functions of :mod:`mnemetric.family` that build families by ``_target_``: a stage module that
imports one runs the families' code, so its fingerprint covers every family's package."""


def components(families: Sequence[Family] | None = None, *, executor: bool = False) -> dict[str, str]:
    """params section -> fingerprint file stem, over the families (in family order; default: every family
    of the registry), then the executor when ``executor``."""
    fams = conf_families() if families is None else families
    out = {section: stem for f in fams for section, stem in dict(f.fingerprints).items()}
    return {**out, **(EXECUTOR if executor else {})}


def _parse(args: Sequence[str]) -> tuple[tuple[Family, ...], bool]:
    names = [a for a in args if a not in FLAGS]
    return families_from_args(names), NO_EXECUTOR not in args


def params_for(args: Sequence[str]) -> list[str]:
    """The stage's declared params for its command-line arguments (family names, ``--no-executor``)."""
    families, executor = _parse(args)
    return [*components(families, executor=executor), "paths.fingerprints"]


def stage_names() -> list[str]:
    """Every stage module of :mod:`mnemetric.stages` but this one, by name (``_name``: a helper the stages
    share, not a stage)."""
    return sorted(m.name for m in pkgutil.iter_modules(stages_package.__path__)
                  if not m.ispkg and m.name != "fingerprint" and not m.name.startswith("_"))


def reads_families(module: str) -> bool:
    """Whether the source of ``module`` imports one of :data:`FAMILY_REGISTRY` from mnemetric.family."""
    path = Path(stages_package.__file__).parent / f"{module.rpartition('.')[2]}.py"
    return any(isinstance(node, ast.ImportFrom) and node.module == "mnemetric.family"
               and any(a.name in FAMILY_REGISTRY for a in node.names)
               for node in ast.walk(ast.parse(path.read_bytes(), filename=str(path))))


def stage_code(stage: str, families: Sequence[Family] | None = None) -> dict:
    """The code record of stage ``stage``: module name -> sha256 of its source over the stage module's
    import closure, plus each family's package (its ``_target_``'s closure) when the stage builds families."""
    module = f"mnemetric.stages.{stage}"
    modules = [module]
    if reads_families(module):
        modules += [type(fam).__module__ for fam in (conf_families() if families is None else families)]
    files = dict(sorted((name, sha256_bytes(path.read_bytes()))
                        for m in modules for name, path in module_closure(m).items()))
    return {"stage": stage, "sha256": sha256_text(dumps_canonical(files)), "modules": files}


def main(argv: Sequence[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else list(argv)
    families, executor = _parse(args)
    p = stage_params(params_for(args))
    out = Path(p["paths.fingerprints"])
    for section, stem in components(families, executor=executor).items():
        spec = p[section]
        fp = fingerprint(component_target(spec), where=f"params.yaml {section}._target_",
                         section=spec if isinstance(spec, dict) else None)
        write_json_atomic(out / f"{stem}.json", {"component": section, "name": spec.get("name"), **fp.to_record()})
        print(f"fingerprint: {section} {spec.get('name')}: {fp.sha256[:12]} ({len(fp.files)} modules)")
    if NO_STAGE_CODE in args:
        return
    registry = conf_families()
    for stage in stage_names():
        write_json_atomic(out / "stages" / f"{stage}.json", stage_code(stage, registry))
    print(f"fingerprint: the code of {len(stage_names())} stages → {out / 'stages'}")


if __name__ == "__main__":
    run(main)
