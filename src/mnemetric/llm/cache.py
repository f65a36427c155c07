"""Content-addressed cache of model responses, in one SQLite file.

The key of a request is the sha256 of the canonical JSON (sorted keys, ``(",", ":")``
separators, UTF-8) of everything that decides the answer: the endpoint kind ("chat" or
"embeddings"), the base URL, the model, the messages / input, and the output-affecting request
parameters (temperature, max_tokens, n, top_p, seed, stop, response_format, ...). Transport
settings -- retries, timeouts, concurrency, headers and above all the API key -- are never part
of the key and never stored: changing them reuses the cache. Nor are credentials written into the
base URL (``https://user:key@proxy/v1``, ``?api-key=...``): they are stripped before it is keyed,
stored or shown.

Storage is ``$MNEMETRIC_CACHE_DIR/llm-cache.sqlite3`` (default: the user cache folder, e.g.
``$XDG_CACHE_HOME/mnemetric`` or ``~/.cache/mnemetric``), in WAL mode. Each response is committed
the moment it arrives, so an interrupted run (Ctrl-C, kill) keeps everything it already paid for;
errors and non-answers are never stored. Several processes may share the file (busy timeout);
they also share its ``claims`` table (:mod:`mnemetric.llm.claims`), so a request is sent once
even when several processes want it at the same time.

The same module holds :class:`VectorStore`, the dense memory's own embedding-vector store
(``embeddings.sqlite3`` beside it; :class:`mnemetric.embeddings.EmbeddingCache` decides what to store):
all of Mnemetric's SQL lives here and in the claims table's :mod:`mnemetric.llm.claims`.

Each row records which role stored it (``stage``: reader, judge or embeddings; not part of the
key). Cache files from before that column are migrated when opened: their rows get NULL, which
``mnemetric cache`` shows as "unknown".
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mnemetric.io import dumps_canonical
from mnemetric.llm.claims import CLAIMS_SCHEMA, ClaimStore

CACHE_FILENAME = "llm-cache.sqlite3"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
BUSY_TIMEOUT_S = 60.0

TRANSPORT_PARAMS = frozenset(
    {"timeout", "max_retries", "extra_headers", "extra_query", "api_key", "stream", "stream_options"}
)
"""Request options that change how a request travels, not what it answers: never in the key."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    model TEXT NOT NULL,
    request_json TEXT NOT NULL,
    response_json TEXT NOT NULL,
    created_at REAL NOT NULL,
    stage TEXT
)
"""
ROLES = ("reader", "judge", "embeddings")
"""Who stores rows (the ``stage`` column, not part of the key); rows from before the column: NULL,
shown as "unknown"."""
UNKNOWN_ROLE = "unknown"


@dataclass(frozen=True)
class CacheRow:
    """One cached response as ``mnemetric cache list`` shows it."""

    key: str
    kind: str
    """"chat" or "embeddings"."""
    model: str
    """The requested model (part of the key)."""
    resolved_model: str | None
    """The model the server said it used (``response.model``), if recorded."""
    stage: str
    """Role that stored it (reader, judge, embeddings) or "unknown"."""
    created_at: float
    size: int
    """Bytes of the stored response JSON."""


def canonical_json(obj: Any) -> str:
    """The cache's canonical JSON: :func:`mnemetric.io.dumps_canonical` with NaN/Infinity refused."""
    return dumps_canonical(obj, finite=True)


def _normalize(value: Any) -> Any:
    """Make equal values serialize equally (``0.0`` -> ``0``, tuples -> lists); drop None params."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {str(k): _normalize(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [_normalize(v) for v in value]
    return value


def normalize_base_url(base_url: str | None) -> str:
    """``base_url`` (or ``$OPENAI_BASE_URL``, or the OpenAI default) without credentials
    (``user:key@``, the query string) and without a trailing slash: safe to store and print."""
    url = base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
    return strip_url_credentials(str(url)).rstrip("/")


def strip_url_credentials(url: str) -> str:
    """``url`` without ``user:password@``, query string and fragment (they may hold an API key).
    A URL with none of them is returned unchanged, so its cache keys stay the same."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc and "?" not in url and "#" not in url:
        return url
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", ""))


def url_secrets(url: str | None) -> list[str]:
    """Credential-like pieces of ``url`` (userinfo, password, query string and its values), longest first."""
    if not url:
        return []
    parts = urllib.parse.urlsplit(str(url))
    found = {parts.netloc.rpartition("@")[0], parts.password or "", parts.query, parts.fragment}
    found.update(v for _, v in urllib.parse.parse_qsl(parts.query))
    return sorted((s for s in found if len(s) >= 4), key=len, reverse=True)


def output_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """The subset of request parameters that can change the answer (all but transport options)."""
    return {k: v for k, v in params.items() if k not in TRANSPORT_PARAMS and v is not None}


def key_payload(kind: str, base_url: str | None, model: str, content: Any, params: Mapping[str, Any]) -> dict:
    """The JSON object whose canonical form is hashed into the cache key.

    ``content`` is the chat ``messages`` list (kind "chat") or the ``input`` (kind "embeddings").
    """
    field = "messages" if kind == "chat" else "input"
    return {
        "kind": kind,
        "base_url": normalize_base_url(base_url),
        "model": model,
        field: _normalize(content),
        "params": _normalize(output_params(params)),
    }


def request_key(payload: Mapping[str, Any]) -> str:
    """sha256 hex digest of ``payload``'s canonical JSON."""
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


def default_cache_dir() -> Path:
    """``$MNEMETRIC_CACHE_DIR``, else the platform user cache folder + ``/mnemetric``."""
    explicit = os.environ.get("MNEMETRIC_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "mnemetric" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "mnemetric"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "mnemetric"


class ResponseCache(ClaimStore):
    """SQLite response store keyed by :func:`request_key`; safe for concurrent processes."""

    def __init__(self, path: str | os.PathLike[str] | None = None):
        self.path = Path(path) if path is not None else default_cache_dir() / CACHE_FILENAME
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(
            self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
        self._conn.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
        self._setup()

    def _setup(self) -> None:
        """WAL mode, schema, migration. Switching a new file to WAL takes an exclusive lock that
        SQLite does not wait for, so several processes creating the file at once retry (bounded)."""
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        while True:
            try:
                if self._conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                    self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute("PRAGMA synchronous=FULL")
                self._conn.execute(_SCHEMA)
                self._migrate()
                self._conn.execute(CLAIMS_SCHEMA)
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def _migrate(self) -> None:
        """Add the ``stage`` column to a cache file written before it existed (rows keep NULL)."""
        columns = {row[1] for row in self._conn.execute("PRAGMA table_info(responses)")}
        if "stage" not in columns:
            try:
                self._conn.execute("ALTER TABLE responses ADD COLUMN stage TEXT")
            except sqlite3.OperationalError as exc:  # another process migrated it first
                if "duplicate column" not in str(exc):
                    raise

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored response JSON for ``key``, or None."""
        with self._lock:
            row = self._conn.execute("SELECT response_json FROM responses WHERE key=?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def __contains__(self, key: str) -> bool:
        with self._lock:
            row = self._conn.execute("SELECT 1 FROM responses WHERE key=?", (key,)).fetchone()
        return row is not None

    def put(self, key: str, payload: Mapping[str, Any], response: Mapping[str, Any], *, stage: str | None = None,
            release: str | None = None) -> None:
        """Store one usable response and commit it immediately (first writer wins); in the same
        transaction, drop the claim on ``key`` held under token ``release`` (if given)."""
        row = (
            key,
            str(payload.get("kind", "")),
            str(payload.get("model", "")),
            canonical_json(payload),
            canonical_json(response),
            time.time(),
            stage,
        )
        with self._lock, self._transaction():
            self._conn.execute(
                "INSERT OR IGNORE INTO responses"
                " (key, kind, model, request_json, response_json, created_at, stage) VALUES (?,?,?,?,?,?,?)",
                row,
            )
            if release is not None:
                self._conn.execute("DELETE FROM claims WHERE key=? AND token=?", (key, release))

    def delete(self, keys: list[str]) -> int:
        """Remove the rows of ``keys``; returns how many were removed."""
        removed = 0
        with self._lock, self._transaction():
            for i in range(0, len(keys), 500):
                chunk = keys[i : i + 500]
                cur = self._conn.execute(f"DELETE FROM responses WHERE key IN ({','.join('?' * len(chunk))})", chunk)
                removed += cur.rowcount
        return removed

    def rows(self, *, model: str | None = None, stage: str | None = None, key_prefix: str | None = None,
             kind: str | None = None) -> list[CacheRow]:
        """Rows matching every filter given (``stage`` "unknown" matches rows without a role),
        ordered by creation time then key. The request and response bodies are not loaded."""
        where, args = [], []
        if model is not None:
            where.append("(model = ? OR json_extract(response_json, '$.model') = ?)")
            args += [model, model]
        if stage is not None:
            where.append("stage IS NULL" if stage == UNKNOWN_ROLE else "stage = ?")
            args += [] if stage == UNKNOWN_ROLE else [stage]
        if key_prefix is not None:
            where.append("substr(key, 1, ?) = ?")
            args += [len(key_prefix), key_prefix.lower()]
        if kind is not None:
            where.append("kind = ?")
            args.append(kind)
        sql = ("SELECT key, kind, model, json_extract(response_json, '$.model'), stage, created_at,"
               " length(response_json) FROM responses")
        sql += (" WHERE " + " AND ".join(where)) if where else ""
        with self._lock:
            found = self._conn.execute(sql + " ORDER BY created_at, key", args).fetchall()
        return [CacheRow(k, kd, m, str(r) if r is not None else None, s or UNKNOWN_ROLE, c, n)
                for k, kd, m, r, s, c, n in found]

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def export_rows(self, keys: list[str] | None = None) -> Iterator[tuple[str, str, str, str, str, float, str | None]]:
        """(key, kind, model, request_json, response_json, created_at, stage) of ``keys`` (all rows when
        None), in key order, streamed (``mnemetric cache export``, :mod:`mnemetric.llm.transfer`)."""
        wanted, last = None if keys is None else set(keys), ""
        while True:  # pages of 500 keys: bounded memory, and the lock is never held across a yield
            with self._lock:
                page = self._conn.execute("SELECT key, kind, model, request_json, response_json, created_at, stage"
                                          " FROM responses WHERE key > ? ORDER BY key LIMIT 500", (last,)).fetchall()
            if not page:
                return
            yield from (r for r in page if wanted is None or r[0] in wanted)
            last = page[-1][0]

    def import_rows(self, rows: Iterable[tuple[str, str, str, str, str, float, str | None]]) -> int:
        """Insert :meth:`export_rows` rows in one transaction (a key already present is kept: first
        writer wins); returns how many were added. An error while ``rows`` is read rolls all back."""
        added = 0
        with self._lock, self._transaction():
            for row in rows:
                added += self._conn.execute(
                    "INSERT OR IGNORE INTO responses"
                    " (key, kind, model, request_json, response_json, created_at, stage) VALUES (?,?,?,?,?,?,?)",
                    row).rowcount
        return added

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


VECTORS_FILENAME = "embeddings.sqlite3"


class VectorStore:
    """key -> (dimension, float32 vector bytes) in one SQLite file (WAL), committed per :meth:`put_many`."""

    def __init__(self, path: str | os.PathLike[str] | None = None):
        self.path = Path(path) if path is not None else default_cache_dir() / VECTORS_FILENAME
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS embeddings (key TEXT PRIMARY KEY, dim INTEGER, vec BLOB)")

    def get_many(self, keys: list[str] | set[str]) -> dict[str, bytes]:
        """The stored vector bytes of those ``keys`` that are present."""
        out: dict[str, bytes] = {}
        items = list(keys)
        for i in range(0, len(items), 500):
            chunk = items[i : i + 500]
            rows = self._db.execute(f"SELECT key, vec FROM embeddings WHERE key IN ({','.join('?' * len(chunk))})",
                                    chunk)
            out.update((k, v) for k, v in rows)
        return out

    def put_many(self, rows: list[tuple[str, int, bytes]]) -> None:
        """Store ``(key, dimension, vector bytes)`` rows in one transaction (a row already there is replaced)."""
        with self._db:
            self._db.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?)", rows)

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])

    def export_rows(self) -> Iterator[tuple[str, int, bytes]]:
        """Every (key, dimension, vector bytes), in key order."""
        last = ""
        while page := self._db.execute("SELECT key, dim, vec FROM embeddings WHERE key > ? ORDER BY key LIMIT 500",
                                       (last,)).fetchall():
            yield from page
            last = page[-1][0]

    def import_rows(self, rows: Iterable[tuple[str, int, bytes]]) -> int:
        """Insert rows in one transaction (a key already present is kept); returns how many were added."""
        added = 0
        with self._db:
            for row in rows:
                added += self._db.execute("INSERT OR IGNORE INTO embeddings VALUES (?, ?, ?)", row).rowcount
        return added

    def close(self) -> None:
        self._db.close()
