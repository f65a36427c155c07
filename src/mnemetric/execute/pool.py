"""Per-question work on a bounded pool of worker processes, results in input order (generic).

A door hands an executor a *task* (a picklable callable, one call per question: e.g. a memory system's
reset + ingest + retrieve for one adapted record) and the questions; :meth:`PoolMapper.map` yields the
task's results in the questions' order, whatever order the workers finish in, so the output bytes are
those of one worker. ``workers`` (the ``executor.workers`` param; None = one per usable core) processes
run the task, :data:`CHUNK` questions per round trip; at most ``2 × workers`` chunks are in flight, so a large
input is streamed, never held whole. With one worker, or one question, the task runs here, in this process.

Worker processes are forked (where the platform can: the task and everything it holds are inherited,
not pickled) and ignore SIGINT; on an interrupt or an error the pool is shut down and its processes
ended, and the error is raised here. A :class:`~mnemetric.errors.MnemetricError` raised in a worker comes
back as one (its message and exit status kept).

Model calls are not spread over processes: the run's one executor (one budget, one usage ledger) sends
them from this process, ``llm.max_concurrency`` at once; a task that calls models runs here. A task that
makes model calls of its own in a worker (through an executor it builds there, e.g. a memory system's
embedding backend) has them counted there (:func:`mnemetric.llm.tally.tallied`) and the count comes back
with its result: it is added to the tallies open here when the result is taken
(:func:`mnemetric.llm.tally.merge`), so a tally counts the same with one worker or many.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

from mnemetric.errors import ConfigError, MnemetricError
from mnemetric.llm.tally import merge, tallied

T = TypeVar("T")
R = TypeVar("R")


def usable_cores() -> int:
    """The CPUs this process may run on (the default of ``executor.workers``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


class WorkerError(MnemetricError):
    """A user-facing error raised by a task in a worker, carried back by message and exit status."""

    def __init__(self, message: str, exit_code: int = 2):
        self.exit_code = exit_code
        super().__init__(message)

    def __reduce__(self):
        return (type(self), (str(self), self.exit_code))


_TASK: Callable[[Any], Any] | None = None


def settle_heap() -> None:
    """On a worker, before its first task: move every object it holds now (the modules, the task) out of the
    garbage collector's sight (:func:`gc.freeze`). A question's work allocates many short-lived containers (bm25
    over a haystack: lists of tokens per document), each full collection would otherwise walk the whole inherited
    heap again — measured on a Dask worker, whose heap holds the distributed runtime, 10–15 % of a run's time.
    Garbage is collected first, so nothing unreachable (an earlier map's task, on a long-lived Dask worker) is kept
    for good by the freeze."""
    gc.collect()
    gc.freeze()


def _init_worker(task: Callable[[Any], Any]) -> None:
    global _TASK
    _TASK = task
    settle_heap()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and ends the pool
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


CHUNK = 4
"""Items per task sent to a worker: one round trip (pickle, pipe, unpickle, result back) costs about as much as a
cheap question's work (bm25 over an S haystack: ~5 ms), so each carries a few."""


def run_chunk(task: Callable[[Any], Any], items: list[Any]) -> tuple[list[Any], dict[str, Any]]:
    """On a worker (of this pool or of a Dask cluster): (``task``'s results for ``items``, the tally of the model
    calls they made there) (module docstring); a user-facing error comes back as a :class:`WorkerError`."""
    try:
        return tallied(lambda: [task(item) for item in items])
    except MnemetricError as exc:
        raise WorkerError(str(exc), exc.exit_code) from None


def _call(items: list[Any]) -> tuple[list[Any], dict[str, Any]]:
    return run_chunk(_TASK, items)  # type: ignore[arg-type]


def taken(future: Any) -> list[Any]:
    """A worker's results (a future of :func:`run_chunk`), their tally added to the tallies open here."""
    results, counts = future.result()
    merge(counts)
    return results


def chunks(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """``items`` in lists of ``size`` (the last one shorter)."""
    chunk: list[T] = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _context() -> Any:
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def map_ordered(task: Callable[[T], R], items: Iterable[T], workers: int) -> Iterator[R]:
    """``task(item)`` for each item, in order, on ``workers`` processes (module docstring)."""
    if workers <= 1:
        for item in items:
            yield task(item)
        return
    pool = ProcessPoolExecutor(workers, mp_context=_context(), initializer=_init_worker, initargs=(task,))
    pending: deque = deque()
    window = 2 * workers
    done = False
    try:
        for chunk in chunks(items, CHUNK):
            pending.append(pool.submit(_call, chunk))
            if len(pending) >= window:
                yield from taken(pending.popleft())
        while pending:
            yield from taken(pending.popleft())
        done = True
    finally:
        if done:
            pool.shutdown(wait=True)
        else:  # an error, an interrupt, or the caller stopped reading: end the workers now
            # (their list taken first: shutdown drops the pool's reference to it, and the workers would go on
            # through every task sent to them, the interpreter's exit waiting for them)
            procs = list((getattr(pool, "_processes", None) or {}).values())
            pool.shutdown(wait=False, cancel_futures=True)
            for proc in procs:
                if proc.is_alive():
                    proc.terminate()


def check_workers(value: Any, where: str = "executor.workers") -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(where, f"must be an integer >= 1 or null (one per core), got {value!r}")
    return value


class PoolMapper:
    """The run settings every executor takes from the ``executor`` section (``workers``,
    ``grace_seconds``, ``shard``, ``address``), and :meth:`map` on a local process pool."""

    workers: int | None = None
    grace_seconds: float = 30.0
    shard: Any = None
    address: str | None = None
    accepts_address = False
    maps_remotely = False
    """True for an executor whose :meth:`map` always runs the tasks off this process, on a cluster, whatever
    ``workers`` says (choosing the executor is asking for it): work that runs here unless asked (opt-in
    parallelism) runs on its map then."""

    def set_run_settings(self, *, workers: int | None = None, grace_seconds: float | None = None,
                         shard: str | None = None, address: str | None = None) -> None:
        from mnemetric.execute.interrupt import DEFAULT_GRACE_SECONDS
        from mnemetric.shard import parse_shard

        self.workers = check_workers(workers)
        grace = DEFAULT_GRACE_SECONDS if grace_seconds is None else grace_seconds
        if isinstance(grace, bool) or not isinstance(grace, (int, float)) or grace < 0:
            raise ConfigError("executor.grace_seconds", f"must be a number >= 0, got {grace!r}")
        self.grace_seconds = float(grace)
        self.shard = parse_shard(shard, "executor.shard")
        if address is not None and not self.accepts_address:
            raise ConfigError("executor.address", f"{address!r} given, but executor {getattr(self, 'name', '?')!r} "
                              "joins no scheduler", fix="use -S executor=dask (or set executor.address: null)")
        self.address = address

    @property
    def pool_size(self) -> int:
        """The worker processes :meth:`map` uses (``workers``, or one per usable core)."""
        return self.workers if self.workers is not None else usable_cores()

    def map(self, task: Callable[[T], R], items: Iterable[T], *, desc: str = "questions") -> Iterator[R]:
        """``task(item)`` per item, in order, on :attr:`pool_size` processes (:func:`map_ordered`)."""
        return map_ordered(task, items, self.pool_size)
