"""The errata overlay: disputed LongMemEval gold answers, and QA numbers without them (opt-in).

Data: data/errata/longmemeval.yaml (schema ``mnemetric.longmemeval-errata/v1``), Mnemetric's
summary of the data errors reported in the upstream tracker, github.com/xiaowu0162/LongMemEval
issues #11, #12, #19, #21, #26, #37, #40, #50 (shared/docs/upstream-protocol.md section 6).

:func:`sensitivity` never replaces the official number: it returns the headline QA numbers of
:func:`mnemetric.longmemeval.scoring.qa.point_estimates` (print_qa_metrics.py @ 9e0b455f semantics: per-type
accuracy, task-averaged = unweighted mean of the six types, overall = micro mean, abstention =
mean over "_abs" questions) twice — on every judged question (``official``) and on the judged
questions whose id is not an erratum (``excluding_errata``) — with the ids excluded and the
errata ids that were not among the judged questions.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mnemetric.errors import InputError
from mnemetric.io import require_file
from mnemetric.longmemeval.scoring.qa import check_items, point_estimates

SCHEMA = "mnemetric.longmemeval-errata/v1"
VARIANTS = ("s", "m", "oracle")
BASES = ("stated", "gold-or-evidence")
DEFAULT_PATH = Path(__file__).resolve().parents[3] / "data" / "errata" / "longmemeval.yaml"


@dataclass(frozen=True)
class Erratum:
    """One disputed question."""

    question_id: str
    variants: tuple[str, ...]
    """LongMemEval files it applies to: s, m, oracle."""
    variants_basis: str
    """"stated" (the report names the variant) or "gold-or-evidence" (shared by every variant)."""
    issues: tuple[int, ...]
    """Upstream tracker issue numbers reporting it."""
    description: str
    """One line, in Mnemetric's words."""

    @classmethod
    def from_record(cls, raw: Any, *, file: str, line: str) -> Erratum:
        if not isinstance(raw, dict):
            raise InputError(file, line, "<entry>", f"expected a mapping, got {type(raw).__name__}")
        qid = raw.get("question_id")
        if not isinstance(qid, str) or not qid:
            raise InputError(file, line, "question_id", f"expected a non-empty string, got {qid!r}",
                             fix="quote the id in YAML (\"...\") so it stays a string")
        where = f"{line} ({qid})"
        unknown = sorted(set(raw) - {"question_id", "variants", "variants_basis", "issues", "description"})
        if unknown:
            raise InputError(file, where, unknown[0], "unknown field")
        variants = _list(raw, "variants", str, file, where)
        if bad := [v for v in variants if v not in VARIANTS]:
            raise InputError(file, where, "variants", f"unknown variant {bad[0]!r}; expected some of {list(VARIANTS)}")
        basis = raw.get("variants_basis")
        if basis not in BASES:
            raise InputError(file, where, "variants_basis", f"expected one of {list(BASES)}, got {basis!r}")
        issues = _list(raw, "issues", int, file, where)
        if any(isinstance(i, bool) or i < 1 for i in issues):
            raise InputError(file, where, "issues", f"expected positive issue numbers, got {issues!r}")
        text = raw.get("description")
        if not isinstance(text, str) or not text.strip() or "\n" in text.strip():
            raise InputError(file, where, "description", "expected one non-empty line of text")
        return cls(qid, tuple(variants), basis, tuple(issues), text.strip())

    def to_record(self) -> dict[str, Any]:
        return {"question_id": self.question_id, "variants": list(self.variants),
                "variants_basis": self.variants_basis, "issues": list(self.issues), "description": self.description}


def _list(raw: dict, key: str, kind: type, file: str, where: str) -> list:
    value = raw.get(key)
    if not isinstance(value, list) or not value or not all(isinstance(v, kind) for v in value):
        raise InputError(file, where, key, f"expected a non-empty list of {kind.__name__}, got {value!r}")
    if len(set(value)) != len(value):
        raise InputError(file, where, key, f"duplicate values in {value!r}")
    return value


@dataclass(frozen=True)
class Errata:
    source: str
    entries: tuple[Erratum, ...]

    def ids(self, variant: str | None = None) -> list[str]:
        """The question ids of the errata that apply to ``variant`` (all entries when None)."""
        if variant is not None and variant not in VARIANTS:
            raise InputError("<errata>", "<query>", "variant", f"unknown variant {variant!r}; expected one of {list(VARIANTS)}")
        return [e.question_id for e in self.entries if variant is None or variant in e.variants]

    @classmethod
    def from_record(cls, raw: Any, *, file: str, line: str = "<file>") -> Errata:
        if not isinstance(raw, dict):
            raise InputError(file, line, "<root>", "expected a mapping with schema, source and entries")
        if raw.get("schema") != SCHEMA:
            raise InputError(file, line, "schema", f"expected {SCHEMA!r}, got {raw.get('schema')!r}")
        if not isinstance(raw.get("source"), str) or not raw["source"]:
            raise InputError(file, line, "source", "expected a non-empty string")
        items = raw.get("entries")
        if not isinstance(items, list) or not items:
            raise InputError(file, line, "entries", "expected a non-empty list")
        entries = tuple(Erratum.from_record(e, file=file, line=f"entries index {i}") for i, e in enumerate(items))
        seen: set[str] = set()
        for i, e in enumerate(entries):
            if e.question_id in seen:
                raise InputError(file, f"entries index {i} ({e.question_id})", "question_id", "listed twice")
            seen.add(e.question_id)
        return cls(raw["source"], entries)

    def to_record(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "source": self.source, "entries": [e.to_record() for e in self.entries]}


def read_errata(path: str | Path = DEFAULT_PATH) -> Errata:
    """The errata file, checked; any problem is an InputError naming file, entry and field."""
    import yaml

    file = str(path)
    try:
        raw = yaml.safe_load(require_file(path, fix="pass data/errata/longmemeval.yaml").read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise InputError(file, "<file>", "<yaml>", f"not valid YAML ({exc})") from None
    return Errata.from_record(raw, file=file)


def sensitivity(items: Iterable[Sequence[Any]], errata_ids: Iterable[str]) -> dict[str, Any]:
    """Headline QA numbers with and without the errata questions, side by side.

    ``items``: (question_id, question_type from the reference, label) triples, validated by
    :func:`check_items`. Returns ``{"official": point_estimates(all), "excluding_errata":
    point_estimates(all but the errata ids), "excluded": [errata ids among the items, sorted],
    "absent": [errata ids not among the items, sorted]}``. Pure; the official numbers are unchanged.
    """
    checked = check_items(items)
    wanted = set(errata_ids)
    present = {qid for qid, _, _ in checked} & wanted
    return {
        "official": point_estimates(checked),
        "excluding_errata": point_estimates([it for it in checked if it[0] not in wanted]),
        "excluded": sorted(present),
        "absent": sorted(wanted - present),
    }


def errata_block(path: str | Path, variant: str, judged: Iterable[Any], ref_types: dict[str, str]) -> dict[str, Any]:
    """metrics/detail/qa.json ``errata_sensitivity``: :func:`sensitivity` over the judged labels, with
    the errata that apply to ``variant`` (every entry for a variant the file does not name, e.g. the
    bundled sample: they are then listed as absent)."""
    errata = read_errata(path)
    ids = errata.ids(variant if variant in VARIANTS else None)
    block = sensitivity([(j.question_id, ref_types[j.question_id], j.label) for j in judged
                         if j.question_id in ref_types], ids)
    return {"file": str(path), "source": errata.source, "variant": variant, **block,
            "note": "opt-in sensitivity analysis (a Mnemetric addition); the official numbers include every question"}
