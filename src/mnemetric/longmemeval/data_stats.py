"""What a dataset variant holds: counts per type, abstention, haystack sizes (pure), and metrics/data.json.

metrics/data.json (stage data_metrics; ``json.dump(indent=2)``), typed once as :class:`DataMetrics`
(reader beside writer), keys in this order:

* ``variant``: ``name``, ``revision`` (``"bundled"`` for a committed file), ``sha256``, ``sha256_verified``;
* ``adapter``: ``name``, ``schema``;
* ``questions``: :class:`TypeCounts` of the whole variant — ``total``, ``abstention``, ``per_type`` (the
  six types in QUESTION_TYPES order, then any other);
* ``haystack``: ``sessions`` and ``turns``, each ``{mean, max}`` over the variant's questions (null
  when there is none);
* ``suite``: ``name``, ``size``, ``ids_sha256``, ``questions`` (:class:`TypeCounts` of the suite).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from typing import Any

from mnemetric.io import write_json_atomic
from mnemetric.longmemeval.instance import QUESTION_TYPES
from mnemetric.records import OPTIONAL_INTEGER, OPTIONAL_NUMBER, Fields, read_json_file

_FIX = "regenerate it with `dvc repro data_metrics`"


def haystack_stats(per_question: list[tuple[int, int]]) -> dict[str, Any]:
    """per_question: (sessions, turns) per haystack → mean/max of each (None when empty)."""
    sessions = [s for s, _ in per_question]
    turns = [t for _, t in per_question]
    return {
        "sessions": {"mean": fmean(sessions) if sessions else None, "max": max(sessions, default=None)},
        "turns": {"mean": fmean(turns) if turns else None, "max": max(turns, default=None)},
    }


def type_counts(types: Iterable[tuple[str, bool]]) -> dict[str, Any]:
    """(question_type, abstention) pairs → {total, abstention, per_type{six types}}."""
    per_type = dict.fromkeys(QUESTION_TYPES, 0)
    total = abstention = 0
    for qtype, abs_ in types:
        per_type[qtype] = per_type.get(qtype, 0) + 1
        total += 1
        abstention += bool(abs_)
    return {"total": total, "abstention": abstention, "per_type": per_type}


@dataclass(frozen=True)
class TypeCounts:
    """How many questions, how many of them abstention ones, and how many of each type."""

    total: int
    abstention: int
    per_type: Mapping[str, int]

    @classmethod
    def of(cls, types: Iterable[tuple[str, bool]]) -> TypeCounts:
        """From (question_type, abstention) pairs (see :func:`type_counts`)."""
        c = type_counts(types)
        return cls(c["total"], c["abstention"], c["per_type"])

    @classmethod
    def from_fields(cls, f: Fields) -> TypeCounts:
        f.only(("total", "abstention", "per_type"))
        per = f.at("per_type")
        counts = {str(t): per.count(t) for t in per.raw}
        return cls(f.count("total"), f.count("abstention"), counts)

    def to_record(self) -> dict[str, Any]:
        return {"total": self.total, "abstention": self.abstention, "per_type": dict(self.per_type)}


@dataclass(frozen=True)
class Spread:
    """Mean and maximum of a count over the questions (both None when there is no question)."""

    mean: float | None
    max: int | None

    @classmethod
    def from_fields(cls, f: Fields) -> Spread:
        f.only(("mean", "max"))
        return cls(f.get("mean", OPTIONAL_NUMBER), f.get("max", OPTIONAL_INTEGER))

    def to_record(self) -> dict[str, Any]:
        return {"mean": self.mean, "max": self.max}


@dataclass(frozen=True)
class DataMetrics:
    """metrics/data.json: what was evaluated, verified from which bytes."""

    variant: str
    revision: str
    sha256: str
    sha256_verified: bool
    adapter: str
    adapter_schema: str
    questions: TypeCounts
    sessions: Spread
    turns: Spread
    suite: str
    suite_size: int
    suite_ids_sha256: str
    suite_questions: TypeCounts

    @classmethod
    def from_record(cls, raw: Any, *, file: str) -> DataMetrics:
        """Validate metrics/data.json; errors name the file and the field (``suite.questions.total``)."""
        f = Fields.of(raw, file=file, record="<file>", fix=_FIX).only(("variant", "adapter", "questions", "haystack",
                                                                        "suite"))
        v = f.at("variant").only(("name", "revision", "sha256", "sha256_verified"))
        a = f.at("adapter").only(("name", "schema"))
        h = f.at("haystack").only(("sessions", "turns"))
        s = f.at("suite").only(("name", "size", "ids_sha256", "questions"))
        return cls(v.string("name"), v.string("revision"), v.string("sha256"), v.boolean("sha256_verified"),
                   a.string("name"), a.string("schema"), TypeCounts.from_fields(f.at("questions")),
                   Spread.from_fields(h.at("sessions")), Spread.from_fields(h.at("turns")), s.string("name"),
                   s.count("size"), s.string("ids_sha256"), TypeCounts.from_fields(s.at("questions")))

    def to_record(self) -> dict[str, Any]:
        return {
            "variant": {"name": self.variant, "revision": self.revision, "sha256": self.sha256,
                        "sha256_verified": self.sha256_verified},
            "adapter": {"name": self.adapter, "schema": self.adapter_schema},
            "questions": self.questions.to_record(),
            "haystack": {"sessions": self.sessions.to_record(), "turns": self.turns.to_record()},
            "suite": {"name": self.suite, "size": self.suite_size, "ids_sha256": self.suite_ids_sha256,
                      "questions": self.suite_questions.to_record()},
        }


def haystack_spreads(per_question: list[tuple[int, int]]) -> tuple[Spread, Spread]:
    """(sessions, turns) spreads of (sessions, turns) per haystack (see :func:`haystack_stats`)."""
    h = haystack_stats(per_question)
    return Spread(**h["sessions"]), Spread(**h["turns"])


def write_data_metrics(path: str | Path, metrics: DataMetrics) -> None:
    """Write metrics/data.json atomically."""
    write_json_atomic(path, metrics.to_record())


def read_data_metrics(path: str | Path) -> DataMetrics:
    """Read and validate metrics/data.json."""
    return DataMetrics.from_record(read_json_file(path, missing_fix="run `dvc repro data_metrics` first", fix=_FIX),
                                   file=str(path))


@dataclass(frozen=True)
class DataShown:
    """What the doors (`mnemetric runs`, `mnemetric compare`) read of metrics/data.json at any revision, typed:
    ``variant.sha256``, ``suite.name``, ``suite.ids_sha256``, ``adapter.schema``. A key the file lacks (an
    older layout, or no file) is None; one of the wrong type an InputError naming the file and the key."""

    variant_sha256: str | None = None
    suite_name: str | None = None
    suite_ids_sha256: str | None = None
    adapter_schema: str | None = None

    @classmethod
    def from_record(cls, raw: Any, *, file: str) -> DataShown:
        f = Fields.shown(raw, file=file, fix=_FIX)
        text = ((str,), "a string")
        v, s, a = f.within("variant"), f.within("suite"), f.within("adapter")
        return cls(v.maybe("sha256", text), s.maybe("name", text), s.maybe("ids_sha256", text),
                   a.maybe("schema", text))
