"""Moving the caches between machines: ``mnemetric cache export FILE`` and ``mnemetric cache import FILE``.

The export file (schema ``mnemetric.cache-export/v1``) is JSONL, one JSON object per line:

1. ``{"schema": "mnemetric.cache-export/v1"}``;
2. one line per cached response, in key order: ``{"table": "responses", "key", "kind", "model", "stage",
   "created_at", "request", "response"}`` (``request``: the keyed request payload, whose canonical JSON's
   sha256 is ``key``; ``response``: the stored response);
3. one line per embedding vector of the dense memory's store, in key order: ``{"table": "embeddings",
   "key", "dim", "vector"}`` (``vector``: base64 of ``dim`` little-endian float32 values);
4. ``{"end": true, "responses": N, "embeddings": M, "sha256": H}``: the counts above and the sha256 of the
   UTF-8 bytes of every line before this one (a changed byte anywhere is found). A file without it is
   truncated.

Rows are moved by key: an import adds the keys the cache lacks and keeps the rows it has (the first
writer wins, as for a live response), so importing the same file twice adds 0 rows. An import reads
the whole file and checks every line (a response's key against its request) before it writes
anything; then each store takes its rows in one transaction: a bad file is refused, naming the file,
the line and the field, with nothing written. The export is written atomically (mnemetric.io).
API keys are never in the cache, so never in an export. The SQL is :mod:`mnemetric.llm.cache`'s.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from mnemetric.errors import InputError
from mnemetric.io import atomic_open, require_file
from mnemetric.llm.cache import (CACHE_FILENAME, VECTORS_FILENAME, ResponseCache, VectorStore, canonical_json,
                                 request_key)

SCHEMA: Final = "mnemetric.cache-export/v1"
KINDS: Final = ("chat", "embeddings")
_KEY = re.compile(r"^[0-9a-f]{64}$")
_FIX: Final = "export it again with `mnemetric cache export FILE` (the file is damaged or truncated)"


@dataclass(frozen=True)
class Moved:
    """Rows written to (export) or found in (import) a file, and for an import how many were new."""

    responses: int
    embeddings: int
    responses_added: int = 0
    embeddings_added: int = 0
    skipped: int = 0
    """Export: cached rows left out because their key is not their request's sha256 (damaged rows)."""


def export_cache(out: str | Path, root: Path, *, keys: list[str] | None = None, embeddings: bool = True) -> Moved:
    """Write the caches under ``root`` (responses of ``keys``, every one when None; the embedding vectors
    unless ``embeddings`` is False) to ``out`` atomically."""
    n_resp = n_emb = skipped = 0
    digest = hashlib.sha256()
    with atomic_open(out, "w") as raw_fh:
        fh = _Hashing(raw_fh, digest)
        fh.write(json.dumps({"schema": SCHEMA}) + "\n")
        if (root / CACHE_FILENAME).exists():
            with ResponseCache(root / CACHE_FILENAME) as cache:
                for key, kind, model, request, response, created, stage in cache.export_rows(keys):
                    if _stored_key(request) != key:  # a row an import would refuse: left out, counted
                        skipped += 1
                        continue
                    fh.write(json.dumps({"table": "responses", "key": key, "kind": kind, "model": model,
                                         "stage": stage, "created_at": created, "request": json.loads(request),
                                         "response": json.loads(response)}, ensure_ascii=False) + "\n")
                    n_resp += 1
        if embeddings and (root / VECTORS_FILENAME).exists():
            store = VectorStore(root / VECTORS_FILENAME)
            try:
                for key, dim, vec in store.export_rows():
                    fh.write(json.dumps({"table": "embeddings", "key": key, "dim": dim,
                                         "vector": base64.b64encode(vec).decode("ascii")}) + "\n")
                    n_emb += 1
            finally:
                store.close()
        raw_fh.write(json.dumps({"end": True, "responses": n_resp, "embeddings": n_emb,
                                 "sha256": digest.hexdigest()}) + "\n")
    return Moved(n_resp, n_emb, skipped=skipped)


class _Hashing:
    """A text file that also feeds what it writes (UTF-8) into ``digest``."""

    def __init__(self, fh, digest):
        self.fh, self.digest = fh, digest

    def write(self, text: str) -> None:
        self.digest.update(text.encode("utf-8"))
        self.fh.write(text)


def _stored_key(request_json: str) -> str | None:
    try:
        return request_key(json.loads(request_json))
    except ValueError:
        return None


def _error(file: str, line: int, field: str, message: str) -> InputError:
    return InputError(file, f"line {line}", field, message, fix=_FIX)


def _response(raw: dict, file: str, n: int) -> tuple[str, str, str, str, str, float, str | None]:
    extra = sorted(set(raw) - {"table", "key", "kind", "model", "stage", "created_at", "request", "response"})
    if extra:
        raise _error(file, n, extra[0], "unexpected field")
    key, kind, model, stage, created = (raw.get(k) for k in ("key", "kind", "model", "stage", "created_at"))
    request, response = raw.get("request"), raw.get("response")
    if not isinstance(key, str) or not _KEY.match(key):
        raise _error(file, n, "key", f"expected a sha256 (64 lowercase hex digits), got {key!r:.80}")
    if kind not in KINDS:
        raise _error(file, n, "kind", f"expected one of {list(KINDS)}, got {kind!r:.60}")
    if not isinstance(model, str) or not model:
        raise _error(file, n, "model", f"expected a non-empty string, got {model!r:.60}")
    if stage is not None and not isinstance(stage, str):
        raise _error(file, n, "stage", f"expected a string or null, got {stage!r:.60}")
    if isinstance(created, bool) or not isinstance(created, int | float) or not math.isfinite(created) or created < 0:
        raise _error(file, n, "created_at", f"expected a time in seconds >= 0, got {created!r:.60}")
    for name, value in (("request", request), ("response", response)):
        if not isinstance(value, dict):
            raise _error(file, n, name, f"expected a JSON object, got {type(value).__name__}")
    try:
        actual = request_key(request)
    except ValueError as exc:
        raise _error(file, n, "request", f"not canonical JSON ({exc})") from None
    if actual != key:
        raise _error(file, n, "key", f"{key} is not the sha256 of the request ({actual}): the line was altered")
    if request.get("kind") != kind or request.get("model") != model:
        raise _error(file, n, "kind" if request.get("kind") != kind else "model", "differs from the request's")
    return key, kind, model, canonical_json(request), canonical_json(response), float(created), stage


def _embedding(raw: dict, file: str, n: int) -> tuple[str, int, bytes]:
    extra = sorted(set(raw) - {"table", "key", "dim", "vector"})
    if extra:
        raise _error(file, n, extra[0], "unexpected field")
    key, dim, vector = raw.get("key"), raw.get("dim"), raw.get("vector")
    if not isinstance(key, str) or not _KEY.match(key):
        raise _error(file, n, "key", f"expected a sha256 (64 lowercase hex digits), got {key!r:.80}")
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
        raise _error(file, n, "dim", f"expected an integer >= 1, got {dim!r:.60}")
    try:
        vec = base64.b64decode(vector, validate=True) if isinstance(vector, str) else None
    except (binascii.Error, ValueError):
        vec = None
    if vec is None or len(vec) != 4 * dim:
        raise _error(file, n, "vector", f"expected base64 of {dim} float32 values ({4 * dim} bytes)")
    return key, dim, vec


def read_export(path: str | Path) -> Iterator[tuple[str, tuple]]:
    """``("responses" | "embeddings", row)`` for every line of an export file, checked; the last item is
    ``("end", (responses, embeddings))``. Any problem raises InputError naming the file, line and field."""
    file = str(path)
    counts = {"responses": 0, "embeddings": 0}
    n, end, digest = 0, False, hashlib.sha256()
    with open(require_file(path, fix="pass a file written by `mnemetric cache export`"), encoding="utf-8") as fh:
        for n, text in enumerate(fh, start=1):
            if end:
                raise _error(file, n, "<line>", "a line after the end record")
            try:
                raw = json.loads(text)
            except json.JSONDecodeError as exc:
                raise _error(file, n, "<json>", f"not valid JSON ({exc.msg}, column {exc.colno}): damaged or "
                                                "truncated") from None
            if not isinstance(raw, dict):
                raise _error(file, n, "<line>", f"expected a JSON object, got {type(raw).__name__}")
            if n == 1:
                digest.update(text.encode("utf-8"))
                if raw != {"schema": SCHEMA}:
                    raise _error(file, n, "schema", f"expected {{\"schema\": {SCHEMA!r}}} first, got {text.strip():.80}")
                continue
            if "end" in raw:
                if raw != {"end": True, **counts, "sha256": digest.hexdigest()}:
                    raise _error(file, n, "end", f"the end record {text.strip():.120} does not match the file's "
                                                 f"{counts['responses']} responses, {counts['embeddings']} embeddings "
                                                 f"and sha256 {digest.hexdigest()}: a line was changed or lost")
                end = True
                continue
            digest.update(text.encode("utf-8"))
            table = raw.get("table")
            if table not in counts:
                raise _error(file, n, "table", f"expected 'responses' or 'embeddings', got {table!r:.60}")
            counts[table] += 1
            yield table, (_response(raw, file, n) if table == "responses" else _embedding(raw, file, n))
    if not end:
        raise _error(file, max(n, 1), "end", "the file ends before its end record: truncated")
    yield "end", (counts["responses"], counts["embeddings"])


def import_cache(path: str | Path, root: Path) -> Moved:
    """Add the rows of export file ``path`` to the caches under ``root`` (module docstring): the file is
    checked whole first, then each store takes its new keys in one transaction."""
    totals = (0, 0)
    for table, row in read_export(path):  # check every line before anything is written
        if table == "end":
            totals = row
    added_resp = added_emb = 0
    if totals[0]:
        with ResponseCache(root / CACHE_FILENAME) as cache:
            added_resp = cache.import_rows(r for t, r in read_export(path) if t == "responses")
    if totals[1]:
        store = VectorStore(root / VECTORS_FILENAME)
        try:
            added_emb = store.import_rows(r for t, r in read_export(path) if t == "embeddings")
        finally:
            store.close()
    return Moved(totals[0], totals[1], added_resp, added_emb)


def summary(action: str, path: str | Path, moved: Moved) -> str:
    """One line for the CLI."""
    if action == "export":
        skipped = f"; {moved.skipped} damaged row(s) left out (key is not the request's sha256)" if moved.skipped else ""
        return f"exported {moved.responses} response(s) and {moved.embeddings} embedding vector(s) → {path}{skipped}"
    return (f"imported {path}: {moved.responses_added} of {moved.responses} response(s) and {moved.embeddings_added} "
            f"of {moved.embeddings} embedding vector(s) added (the rest were already cached)")
