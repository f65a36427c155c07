"""metrics/detail/qa.json, typed once: :class:`QADetail` (reader beside writer; ``json.dump(indent=2)``).

What stage qa_metrics and `mnemetric score-qa --detail` write (:func:`~mnemetric.longmemeval.scoring.qa_report.
score_judged_file` builds it), keys in this order:

* ``reader``, ``memory``, ``variant``, ``suite``: the names recorded (a string or null);
* ``judge``: ``{name, models, prompt_set_sha256, source_sha256, endpoints}``;
* ``official_equivalence``: the one ``{value, reasons}`` record (:class:`mnemetric.official.OfficialEquivalence`);
* ``per_type``: for each of upstream's six types, in print_qa_metrics.py's order, ``{accuracy, n, ci95,
  mdd80}`` (accuracy null for an empty type; ci95 and mdd80 objects from mnemetric.stats, or null);
* ``task_averaged``, ``overall`` (numbers or null), ``abstention`` ``{accuracy, n}``, ``n``;
* ``ci95``: ``{task_averaged, overall, abstention}`` (each an interval object or null); ``bootstrap``:
  ``{resamples, seed, level, note}``;
* ``coverage``: ``{n_reference, n_judged, n_failed, missing, scope}``; ``failures``: ``{n, by_stage,
  by_reason, question_ids}``; ``cost``: the cost block (an object) or null;
* ``failed_as_wrong``, only where questions failed: ``{overall, task_averaged, abstention, per_type, n}`` with
  the failed questions counted wrong (an object; ``per_type.<type>`` and ``abstention`` are ``{accuracy, n}``);
* ``errata_sensitivity``, only with errata enabled (an object).

The interval, MDD, cost and errata objects are kept as the objects they are (their layout belongs to
:mod:`mnemetric.stats`, :func:`~mnemetric.longmemeval.scoring.qa_report.cost_block` and
:mod:`mnemetric.longmemeval.errata`); every other field is checked and named.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from mnemetric.io import write_json_atomic
from mnemetric.longmemeval.rules import UPSTREAM_PRINT_ORDER
from mnemetric.records import OBJECT, OPTIONAL_NUMBER, OPTIONAL_STRING, Fields, read_json_file
from mnemetric.official import OfficialEquivalence

_FIX: Final = "regenerate it with `dvc repro qa_metrics` (or `mnemetric score-qa ... --detail FILE`)"
NAMES: Final = ("reader", "memory", "variant", "suite")
KEYS: Final = (*NAMES, "judge", "official_equivalence", "per_type", "task_averaged",
               "overall", "abstention", "n", "ci95", "bootstrap", "coverage", "failures", "cost", "failed_as_wrong",
               "errata_sensitivity")


def _object_or_null(f: Fields, name: str) -> dict[str, Any] | None:
    value = f.get(name, ((Mapping, type(None)), "an object or null"))
    return None if value is None else dict(value)


@dataclass(frozen=True)
class JudgeBlock:
    name: str
    models: tuple[str, ...]
    prompt_set_sha256: str | None
    source_sha256: str | None
    endpoints: tuple[str, ...]

    @classmethod
    def from_fields(cls, f: Fields) -> JudgeBlock:
        f.only(("name", "models", "prompt_set_sha256", "source_sha256", "endpoints"))
        return cls(f.string("name"), f.strings("models"), f.optional_string("prompt_set_sha256"),
                   f.optional_string("source_sha256"), f.strings("endpoints"))

    def to_record(self) -> dict[str, Any]:
        return {"name": self.name, "models": list(self.models), "prompt_set_sha256": self.prompt_set_sha256,
                "source_sha256": self.source_sha256, "endpoints": list(self.endpoints)}


@dataclass(frozen=True)
class TypeBlock:
    """One question type: accuracy (None when empty), n, its interval and its MDD (objects, or None)."""

    accuracy: float | None
    n: int
    ci95: Mapping[str, Any] | None
    mdd80: Mapping[str, Any] | None

    @classmethod
    def from_fields(cls, f: Fields) -> TypeBlock:
        f.only(("accuracy", "n", "ci95", "mdd80"))
        return cls(f.get("accuracy", OPTIONAL_NUMBER), f.count("n"), _object_or_null(f, "ci95"),
                   _object_or_null(f, "mdd80"))

    def to_record(self) -> dict[str, Any]:
        return {"accuracy": self.accuracy, "n": self.n, "ci95": self.ci95, "mdd80": self.mdd80}


@dataclass(frozen=True)
class Coverage:
    n_reference: int
    n_judged: int
    n_failed: int
    missing: tuple[str, ...]
    scope: str

    @classmethod
    def from_fields(cls, f: Fields) -> Coverage:
        f.only(("n_reference", "n_judged", "n_failed", "missing", "scope"))
        return cls(f.count("n_reference"), f.count("n_judged"), f.count("n_failed"), f.strings("missing"),
                   f.string("scope"))

    def to_record(self) -> dict[str, Any]:
        return {"n_reference": self.n_reference, "n_judged": self.n_judged, "n_failed": self.n_failed,
                "missing": list(self.missing), "scope": self.scope}


@dataclass(frozen=True)
class Failures:
    n: int
    by_stage: Mapping[str, int]
    by_reason: Mapping[str, int]
    question_ids: tuple[str, ...]

    @classmethod
    def from_fields(cls, f: Fields) -> Failures:
        f.only(("n", "by_stage", "by_reason", "question_ids"))
        stage, reason = f.at("by_stage"), f.at("by_reason")
        ids = f.strings("question_ids")
        if f.count("n") != len(ids):
            raise f.error("n", f"{f.raw['n']} but question_ids holds {len(ids)}")
        return cls(len(ids), {k: stage.count(k) for k in stage.raw}, {k: reason.count(k) for k in reason.raw}, ids)

    def to_record(self) -> dict[str, Any]:
        return {"n": self.n, "by_stage": dict(self.by_stage), "by_reason": dict(self.by_reason),
                "question_ids": list(self.question_ids)}


@dataclass(frozen=True)
class QADetail:
    """metrics/detail/qa.json (see the module docstring for its layout)."""

    names: Mapping[str, str | None]
    """reader, memory, variant, suite."""
    judge: JudgeBlock
    official_equivalence: OfficialEquivalence
    per_type: Mapping[str, TypeBlock]
    task_averaged: float | None
    overall: float | None
    abstention_accuracy: float | None
    abstention_n: int
    n: int
    ci95: Mapping[str, Any]
    bootstrap: Mapping[str, Any]
    coverage: Coverage
    failures: Failures
    cost: Mapping[str, Any] | None
    errata_sensitivity: Mapping[str, Any] | None = None
    failed_as_wrong: Mapping[str, Any] | None = None
    """The numbers with the failed questions counted wrong (only where some failed)."""

    @classmethod
    def from_record(cls, raw: Any, *, file: str) -> QADetail:
        """Validate a detail file; errors name the file and the field (``per_type.multi-session.n``)."""
        f = Fields.of(raw, file=file, record="<file>", fix=_FIX).only(KEYS)
        per = f.at("per_type", OBJECT)
        types = [t for t in per.raw]
        if types != list(UPSTREAM_PRINT_ORDER):
            raise per.error("<keys>", f"expected the six types {list(UPSTREAM_PRINT_ORDER)} in that order, got {types}")
        verdict = OfficialEquivalence.from_record(f.raw.get("official_equivalence"), file=file)
        abstention = f.at("abstention").only(("accuracy", "n"))
        ci95 = f.at("ci95").only(("task_averaged", "overall", "abstention"))
        bootstrap = f.at("bootstrap").only(("resamples", "seed", "level", "note"))
        bootstrap.count("resamples"), bootstrap.integer("seed"), bootstrap.number("level"), bootstrap.string("note")
        return cls({k: f.get(k, OPTIONAL_STRING) for k in NAMES}, JudgeBlock.from_fields(f.at("judge")),
                   verdict,
                   {t: TypeBlock.from_fields(per.at(t)) for t in types}, f.get("task_averaged", OPTIONAL_NUMBER),
                   f.get("overall", OPTIONAL_NUMBER), abstention.get("accuracy", OPTIONAL_NUMBER),
                   abstention.count("n"), f.count("n"), {k: _object_or_null(ci95, k) for k in ci95.raw},
                   dict(bootstrap.raw), Coverage.from_fields(f.at("coverage")), Failures.from_fields(f.at("failures")),
                   _object_or_null(f, "cost"),
                   dict(f.get("errata_sensitivity", OBJECT)) if "errata_sensitivity" in f.raw else None,
                   _failed_as_wrong(f, file))

    def to_record(self) -> dict[str, Any]:
        out: dict[str, Any] = {k: self.names.get(k) for k in NAMES}
        out |= {"judge": self.judge.to_record(), "official_equivalence": self.official_equivalence.to_record(),
                "per_type": {t: b.to_record() for t, b in self.per_type.items()},
                "task_averaged": self.task_averaged, "overall": self.overall,
                "abstention": {"accuracy": self.abstention_accuracy, "n": self.abstention_n}, "n": self.n,
                "ci95": dict(self.ci95), "bootstrap": dict(self.bootstrap), "coverage": self.coverage.to_record(),
                "failures": self.failures.to_record(), "cost": self.cost}
        if self.failed_as_wrong is not None:
            out["failed_as_wrong"] = dict(self.failed_as_wrong)
        if self.errata_sensitivity is not None:
            out["errata_sensitivity"] = dict(self.errata_sensitivity)
        return out


def _failed_as_wrong(f: Fields, file: str) -> dict[str, Any] | None:
    """The ``failed_as_wrong`` block, checked: present exactly when questions failed."""
    n_failed = f.raw.get("failures", {}).get("n", 0) if isinstance(f.raw.get("failures"), Mapping) else 0
    if "failed_as_wrong" not in f.raw:
        if n_failed:
            raise f.error("failed_as_wrong", f"missing, but {n_failed} question(s) failed")
        return None
    w = f.at("failed_as_wrong").only(("per_type", "task_averaged", "overall", "abstention", "n"))
    w.get("overall", OPTIONAL_NUMBER), w.get("task_averaged", OPTIONAL_NUMBER), w.count("n")
    w.at("abstention").only(("accuracy", "n")).get("accuracy", OPTIONAL_NUMBER)
    per = w.at("per_type", OBJECT)
    for t in per.raw:
        per.at(t).only(("accuracy", "n")).get("accuracy", OPTIONAL_NUMBER)
    return dict(w.raw)


def write_qa_detail(path: str | Path, detail: QADetail) -> None:
    """Write the detail file atomically (``json.dump(indent=2)``)."""
    write_json_atomic(path, detail.to_record())


def read_qa_detail(path: str | Path) -> QADetail:
    """Read and validate metrics/detail/qa.json."""
    raw = read_json_file(path, missing_fix="run `dvc repro qa_metrics` first", fix=_FIX)
    return QADetail.from_record(raw, file=str(path))


# ---------------------------------------------------------------------------------------------
# What the doors show (the card, `mnemetric runs`): either layout, of any revision


POINT_KEYS: Final = ("value", "point", "accuracy", "mean")
"""The keys a number may sit under where a file holds a block instead (the detail's ``{accuracy, n}``;
older layouts used the others), in the order they are tried."""
_POINT: Final = ((int, float, Mapping), "a number or an object holding one")


def point(f: Fields, name: str) -> float | None:
    """The number in field ``name``: the number itself, or the first of :data:`POINT_KEYS` of its block
    (None: absent, null, or a block holding none of them)."""
    value = f.maybe(name, _POINT)
    if not isinstance(value, Mapping):
        return value
    block = f.within(name)
    return next((block.maybe(k, OPTIONAL_NUMBER) for k in POINT_KEYS if k in block.raw), None)


@dataclass(frozen=True)
class ShownRate:
    """One accuracy as shown: value, 95% interval bounds and n (None: the file does not say)."""

    value: float | None
    low: float | None = None
    high: float | None = None
    n: int | None = None


def _bounds(f: Fields) -> tuple[float | None, float | None]:
    return f.maybe("low", OPTIONAL_NUMBER), f.maybe("high", OPTIONAL_NUMBER)


_COUNT: Final = ((int,), "an integer")


@dataclass(frozen=True)
class JudgeShown:
    """The judge block as shown: its models and prompt-set sha256 (None: not recorded)."""

    models: tuple[str, ...] | None
    prompt_set_sha256: str | None


@dataclass(frozen=True)
class QAShown:
    """What the doors read of metrics/detail/qa.json or the headline metrics/qa.json, typed; a field the
    file lacks is None (an older or partial file shows "—"), a field of the wrong type an InputError naming
    the file and the field.

    ``overall``/``task_averaged``: the number (:func:`point`), over ``n``, with ``ci95.<key>.low|high``;
    ``abstention``: the number (the detail's ``{accuracy, n}`` or the headline's plain number) with its
    ``n`` (detail only) and ``ci95.abstention``; ``per_type.<type>``: the number, and in the detail its
    ``ci95.low|high`` and ``n``; ``judge``: the detail's judge block (the headline names the judge only)."""

    overall: ShownRate
    task_averaged: ShownRate
    abstention: ShownRate
    per_type: Mapping[str, ShownRate]
    judge: JudgeShown | None = None

    @classmethod
    def from_record(cls, raw: Any, *, file: str) -> QAShown:
        f = Fields.shown(raw, file=file, fix=_FIX)
        ci95 = f.within("ci95")
        n = f.maybe("n", _COUNT)

        def rate(key: str, count: int | None) -> ShownRate:
            return ShownRate(point(f, key), *_bounds(ci95.within(key)), count)

        abstention = f.within("abstention") if isinstance(f.raw.get("abstention"), Mapping) else None
        per = f.within("per_type")
        types = {}
        for t in per.raw:
            block = per.within(t) if isinstance(per.raw[t], Mapping) else None
            types[t] = ShownRate(point(per, t), *(_bounds(block.within("ci95")) if block else (None, None)),
                                 block.maybe("n", _COUNT) if block else None)
        judge = f.within("judge") if isinstance(f.raw.get("judge"), Mapping) else None
        if judge is None:
            f.maybe("judge", ((str,), "a judge name or a judge block"))
        return cls(rate("overall", n), rate("task_averaged", n),
                   rate("abstention", abstention.maybe("n", _COUNT) if abstention else None), types,
                   JudgeShown(judge.maybe_strings("models"), judge.maybe("prompt_set_sha256", OPTIONAL_STRING))
                   if judge else None)
