"""The error family for problems a user can fix.

Every user-facing error names *where* the problem is (file, record, field), *what* is wrong,
and, where we know it, *how to fix it*. The CLI and the stage entry points print these as one
clean message and exit non-zero; any other exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class MnemetricError(Exception):
    """Base class: a problem with input, configuration or environment that the user can fix."""

    exit_code = 2
    restore_hint = True
    """Inside a workspace `dvc exp run`, end the message with the command that restores the workspace (False
    where the experiment's settings are exactly what the next `dvc repro` should run with)."""


def record_label(record: str, index: int | None = None, offset: int | None = None) -> str:
    """How a record is named in a message: ``record`` as given, or, when the record's place in a
    list file is known, ``question 'q_37' (index 36, byte 1048576)`` (``record`` a question id) or
    ``index 36 (byte 1048576)`` (``record`` already "index 36"); ``byte`` is the 0-based offset of
    the record's first byte in the file."""
    if index is None:
        return record
    where = ", ".join([*([] if record == f"index {index}" else [f"index {index}"]),
                       *([] if offset is None else [f"byte {offset}"])])
    name = f"index {index}" if record == f"index {index}" else f"question '{record}'"
    return f"{name} ({where})" if where else name


@dataclass(frozen=True)
class Finding:
    """Something found in one record of one file: where (file, record, field, and, when known, the
    record's index and first byte) and what. One line per finding, ``file: record: field 'f': message``
    after :attr:`prefix`; :class:`Problem` (an error) and the LongMemEval data warning are its kinds."""

    file: str
    record: str
    """question_id when known, else "index N" / "line N"."""
    field: str
    message: str
    index: int | None = None
    """The record's 0-based position in a list file, when known (streaming readers of V1 files)."""
    offset: int | None = None
    """The byte offset of the record's first byte in the file, when known."""

    prefix: ClassVar[str] = ""
    """What starts the line ("warning: " for a warning)."""

    def __str__(self) -> str:
        return f"{self.prefix}{self.file}: {record_label(self.record, self.index, self.offset)}: " \
               f"field '{self.field}': {self.message}"


@dataclass(frozen=True)
class Problem(Finding):
    """One problem found in one record of one file."""


class InputError(MnemetricError):
    """Bad input data: names file, record and field (and, where known, the record's index and byte offset)."""

    def __init__(self, file: str, record: str, field: str, message: str, fix: str | None = None, *,
                 index: int | None = None, offset: int | None = None):
        self.problem = Problem(str(file), record, field, message, index, offset)
        self.fix = fix
        text = str(self.problem)
        if fix:
            text += f"\n  fix: {fix}"
        super().__init__(text)


class ValidationFailed(MnemetricError):
    """Several problems found while validating a whole file."""

    def __init__(self, file: str, problems: list[Problem]):
        self.file = str(file)
        self.problems = problems
        head = f"{file}: {len(problems)} problem(s) found"
        shown = "\n".join(f"  - {p}" for p in problems[:50])
        more = f"\n  ... and {len(problems) - 50} more" if len(problems) > 50 else ""
        super().__init__(f"{head}\n{shown}{more}")


class IntegrityError(MnemetricError):
    """A file's content does not match its pinned hash or size."""


class UpstreamFormatError(MnemetricError):
    """An upstream file (read at its pinned revision, parsed, never run) lacks the shape its reader
    expects: names the file and what was expected where. Bytes that verify against their pin never
    raise it; a checkout at another revision, or an unpinned stand-in, can."""

    def __init__(self, file: str, problem: str, fix: str | None = None):
        self.file, self.problem, self.fix = str(file), problem, fix
        text = f"{file}: {problem}"
        if fix:
            text += f"\n  fix: {fix}"
        super().__init__(text)


class DownloadError(MnemetricError):
    """A file could not be obtained (network, HTTP status, offline)."""


class ConfigError(MnemetricError):
    """params.yaml / conf/ / a command-line option is missing, mistyped or out of range.

    Two forms: ``ConfigError(key, problem, fix=None)`` names the dotted key (``retrieval.context_k``)
    and what is wrong with it; ``ConfigError(message)`` (one argument) is a complete sentence.
    """

    def __init__(self, key_or_message: str, problem: str | None = None, fix: str | None = None):
        self.key = key_or_message if problem is not None else None
        self.problem = problem if problem is not None else key_or_message
        self.fix = fix
        text = f"{self.key}: {self.problem}" if self.key is not None else self.problem
        if fix:
            text += f"\n  fix: {fix}"
        super().__init__(text)


class PluginError(MnemetricError):
    """A plugged-in component (memory system, reader, judge, adapter) misbehaved in a call.

    Names the component, the call (e.g. ``retrieve(query q-1a2b)``) and the problem, so the
    author of the plug-in knows where to look; it is the plug-in's fault, not the data's.
    """

    def __init__(self, component: str, call: str, problem: str, fix: str | None = None):
        self.component, self.call, self.problem, self.fix = component, call, problem, fix
        text = f"{component}: {call}: {problem}"
        if fix:
            text += f"\n  fix: {fix}"
        super().__init__(text)


# -- interrupts: SIGINT/SIGTERM unwind like Ctrl-C (files being written are removed), one line at the door


class Interrupted(KeyboardInterrupt):
    """The run was stopped by a signal (exit status 128 + its number). A KeyboardInterrupt, so no
    ``except Exception`` on the way up swallows it."""

    def __init__(self, signum: int = signal.SIGINT, detail: str | None = None):
        self.signum = int(signum)
        self.exit_code = 128 + self.signum
        name = signal.Signals(self.signum).name
        super().__init__(f"interrupted by {name}" + (f" ({detail})" if detail else "")
                         + ": no output written; model answers received are in the response cache, "
                           "a rerun sends only the rest")

    def __reduce__(self):  # picklable across worker processes
        return (type(self), (self.signum,))


def _raise(signum: int, frame: Any) -> None:
    raise Interrupted(signum)


def install_interrupts() -> dict[int, Any]:
    """SIGINT and SIGTERM raise :class:`Interrupted` in this process (main thread only; else nothing);
    returns the previous handlers (for :func:`restore_interrupts`)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    previous = {sig: signal.getsignal(sig) for sig in SIGNALS}
    for sig in SIGNALS:
        signal.signal(sig, _raise)
    return previous


def restore_interrupts(previous: dict[int, Any]) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


class DeferredInterrupts:
    """The signals that arrived while :func:`deferred_interrupts` was open: ``signum`` the first one (None: none);
    :meth:`check` raises it as :class:`Interrupted`, at a point the holder chose."""

    def __init__(self) -> None:
        self.signum: int | None = None

    def _record(self, signum: int, frame: Any) -> None:
        if self.signum is not None:  # a second signal: the user insists, stop now
            raise Interrupted(self.signum)
        self.signum = signum

    def check(self) -> None:
        if self.signum is not None:
            raise Interrupted(self.signum)


@contextlib.contextmanager
def deferred_interrupts() -> Iterator[DeferredInterrupts]:
    """Inside: SIGINT and SIGTERM, where they would raise :class:`Interrupted` (a door's :func:`install_interrupts`,
    or Python's own Ctrl-C), are recorded instead and raised by the holder's ``check()`` or on leaving; a second
    signal raises at once. For code that waits inside a library whose objects are finalized on the main thread (a
    Dask future's ``__del__`` releases its key): an exception raised by the signal handler inside a finalizer is
    printed by Python ("Exception ignored in") and dropped, and the run would go on as if never signalled. Not to be
    held across a ``yield`` (the caller's code would run with its signals held). Main thread only; elsewhere (and
    for signals handled otherwise) nothing changes."""
    deferred = DeferredInterrupts()
    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for sig in SIGNALS:
            handler = signal.getsignal(sig)
            if handler is _raise or handler is signal.default_int_handler:
                previous[sig] = handler
                signal.signal(sig, deferred._record)
    try:
        yield deferred
    except Exception as exc:  # an error meanwhile: a signal recorded is still the run's end (its status)
        if deferred.signum is not None:
            raise Interrupted(deferred.signum) from exc
        raise
    finally:
        for sig, handler in previous.items():
            if signal.getsignal(sig) == deferred._record:  # not replaced meanwhile by someone else's handler
                signal.signal(sig, handler)
    deferred.check()


def interrupt_of(exc: BaseException) -> KeyboardInterrupt | None:
    """The interrupt behind ``exc``: itself, or — when the signal's exception was raised inside C code
    that then reported "returned a result with an exception set" — the SystemError's cause. None when
    ``exc`` is not an interrupt."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return exc
        if not isinstance(exc, SystemError):
            return None
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def interrupt_message(exc: BaseException) -> tuple[str, int]:
    """The one line a door prints for an interrupt, and its exit status."""
    exc = interrupt_of(exc) or exc
    if isinstance(exc, Interrupted):
        return f"error: {exc}", exc.exit_code
    return f"error: {Interrupted(signal.SIGINT)}", 130
