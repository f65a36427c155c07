"""Suites: which questions of a variant a run evaluates.

``full`` takes every question. ``development`` takes a stratified subset with a fixed seed — a few
non-abstention questions per question type plus a few abstention questions — so people can iterate
cheaply and keep the rest held out. A suite is recorded as its ordered question ids and their sha256.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from mnemetric.longmemeval.instance import QUESTION_TYPES
from mnemetric.errors import ConfigError
from mnemetric.io import sha256_text

KINDS = ("full", "stratified")


@dataclass(frozen=True)
class QuestionMeta:
    question_id: str
    question_type: str
    abstention: bool


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


def suite_record(spec: SuiteSpec, variant: str, ids: list[str]) -> dict:
    return {"suite": spec.name, "variant": variant, "kind": spec.kind, "seed": spec.seed,
            "size": len(ids), "ids_sha256": ids_sha256(ids), "question_ids": ids}
