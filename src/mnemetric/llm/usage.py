"""The usage sidecar (``data/runs/<stage>-usage.json``): the cost of a stage's work, typed once.

Written by every stage that may call a model (retrieve, answer, judge) from
:meth:`mnemetric.llm.budget.WorkUsage.to_dict`, read by whatever reports cost (the QA metrics'
``cost`` block). A Mnemetric format, generic (it knows no benchmark). Layout, keys in this order
(``json.dump(indent=2)``)::

    {"responses": int, "prompt_tokens": int, "completion_tokens": int, "usd": float,
     "unpriced_models": [str, ...],
     "per_model": {<requested model>: {"responses", "prompt_tokens", "completion_tokens", "usd",
                                       "resolved_models": [str, ...]}}}

The totals are the sums over ``per_model`` (responses and tokens exactly; dollars up to float
rounding, summed in sorted model order by the writer). Only what the inputs decide: no run counters.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mnemetric.errors import InputError
from mnemetric.io import require_file, write_json_atomic

_COUNTS = ("responses", "prompt_tokens", "completion_tokens")
_FIX = "regenerate it by rerunning the stage that wrote it"


def _count(raw: Mapping[str, Any], name: str, file: str, where: str, prefix: str) -> int:
    value = raw.get(name)
    if name not in raw:
        raise InputError(file, where, prefix + name, "missing", fix=_FIX)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InputError(file, where, prefix + name, f"expected a non-negative integer, got {value!r:.60}", fix=_FIX)
    return value


def _usd(raw: Mapping[str, Any], file: str, where: str, prefix: str) -> float:
    value = raw.get("usd")
    if "usd" not in raw:
        raise InputError(file, where, prefix + "usd", "missing", fix=_FIX)
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value < 0:
        raise InputError(file, where, prefix + "usd", f"expected a non-negative number, got {value!r:.60}", fix=_FIX)
    return value


def _names(raw: Mapping[str, Any], name: str, file: str, where: str, prefix: str) -> tuple[str, ...]:
    value = raw.get(name)
    if name not in raw:
        raise InputError(file, where, prefix + name, "missing", fix=_FIX)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(file, where, prefix + name, f"expected a list of strings, got {value!r:.60}", fix=_FIX)
    return tuple(value)


def _object(raw: Any, file: str, where: str, field: str) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise InputError(file, where, field, f"expected a JSON object, got {type(raw).__name__}", fix=_FIX)
    return raw


@dataclass(frozen=True)
class ModelUsage:
    """The responses used of one requested model."""

    requested_model: str
    responses: int
    prompt_tokens: int
    completion_tokens: int
    usd: float
    resolved_models: tuple[str, ...]
    """The model ids the endpoint answered with (sorted by the writer)."""

    @classmethod
    def from_record(cls, raw: Any, *, file: str, line: int | str, model: str) -> ModelUsage:
        where, prefix = (f"line {line}" if isinstance(line, int) else line), f"per_model.{model}."
        raw = _object(raw, file, where, prefix.rstrip("."))
        counts = [_count(raw, k, file, where, prefix) for k in _COUNTS]
        return cls(model, *counts, _usd(raw, file, where, prefix), _names(raw, "resolved_models", file, where, prefix))

    def to_record(self) -> dict[str, Any]:
        return {"responses": self.responses, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "usd": self.usd,
                "resolved_models": list(self.resolved_models)}


@dataclass(frozen=True)
class UsageRecord:
    """One usage sidecar: totals, unpriced models and the per-model breakdown (in file order)."""

    responses: int
    prompt_tokens: int
    completion_tokens: int
    usd: float
    unpriced_models: tuple[str, ...]
    per_model: tuple[ModelUsage, ...]

    @classmethod
    def from_record(cls, raw: Any, *, file: str, line: int | str = "<file>") -> UsageRecord:
        """Validate a sidecar; totals must equal the per-model sums (errors name file and field)."""
        where = f"line {line}" if isinstance(line, int) else line
        raw = _object(raw, file, where, "<record>")
        counts = [_count(raw, k, file, where, "") for k in _COUNTS]
        usd = _usd(raw, file, where, "")
        unpriced = _names(raw, "unpriced_models", file, where, "")
        per = _object(raw.get("per_model"), file, where, "per_model") if "per_model" in raw else None
        if per is None:
            raise InputError(file, where, "per_model", "missing", fix=_FIX)
        models = tuple(ModelUsage.from_record(v, file=file, line=line, model=k) for k, v in per.items())
        for name, total in zip(_COUNTS, counts, strict=True):
            summed = sum(getattr(m, name) for m in models)
            if summed != total:
                raise InputError(file, where, name, f"total {total} is not the per-model sum {summed}", fix=_FIX)
        if not math.isclose(usd, sum(m.usd for m in models), rel_tol=1e-9, abs_tol=1e-12):
            raise InputError(file, where, "usd", f"total {usd} is not the per-model sum", fix=_FIX)
        return cls(*counts, usd, unpriced, models)

    def to_record(self) -> dict[str, Any]:
        return {"responses": self.responses, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "usd": self.usd,
                "unpriced_models": list(self.unpriced_models),
                "per_model": {m.requested_model: m.to_record() for m in self.per_model}}

    @classmethod
    def from_work(cls, work: Any) -> UsageRecord:
        """The record of a :class:`~mnemetric.llm.budget.WorkUsage` (its ``to_dict``, validated)."""
        return cls.from_record(work.to_dict(), file="<work usage>", line="<in memory>")


def write_usage(path: str | Path, work: Any) -> UsageRecord:
    """Write the sidecar of a WorkUsage (or a UsageRecord) atomically; returns what was written."""
    record = work if isinstance(work, UsageRecord) else UsageRecord.from_work(work)
    write_json_atomic(path, record.to_record())
    return record


def read_usage(path: str | Path) -> UsageRecord:
    """Read and validate a usage sidecar."""
    text = require_file(path, fix="run the stage that writes it first").read_text(encoding="utf-8")
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(str(path), f"line {exc.lineno}", "<json>", f"not valid JSON ({exc.msg})", fix=_FIX) from None
    return UsageRecord.from_record(raw, file=str(path))
