"""Cross-process single flight through the response cache's SQLite file.

Before a process sends a request it *claims* the request key in the ``claims`` table; the claim
names the process (pid, host), the time it was taken and a random token (one per call, so two
calls in one process are told apart too). Rule, decided inside one ``BEGIN IMMEDIATE`` transaction:

* a response row for the key exists → "done": use it, send nothing;
* no claim, or our own token → "mine": send;
* a claim whose owner is gone → taken over ("taken", i.e. now ours): the owner ran on this host and its pid no
  longer exists (or is a zombie), or the claim is older than ``max_age`` seconds (any host);
* otherwise → "theirs": the caller polls (bounded: at worst until the claim is ``max_age`` old)
  until the response row appears, or the claim disappears (the owner's request failed), and
  then claims again.

A claim is removed in the same transaction that stores the response (crash safety is unchanged:
the response is committed the moment it arrives), or when the request fails. A process killed
with SIGKILL leaves its claims behind; they are taken over as above.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sqlite3
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

CLAIMS_SCHEMA = """
CREATE TABLE IF NOT EXISTS claims (
    key TEXT PRIMARY KEY,
    pid INTEGER NOT NULL,
    host TEXT NOT NULL,
    started_at REAL NOT NULL,
    token TEXT NOT NULL
)
"""
HOST = socket.gethostname()


@dataclass(frozen=True)
class Claim:
    """A row of the claims table."""

    key: str
    pid: int
    host: str
    started_at: float
    token: str


def new_token() -> str:
    """A fresh claim token."""
    return uuid.uuid4().hex


def pid_alive(pid: int) -> bool:
    """True if process ``pid`` exists on this host and is not a zombie (unknown → True)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    if sys.platform.startswith("linux"):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return True
        return state not in ("Z", "X")
    return True


def abandoned(claim: Claim, max_age: float, now: float | None = None) -> bool:
    """The claim's owner is gone: dead pid on this host, or the claim is older than ``max_age``."""
    if (time.time() if now is None else now) - claim.started_at > max_age:
        return True
    return claim.host == HOST and not pid_alive(claim.pid)


class ClaimStore:
    """Claim operations on the cache connection (mixed into ResponseCache)."""

    _conn: sqlite3.Connection
    _lock: threading.Lock

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """BEGIN IMMEDIATE … COMMIT (ROLLBACK on error); the caller holds ``_lock``."""
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def claim(self, key: str, token: str, max_age: float) -> str:
        """"done", "mine", "taken" (an abandoned claim, now ours) or "theirs" for ``key``."""
        with self._lock, self._transaction():
            if self._conn.execute("SELECT 1 FROM responses WHERE key=?", (key,)).fetchone():
                return "done"
            row = self._conn.execute("SELECT key, pid, host, started_at, token FROM claims WHERE key=?",
                                     (key,)).fetchone()
            foreign = row is not None and row[4] != token
            if foreign and not abandoned(Claim(*row), max_age):
                return "theirs"
            self._conn.execute("INSERT OR REPLACE INTO claims (key, pid, host, started_at, token) VALUES (?,?,?,?,?)",
                               (key, os.getpid(), HOST, time.time(), token))
            return "taken" if foreign else "mine"

    def release(self, keys: list[str], token: str) -> None:
        """Drop our claims on ``keys`` (a failed or abandoned request)."""
        with self._lock, self._transaction():
            self._conn.executemany("DELETE FROM claims WHERE key=? AND token=?", [(k, token) for k in keys])

    def claims(self) -> list[Claim]:
        """Every claim in the table."""
        with self._lock:
            rows = self._conn.execute("SELECT key, pid, host, started_at, token FROM claims ORDER BY key").fetchall()
        return [Claim(*row) for row in rows]
