"""Stopping on SIGINT / SIGTERM without losing paid work or leaving temp files (generic).

Two layers:

* the process (:func:`mnemetric.errors.install_interrupts`, called by every stage and by the `mnemetric`
  command): SIGTERM, like
  Ctrl-C, raises :class:`Interrupted` in the main thread, so ``with`` blocks unwind — a file being
  written atomically (:func:`mnemetric.io.atomic_open`) removes its temporary sibling instead of
  leaving a ``.tmp`` — and the door prints one line and exits 128 + the signal number, no traceback;
* the model calls (:class:`GracefulStop`, used by the executors around their event loop): the first
  signal stops new requests from starting and waits up to ``grace_seconds`` for the requests in
  flight; each answer that arrives is committed to the response cache as usual, so a rerun does not
  pay for it again. A second signal, or the end of the grace, cancels what is still in flight.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

from mnemetric.errors import SIGNALS, Interrupted

DEFAULT_GRACE_SECONDS = 30.0
__all__ = ["DEFAULT_GRACE_SECONDS", "GracefulStop", "Interrupted"]


class GracefulStop:
    """Signal handling for one event loop run (module docstring). ``requested``: a signal arrived;
    callers start no new request once it is set and raise :meth:`error` when their gather ends."""

    def __init__(self, grace_seconds: float = DEFAULT_GRACE_SECONDS):
        self.grace = float(grace_seconds)
        self.signum: int | None = None
        self.in_flight = 0
        self._task: asyncio.Task | None = None
        self._timer: asyncio.TimerHandle | None = None

    @property
    def requested(self) -> bool:
        return self.signum is not None

    def _on_signal(self, signum: int) -> None:
        loop = asyncio.get_running_loop()
        if self.signum is not None or self.grace <= 0:  # a second signal, or no grace: stop now
            self.signum = self.signum or signum
            if self._task is not None:
                self._task.cancel()
            return
        self.signum = signum
        if self._task is not None:
            self._timer = loop.call_later(self.grace, self._task.cancel)

    @contextlib.contextmanager
    def handling(self) -> Iterator[GracefulStop]:
        """Inside a running loop: route SIGINT/SIGTERM here (main thread only), then put the previous
        handlers back."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            yield self
            return
        self._task = asyncio.current_task()
        previous: dict[int, Any] = {}
        if threading.current_thread() is threading.main_thread():
            for sig in SIGNALS:
                previous[sig] = signal.getsignal(sig)
                try:
                    loop.add_signal_handler(sig, self._on_signal, sig)
                except (NotImplementedError, RuntimeError, ValueError):  # not here: plain handling
                    previous.pop(sig)
        try:
            yield self
        finally:
            if self._timer is not None:
                self._timer.cancel()
            for sig, handler in previous.items():
                loop.remove_signal_handler(sig)
                signal.signal(sig, handler if handler is not None else signal.SIG_DFL)

    def error(self, detail: str | None = None) -> Interrupted:
        return Interrupted(self.signum or signal.SIGINT, detail)
