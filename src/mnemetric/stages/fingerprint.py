"""Stage fingerprint: the code fingerprint of every chosen component and of every stage → data/fingerprints/.

DVC reruns a stage when a dependency's bytes change. A component built by ``_target_`` may live in
another package, outside the stages' ``deps``; this stage writes one small file per component, and the stages
that use a component depend on its file — so they rerun exactly when that component's code changed, and not
otherwise. The stage itself depends on the folders the chosen code is read from, ``src/mnemetric`` and
``plugins`` (dvc.yaml), so a no-op ``dvc repro`` runs nothing; code elsewhere is read when the stage runs
(``dvc repro -f fingerprint`` after editing it).

Which components: each family's ``fingerprints`` (params section -> file stem; LongMemEval:
adapter, memory, reader, judge; LongMemEval-V2: ``v2.memory`` -> v2-memory.json), over the
``benchmark`` conf group (:func:`mnemetric.family.conf_families`). Every component names its class
by ``_target_``.

Mnemetric's own code is fingerprinted the same way, per stage: ``stages/<stage>.json`` holds the code
fingerprint of module ``mnemetric.stages.<stage>`` (its import closure, :func:`stage_code`), and the stage
depends on that one file instead of a dvc.yaml line per module (hundreds of per-file deps made a no-op
``dvc repro`` slow: DVC reads and checks each). Editing a module reruns exactly the stages that import it.
"""

from __future__ import annotations

import ast
import pkgutil
from pathlib import Path

import mnemetric.stages as stages_package
from mnemetric.family import Family, conf_families
from mnemetric.fingerprint import component_target, fingerprint, module_closure
from mnemetric.io import dumps_canonical, sha256_bytes, sha256_text, write_json_atomic
from mnemetric.params import stage_params
from mnemetric.stages import run

FAMILY_REGISTRY = frozenset({"conf_families", "family_named", "build_family", "headline_family"})
"""The functions of :mod:`mnemetric.family` that build families by ``_target_``: a stage module that
imports one runs the families' code, so its fingerprint covers every family's package."""


def components(families: tuple[Family, ...] | None = None) -> dict[str, str]:
    """params section -> fingerprint file stem, over the families (in family order)."""
    fams = conf_families() if families is None else families
    return {section: stem for f in fams for section, stem in dict(f.fingerprints).items()}


PARAMS = [*components(), "paths.fingerprints"]


def stage_names() -> list[str]:
    """Every stage module of :mod:`mnemetric.stages` but this one, by name."""
    return sorted(m.name for m in pkgutil.iter_modules(stages_package.__path__)
                  if not m.ispkg and m.name != "fingerprint")


def reads_families(module: str) -> bool:
    """Whether the source of ``module`` imports one of :data:`FAMILY_REGISTRY` from mnemetric.family."""
    path = Path(stages_package.__file__).parent / f"{module.rpartition('.')[2]}.py"
    return any(isinstance(node, ast.ImportFrom) and node.module == "mnemetric.family"
               and any(a.name in FAMILY_REGISTRY for a in node.names)
               for node in ast.walk(ast.parse(path.read_bytes(), filename=str(path))))


def stage_code(stage: str, families: tuple[Family, ...] | None = None) -> dict:
    """The code record of stage ``stage``: module name -> sha256 of its source over the stage module's
    import closure, plus each family's package (its ``_target_``'s closure) when the stage builds families."""
    module = f"mnemetric.stages.{stage}"
    modules = [module]
    if reads_families(module):
        modules += [type(fam).__module__ for fam in (conf_families() if families is None else families)]
    files = dict(sorted((name, sha256_bytes(path.read_bytes()))
                        for m in modules for name, path in module_closure(m).items()))
    return {"stage": stage, "sha256": sha256_text(dumps_canonical(files)), "modules": files}


def main() -> None:
    p = stage_params(PARAMS)
    out = Path(p["paths.fingerprints"])
    for section, stem in components().items():
        spec = p[section]
        fp = fingerprint(component_target(spec), where=f"params.yaml {section}._target_")
        write_json_atomic(out / f"{stem}.json", {"component": section, "name": spec.get("name"), **fp.to_record()})
        print(f"fingerprint: {section} {spec.get('name')}: {fp.sha256[:12]} ({len(fp.files)} modules)")
    families = conf_families()
    for stage in stage_names():
        record = stage_code(stage, families)
        write_json_atomic(out / "stages" / f"{stage}.json", record)
    print(f"fingerprint: the code of {len(stage_names())} stages → {out / 'stages'}")


if __name__ == "__main__":
    run(main)
