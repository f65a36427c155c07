"""The upstream task inventory (``mnemetric.upstream-task-inventory/v1``) as a product of evidence.

The user's seed (an audit) fixes the format: families (LongMemEval, LongMemEval-V2), each with its
tasks, reviewed upstream sources (path + sha256 at a pinned revision) and review blocks. Here the
seed's descriptive text is kept and every status is **recomputed**, never typed by hand:

* ``coverage_status`` of a task: ``measured`` when the metric key its family names for it
  (``Family.task_metrics``, :mod:`mnemetric.family`) holds a number over ``n > 0`` questions in a
  metrics file attributed to a run manifest of the task's family; else ``mapped`` when a test
  carries ``@pytest.mark.task(family, task)``; else ``unmapped``.
* ``evidence_refs``: the metric key (``metrics/qa.json#per_type.multi-session.accuracy``) and the
  manifest(s) (``metrics/run.json``) that measure the task; empty unless measured.
* ``test_refs``: the tests carrying the task's marker (found by :func:`collect_task_markers`).
* review blocks: each family that reviews the inventory (``Family.inventory_review``) writes its
  own from its own manifests and the cross-check evidence (LongMemEval's:
  :mod:`mnemetric.longmemeval.inventory_review`, with its rules and the keys it reads).
* ``complete``: true only when every task of every family is measured.

A metrics file is attributed to a manifest when the manifest's ``benchmark`` is the family and,
for each of ``variant`` and ``suite`` that the metrics file states at its top level (metrics/qa.json
does), the value equals the manifest's ``variant.name`` / ``suite.name``.

Run-manifest keys the frame reads (:class:`ManifestRef`; an absence or wrong type is an InputError
naming the manifest and the key): ``path`` (str, optional: the evidence ref of the manifest,
default metrics/run.json; the loader sets it to the file it read), ``benchmark`` (str, optional: a
family's display name, default the first reviewing family's), ``variant.name`` and ``suite.name``
(str: attribution). The cross-check evidence (``mnemetric crosscheck`` output, optional) is passed
to the families' reviews as read.

The inventory is typed once (:mod:`mnemetric.custody.inventory_file`, reader beside writer): :func:`derive`
takes the seed as an :class:`Inventory` and returns the derived one (each reviewing family returns it with
its blocks); :func:`derive_inventory` does the same on the seed as read and returns the file's record. A task
metric is read by :meth:`mnemetric.family.TaskMetric.read`: absent or null measures nothing, a value of the
wrong type is an InputError naming the metrics file and the field.

The families come from the caller (the stage passes :func:`mnemetric.family.conf_families`, every
option of the ``benchmark`` conf group); this module imports no family.

Task facts live with each family (``task_metrics``): LongMemEval's six question types and the
``_abs`` overlay in :mod:`mnemetric.longmemeval.family`, LongMemEval-V2's five abilities in
:mod:`mnemetric.longmemeval_v2.family`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from mnemetric.custody.inventory_file import SCHEMA, Inventory, TaskEntry, write_inventory
from mnemetric.custody.reviewed_sources import SourceCheck, verify_reviewed_sources
from mnemetric.custody.task_markers import collect_task_markers
from mnemetric.errors import InputError, PluginError
from mnemetric.family import Family, TaskMetric
from mnemetric.records import Fields

__all__ = ["SCHEMA", "Inventory", "SourceCheck", "collect_task_markers", "derive", "derive_inventory", "metrics_files",
           "verify_reviewed_sources", "write_inventory"]

DEFAULT_MANIFEST = "metrics/run.json"
MetricKey = TaskMetric
"""The old name of :class:`mnemetric.family.TaskMetric`."""


def family_id(benchmark: str) -> str:
    """The marker spelling of a family: the benchmark name in lower case (LongMemEval-V2 -> longmemeval-v2)."""
    return benchmark.lower()


def task_metrics(families: Sequence[Family]) -> dict[tuple[str, str], TaskMetric]:
    """(family name, task) -> the metric key that measures it, over ``families``."""
    return {(f.name, task): key for f in families for task, key in dict(f.task_metrics).items()}


def metrics_files(families: Sequence[Family]) -> list[str]:
    """Every metrics file a task of ``families`` is measured in (what the door reads), sorted."""
    return sorted({key.file for key in task_metrics(families).values()})


def reviewed_family(families: Sequence[Family]) -> Family | None:
    """The family a manifest without ``benchmark`` is about: the first (in order) that reviews the inventory."""
    return next((f for f in families if f.inventory_review is not None), None)


# ---------------------------------------------------------------------------------------------
# Inputs, typed once


MISSING_FIX = "see the key table of the family's inventory review"
"""The fix an inventory input's reader suggests (its fields read through :class:`mnemetric.records.Fields`)."""


def fields_of(raw: Any, *, file: str, line: int | str, what: str) -> Fields:
    """The view of one inventory input (record ``index N`` or the text given); not an object: field ``what``."""
    record = f"index {line}" if isinstance(line, int) else line
    return Fields.of(raw, file=file, record=record, field=what, fix=MISSING_FIX)


@dataclass(frozen=True)
class ManifestRef:
    """What the frame reads of any family's run manifest: where it is, whose it is, what it ran on."""

    path: str
    benchmark: str
    variant_name: str
    suite_name: str
    raw: Mapping[str, Any]

    @classmethod
    def from_record(cls, raw: Any, *, file: str, line: int | str, known: Mapping[str, str] | None = None,
                    default_benchmark: str | None = None) -> ManifestRef:
        """``known``: family name -> display name of the families a manifest may name (None: any);
        ``default_benchmark``: the family of a manifest without ``benchmark`` (None: the key is required)."""
        f = fields_of(raw, file=file, line=line, what="<manifest>")
        benchmark = f.string("benchmark") if "benchmark" in f.raw or default_benchmark is None else default_benchmark
        if known is not None and family_id(benchmark) not in known:
            raise f.error("benchmark", f"unknown benchmark {benchmark!r}", fix=" or ".join(known[k] for k in sorted(known)))
        path = f.string("path") if "path" in f.raw else DEFAULT_MANIFEST
        return cls(path=path, benchmark=benchmark, variant_name=f.at("variant").string("name"),
                   suite_name=f.at("suite").string("name"), raw={**f.raw, "path": path})


# ---------------------------------------------------------------------------------------------
# Derivation (pure)


def measures(metrics_doc: Mapping[str, Any], key: MetricKey) -> bool:
    """The value at ``key.value`` is a finite number and the count at ``key.count`` an integer > 0 (read by
    :meth:`TaskMetric.read`: absent or null measures nothing; a value of the wrong type is an InputError)."""
    value, count = key.read(metrics_doc)
    return value is not None and math.isfinite(value) and count is not None and count > 0


def attributed(metrics_doc: Mapping[str, Any], manifest: ManifestRef) -> bool:
    """The metrics file states no other variant or suite than the manifest's (module docstring)."""
    for field, expected in (("variant", manifest.variant_name), ("suite", manifest.suite_name)):
        stated = metrics_doc.get(field)
        if isinstance(stated, str) and stated != expected:
            return False
    return True


def _check_markers(seed: Inventory, markers: Mapping[tuple[str, str], list[str]]) -> None:
    known = {(f.id, t.task) for f in seed.families for t in f.tasks}
    for (fam, task), refs in sorted(markers.items()):
        if (fam, task) not in known:
            ref = refs[0] if refs else "<tests>"
            raise InputError(ref.split("::")[0], ref, "pytest.mark.task", f"unknown task ({fam!r}, {task!r})",
                             fix="one of: " + "; ".join(f"{f}/{t}" for f, t in sorted(known)))


def task_entry(task: TaskEntry, fam: str, manifests: Sequence[ManifestRef],
               metrics: Mapping[str, Mapping[str, Any]], test_refs: Sequence[str],
               keys: Mapping[tuple[str, str], TaskMetric]) -> TaskEntry:
    """One task of the seed with coverage_status, evidence_refs and test_refs recomputed (``keys``: :func:`task_metrics`)."""
    key = keys.get((fam, task.task))
    doc = metrics.get(key.file) if key else None
    by = [] if doc is None or not measures(doc, key) else sorted(
        {m.path for m in manifests if family_id(m.benchmark) == fam and attributed(doc, m)})
    evidence = [key.ref(), *by] if by else []
    status = "measured" if evidence else ("mapped" if test_refs else "unmapped")
    return replace(task, coverage_status=status, evidence_refs=tuple(evidence), test_refs=tuple(sorted(set(test_refs))))


def _families(families: Sequence[Family] | None) -> tuple[Family, ...]:
    if families is not None:
        return tuple(families)
    from mnemetric.family import conf_families  # the packaged benchmark conf group
    return conf_families()


def derive(seed: Inventory, *, run_manifests: list[dict], crosscheck: dict | None,
           markers: Mapping[tuple[str, str], list[str]], metrics: dict[str, dict],
           families: Sequence[Family] | None = None) -> Inventory:
    """The inventory: the seed's structure and text, with every status recomputed (module docstring).

    ``metrics`` maps a metrics file's repo path (``metrics/qa.json``) to its content; ``markers`` is
    :func:`collect_task_markers`' result. A marker naming a task the seed does not have is an error.
    ``families``: the benchmark families (default: every option of the packaged ``benchmark`` conf group).
    """
    fams = _families(families)
    reviewed = reviewed_family(fams)
    _check_markers(seed, markers)
    known = {f.name: f.display_name for f in fams}
    default = reviewed.display_name if reviewed is not None else None
    manifests = [ManifestRef.from_record(m, file=named(m, DEFAULT_MANIFEST), line=i, known=known,
                                         default_benchmark=default) for i, m in enumerate(run_manifests)]
    keys = task_metrics(fams)
    inv = replace(seed, families=tuple(
        replace(fam, tasks=tuple(task_entry(t, fam.id, manifests, metrics, markers.get((fam.id, t.task), []), keys)
                                 for t in fam.tasks)) for fam in seed.families))
    for family in fams:
        if family.inventory_review is not None:
            inv = family.inventory_review(inv, [m.raw for m in manifests if family_id(m.benchmark) == family.name],
                                          crosscheck)
            if not isinstance(inv, Inventory):
                raise PluginError(family.name, "inventory_review", f"returned {type(inv).__name__}, not the Inventory",
                                  fix="return the inventory it was given with the family's review blocks set "
                                      "(Inventory.with_review, Inventory.with_implementation)")
    return replace(inv, complete=all(t.coverage_status == "measured" for f in inv.families for t in f.tasks))


def derive_inventory(seed: Mapping[str, Any], *, run_manifests: list[dict], crosscheck: dict | None,
                     markers: Mapping[tuple[str, str], list[str]], metrics: dict[str, dict],
                     families: Sequence[Family] | None = None, seed_file: str = "<seed>") -> dict:
    """:func:`derive` from the seed as read (checked by :meth:`Inventory.from_record`, errors naming
    ``seed_file``), as the file holds it (:meth:`Inventory.to_record`)."""
    return derive(Inventory.from_record(seed, file=seed_file), run_manifests=run_manifests, crosscheck=crosscheck,
                  markers=markers, metrics=metrics, families=families).to_record()


def named(raw: Any, default: str) -> str:
    """The ``path`` a loaded document carries (the loader sets it), else ``default``."""
    path = raw.get("path") if isinstance(raw, Mapping) else None
    return path if isinstance(path, str) else default
