"""DaskExecutor: per-question work on a Dask distributed cluster (``-S executor=dask``; the ``dask`` extra).

``executor.address`` null starts a ``LocalCluster`` here (``workers`` processes — one per usable core when
null — one thread each) for the run and closes it at the end; an address (``tcp://host:8786``) joins that
scheduler, whose workers must have Mnemetric and the run's plug-ins installed. :meth:`map` sends the task
to every worker once (``scatter``, broadcast) and submits one future per :data:`CHUNK` questions, at most a
bounded window of them in flight, yielding the results in question order: the bytes of the immediate executor.
Its map is remote (:attr:`~mnemetric.execute.pool.PoolMapper.maps_remotely`): a caller's per-question work
that runs here unless asked (opt-in parallelism) runs on the cluster with ``workers`` null or an address too.
The model calls a task makes on a worker are tallied there and the tally comes back with the chunk's results
(:func:`mnemetric.llm.tally.tallied`, merged here as they are taken).

Model calls (:meth:`run`) are the immediate executor's, from this process: one budget, one usage ledger,
the response cache on this machine (an SQLite file must not be shared over a network filesystem, so the
workers do not open it). The shard, workers and grace settings are those of every executor.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from mnemetric.errors import ConfigError, DeferredInterrupts, deferred_interrupts
from mnemetric.execute.immediate import ImmediateExecutor
from mnemetric.execute.pool import chunks, run_chunk, settle_heap, taken, usable_cores

T = TypeVar("T")
R = TypeVar("R")


CHUNK = 8
"""Questions per Dask task: a task's round trip (client → scheduler → worker → client) costs milliseconds, so
each carries a few questions."""


LOCAL_CLUSTER_CONFIG = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.worker.memory.monitor-interval": "1s",
    "distributed.admin.system-monitor.interval": "5s",
}
"""Dask settings of a LocalCluster this executor starts (not of a scheduler it joins, whose workers are the
user's). Each is a periodic callback that takes the GIL from the question's work: the statistical profiler samples
the task thread's stack every 10 ms (for a dashboard the LocalCluster does not start), the event loop's tick is
measured every 20 ms, memory every 100 ms, the system monitor every 500 ms. Measured on 200 M-shaped questions
(tests/bench/workers.py, paired, 2 cores): the workers' CPU 10.7–13.5 s with Dask's defaults, 8.1–10.9 s with
these, against the pool's 7.2–9.1 s."""


def _settled(key: Any, caller: int, dask_worker: Any = None) -> bool:
    """On a worker: the task ``key`` deserialized (it is held as data), then the heap settled
    (:func:`mnemetric.execute.pool.settle_heap`) — unless the worker is a thread of the ``caller``'s process (a
    cluster of ``processes=False``), whose heap is the caller's to keep."""
    if dask_worker is not None and key in dask_worker.data:
        dask_worker.data[key]  # a spilled or lazily held task is loaded before the freeze
    if os.getpid() != caller:
        settle_heap()
    return True


class DaskExecutor(ImmediateExecutor):
    """The immediate executor whose per-question work runs on Dask (module docstring)."""

    accepts_address = True
    maps_remotely = True

    def __init__(self, llm=None, *, name: str = "dask", processes: bool = True, **kwargs: Any):
        super().__init__(llm, name=name, **kwargs)
        self.processes = processes
        self._client: Any = None
        self._cluster: Any = None

    def __repr__(self) -> str:
        return f"DaskExecutor(address={self.address!r}, workers={self.workers})"

    @property
    def dask_client(self) -> Any:
        """The distributed Client (started on first use)."""
        if self._client is None:
            try:
                from distributed import Client, LocalCluster
            except ImportError:
                raise ConfigError("executor", "executor=dask needs Dask distributed, which is not installed",
                                  fix="pip install 'mnemetric[dask]' (or use -S executor=immediate)") from None
            import dask

            if self.address:
                wait = dask.config.get("distributed.comm.timeouts.connect")  # Dask's own setting, 30 s by default
                try:
                    self._client = Client(self.address, timeout=wait)
                except (OSError, TimeoutError) as exc:
                    raise ConfigError("executor.address", f"cannot reach the Dask scheduler {self.address!r} "
                                      f"(waited {wait}): {exc}",
                                      fix="start the scheduler, or set executor.address: null for a LocalCluster "
                                      "(the wait is Dask's distributed.comm.timeouts.connect, e.g. "
                                      "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT=60s)") from None
            else:
                os.environ.setdefault("DASK_DISTRIBUTED__WORKER__DAEMON", "False")
                with dask.config.set(LOCAL_CLUSTER_CONFIG):  # the nannies hand it to the workers they start
                    self._cluster = LocalCluster(n_workers=self.pool_size, threads_per_worker=1,
                                                 processes=self.processes, dashboard_address=None, silence_logs=40)
                self._client = Client(self._cluster)
        return self._client

    def map(self, task: Callable[[T], R], items: Iterable[T], *, desc: str = "questions") -> Iterator[R]:
        """``task(item)`` per item on the cluster, in order (module docstring). Every call into Dask runs with
        the signals held (:func:`mnemetric.errors.deferred_interrupts`: one raised inside Dask could be dropped),
        raised between two of them; the results are yielded with the signals as they were."""
        with deferred_interrupts():
            client = self.dask_client
            [shared] = client.scatter([task], broadcast=True, hash=False)
            client.run(_settled, shared.key, os.getpid())  # the workers hold the task: out of the collector's sight
            direct = True if self._cluster is not None else None  # our LocalCluster's workers are reachable here
            window = 4 * max(1, len(client.scheduler_info().get("workers", {})) or usable_cores())
        pending: deque = deque()
        try:
            for chunk in chunks(items, CHUNK):
                with deferred_interrupts() as stop:
                    [data] = client.scatter([chunk], direct=direct, hash=False)
                    pending.append(client.submit(run_chunk, shared, data, pure=False))
                    del data
                    results = taken(_finished(pending.popleft(), stop)) if len(pending) >= window else []
                yield from results
            while pending:
                with deferred_interrupts() as stop:
                    results = taken(_finished(pending.popleft(), stop))
                yield from results
        finally:
            with deferred_interrupts():
                for fut in pending:
                    fut.cancel()
                pending.clear()
                del shared

    def close(self) -> None:
        """Close the client and a LocalCluster this executor started, then the immediate executor's resources; a
        signal meanwhile is raised once they are closed."""
        with deferred_interrupts():
            if self._client is not None:
                self._client.close()
                self._client = None
            if self._cluster is not None:
                self._cluster.close()
                self._cluster = None
            super().close()


POLL_SECONDS = 0.1
"""How often a wait for a Dask future looks for a signal recorded meanwhile."""


def _finished(future: Any, stop: DeferredInterrupts) -> Any:
    """``future`` once it is done (its result then taken without waiting); a signal recorded meanwhile is raised
    within :data:`POLL_SECONDS`."""
    done = threading.Event()
    future.add_done_callback(lambda _: done.set())
    while not done.wait(POLL_SECONDS):
        stop.check()
    stop.check()
    return future
