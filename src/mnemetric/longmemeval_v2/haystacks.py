"""Haystack files of LongMemEval-V2: question id → the ordered trajectory ids inserted for it.

Facts (xiaowu0162/LongMemEval-V2 at be15ea6e995462f3391c1a610892df3f67dfa7bd): a tier's file is
``haystacks/lme_v2_<tier>.json`` (tiers small and medium; data/public_data.py load_haystack), one
JSON object; keys are non-empty strings, values lists of non-empty string ids
(public_data.py load_haystack, harness.py load_haystack_mapping); validate_public_data refuses an
id listed twice for one question. The run shares one memory iff every question of the run has the
identical ordered list (harness.py all_haystacks_shared; no questions → not shared).

Stricter than upstream: a question id that appears twice as a key is refused (json.loads keeps the
last one silently) — jsonfiles.decode_json catches that.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from mnemetric.errors import ConfigError, InputError, Problem
from mnemetric.longmemeval_v2.jsonfiles import load_json

TIERS = ("small", "medium")


def haystack_file(tier: str) -> str:
    """The data-root-relative path of a tier's haystack file."""
    if tier not in TIERS:
        raise ConfigError("tier", f"{tier!r} is not a LongMemEval-V2 tier", fix=f"use one of: {', '.join(TIERS)}")
    return f"haystacks/lme_v2_{tier}.json"


@dataclass(frozen=True)
class Haystack:
    """A whole haystack file, in file order."""

    lists: Mapping[str, tuple[str, ...]]
    """question id → trajectory ids in insertion order (read-only)."""

    @property
    def question_ids(self) -> tuple[str, ...]:
        return tuple(self.lists)

    def __getitem__(self, question_id: str) -> tuple[str, ...]:
        return self.lists[question_id]

    def is_shared(self, question_ids: Iterable[str]) -> bool:
        """True iff every given question has the identical ordered list (upstream all_haystacks_shared;
        an empty selection is not shared)."""
        ids = list(question_ids)
        return bool(ids) and all(self.lists[q] == self.lists[ids[0]] for q in ids[1:])

    @classmethod
    def from_record(cls, raw: Any, *, file: str, line: int | None = None) -> "Haystack":
        """Validate and type a decoded haystack file; the first problem raises InputError."""
        problems = check_haystack(raw, file=file)
        if problems:
            first = problems[0]
            more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
            raise InputError(first.file, first.record, first.field, first.message + more)
        return cls(MappingProxyType({q: tuple(ids) for q, ids in raw.items()}))

    def to_record(self) -> dict[str, list[str]]:
        return {q: list(ids) for q, ids in self.lists.items()}


def check_haystack(raw: Any, *, file: str) -> list[Problem]:
    """Every problem of a decoded haystack file on its own (cross-file checks are in validate.py)."""
    if not isinstance(raw, dict):
        return [Problem(file, "<file>", "<file>", f"must be a JSON object (question id → list of trajectory ids), "
                        f"got {type(raw).__name__}")]
    problems = []
    for qid, ids in raw.items():
        record = qid if qid else "<empty key>"
        if not qid:
            problems.append(Problem(file, record, "<key>", "a question id must be a non-empty string"))
        if not isinstance(ids, list):
            problems.append(Problem(file, record, "<list>", f"must be a list of trajectory ids, got {type(ids).__name__}"))
            continue
        seen: set[str] = set()
        for i, tid in enumerate(ids):
            if not (isinstance(tid, str) and tid):
                problems.append(Problem(file, record, f"[{i}]", f"must be a non-empty trajectory id string, got {tid!r}"))
            elif tid in seen:
                problems.append(Problem(file, record, f"[{i}]", f"trajectory {tid!r} is listed twice"))
            else:
                seen.add(tid)
    return problems


def read_haystack(path: str | Path) -> Haystack:
    """Read and type a haystack file (strict JSON); the first problem raises InputError."""
    raw, problems = load_json(path)
    if problems:
        first = problems[0]
        raise InputError(first.file, first.record, first.field, first.message)
    return Haystack.from_record(raw, file=str(path))
