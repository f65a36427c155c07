"""The upstream task inventory file (``mnemetric.upstream-task-inventory/v1``), typed once: :class:`Inventory`,
reader beside writer (``json.dump(indent=2)``).

The user's seed fixes the layout (schemas/upstream-task-inventory.schema.json checks it), every object's
keys in sorted order, as the seed writes them:

* ``complete`` (bool: every task measured), the review blocks ``date_transport_review``,
  ``official_qa_setup_review``, ``qa_aggregation_review`` (:class:`Review`: open objects of the seed's text
  whose flags the families' reviews derive), ``families`` (:class:`FamilyEntry`), ``reviewed_date``, ``schema``;
* a family: ``benchmark``, ``implementation`` (a :class:`Review`, optional), ``protocol_requirements``,
  ``remaining_audit`` (lists of strings), ``repository``, ``review_scope``, ``reviewed_sources``
  (:class:`ReviewedSource`: ``{path, sha256, url}``), ``revision``, ``tasks``;
* a task (:class:`TaskEntry`): ``classification`` (optional), ``coverage_status`` (unmapped | mapped |
  measured), ``evidence_refs``, ``selector``, ``task``, ``test_refs``.

The seed (data/inventory/base.json) is read by the same reader: an inventory whose statuses are not derived
yet (:func:`mnemetric.custody.inventory.derive_inventory` recomputes them). A field that is missing, of the
wrong type or not in the layout is an InputError naming the file, the record and the field. Generic: the
benchmark names are the seed's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mnemetric.io import write_json_atomic
from mnemetric.records import OBJECT, Fields, read_json_file

SCHEMA = "mnemetric.upstream-task-inventory/v1"
STATUSES = ("unmapped", "mapped", "measured")
REVIEWS = ("date_transport_review", "official_qa_setup_review", "qa_aggregation_review")
"""The inventory-wide review blocks, in the file's (sorted) order."""
_FIX = "start from the user's seed upstream-task-inventory.json"


@dataclass(frozen=True)
class Review:
    """A review block: the seed's fields in their order (descriptive text kept as written; flags derived)."""

    fields: Mapping[str, Any]

    def with_flags(self, **flags: bool) -> Review:
        """This block with ``flags`` set (a flag the block has keeps its place; a new one comes last)."""
        return Review({**self.fields, **flags})

    def to_record(self) -> dict[str, Any]:
        return dict(self.fields)


@dataclass(frozen=True)
class ReviewedSource:
    """An upstream file reviewed at the family's revision: its path, sha256 and URL."""

    path: str
    sha256: str
    url: str

    @classmethod
    def from_fields(cls, f: Fields) -> ReviewedSource:
        f.only(("path", "sha256", "url"))
        return cls(f.string("path"), f.string("sha256"), f.string("url"))

    def to_record(self) -> dict[str, Any]:
        return {"path": self.path, "sha256": self.sha256, "url": self.url}


TASK_KEYS = ("classification", "coverage_status", "evidence_refs", "selector", "task", "test_refs")


@dataclass(frozen=True)
class TaskEntry:
    """One upstream task: its name and selector (the seed's text) and its derived coverage."""

    task: str
    selector: str
    coverage_status: str
    """unmapped | mapped | measured (:data:`STATUSES`)."""
    evidence_refs: tuple[str, ...]
    test_refs: tuple[str, ...]
    classification: str | None = None

    @classmethod
    def from_fields(cls, f: Fields) -> TaskEntry:
        f.only(TASK_KEYS)
        status = f.string("coverage_status")
        if status not in STATUSES:
            raise f.error("coverage_status", f"expected one of {', '.join(STATUSES)}, got {status!r}")
        return cls(f.string("task"), f.string("selector"), status, f.strings("evidence_refs"), f.strings("test_refs"),
                   f.string("classification") if "classification" in f.raw else None)

    def to_record(self) -> dict[str, Any]:
        head = {} if self.classification is None else {"classification": self.classification}
        return {**head, "coverage_status": self.coverage_status, "evidence_refs": list(self.evidence_refs),
                "selector": self.selector, "task": self.task, "test_refs": list(self.test_refs)}


FAMILY_KEYS = ("benchmark", "implementation", "protocol_requirements", "remaining_audit", "repository",
               "review_scope", "reviewed_sources", "revision", "tasks")


@dataclass(frozen=True)
class FamilyEntry:
    """One benchmark family of the inventory: the seed's description, its tasks, its implementation review."""

    benchmark: str
    repository: str
    revision: str
    review_scope: str
    reviewed_sources: tuple[ReviewedSource, ...]
    protocol_requirements: tuple[str, ...]
    remaining_audit: tuple[str, ...]
    tasks: tuple[TaskEntry, ...]
    implementation: Review | None = None

    @property
    def id(self) -> str:
        """The marker spelling of the family: the benchmark name in lower case (LongMemEval-V2 -> longmemeval-v2)."""
        return self.benchmark.lower()

    @classmethod
    def from_fields(cls, f: Fields) -> FamilyEntry:
        f.only(FAMILY_KEYS)
        sources = [Fields.of(s, file=f.file, record=f.record, prefix=f"{f.prefix}reviewed_sources[{i}].", fix=f.fix)
                   for i, s in enumerate(f.array("reviewed_sources"))]
        tasks = [Fields.of(t, file=f.file, record=f.record, prefix=f"{f.prefix}tasks[{i}].", fix=f.fix)
                 for i, t in enumerate(f.array("tasks"))]
        if not tasks:
            raise f.error("tasks", "expected a non-empty list of tasks")
        return cls(f.string("benchmark"), f.string("repository"), f.string("revision"), f.string("review_scope"),
                   tuple(ReviewedSource.from_fields(s) for s in sources), f.strings("protocol_requirements"),
                   f.strings("remaining_audit"), tuple(TaskEntry.from_fields(t) for t in tasks),
                   Review(dict(f.get("implementation", OBJECT))) if "implementation" in f.raw else None)

    def to_record(self) -> dict[str, Any]:
        implementation = {} if self.implementation is None else {"implementation": self.implementation.to_record()}
        return {"benchmark": self.benchmark, **implementation,
                "protocol_requirements": list(self.protocol_requirements),
                "remaining_audit": list(self.remaining_audit), "repository": self.repository,
                "review_scope": self.review_scope, "reviewed_sources": [s.to_record() for s in self.reviewed_sources],
                "revision": self.revision, "tasks": [t.to_record() for t in self.tasks]}


@dataclass(frozen=True)
class Inventory:
    """The task inventory (module docstring): the families, the inventory-wide review blocks the seed has
    (by name, :data:`REVIEWS`), the review date, and ``complete``."""

    families: tuple[FamilyEntry, ...]
    reviews: Mapping[str, Review]
    reviewed_date: str
    complete: bool = False

    @classmethod
    def from_record(cls, raw: Any, *, file: str = "<seed>") -> Inventory:
        f = Fields.of(raw, file=file, record="<file>", fix=_FIX)
        if f.raw.get("schema") != SCHEMA:
            raise f.error("schema", f"expected {SCHEMA!r}, got {f.raw.get('schema')!r}")
        f.only(("complete", "families", "reviewed_date", "schema", *REVIEWS))
        families = f.get("families", ((list,), "a non-empty list of families"))
        if not families:
            raise f.error("families", "expected a non-empty list of families")
        views = [Fields.of(fam, file=file, record=f"families[{i}]", fix=_FIX, field="families")
                 for i, fam in enumerate(families)]
        return cls(tuple(FamilyEntry.from_fields(v) for v in views),
                   {name: Review(dict(f.get(name, OBJECT))) for name in REVIEWS if name in f.raw},
                   f.string("reviewed_date"), f.boolean("complete") if "complete" in f.raw else False)

    def to_record(self) -> dict[str, Any]:
        parts = {"complete": self.complete, "families": [fam.to_record() for fam in self.families],
                 "reviewed_date": self.reviewed_date, "schema": SCHEMA,
                 **{name: review.to_record() for name, review in self.reviews.items()}}
        return dict(sorted(parts.items()))

    def family(self, family_id: str) -> FamilyEntry | None:
        """The family whose marker spelling (:attr:`FamilyEntry.id`) is ``family_id``, if the inventory has it."""
        return next((fam for fam in self.families if fam.id == family_id), None)

    def with_review(self, name: str, **flags: bool) -> Inventory:
        """``flags`` set in review block ``name``, if the inventory has that block (none is invented)."""
        if name not in self.reviews:
            return self
        return replace(self, reviews={**self.reviews, name: self.reviews[name].with_flags(**flags)})

    def with_implementation(self, family_id: str, **flags: bool) -> Inventory:
        """``flags`` set in the implementation block of the family ``family_id``, if it has one."""
        return replace(self, families=tuple(
            replace(fam, implementation=fam.implementation.with_flags(**flags))
            if fam.id == family_id and fam.implementation is not None else fam for fam in self.families))


def write_inventory(path: str | Path, inventory: Inventory) -> None:
    """Write the inventory atomically (``json.dump(indent=2)``, the layout of :meth:`Inventory.to_record`)."""
    write_json_atomic(path, inventory.to_record())


def read_inventory(path: str | Path) -> Inventory:
    """Read and check an inventory (or its seed)."""
    return Inventory.from_record(read_json_file(path, missing_fix=_FIX), file=str(path))
