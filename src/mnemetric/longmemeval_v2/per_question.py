"""One row of a LongMemEval-V2 ``per_question.jsonl``, typed once.

Layout from upstream ``evaluation/harness.py`` (the per-question record of the scoring pass) at
be15ea6e995462f3391c1a610892df3f67dfa7bd: :data:`UPSTREAM_KEYS`, in that order. Upstream writes each
line with ``json.dumps(record, ensure_ascii=True)``, in stream order.

Mnemetric rows may carry extra fields after the upstream ones (``extra``), kept in their order and
written back after the upstream keys; they never replace or reorder an upstream key. One of them has
a meaning here: ``"failed": "<reason>"`` marks a question where upstream would have aborted the run
(an unparseable judge reply, an empty reader text …). In a failed row the fields from
``memory_context`` on may be ``null`` (the failure can happen anywhere after the query starts); the
identity fields (``index`` … ``haystack_ids``) are always required. Aggregation leaves failed rows
out of the upstream numbers and counts them apart (see ``aggregate``).

Rows are checked against upstream's own invariants: category = CATEGORY_MAP[question_type];
is_abstention_problem = (eval function name == llm_abstention_checker), which needs an ``-abs`` type;
is_unknown = is_unknown(response_parsed_boxed); score = 1.0 if score_bool else 0.0; an unknown answer
never has score_bool true; memory_context_was_truncated = original count > final count.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from mnemetric.errors import InputError
from mnemetric.records import Fields
from mnemetric.io import atomic_open, read_jsonl
from mnemetric.longmemeval_v2.categories import CATEGORY_MAP
from mnemetric.longmemeval_v2.checkers import eval_name, is_abstention_problem, is_unknown

UPSTREAM_KEYS: tuple[str, ...] = (
    "index", "stream_index", "question_id", "question_type", "category", "is_abstention_problem",
    "eval_function", "question_text", "question_image", "haystack_ids", "memory_context",
    "memory_query_duration_seconds", "memory_post_query_duration_seconds", "memory_post_query_metadata",
    "memory_context_original_token_count", "memory_context_token_count", "memory_context_was_truncated",
    "prompt_messages", "answer_gold", "response_raw", "response_parsed_boxed", "is_unknown", "score",
    "score_bool", "usage", "timestamp_utc",
)
NULLABLE_WHEN_FAILED = frozenset(UPSTREAM_KEYS[UPSTREAM_KEYS.index("memory_context"):])
USAGE_KEYS = ("prompt_tokens", "completion_tokens", "total_tokens")
FAILED = "failed"
"""The extra field that marks a question failed where upstream would abort (module docstring)."""


@dataclass(frozen=True)
class Usage:
    """A row's ``usage``: the reader reply's token counts, exactly these three keys."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    """As the reader's API reported it (not necessarily prompt + completion)."""

    @classmethod
    def from_record(cls, raw: Any, *, file: str, record: str, prefix: str = "usage.") -> Usage:
        """Exactly the keys :data:`USAGE_KEYS`, each a non-negative integer."""
        f = Fields.of(raw, file=file, record=record, prefix=prefix)
        if set(f.raw) != set(USAGE_KEYS):
            raise InputError(file, record, prefix.rstrip("."),
                             f"expected exactly the keys {', '.join(USAGE_KEYS)}, got {sorted(f.raw)}")
        return cls(*(f.count(k) for k in USAGE_KEYS))

    def to_record(self) -> dict:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "total_tokens": self.total_tokens}


@dataclass(frozen=True)
class PerQuestionRow:
    index: int
    """Position of the question in questions.jsonl."""
    stream_index: int
    """Position in the (possibly shuffled) question stream."""
    question_id: str
    question_type: str
    category: str
    is_abstention_problem: bool
    eval_function: str
    question_text: str
    question_image: str | None
    haystack_ids: tuple[str, ...]
    memory_context: tuple[Any, ...] | None
    """The memory items after truncation ({type, value} objects)."""
    memory_query_duration_seconds: float | None
    memory_post_query_duration_seconds: float | None
    memory_post_query_metadata: Any
    memory_context_original_token_count: int | None
    memory_context_token_count: int | None
    memory_context_was_truncated: bool | None
    prompt_messages: tuple[Any, ...] | None
    answer_gold: str | None
    response_raw: str | None
    response_parsed_boxed: str | None
    is_unknown: bool | None
    score: float | None
    """1.0 or 0.0 (kept as read)."""
    score_bool: bool | None
    usage: Usage | None
    timestamp_utc: str | None
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Mnemetric fields after the upstream ones (e.g. ``failed``), in file order."""

    @property
    def failed(self) -> str | None:
        """The reason this question failed where upstream would have aborted, else None."""
        return self.extra.get(FAILED)

    @classmethod
    def from_record(cls, raw: Any, *, file: str, line: int) -> PerQuestionRow:
        if not isinstance(raw, dict):
            raise InputError(file, f"line {line}", "<row>", f"expected a JSON object, got {type(raw).__name__}")
        qid = raw.get("question_id")
        where = Fields(raw, file, f"line {line}" + (f" ({qid})" if isinstance(qid, str) and qid else ""))
        extra = {k: v for k, v in raw.items() if k not in UPSTREAM_KEYS}
        failed = FAILED in extra
        if failed and not (isinstance(extra[FAILED], str) and extra[FAILED].strip()):
            raise where.error(FAILED, f"must be a non-empty reason string, got {extra[FAILED]!r}")
        values = {key: _field(where, raw, key, failed) for key in UPSTREAM_KEYS}
        row = cls(**values, extra=extra)
        _check_invariants(row, where)
        return row

    def to_record(self) -> dict:
        """Upstream keys in upstream order, then the extra fields."""
        out: dict[str, Any] = {}
        for key in UPSTREAM_KEYS:
            value = getattr(self, key)
            if isinstance(value, tuple):
                value = list(value)
            elif isinstance(value, Usage):
                value = value.to_record()
            out[key] = value
        out.update(self.extra)
        return out


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_seconds(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0


_CHECKS: dict[str, tuple[Any, str]] = {
    "index": (lambda v: _is_int(v) and v >= 0, "a non-negative integer"),
    "stream_index": (lambda v: _is_int(v) and v >= 0, "a non-negative integer"),
    "question_id": (lambda v: isinstance(v, str) and v != "", "a non-empty string"),
    "question_type": (lambda v: isinstance(v, str) and v != "", "a non-empty string"),
    "category": (lambda v: isinstance(v, str), "a string"),
    "is_abstention_problem": (lambda v: isinstance(v, bool), "true or false"),
    "eval_function": (lambda v: isinstance(v, str) and v != "", "a non-empty string"),
    "question_text": (lambda v: isinstance(v, str), "a string"),
    "question_image": (lambda v: v is None or isinstance(v, str), "a string or null"),
    "haystack_ids": (lambda v: isinstance(v, list) and all(isinstance(i, str) for i in v), "a list of strings"),
    "memory_context": (lambda v: isinstance(v, list), "a list"),
    "memory_query_duration_seconds": (_is_seconds, "a finite number of seconds >= 0"),
    "memory_post_query_duration_seconds": (_is_seconds, "a finite number of seconds >= 0"),
    "memory_post_query_metadata": (lambda v: True, "any JSON value"),
    "memory_context_original_token_count": (lambda v: _is_int(v) and v >= 0, "a non-negative integer"),
    "memory_context_token_count": (lambda v: _is_int(v) and v >= 0, "a non-negative integer"),
    "memory_context_was_truncated": (lambda v: isinstance(v, bool), "true or false"),
    "prompt_messages": (lambda v: isinstance(v, list), "a list"),
    "answer_gold": (lambda v: isinstance(v, str), "a string"),
    "response_raw": (lambda v: isinstance(v, str), "a string"),
    "response_parsed_boxed": (lambda v: isinstance(v, str), "a string"),
    "is_unknown": (lambda v: isinstance(v, bool), "true or false"),
    "score": (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and v in (0, 1), "1.0 or 0.0"),
    "score_bool": (lambda v: isinstance(v, bool), "true or false"),
    "usage": (lambda v: isinstance(v, dict), "an object {prompt_tokens, completion_tokens, total_tokens}"),
    "timestamp_utc": (lambda v: isinstance(v, str), "a string"),
}


def _field(where: Fields, raw: dict, key: str, failed: bool) -> Any:
    if key not in raw:
        raise where.error(key, "missing", fix="per_question.jsonl rows carry every upstream key")
    value = raw[key]
    if value is None and failed and key in NULLABLE_WHEN_FAILED:
        return None
    check, expected = _CHECKS[key]
    if not check(value):
        raise where.error(key, f"expected {expected}, got {value!r}")
    if key == "usage":
        return Usage.from_record(value, file=where.file, record=where.record)
    return tuple(value) if isinstance(value, list) else value


def _check_invariants(row: PerQuestionRow, where: Fields) -> None:
    """Upstream's own invariants between fields (module docstring); a violation names the field."""
    expected_category = CATEGORY_MAP.get(row.question_type)
    if expected_category is None:
        raise where.error("question_type", f"unknown question type {row.question_type!r}",
                          fix="one of: " + ", ".join(CATEGORY_MAP))
    if row.category != expected_category:
        raise where.error("category", f"{row.category!r} but question_type {row.question_type!r} "
                                      f"has category {expected_category!r}")
    abstention = is_abstention_problem(eval_name(row.eval_function))
    if row.is_abstention_problem != abstention:
        raise where.error("is_abstention_problem", f"{row.is_abstention_problem} but the eval function "
                          f"{eval_name(row.eval_function)!r} says {abstention}")
    if abstention and "-abs" not in row.question_type:
        raise where.error("question_type", "llm_abstention_checker needs an -abs question type "
                                           f"(got {row.question_type!r}); upstream aborts the run")
    _check_outcome(row, where)


def _check_outcome(row: PerQuestionRow, where: Fields) -> None:
    if row.response_parsed_boxed is not None and row.is_unknown is not None:
        if row.is_unknown != is_unknown(row.response_parsed_boxed):
            raise where.error("is_unknown", f"{row.is_unknown} but response_parsed_boxed "
                                            f"{row.response_parsed_boxed!r} says otherwise")
    if row.score is not None and row.score_bool is not None and row.score != (1.0 if row.score_bool else 0.0):
        raise where.error("score", f"{row.score!r} disagrees with score_bool {row.score_bool}")
    if row.is_unknown and row.score_bool:
        raise where.error("score_bool", "an UNKNOWN answer always scores false upstream")
    counts = (row.memory_context_original_token_count, row.memory_context_token_count)
    if None not in counts and row.memory_context_was_truncated is not None:
        if row.memory_context_was_truncated != (counts[0] > counts[1]):
            raise where.error("memory_context_was_truncated", f"{row.memory_context_was_truncated} but the "
                              f"token counts are {counts[0]} (original) and {counts[1]} (final)")


def read_per_question(path: str | os.PathLike[str]) -> Iterator[PerQuestionRow]:
    """Stream the rows of a per_question.jsonl; errors name file, line (and question id) and field.

    Blank lines are skipped; a repeated question_id is an error (upstream ids are unique).
    """
    seen: dict[str, int] = {}
    for line, raw in read_jsonl(path):
        row = PerQuestionRow.from_record(raw, file=str(path), line=line)
        if row.question_id in seen:
            raise InputError(str(path), f"line {line} ({row.question_id})", "question_id",
                             f"repeats the question of line {seen[row.question_id]}")
        seen[row.question_id] = line
        yield row


def write_per_question(path: str | os.PathLike[str], rows: Iterable[PerQuestionRow]) -> int:
    """Write rows atomically as upstream does (one ``json.dumps(..., ensure_ascii=True)`` per line)."""
    n = 0
    with atomic_open(path) as fh:
        for row in rows:
            fh.write(json.dumps(row.to_record(), ensure_ascii=True) + "\n")
            n += 1
    return n
