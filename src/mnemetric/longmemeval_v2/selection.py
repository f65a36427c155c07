"""Which questions of a LongMemEval-V2 data root one run asks: all, or a subset (a development run; never official).

Rules (applied per domain to the domain's questions in questions.jsonl order, as upstream's data/public_data.py
materialize_runtime_questions @ be15ea6 applies --question-ids and --limit; the stratified subset is ours):

1. ``question_ids``: only these ids, in file order (not the order given); an id that is in none of the run's
   domains is an error naming it (upstream: "Unknown question ids for domain …").
2. ``per_type``: the stratified development subset — the first ``per_type`` questions of each question_type
   (file order kept), so every ability is in it whatever the size.
3. ``limit``: the first ``limit`` questions left (after 1 and 2).

The run then holds only the chosen questions (memory, reader, checkers, metrics), and its summary says it is a
subset (:meth:`Selection.reason`): a subset is never official.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mnemetric.errors import ConfigError


@dataclass(frozen=True)
class Selection:
    question_ids: tuple[str, ...] | None = None
    per_type: int | None = None
    limit: int | None = None

    def __post_init__(self) -> None:
        for name in ("per_type", "limit"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ConfigError(name, f"must be a positive integer, got {value!r}")
        if self.question_ids is not None and not self.question_ids:
            raise ConfigError("question_ids", "is empty: name at least one question id, or leave it out")

    @classmethod
    def of(cls, raw: Mapping[str, Any] | None) -> Selection | None:
        """From ``{question_ids, per_type, limit}`` (any missing or null); None when nothing is chosen."""
        raw = dict(raw or {})
        ids = raw.get("question_ids")
        sel = cls(tuple(str(i) for i in ids) if ids is not None else None, raw.get("per_type"), raw.get("limit"))
        return None if sel.is_all else sel

    @property
    def is_all(self) -> bool:
        return self.question_ids is None and self.per_type is None and self.limit is None

    def pick(self, questions: Sequence[Any]) -> list[Any]:
        """The chosen questions of one domain (objects with ``id`` and ``question_type``), in their order."""
        out = list(questions)
        if self.question_ids is not None:
            wanted = set(self.question_ids)
            out = [q for q in out if q.id in wanted]
        if self.per_type is not None:
            seen: dict[str, int] = {}
            kept = []
            for q in out:
                seen[q.question_type] = seen.get(q.question_type, 0) + 1
                if seen[q.question_type] <= self.per_type:
                    kept.append(q)
            out = kept
        return out[:self.limit] if self.limit is not None else out

    def check_known(self, known: set[str], file: str) -> None:
        """Every requested id is a question of the run's domains (else ConfigError naming the first unknown)."""
        missing = [i for i in self.question_ids or () if i not in known]
        if missing:
            raise ConfigError("question_ids", f"{len(missing)} unknown question id(s) in the run's domains of {file}: "
                              f"{', '.join(missing[:5])}", fix="give ids of questions.jsonl (of the domains run)")

    def reason(self, chosen: int, total: int) -> str:
        """The not-official reason of a subset run."""
        how = ", ".join(f"{k}={v if k != 'question_ids' else len(v)}" for k, v in
                        (("question_ids", self.question_ids), ("per_type", self.per_type), ("limit", self.limit))
                        if v is not None)
        return f"a subset of the questions: {chosen} of {total} ({how}); official results ask every question"
