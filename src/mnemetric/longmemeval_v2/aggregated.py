"""``aggregated_metrics.json``, typed: one record for upstream's per-domain layout, reader beside writer
(and :class:`CombinedMetrics`, the web + enterprise combination's layout, beside it).

The layout is what the LongMemEval-V2 harness (``evaluation/harness.py`` at be15ea6) writes and what
:func:`mnemetric.longmemeval_v2.aggregate.aggregate` computes, in this key order: overall,
non_abstention_by_category, abstention_by_category, combined_abstention_by_category, abstention_overall,
tokens, memory_context, memory_query, memory_post_query, completed_at_utc (only when there is one),
shared_haystack, shared_haystack_ids (only when shared), mnemetric (Mnemetric's failed-rows block, only when
a row failed). :meth:`AggregatedMetrics.to_record` gives back exactly the values read (an integer stays an
integer), so read → write is byte for byte.

The reader is strict (a Mnemetric rule): every section and field the harness writes must be there with its
type (scores and fractions a number or null, counts non-negative integers, count_all_questions positive),
and no other key; errors name the file, the section (record) and the field. The combination
(:mod:`.combine`) keeps upstream's own leniency for dicts passed to it directly.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mnemetric.errors import InputError
from mnemetric.records import Fields, read_json_file

FIX = "recompute it from its per_question.jsonl (mnemetric v2 aggregate)"
OVERALL_SCORES = ("overall_full_set", "overall_non_abstention_only", "overall_abstention_only")
OVERALL_COUNTS = ("count_all_questions", "count_non_abstention", "count_abstention")
BREAKDOWN_VALUES = ("pct_correct", "pct_answered_wrong", "pct_unknown")
TOKEN_TOTALS = ("prompt_tokens", "completion_tokens", "total_tokens")
TOKEN_AVERAGES = ("avg_prompt_tokens", "avg_completion_tokens", "avg_total_tokens")
TIMING = ("avg_seconds", "p50_seconds", "p95_seconds", "max_seconds", "total_seconds")
SECTIONS = ("non_abstention_by_category", "abstention_by_category", "combined_abstention_by_category")
KEYS = ("overall", *SECTIONS, "abstention_overall", "tokens", "memory_context", "memory_query",
        "memory_post_query", "completed_at_utc", "shared_haystack", "shared_haystack_ids", "mnemetric")
FAILED_KEYS = ("failed_count", "failed_question_ids", "failed_reasons", "rows_in_file", "upstream_equivalent")

Number = int | float


def _section(raw: Any, *, file: str, name: str, keys: tuple[str, ...]) -> Fields:
    """The view of one section (record = its name), holding exactly ``keys``."""
    view = Fields.of(raw, file=file, record=name, field="<section>", fix=FIX).only(keys)
    for key in keys:
        if key not in view.raw:
            raise view.error(key, "missing")
    return view


@dataclass(frozen=True)
class Breakdown:
    """{count, pct_correct, pct_answered_wrong, pct_unknown} (fractions; null when count is 0)."""

    count: int
    pct_correct: Number | None
    pct_answered_wrong: Number | None
    pct_unknown: Number | None

    def to_record(self) -> dict[str, Any]:
        return {"count": self.count, "pct_correct": self.pct_correct, "pct_answered_wrong": self.pct_answered_wrong,
                "pct_unknown": self.pct_unknown}

    @classmethod
    def from_record(cls, raw: Any, *, file: str, name: str) -> Breakdown:
        f = _section(raw, file=file, name=name, keys=("count", *BREAKDOWN_VALUES))
        return cls(f.count("count"), *(f.optional_number(k) for k in BREAKDOWN_VALUES))


@dataclass(frozen=True)
class Overall:
    overall_full_set: Number | None
    overall_non_abstention_only: Number | None
    overall_abstention_only: Number | None
    count_all_questions: int
    count_non_abstention: int
    count_abstention: int

    def to_record(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in (*OVERALL_SCORES, *OVERALL_COUNTS)}

    @classmethod
    def from_record(cls, raw: Any, *, file: str) -> Overall:
        f = _section(raw, file=file, name="overall", keys=(*OVERALL_SCORES, *OVERALL_COUNTS))
        out = cls(*(f.optional_number(k) for k in OVERALL_SCORES), *(f.count(k) for k in OVERALL_COUNTS))
        if out.count_all_questions == 0:
            raise f.error("count_all_questions", "must be a positive integer")
        return out


@dataclass(frozen=True)
class Tokens:
    prompt_tokens: Number
    completion_tokens: Number
    total_tokens: Number
    avg_prompt_tokens: Number
    avg_completion_tokens: Number
    avg_total_tokens: Number

    def to_record(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in (*TOKEN_TOTALS, *TOKEN_AVERAGES)}

    @classmethod
    def from_record(cls, raw: Any, *, file: str) -> Tokens:
        f = _section(raw, file=file, name="tokens", keys=(*TOKEN_TOTALS, *TOKEN_AVERAGES))
        return cls(*(f.amount(k) for k in (*TOKEN_TOTALS, *TOKEN_AVERAGES)))


@dataclass(frozen=True)
class MemoryContext:
    avg_original_tokens: Number
    avg_final_tokens: Number
    num_truncated_sequences: int

    def to_record(self) -> dict[str, Any]:
        return {"avg_original_tokens": self.avg_original_tokens, "avg_final_tokens": self.avg_final_tokens,
                "num_truncated_sequences": self.num_truncated_sequences}

    @classmethod
    def from_record(cls, raw: Any, *, file: str) -> MemoryContext:
        f = _section(raw, file=file, name="memory_context",
                     keys=("avg_original_tokens", "avg_final_tokens", "num_truncated_sequences"))
        return cls(f.amount("avg_original_tokens"), f.amount("avg_final_tokens"), f.count("num_truncated_sequences"))


@dataclass(frozen=True)
class Timing:
    """memory_query / memory_post_query: {avg, p50, p95, max, total}_seconds."""

    avg_seconds: Number
    p50_seconds: Number
    p95_seconds: Number
    max_seconds: Number
    total_seconds: Number

    def to_record(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in TIMING}

    @classmethod
    def from_record(cls, raw: Any, *, file: str, name: str) -> Timing:
        f = _section(raw, file=file, name=name, keys=TIMING)
        return cls(*(f.amount(k) for k in TIMING))


@dataclass(frozen=True)
class FailedRows:
    """The ``mnemetric`` block: rows left out of the upstream numbers (:mod:`.aggregate`)."""

    failed_count: int
    failed_question_ids: tuple[str, ...]
    failed_reasons: Mapping[str, str]
    rows_in_file: int
    upstream_equivalent: bool

    def to_record(self) -> dict[str, Any]:
        return {"failed_count": self.failed_count, "failed_question_ids": list(self.failed_question_ids),
                "failed_reasons": dict(self.failed_reasons), "rows_in_file": self.rows_in_file,
                "upstream_equivalent": self.upstream_equivalent}

    @classmethod
    def from_record(cls, raw: Any, *, file: str) -> FailedRows:
        f = _section(raw, file=file, name="mnemetric", keys=FAILED_KEYS)
        reasons = f.at("failed_reasons")
        return cls(f.count("failed_count"), f.strings("failed_question_ids"),
                   {k: reasons.string(k) for k in reasons.raw}, f.count("rows_in_file"),
                   f.boolean("upstream_equivalent"))


def _breakdowns(raw: Any, *, file: str, name: str) -> dict[str, Breakdown]:
    f = Fields.of(raw, file=file, record=name, field="<section>", fix=FIX)
    return {k: Breakdown.from_record(v, file=file, name=f"{name}.{k}") for k, v in f.raw.items()}


@dataclass(frozen=True)
class AggregatedMetrics:
    """One domain's aggregated_metrics.json (module docstring)."""

    overall: Overall
    non_abstention_by_category: Mapping[str, Breakdown]
    abstention_by_category: Mapping[str, Breakdown]
    combined_abstention_by_category: Mapping[str, Breakdown]
    abstention_overall: Breakdown
    tokens: Tokens
    memory_context: MemoryContext
    memory_query: Timing
    memory_post_query: Timing
    shared_haystack: bool
    shared_haystack_ids: tuple[str, ...] | None = None
    """The ids every row shares (present exactly when ``shared_haystack``)."""
    completed_at_utc: str | None = None
    failed: FailedRows | None = None

    def to_record(self) -> dict[str, Any]:
        """The JSON object in upstream's key order (module docstring)."""
        out: dict[str, Any] = {"overall": self.overall.to_record()}
        for name in SECTIONS:
            out[name] = {k: b.to_record() for k, b in getattr(self, name).items()}
        out |= {"abstention_overall": self.abstention_overall.to_record(), "tokens": self.tokens.to_record(),
                "memory_context": self.memory_context.to_record(), "memory_query": self.memory_query.to_record(),
                "memory_post_query": self.memory_post_query.to_record()}
        if self.completed_at_utc is not None:
            out["completed_at_utc"] = self.completed_at_utc
        out["shared_haystack"] = self.shared_haystack
        if self.shared_haystack_ids is not None:
            out["shared_haystack_ids"] = list(self.shared_haystack_ids)
        if self.failed is not None:
            out["mnemetric"] = self.failed.to_record()
        return out

    @classmethod
    def from_record(cls, raw: Any, *, file: str) -> AggregatedMetrics:
        file = str(file)
        f = Fields.of(raw, file=file, record="<file>", field="<json>", fix=FIX).only(KEYS)
        if "overall" not in f.raw:
            raise f.error("overall", "missing")
        overall = Overall.from_record(f.raw["overall"], file=file)
        for key in ( *SECTIONS, "abstention_overall", "tokens", "memory_context", "memory_query",
                    "memory_post_query", "shared_haystack"):
            if key not in f.raw:
                raise f.error(key, "missing")
        shared = f.boolean("shared_haystack")
        ids = f.maybe_strings("shared_haystack_ids") if "shared_haystack_ids" in f.raw else None
        if shared != (ids is not None):
            raise f.error("shared_haystack_ids", "present exactly when shared_haystack is true"
                          f" (shared_haystack is {str(shared).lower()})")
        completed = f.string("completed_at_utc") if "completed_at_utc" in f.raw else None
        return cls(
            overall=overall,
            **{name: _breakdowns(f.raw[name], file=file, name=name) for name in SECTIONS},
            abstention_overall=Breakdown.from_record(f.raw["abstention_overall"], file=file,
                                                     name="abstention_overall"),
            tokens=Tokens.from_record(f.raw["tokens"], file=file),
            memory_context=MemoryContext.from_record(f.raw["memory_context"], file=file),
            memory_query=Timing.from_record(f.raw["memory_query"], file=file, name="memory_query"),
            memory_post_query=Timing.from_record(f.raw["memory_post_query"], file=file, name="memory_post_query"),
            shared_haystack=shared, shared_haystack_ids=ids, completed_at_utc=completed,
            failed=FailedRows.from_record(f.raw["mnemetric"], file=file) if "mnemetric" in f.raw else None)


COMBINED_KEYS = ("overall", "abstention_overall", "tokens", "memory_context", "memory_query", "memory_post_query",
                 "combined_from", "combined_at_utc", *SECTIONS)
COMBINED_TIMING = ("avg_seconds", "max_seconds", "total_seconds")
MEMORY_CONTEXT = ("avg_original_tokens", "avg_final_tokens", "num_truncated_sequences")


@dataclass(frozen=True)
class CombinedMetrics:
    """combined_aggregated_metrics.json: web + enterprise as leaderboard/combine_aggregated_metrics.py writes
    them (:mod:`.combine`), in its key order: overall, abstention_overall, tokens (the six keys), memory_context,
    memory_query and memory_post_query ({avg, max, total}_seconds: no percentiles), combined_from (the two
    paths), combined_at_utc (only when given), the three by-category sections. Any average may be null (no side
    had one); values are kept as computed (an integral token total is an integer)."""

    overall: Overall
    abstention_overall: Breakdown
    tokens: Mapping[str, Number | None]
    memory_context: Mapping[str, Number | None]
    memory_query: Mapping[str, Number | None]
    memory_post_query: Mapping[str, Number | None]
    combined_from: tuple[str, str]
    non_abstention_by_category: Mapping[str, Breakdown]
    abstention_by_category: Mapping[str, Breakdown]
    combined_abstention_by_category: Mapping[str, Breakdown]
    combined_at_utc: str | None = None

    def to_record(self) -> dict[str, Any]:
        out: dict[str, Any] = {"overall": self.overall.to_record(),
                               "abstention_overall": self.abstention_overall.to_record()}
        for name in ("tokens", "memory_context", "memory_query", "memory_post_query"):
            out[name] = dict(getattr(self, name))
        out["combined_from"] = list(self.combined_from)
        if self.combined_at_utc is not None:
            out["combined_at_utc"] = self.combined_at_utc
        for name in SECTIONS:
            out[name] = {k: b.to_record() for k, b in getattr(self, name).items()}
        return out

    @classmethod
    def from_record(cls, raw: Any, *, file: str) -> CombinedMetrics:
        file = str(file)
        f = Fields.of(raw, file=file, record="<file>", field="<json>", fix=FIX).only(COMBINED_KEYS)
        for key in COMBINED_KEYS:
            if key not in f.raw and key != "combined_at_utc":
                raise f.error(key, "missing")

        def numbers(name: str, keys: tuple[str, ...], counts: tuple[str, ...] = ()) -> dict[str, Number | None]:
            view = _section(f.raw[name], file=file, name=name, keys=keys)
            return {k: view.count(k) if k in counts else view.optional_number(k) for k in keys}

        sources = f.strings("combined_from")
        if len(sources) != 2:
            raise f.error("combined_from", f"expected the two paths combined, got {len(sources)}")
        return cls(
            overall=Overall.from_record(f.raw["overall"], file=file),
            abstention_overall=Breakdown.from_record(f.raw["abstention_overall"], file=file,
                                                     name="abstention_overall"),
            tokens=numbers("tokens", (*TOKEN_TOTALS, *TOKEN_AVERAGES)),
            memory_context=numbers("memory_context", MEMORY_CONTEXT, counts=("num_truncated_sequences",)),
            memory_query=numbers("memory_query", COMBINED_TIMING),
            memory_post_query=numbers("memory_post_query", COMBINED_TIMING),
            combined_from=(sources[0], sources[1]),
            **{name: _breakdowns(f.raw[name], file=file, name=name) for name in SECTIONS},
            combined_at_utc=f.string("combined_at_utc") if "combined_at_utc" in f.raw else None)


def write_combined(path: str | os.PathLike[str], metrics: CombinedMetrics) -> None:
    """Write ``metrics`` atomically in upstream's JSON text (as :func:`write_aggregated`)."""
    from mnemetric.longmemeval_v2.aggregate import write_upstream_json

    if not isinstance(metrics, CombinedMetrics):
        raise InputError(str(path), "<file>", "<json>", f"not a CombinedMetrics record: {type(metrics).__name__}")
    write_upstream_json(path, metrics.to_record())


def read_combined(path: str | os.PathLike[str]) -> CombinedMetrics:
    """A combined_aggregated_metrics.json read back (the reader beside :func:`write_combined`)."""
    raw = read_json_file(path, missing_fix="combine the two domains first (mnemetric v2 combine)")
    return CombinedMetrics.from_record(raw, file=str(path))


def read_aggregated(path: str | os.PathLike[str]) -> AggregatedMetrics:
    """An aggregated_metrics.json read back (the reader beside :func:`write_aggregated`); a missing file, bad
    JSON or any field off the layout is an InputError naming the file, section and field."""
    raw = read_json_file(path, missing_fix="aggregate a per_question.jsonl first (mnemetric v2 aggregate)")
    return AggregatedMetrics.from_record(raw, file=str(path))


def write_aggregated(path: str | os.PathLike[str], metrics: AggregatedMetrics) -> None:
    """Write ``metrics`` atomically as upstream's save_json does (indent 2, ensure_ascii, trailing newline)."""
    from mnemetric.longmemeval_v2.aggregate import write_upstream_json

    if not isinstance(metrics, AggregatedMetrics):
        raise InputError(str(path), "<file>", "<json>", f"not an AggregatedMetrics record: {type(metrics).__name__}")
    write_upstream_json(path, metrics.to_record())
