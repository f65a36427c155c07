"""What the model calls made inside a block of code cost and where their answers came from: :func:`tallying`.

A generic counter (it knows no benchmark): code that wants to know what one step of its own did — e.g. the
LongMemEval-V2 harness, for a memory system's build and each timed query — wraps it in ``with tallying() as
t:``; every model call made by this process inside the block adds to ``t`` (and to any enclosing tally):

* ``requests_sent``: requests answered by the network (:meth:`mnemetric.llm.budget.UsageStats.record_sent`);
* ``cache_served``: answers served without a request — a response-cache hit, a copy for an identical call
  of the same batch (:meth:`~mnemetric.llm.budget.UsageStats.record_hit`), a vector from the dense
  memory's embedding store (:class:`mnemetric.embeddings.EmbeddingCache`);
* ``work_responses``, ``prompt_tokens``, ``completion_tokens``, ``usd``, ``unpriced_responses``: the cost of
  the work (the same cold or warm: :class:`mnemetric.llm.budget.WorkUsage`), at the price table's live price.

The tally follows the context (:mod:`contextvars`): calls an in-process executor makes on the caller's behalf
(asyncio tasks included) count. Work another process (or thread) runs on the caller's behalf — a process pool's
or a Dask worker's task — is counted there and carried back: the worker runs the task through :func:`tallied`
(a fresh context, one tally open; it returns the result and the tally's record with it) and the caller hands
the record to :func:`merge` where it takes the result, so it counts in the tallies open there, as if the calls
had been made in the caller's process (:mod:`mnemetric.execute.pool`, :mod:`mnemetric.execute.dask`).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

R = TypeVar("R")

COUNTS = ("requests_sent", "cache_served", "work_responses", "prompt_tokens", "completion_tokens",
          "unpriced_responses")


@dataclass
class CallTally:
    requests_sent: int = 0
    cache_served: int = 0
    work_responses: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    unpriced_responses: int = 0
    usd: float = 0.0

    def add(self, other: CallTally) -> None:
        for name in (*COUNTS, "usd"):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def to_record(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_record(cls, raw: Any) -> CallTally:
        raw = raw if isinstance(raw, dict) else {}
        return cls(**{k: int(raw.get(k) or 0) for k in COUNTS}, usd=float(raw.get("usd") or 0.0))


_OPEN: contextvars.ContextVar[tuple[CallTally, ...]] = contextvars.ContextVar("mnemetric_call_tallies", default=())


@contextlib.contextmanager
def tallying() -> Iterator[CallTally]:
    """A fresh :class:`CallTally` that counts every model call of this context until the block ends."""
    tally = CallTally()
    token = _OPEN.set((*_OPEN.get(), tally))
    try:
        yield tally
    finally:
        _OPEN.reset(token)


def note(**counts: float) -> None:
    """Add ``counts`` (fields of :class:`CallTally`) to every open tally; nothing when none is open."""
    for tally in _OPEN.get():
        for name, value in counts.items():
            setattr(tally, name, getattr(tally, name) + value)


def tallied(fn: Callable[[], R]) -> tuple[R, dict[str, Any]]:
    """``fn()`` in a fresh context with one tally open: (its result, that tally's record). For a worker that
    runs work on another's behalf: no tally its process or thread may have inherited counts the calls, only
    the returned record, which the caller passes to :func:`merge` (module docstring)."""
    def run() -> tuple[R, dict[str, Any]]:
        with tallying() as tally:
            result = fn()
        return result, tally.to_record()

    return contextvars.Context().run(run)


def merge(record: Any) -> None:
    """Add a worker's tally record (:func:`tallied`) to every open tally here; nothing when none is open."""
    note(**CallTally.from_record(record).to_record())
