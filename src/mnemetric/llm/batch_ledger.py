"""The ledger of batches in flight: one SQLite file beside the response cache (``batch-ledger.sqlite3``).

A *slot* is one batch file of requests (one base URL, one endpoint, one model) and its life::

    preparing ──upload──▶ uploaded ──create──▶ submitted ──download──▶ done
    (exported ──mnemetric batch import──▶ done, for a file run by another batch runner)

Every step is committed before the next one starts, so a process killed at any moment (SIGKILL
included) leaves a ledger the next run resumes from without paying a request twice:

* ``preparing``: nothing was created remotely (the input file may have been uploaded, unused): a slot
  whose process is gone is dropped and its requests are free again;
* ``uploaded``: the batch may or may not have been created; the next run looks for a batch on the
  server made from this input file (the slot id is also in the batch's metadata) and adopts it, or
  creates it;
* ``submitted``: the batch is polled, its output and error files downloaded into the response cache;
* ``done``: its replies are in the cache (the members' request payloads are dropped; the keys stay,
  for ``mnemetric batch status``).

A request key belongs to at most one open slot (checked in the same transaction that reserves a
slot), so two processes never submit the same request. Members keep the request's cache-key payload,
so a slot can be downloaded (or exported) by any process, without the calls that made it.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Final

from mnemetric.llm.claims import HOST, pid_alive

LEDGER_FILENAME: Final = "batch-ledger.sqlite3"
OPEN: Final = ("preparing", "uploaded", "submitted")
"""States of a slot at a Batch API that is not finished."""
EXPORTED: Final = "exported"
DONE: Final = "done"
STALE_S: Final = 3600.0
"""Seconds after which a slot still preparing or uploaded counts as abandoned, whoever holds it."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS slots (
    slot TEXT PRIMARY KEY, mode TEXT NOT NULL, base_url TEXT NOT NULL, kind TEXT NOT NULL, model TEXT NOT NULL,
    role TEXT, state TEXT NOT NULL, input_file_id TEXT, batch_id TEXT, remote_status TEXT,
    requests INTEGER NOT NULL, completed INTEGER NOT NULL DEFAULT 0, failed INTEGER NOT NULL DEFAULT 0,
    pid INTEGER NOT NULL, host TEXT NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL, note TEXT);
CREATE TABLE IF NOT EXISTS members (slot TEXT NOT NULL, key TEXT NOT NULL, payload TEXT,
    PRIMARY KEY (slot, key));
CREATE INDEX IF NOT EXISTS members_key ON members (key);
"""


@dataclass(frozen=True)
class Slot:
    """One row of the ledger (module docstring)."""

    slot: str
    mode: str
    """"openai" (a Batch API) or "export" (a file for another batch runner)."""
    base_url: str
    kind: str
    """"chat" or "embeddings"."""
    model: str
    role: str | None
    state: str
    input_file_id: str | None
    batch_id: str | None
    remote_status: str | None
    requests: int
    completed: int
    failed: int
    pid: int
    host: str
    created_at: float
    updated_at: float
    note: str | None

    @property
    def name(self) -> str:
        """The batch id when there is one, else the slot id."""
        return self.batch_id or self.slot

    @property
    def owner_gone(self) -> bool:
        """The process preparing this slot has died (this host), or has not moved it for :data:`STALE_S`
        seconds (any host: an upload and a create take seconds)."""
        return (self.host == HOST and not pid_alive(self.pid)) or time.time() - self.updated_at > STALE_S


_COLUMNS = ", ".join(f.name for f in fields(Slot))


class Ledger:
    """The ledger file (module docstring); safe for concurrent processes (WAL, immediate transactions)."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, timeout=60.0, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA busy_timeout=60000")
        deadline = time.monotonic() + 60.0
        while True:
            try:
                self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute("PRAGMA synchronous=FULL")
                self._conn.executescript(_SCHEMA)
                break
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    @classmethod
    def beside(cls, cache_path: str | os.PathLike[str]) -> Ledger:
        """The ledger next to a response cache file."""
        return cls(Path(cache_path).parent / LEDGER_FILENAME)

    @contextlib.contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def _rows(self, sql: str, args: Iterable[Any] = ()) -> list[Slot]:
        with self._lock:
            return [Slot(*r) for r in self._conn.execute(f"SELECT {_COLUMNS} FROM slots {sql}", list(args))]

    # -- reading ---------------------------------------------------------------------------------
    def slots(self, *, states: Iterable[str] | None = None, mode: str | None = None) -> list[Slot]:
        """Slots (oldest first), filtered by state and mode."""
        where, args = [], []
        if states is not None:
            states = list(states)
            where.append(f"state IN ({','.join('?' * len(states))})")
            args += states
        if mode is not None:
            where.append("mode = ?")
            args.append(mode)
        return self._rows(("WHERE " + " AND ".join(where) if where else "") + " ORDER BY created_at, slot", args)

    def get(self, name: str) -> Slot | None:
        """The slot with this slot id or batch id."""
        found = self._rows("WHERE slot = ? OR batch_id = ?", (name, name))
        return found[0] if found else None

    def keys(self, slot: str) -> list[str]:
        with self._lock:
            return [k for (k,) in self._conn.execute("SELECT key FROM members WHERE slot=? ORDER BY rowid", (slot,))]

    def payloads(self, slot: str) -> dict[str, dict[str, Any]]:
        """key → the request's cache-key payload, in submission order (empty once the slot is done)."""
        with self._lock:
            rows = self._conn.execute("SELECT key, payload FROM members WHERE slot=? AND payload IS NOT NULL"
                                      " ORDER BY rowid", (slot,)).fetchall()
        return {k: json.loads(p) for k, p in rows}

    def holders(self, keys: Iterable[str], states: Iterable[str]) -> dict[str, str]:
        """key → the slot (in one of ``states``) that holds it, for those of ``keys`` that are held."""
        states, out = list(states), {}
        items = list(keys)
        with self._lock:
            for i in range(0, len(items), 500):
                chunk = items[i: i + 500]
                out.update(self._conn.execute(
                    f"SELECT m.key, m.slot FROM members m JOIN slots s ON s.slot = m.slot WHERE s.state IN "
                    f"({','.join('?' * len(states))}) AND m.key IN ({','.join('?' * len(chunk))})",
                    [*states, *chunk]).fetchall())
        return out

    # -- writing ---------------------------------------------------------------------------------
    def reserve(self, *, mode: str, base_url: str, kind: str, model: str, role: str | None,
                members: Mapping[str, str], state: str = "preparing") -> tuple[Slot | None, list[str]]:
        """A new slot holding those of ``members`` (key → payload JSON) that no open or exported slot holds
        (decided in one transaction); returns it (None when every key was held) and the keys it holds."""
        now = time.time()
        held_states = (*OPEN, EXPORTED)
        with self._tx() as db:
            free = []
            keys = list(members)
            for i in range(0, len(keys), 500):
                chunk = keys[i: i + 500]
                held = {k for (k,) in db.execute(
                    f"SELECT m.key FROM members m JOIN slots s ON s.slot = m.slot WHERE s.state IN "
                    f"({','.join('?' * len(held_states))}) AND m.key IN ({','.join('?' * len(chunk))})",
                    [*held_states, *chunk])}
                free += [k for k in chunk if k not in held]
            if not free:
                return None, []
            slot = f"slot-{uuid.uuid4().hex[:16]}"
            db.execute(f"INSERT INTO slots ({_COLUMNS}) VALUES ({','.join('?' * len(fields(Slot)))})",
                       (slot, mode, base_url, kind, model, role, state, None, None, None, len(free), 0, 0,
                        os.getpid(), HOST, now, now, None))
            db.executemany("INSERT INTO members (slot, key, payload) VALUES (?,?,?)",
                           [(slot, k, members[k]) for k in free])
        return self.get(slot), free

    def update(self, slot: str, **values: Any) -> Slot:
        """Set columns of a slot (committed at once); returns the slot as stored."""
        allowed = {f.name for f in fields(Slot)} - {"slot", "created_at"}
        bad = set(values) - allowed
        if bad:
            raise ValueError(f"not ledger columns: {sorted(bad)}")
        values["updated_at"] = time.time()
        with self._tx() as db:
            db.execute(f"UPDATE slots SET {', '.join(f'{k}=?' for k in values)} WHERE slot=?", [*values.values(), slot])
        return self.get(slot)

    def finish(self, slot: str, *, remote_status: str | None = None, note: str | None = None) -> None:
        """Mark a slot done (its replies are stored) and drop its members' payloads."""
        with self._tx() as db:
            db.execute("UPDATE slots SET state=?, remote_status=COALESCE(?, remote_status), note=COALESCE(?, note),"
                       " updated_at=? WHERE slot=?", (DONE, remote_status, note, time.time(), slot))
            db.execute("UPDATE members SET payload=NULL WHERE slot=?", (slot,))

    def drop(self, slot: str) -> None:
        """Forget a slot and its members (a slot nothing was created for, or one the user forgets)."""
        with self._tx() as db:
            db.execute("DELETE FROM members WHERE slot=?", (slot,))
            db.execute("DELETE FROM slots WHERE slot=?", (slot,))

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
