"""The usage sidecar (``data/runs/<stage>-usage.json``): the cost of a stage's work, typed once.

Written by every stage that may call a model (retrieve, answer, judge) from
:meth:`mnemetric.llm.budget.WorkUsage.to_dict`, read by whatever reports cost (the QA metrics'
``cost`` block). A Mnemetric format, generic (it knows no benchmark). Layout, keys in this order
(``json.dump(indent=2)``)::

    {"responses": int, "prompt_tokens": int, "completion_tokens": int, "usd": float,
     "unpriced_models": [str, ...],
     "per_model": {<requested model>: {"responses", "prompt_tokens", "completion_tokens", "usd",
                                       "resolved_models": [str, ...]}}}

When some responses came through a Batch API (:class:`mnemetric.execute.batch.BatchExecutor`, or a batch
output file imported into the cache), every block also has ``batch_responses`` (how many of its
``responses`` went by batch; right after ``responses``) and ``usd`` prices those at the batch price
(the price table's ``batch_discount``). A run with no batched response writes exactly the layout above.

The totals are the sums over ``per_model`` (responses and tokens exactly; dollars up to float
rounding, summed in sorted model order by the writer). Only what the inputs decide: no run counters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from mnemetric.errors import InputError
from mnemetric.io import write_json_atomic
from mnemetric.records import Fields, read_json_file, record_name

_COUNTS: Final = ("responses", "prompt_tokens", "completion_tokens")
"""The integer fields of a usage block, in file order (each a non-negative integer)."""
_FIX: Final = "regenerate it by rerunning the stage that wrote it"


@dataclass(frozen=True)
class ModelUsage:
    """The responses used of one requested model."""

    requested_model: str
    """The model named in the requests (the ``per_model`` key)."""
    responses: int
    prompt_tokens: int
    completion_tokens: int
    usd: float
    resolved_models: tuple[str, ...]
    """The model ids the endpoint answered with (sorted by the writer)."""
    batch_responses: int | None = None
    """How many of ``responses`` came through a Batch API (None: the file has no batch counts)."""

    @classmethod
    def from_record(cls, raw: Any, *, file: str, line: int | str, model: str) -> ModelUsage:
        f = Fields.of(raw, file=file, record=record_name(line), prefix=f"per_model.{model}.", fix=_FIX)
        batch = f.count("batch_responses") if isinstance(raw, dict) and "batch_responses" in raw else None
        return cls(model, *(f.count(k) for k in _COUNTS), f.amount("usd"), f.strings("resolved_models"), batch)

    def to_record(self) -> dict[str, Any]:
        return {"responses": self.responses, **_batch_count(self.batch_responses),
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens, "usd": self.usd,
                "resolved_models": list(self.resolved_models)}


def _batch_count(n: int | None) -> dict[str, int]:
    return {} if n is None else {"batch_responses": n}


@dataclass(frozen=True)
class UsageRecord:
    """One usage sidecar: totals, unpriced models and the per-model breakdown (in file order)."""

    responses: int
    prompt_tokens: int
    completion_tokens: int
    usd: float
    unpriced_models: tuple[str, ...]
    per_model: tuple[ModelUsage, ...]
    batch_responses: int | None = None
    """How many responses came through a Batch API (None: no batch counts in the file)."""

    @classmethod
    def from_record(cls, raw: Any, *, file: str, line: int | str = "<file>") -> UsageRecord:
        """Validate a sidecar; totals must equal the per-model sums (errors name file and field)."""
        f = Fields.of(raw, file=file, record=record_name(line), fix=_FIX)
        counts = [f.count(k) for k in _COUNTS]
        usd, unpriced = f.amount("usd"), f.strings("unpriced_models")
        per = f.at("per_model").raw
        models = tuple(ModelUsage.from_record(v, file=file, line=line, model=k) for k, v in per.items())
        batch = f.count("batch_responses") if "batch_responses" in raw else None
        for name, total in zip(_COUNTS, counts, strict=True):
            summed = sum(getattr(m, name) for m in models)
            if summed != total:
                raise f.error(name, f"total {total} is not the per-model sum {summed}")
        if batch is not None or any(m.batch_responses is not None for m in models):
            summed = sum(m.batch_responses or 0 for m in models)
            if batch != summed or any(m.batch_responses is None for m in models):
                raise f.error("batch_responses", f"total {batch} is not the per-model sum {summed} (every block "
                                                 "has batch_responses, or none)")
        if not math.isclose(usd, sum(m.usd for m in models), rel_tol=1e-9, abs_tol=1e-12):
            raise f.error("usd", f"total {usd} is not the per-model sum")
        return cls(*counts, usd, unpriced, models, batch)

    def to_record(self) -> dict[str, Any]:
        return {"responses": self.responses, **_batch_count(self.batch_responses), "prompt_tokens": self.prompt_tokens,
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
    raw = read_json_file(path, missing_fix="run the stage that writes it first", fix=_FIX)
    return UsageRecord.from_record(raw, file=str(path))


def sum_usage(records: list[UsageRecord]) -> UsageRecord:
    """The usage of disjoint parts of one run (the shards `mnemetric merge` joins) as one sidecar: counts and
    tokens summed per requested model, resolved and unpriced models united (sorted), dollars summed (equal to
    the unsharded run's up to float rounding); ``batch_responses`` kept when any part has it."""
    batched = any(r.batch_responses is not None for r in records)
    per: dict[str, dict[str, Any]] = {}
    for rec in records:
        for m in rec.per_model:
            b = per.setdefault(m.requested_model, {"n": 0, "batch": 0, "prompt": 0, "completion": 0, "usd": 0.0,
                                                   "resolved": set()})
            b["n"] += m.responses
            b["batch"] += m.batch_responses or 0
            b["prompt"] += m.prompt_tokens
            b["completion"] += m.completion_tokens
            b["usd"] += m.usd
            b["resolved"] |= set(m.resolved_models)
    models = tuple(ModelUsage(k, b["n"], b["prompt"], b["completion"], b["usd"], tuple(sorted(b["resolved"])),
                              b["batch"] if batched else None) for k, b in sorted(per.items()))
    usd = 0.0
    for m in models:
        usd += m.usd
    return UsageRecord(sum(m.responses for m in models), sum(m.prompt_tokens for m in models),
                       sum(m.completion_tokens for m in models), usd,
                       tuple(sorted({u for r in records for u in r.unpriced_models})), models,
                       sum(m.batch_responses or 0 for m in models) if batched else None)


def negated_usage(u: UsageRecord) -> UsageRecord:
    """``u`` with every count and amount negated: added to :func:`sum_usage`'s parts, it takes off work that
    several parts of a run each did alike (a setup, a shared memory's build) and the unsharded run did once."""
    from dataclasses import replace

    def neg(n: int | None) -> int | None:
        return None if n is None else -n

    return replace(u, responses=-u.responses, prompt_tokens=-u.prompt_tokens, completion_tokens=-u.completion_tokens,
                   usd=-u.usd, unpriced_models=(), batch_responses=neg(u.batch_responses),
                   per_model=tuple(replace(m, responses=-m.responses, prompt_tokens=-m.prompt_tokens,
                                           completion_tokens=-m.completion_tokens, usd=-m.usd,
                                           batch_responses=neg(m.batch_responses)) for m in u.per_model))


def part_usage(parts: Any, sidecar: Any) -> list[UsageRecord] | None:
    """The usage sidecars of the parts of a sharded run (``sidecar(part)``: its path), each validated, before
    anything is written: None when no part has one; a part without one, when others have, is an error naming it."""
    paths = [Path(sidecar(part)) for part in parts]
    present = [p.is_file() for p in paths]
    if not any(present):
        return None
    if not all(present):
        missing = paths[present.index(False)]
        raise InputError(str(missing), "<file>", "usage sidecar", "missing, while other parts have theirs",
                         fix="merge the parts with their usage sidecars (rerun the shard that lost it)")
    return [read_usage(p) for p in paths]
