"""Suites: which questions of a variant a run evaluates.

``full`` takes every question. ``development`` takes a stratified subset with a fixed seed — a few
non-abstention questions per question type plus a few abstention questions — so people can iterate
cheaply and keep the rest held out. A suite is recorded as its ordered question ids and their sha256.

Stage suite also writes the question index (data/suites/<variant>.index.jsonl): one line per question
of the variant, in file order, keys ``question_id``, ``question_type``, ``abstention``, ``sessions``,
``turns`` (haystack size) — what the choice and the data metrics need, so neither parses the adapted
file again, and stage retrieve's universe (:func:`suite_universe`), so it reads the adapted file once —
and the questions file of the suite (:mod:`mnemetric.longmemeval.questions`).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mnemetric.longmemeval.instance import QUESTION_TYPES
from mnemetric.errors import ConfigError, InputError
from mnemetric.io import read_jsonl, require_file, sha256_text, write_json_atomic, write_jsonl_atomic
from mnemetric.records import Fields, read_json_file, record_name

KINDS = ("full", "stratified")
_FIX = "regenerate it with `dvc repro suite`"


_INDEX_KEYS = ("question_id", "question_type", "abstention", "sessions", "turns")


@dataclass(frozen=True)
class QuestionMeta:
    """What the stratified choice and the data metrics need of one question (one line of the question
    index; from the adapted record)."""

    question_id: str
    question_type: str
    """One of the upstream question types (strata of the development suite)."""
    abstention: bool
    """Abstention questions form a stratum of their own, whatever their type."""
    sessions: int = 0
    """Haystack sessions."""
    turns: int = 0
    """Haystack turns (messages), over all sessions."""

    @classmethod
    def of_adapted(cls, rec: Any) -> QuestionMeta:
        """From an adapted record (adapted.AdaptedRecord)."""
        sessions = rec.memory.sessions
        return cls(rec.eval.question_id, rec.eval.question_type, rec.eval.abstention, len(sessions),
                   sum(len(s.messages) for s in sessions))

    @classmethod
    def from_record(cls, raw: Any, *, file: str, line: int | str) -> QuestionMeta:
        f = Fields.of(raw, file=file, record=record_name(line), fix=_FIX).only(_INDEX_KEYS)
        return cls(f.string("question_id"), f.string("question_type"), f.boolean("abstention"), f.count("sessions"),
                   f.count("turns"))

    def to_record(self) -> dict[str, Any]:
        return {"question_id": self.question_id, "question_type": self.question_type, "abstention": self.abstention,
                "sessions": self.sessions, "turns": self.turns}


def write_question_index(path: str | Path, index: Iterable[QuestionMeta]) -> int:
    """Write the question index atomically (one JSON line per question)."""
    return write_jsonl_atomic(path, (q.to_record() for q in index))


def read_question_index(path: str | Path) -> list[QuestionMeta]:
    """Every line of the question index, in file order."""
    require_file(path, fix="run `dvc repro suite` first")
    return [QuestionMeta.from_record(raw, file=str(path), line=lineno) for lineno, raw in read_jsonl(path)]


def suite_universe(index_path: str | Path, ids: Iterable[str]) -> list[tuple[str, str]]:
    """``(question_id, question_type)`` of the suite's questions ``ids`` in the adapted file's order, from
    the question index (a few bytes per question): what a shard's assignment needs before the first
    question runs, so the adapted file (GBs at M) is read once, by the run itself. An id the index lacks
    is an error naming the index."""
    wanted = set(ids)
    universe = [(q.question_id, q.question_type) for q in read_question_index(index_path) if q.question_id in wanted]
    if len(universe) < len(wanted):
        missing = sorted(wanted - {q for q, _ in universe})
        raise InputError(str(index_path), "<file>", "question_id",
                         f"no line for question {missing[0]!r} of the suite ({len(missing)} missing)", fix=_FIX)
    return universe


@dataclass(frozen=True)
class SuiteSpec:
    name: str
    kind: str
    per_type: int = 0
    abstention: int = 0
    seed: int = 0

    @classmethod
    def from_params(cls, p: dict) -> "SuiteSpec":
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(p) - known)
        if unknown:
            raise ConfigError(f"params.yaml suite: unknown key(s) {unknown}; known: {sorted(known)} (see conf/suite/)")
        return cls(**p)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ConfigError(f"suite {self.name}: unknown kind {self.kind!r}; known: {', '.join(KINDS)}")


def select(spec: SuiteSpec, questions: Sequence[QuestionMeta]) -> list[str]:
    """Question ids of the suite, in file order."""
    if spec.kind == "full":
        return [q.question_id for q in questions]
    rng = random.Random(spec.seed)
    chosen: set[str] = set()
    for qtype in QUESTION_TYPES:
        pool = [q.question_id for q in questions if q.question_type == qtype and not q.abstention]
        chosen.update(rng.sample(pool, min(spec.per_type, len(pool))))
    abstention = [q.question_id for q in questions if q.abstention]
    chosen.update(rng.sample(abstention, min(spec.abstention, len(abstention))))
    return [q.question_id for q in questions if q.question_id in chosen]


def ids_sha256(ids: Iterable[str]) -> str:
    """sha256 of the ids joined by newlines (order matters)."""
    return sha256_text("\n".join(ids))


@dataclass(frozen=True)
class SuiteRecord:
    """The suite file (data/suites/<variant>-<suite>.json; ``json.dump(indent=2)``), keys in this
    order: ``suite`` (name), ``variant``, ``kind``, ``seed``, ``size``, ``ids_sha256`` (of the ids
    joined by newlines), ``question_ids`` (in file order). Size and hash must agree with the ids."""

    suite: str
    variant: str
    kind: str
    seed: int
    question_ids: tuple[str, ...]

    @property
    def size(self) -> int:
        return len(self.question_ids)

    @property
    def ids_sha256(self) -> str:
        return ids_sha256(self.question_ids)

    @classmethod
    def from_record(cls, raw: Any, *, file: str, line: int | str = "<file>") -> SuiteRecord:
        """Validate a suite file; errors name the file and the field."""
        f = Fields.of(raw, file=file, record=record_name(line), fix=_FIX)
        name, variant, kind = f.string("suite"), f.string("variant"), f.string("kind")
        if kind not in KINDS:
            raise f.error("kind", f"expected one of {list(KINDS)}, got {kind!r}")
        seed, size, sha = f.integer("seed"), f.integer("size"), f.string("ids_sha256")
        ids = f.array("question_ids", "a list of question ids")
        for i, q in enumerate(ids):
            if not isinstance(q, str) or not q:
                raise f.error(f"question_ids[{i}]", f"expected a non-empty string, got {q!r:.60}")
        if len(set(ids)) != len(ids):
            dup = next(q for i, q in enumerate(ids) if q in ids[:i])
            raise f.error("question_ids", f"duplicate question id {dup!r}")
        record = cls(name, variant, kind, seed, tuple(ids))
        if size != record.size:
            raise f.error("size", f"{size} but question_ids holds {record.size}")
        if sha != record.ids_sha256:
            raise f.error("ids_sha256", f"{sha} is not the sha256 of question_ids ({record.ids_sha256})")
        return record

    def to_record(self) -> dict[str, Any]:
        return {"suite": self.suite, "variant": self.variant, "kind": self.kind, "seed": self.seed,
                "size": self.size, "ids_sha256": self.ids_sha256, "question_ids": list(self.question_ids)}


def suite_record(spec: SuiteSpec, variant: str, ids: Sequence[str]) -> SuiteRecord:
    """The suite file record of ``ids`` chosen by ``spec`` for ``variant``."""
    return SuiteRecord(spec.name, variant, spec.kind, spec.seed, tuple(ids))


def write_suite(path: str | Path, record: SuiteRecord) -> None:
    """Write the suite file atomically."""
    write_json_atomic(path, record.to_record())


def read_suite(path: str | Path) -> SuiteRecord:
    """Read and validate a suite file."""
    raw = read_json_file(path, missing_fix="run `dvc repro suite` first", fix=_FIX)
    return SuiteRecord.from_record(raw, file=str(path))
