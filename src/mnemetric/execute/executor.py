"""The Executor protocol, and building the run's executor from the ``executor`` conf group.

An executor takes :class:`~mnemetric.execute.calls.ModelCall` records and returns one
:class:`~mnemetric.execute.calls.CallOutcome` per call, in the calls' order (however it got them:
live, from a ledger, from a batch file, in any order). It owns the run's ONE budget and ONE usage
ledger (``usage``, a :class:`mnemetric.llm.budget.UsageStats`; ``usage.work`` is the cost of the work
that tracked files record). Components never see a client: they build calls and read outcomes.

The one convention for model access: a component's method that calls models takes the run's executor
as its ``executor`` argument (a reader's ``answer``/``plan``, a judge's ``judge``/``plan``, an embedding
backend's ``embed``); a memory system, whose protocol methods the harness fixes, is handed it once by its
``use_executor`` hook (the CallsModels capability, :mod:`.access`) before its first question.

conf/executor/<option>.yaml names the class by ``_target_`` with ``_partial_: true``; the run's
``llm:`` settings complete it (:func:`build_executor`). Options: ``immediate``
(:class:`~mnemetric.execute.immediate.ImmediateExecutor`), ``dask``
(:class:`~mnemetric.execute.dask.DaskExecutor`: the per-question work on Dask distributed). A Batch-API
executor is one more option of this group: nothing that builds calls changes. Every option takes the run
settings ``workers``, ``grace_seconds``, ``shard`` and ``address`` (typed: ``schema.ExecutorSection``);
an executor with a ``map(task, items)`` method runs per-question work on its pool
(:mod:`mnemetric.execute.pool`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from mnemetric.errors import ConfigError
from mnemetric.execute.calls import CallOutcome, ModelCall
from mnemetric.llm.budget import UsageStats

DEFAULT = {"_target_": "mnemetric.execute.immediate.ImmediateExecutor", "_partial_": True, "name": "immediate"}
"""The ``executor`` section when params have none (conf/executor/immediate.yaml)."""


@runtime_checkable
class Executor(Protocol):
    """Runs model calls (module docstring)."""

    name: str
    usage: UsageStats

    def run(self, calls: Sequence[ModelCall], *, desc: str = "llm", progress: bool | None = None) -> list[CallOutcome]:
        """One outcome per call, in the calls' order. A failure the calls do not tolerate (no API key,
        the budget, a server that keeps failing) is raised after the calls in flight have finished.
        ``progress`` None: the executor's own setting (a component that calls per question passes False)."""
        ...

    def plan(self, calls: Sequence[ModelCall]) -> dict[str, Any]:
        """Dry run: ``{requests_total, cached, to_send, estimated_usd}``; sends nothing, needs no key."""
        ...

    def close(self) -> None: ...


def build_executor(section: Mapping[str, Any] | None, llm: Mapping[str, Any] | None, *,
                   where: str = "executor", **extra: Any) -> Executor:
    """The run's executor: the ``executor`` option (default :data:`DEFAULT`) completed with the ``llm:``
    settings (concurrency, timeouts, retries, budget, prices) and ``extra`` (e.g. ``progress=False``)."""
    from mnemetric.config import build

    cfg = dict(section) if section else dict(DEFAULT)
    made = build(cfg, where)
    try:
        executor = made(llm=dict(llm or {}), **extra) if cfg.get("_partial_") else made
    except TypeError as exc:  # a setting this option does not take (e.g. --workers for executor=batch)
        raise ConfigError(where, f"{cfg.get('_target_')} cannot be built with these settings: {exc}",
                          fix="drop the setting, or choose an executor that has it (immediate, dask: workers, "
                              "grace_seconds, shard)") from None
    missing = [a for a in ("name", "usage", "run", "plan", "close") if not hasattr(executor, a)]
    if missing:
        raise ConfigError(f"{where}._target_", f"{type(executor).__name__} is not an executor (no {', '.join(missing)})",
                          fix="build an object with the methods of mnemetric.execute.Executor")
    return executor
