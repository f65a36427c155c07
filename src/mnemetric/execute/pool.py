"""Per-question work on a bounded pool of worker processes, results in input order (generic).

A door hands an executor a *task* (a picklable callable, one call per question: e.g. a memory system's
reset + ingest + retrieve for one adapted record) and the questions; :meth:`PoolMapper.map` yields the
task's results in the questions' order, whatever order the workers finish in, so the output bytes are
those of one worker. ``workers`` (the ``executor.workers`` param; None = one per usable core) processes
run the task, :data:`CHUNK` questions per round trip; at most ``2 × workers`` chunks are in flight, so a large
input is streamed, never held whole. With one worker the task runs here, in this process.

Worker processes are forked (where the platform can: the task and everything it holds are inherited,
not pickled) and ignore SIGINT. Each has a pipe for its chunks and one for its replies, and this process runs
no thread of its own for them (a chunk goes to the least busy worker, replies are read in the chunks' order):
on an interrupt or an error the workers are ended at once (terminated; no question begun after it) and the
error is raised here, with nothing left behind to race the interpreter's exit. (``concurrent.futures``'
process pool, used before, keeps a manager thread that a terminated worker could leave reading half a message
for ever, or closing a pipe the interpreter's exit still writes to: a hang, or a traceback, after the run's
own exit line.) A worker that dies is :class:`WorkerDied`. A :class:`~mnemetric.errors.MnemetricError` raised
in a worker comes back as one (its message and exit status kept); any other error with the worker's traceback.

Model calls are not spread over processes: the run's one executor (one budget, one usage ledger) sends
them from this process, ``llm.max_concurrency`` at once; a task that calls models runs here. A task that
makes model calls of its own in a worker (through an executor it builds there, e.g. a memory system's
embedding backend) has them counted there (:func:`mnemetric.llm.tally.tallied`) and the count comes back
with its result: it is added to the tallies open here when the result is taken
(:func:`mnemetric.llm.tally.merge`), so a tally counts the same with one worker or many.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import pickle
import queue
import signal
import threading
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from multiprocessing.reduction import ForkingPickler
from typing import Any, TypeVar

from mnemetric.errors import SIGNALS, ConfigError, Interrupted, MnemetricError, deferred_interrupts
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


def settle_heap() -> None:
    """On a worker, before its first task: move every object it holds now (the modules, the task) out of the
    garbage collector's sight (:func:`gc.freeze`). A question's work allocates many short-lived containers (bm25
    over a haystack: lists of tokens per document), each full collection would otherwise walk the whole inherited
    heap again — measured on a Dask worker, whose heap holds the distributed runtime, 10–15 % of a run's time.
    Garbage is collected first, so nothing unreachable (an earlier map's task, on a long-lived Dask worker) is kept
    for good by the freeze."""
    gc.collect()
    gc.freeze()


def _init_worker() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and ends the pool
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)  # blocked by the parent across the start (_Worker)
    settle_heap()


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


def absorbed(reply: tuple[list[Any], dict[str, Any]]) -> list[Any]:
    """The results of a :func:`run_chunk` reply, its tally added to the tallies open here."""
    results, counts = reply
    merge(counts)
    return results


def taken(future: Any) -> list[Any]:
    """A worker's results (a future of :func:`run_chunk`), their tally added to the tallies open here."""
    return absorbed(future.result())


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


_STOP = b""
"""The message that ends a worker (a chunk is never empty bytes)."""


class RemoteTraceback(Exception):
    """The traceback of an error raised in a worker, chained to it as its cause."""

    def __str__(self) -> str:
        return self.args[0]


class WorkerDied(MnemetricError):
    """A worker process ended while questions were sent to it (killed, e.g. by the kernel's out-of-memory killer)."""

    exit_code = 1


def _serve(task: Callable[[Any], Any], tasks: Any, results: Any, inherited: tuple[Any, ...] = ()) -> None:
    """A worker's life: chunks from ``tasks`` (read by a thread as they come, so the parent's send never waits on
    a worker busy sending its own results), each answered on ``results`` in order, until :data:`_STOP`. If the
    parent dies (its end of ``tasks`` closes) the worker ends at once, its queued chunks dropped."""
    for end in inherited:  # the parent's ends, copied by the fork (_Worker): closed as objects, never twice
        with contextlib.suppress(OSError):
            end.close()
    _init_worker()
    inbox: queue.SimpleQueue = queue.SimpleQueue()

    def read() -> None:
        try:
            while True:
                inbox.put(tasks.recv_bytes())
        except BaseException:  # the parent is gone (killed: its end closed), or this thread failed (memory)
            os._exit(1)  # now: nobody will read the replies to the chunks still queued

    threading.Thread(target=read, name="mnemetric-chunks", daemon=True).start()
    while (data := inbox.get()) != _STOP:
        try:
            reply: tuple[bool, Any, str] = (True, run_chunk(task, pickle.loads(data)), "")
        except BaseException as exc:  # sent back to the parent, which raises it
            reply = (False, exc, traceback.format_exc())
        try:
            payload = ForkingPickler.dumps(reply, pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # a result or an error that does not pickle
            payload = ForkingPickler.dumps((False, RuntimeError(f"a worker's reply cannot be pickled: {exc!r}"),
                                            traceback.format_exc()), pickle.HIGHEST_PROTOCOL)
        try:
            results.send_bytes(payload)
        except OSError:  # the parent is gone
            os._exit(1)


PIPE_BYTES = 1 << 20
"""The pipes' buffer, where the platform lets it be set (Linux; 1 MiB is its default limit for a user): an M
question's haystack is megabytes, and each 64 KiB read of the default buffer has the worker's reading thread take
the interpreter lock from the question's work."""

WIDEN_UP_TO = 8
"""Pools of at most this many workers get the wide pipes (2 MiB each): a user's pipes share a budget (Linux's
pipe-user-pages-soft, 64 MiB by default), past which every new pipe of that user gets one page."""


def _widen(connection: Any) -> None:
    try:
        import fcntl
    except ImportError:  # not a POSIX system
        return
    if hasattr(fcntl, "F_SETPIPE_SZ"):
        with contextlib.suppress(OSError):
            fcntl.fcntl(connection.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)


class _Worker:
    """One worker process of :func:`map_ordered`: a pipe for the chunks sent to it, one for its replies (in the
    order of the chunks). Started with SIGINT and SIGTERM blocked, so a signal cannot reach it before it has set
    its own handling (it unblocks them then); the pending one is this process's once the start returns."""

    def __init__(self, context: Any, task: Callable[[Any], Any], *, widen: bool, earlier: list[_Worker]):
        chunks_in, self.chunks = context.Pipe(duplex=False)
        self.replies, replies_out = context.Pipe(duplex=False)
        self._child_ends = [chunks_in, replies_out]
        if widen:
            for end in (self.chunks, replies_out):
                _widen(end)
        # a forked worker holds a copy of every descriptor open here: this pool's ends of its own pipes and of the
        # earlier workers' are closed there first, so each pipe's end is this process's alone (a worker sees the
        # end of its chunks when this process dies, and nothing else keeps another worker's pipes open)
        ours = [self.chunks, self.replies, *(end for worker in earlier for end in (worker.chunks, worker.replies))]
        inherited = tuple(ours) if context.get_start_method() == "fork" else ()  # (spawned: nothing inherited)
        self.process = context.Process(target=_serve, args=(task, chunks_in, replies_out, inherited),
                                       name="mnemetric-worker")
        self.sent = 0
        self.received: deque[bytes] = deque()
        self.taken = 0

    def start(self) -> None:
        blocking = hasattr(signal, "pthread_sigmask")
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS) if blocking else None
        try:
            self.process.start()
        finally:
            if blocking:
                signal.pthread_sigmask(signal.SIG_SETMASK, previous)
            for end in self._child_ends:  # the worker's ends: a worker that dies is seen here as the end of its replies
                end.close()

    @property
    def started(self) -> bool:
        return self.process.pid is not None

    @property
    def load(self) -> int:
        """Chunks sent to it whose replies have not come back."""
        return self.sent - self.taken - len(self.received)

    def send(self, chunk: list[Any]) -> None:
        data = ForkingPickler.dumps(chunk, pickle.HIGHEST_PROTOCOL)
        try:
            self.chunks.send_bytes(data)
        except OSError:
            raise self._died() from None
        self.sent += 1

    def collect(self) -> None:
        """The replies already here (none waited for)."""
        while self.load and self.replies.poll():
            self.received.append(self._recv())

    def _recv(self) -> bytes:
        try:
            return self.replies.recv_bytes()
        except (EOFError, OSError):
            raise self._died() from None

    def _died(self) -> MnemetricError | Interrupted:
        self.process.join(1)
        if self.process.exitcode in (-signal.SIGTERM, -signal.SIGINT):  # the signal was sent to the whole group
            return Interrupted(-self.process.exitcode)
        return WorkerDied(f"executor.workers: worker process {self.process.pid} ended (exit status "
                          f"{self.process.exitcode}) with questions sent to it\n  fix: if it ran out of memory "
                          "(the kernel's out-of-memory killer: exit status -9), run fewer workers "
                          "(-S executor.workers=1, or --workers 1)")

    def take(self) -> list[Any]:
        """The reply to the oldest chunk sent to it (waited for): its results, its tally added to the tallies open
        here; an error raised by the task is raised here."""
        data = self.received.popleft() if self.received else self._recv()
        self.taken += 1
        try:
            ok, value, remote = pickle.loads(data)
        except Exception as exc:  # an error type that cannot be rebuilt here (its arguments were not kept)
            raise RuntimeError(f"a worker's reply cannot be read here: {exc!r}") from None
        if not ok:
            if not isinstance(value, MnemetricError):
                value.__cause__ = RemoteTraceback(f'\n"""\n{remote}"""')
            raise value
        return absorbed(value)

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.chunks.send_bytes(_STOP)

    def close(self) -> None:
        for end in (self.chunks, self.replies, *self._child_ends):
            end.close()


EXIT_WAIT_SECONDS = 30.0
"""How long a worker told to stop (its map finished) is waited for before it is ended."""


def _end(workers: list[_Worker], *, finished: bool) -> None:
    """After a map: each worker told to stop and waited for (:data:`EXIT_WAIT_SECONDS`); else (an error, an
    interrupt, the caller stopped reading) ended at once — no question begun after it, no worker left running. A
    signal meanwhile is raised once every worker has ended; a second one cuts the wait short, not the ending."""
    started = [worker for worker in workers if worker.started]
    with deferred_interrupts():
        try:
            if finished:
                for worker in started:
                    worker.stop()
                for worker in started:
                    worker.process.join(EXIT_WAIT_SECONDS)
        finally:
            for worker in started:
                if worker.process.is_alive():  # a plug-in's thread that keeps it alive, or the map did not finish
                    worker.process.terminate()
            for worker in started:
                worker.process.join(5)
                if worker.process.is_alive():
                    worker.process.kill()
                    worker.process.join()
            for worker in workers:
                worker.close()


def map_ordered(task: Callable[[T], R], items: Iterable[T], workers: int) -> Iterator[R]:
    """``task(item)`` for each item, in order, on ``workers`` processes (module docstring)."""
    if workers <= 1:
        for item in items:
            yield task(item)
        return
    pool: list[_Worker] = []
    order: deque[_Worker] = deque()  # the worker of each chunk sent and not yet taken, oldest first
    finished = False
    try:
        context = _context()
        for _ in range(workers):
            pool.append(_Worker(context, task, widen=workers <= WIDEN_UP_TO, earlier=pool[:]))
            with deferred_interrupts():  # a signal during the start: raised once the worker is known to _end
                pool[-1].start()
        for chunk in chunks(items, CHUNK):
            for worker in pool:
                worker.collect()
            target = min(pool, key=lambda worker: worker.load)  # the least busy: a finished one is free
            target.send(chunk)
            order.append(target)
            if len(order) >= 2 * workers:
                yield from order.popleft().take()
        while order:
            yield from order.popleft().take()
        finished = True
    finally:
        _end(pool, finished=finished)


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
