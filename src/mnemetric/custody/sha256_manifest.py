"""sha256 custody of a run's outputs (``data/custody/outputs.sha256.json``, schema ``mnemetric.outputs-sha256/v1``).

DVC hashes its outputs with md5; researchers publish sha256 (LongMemEval tracker issues #51, #53:
dataset sha256, judge snapshot, sha256 of the judge output). The pipeline writes one sha256 (and
size) per file of the run — which files is the family's (``Family.output_files``; LongMemEval's:
:func:`mnemetric.longmemeval.family.output_files`) — and :func:`verify` re-hashes the workspace (or
a revision, through :mod:`dvc.api`) against it, naming every file that drifted. This module imports
no family.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from mnemetric.errors import InputError

SCHEMA = "mnemetric.outputs-sha256/v1"
DEFAULT_PATH = "data/custody/outputs.sha256.json"
CHUNK = 1 << 20


def sha256_stream(fh: IO[bytes]) -> tuple[str, int]:
    """(sha256 hex, size in bytes) of a binary stream."""
    h, size = hashlib.sha256(), 0
    while chunk := fh.read(CHUNK):
        h.update(chunk)
        size += len(chunk)
    return h.hexdigest(), size


def build(files: list[str], opener: Callable[[str], AbstractContextManager[IO[bytes]]]) -> dict[str, Any]:
    """The manifest of ``files`` (sorted by path), each hashed through ``opener(path)``."""
    entries = {}
    for path in sorted(set(files)):
        with opener(path) as fh:
            sha, size = sha256_stream(fh)
        entries[path] = {"sha256": sha, "size": size}
    return {"schema": SCHEMA, "algorithm": "sha256", "files": entries}


def workspace_opener(root: str | Path = ".") -> Callable[[str], AbstractContextManager[IO[bytes]]]:
    """Open ``path`` under ``root``; a missing file is an InputError naming it."""
    def open_(path: str):
        full = Path(root) / path
        if not full.is_file():
            raise InputError(path, "<file>", "<file>", "does not exist", fix="run the pipeline (dvc repro)")
        return open(full, "rb")
    return open_


def revision_opener(rev: str, repo: str | None = None) -> Callable[[str], AbstractContextManager[IO[bytes]]]:
    """Open ``path`` as it was at git revision ``rev`` (git-tracked or DVC-tracked, via dvc.api.open)."""
    import dvc.api

    def open_(path: str):
        return dvc.api.open(path, repo=repo, rev=rev, mode="rb")
    return open_


@dataclass(frozen=True)
class Drift:
    """A file whose bytes no longer hash to the manifest's sha256 (``actual`` None: missing/unreadable)."""

    path: str
    expected: str
    actual: str | None
    detail: str = ""


def read_manifest(raw: Any, *, file: str) -> dict[str, dict[str, Any]]:
    """The ``files`` map of a manifest, validated (file, record = the path, field)."""
    if not isinstance(raw, Mapping) or raw.get("schema") != SCHEMA:
        raise InputError(file, "<file>", "schema", f"expected {SCHEMA!r}", fix="written by the custody_manifest stage")
    files = raw.get("files")
    if not isinstance(files, Mapping):
        raise InputError(file, "<file>", "files", "expected an object of path -> {sha256, size}")
    for path, entry in files.items():
        sha = entry.get("sha256") if isinstance(entry, Mapping) else None
        if not (isinstance(sha, str) and len(sha) == 64):
            raise InputError(file, path, "sha256", "expected a 64-hex-digit sha256")
    return {str(k): dict(v) for k, v in files.items()}


def verify(files: Mapping[str, Mapping[str, Any]],
           opener: Callable[[str], AbstractContextManager[IO[bytes]]]) -> Iterator[tuple[str, Drift | None]]:
    """(path, None) when a file still hashes to its sha256, else (path, Drift); every file is checked."""
    for path in sorted(files):
        expected = files[path]["sha256"]
        try:
            with opener(path) as fh:
                actual, _ = sha256_stream(fh)
        except Exception as exc:  # noqa: BLE001 — a missing file (workspace or revision) is drift, named
            yield path, Drift(path, expected, None, f"{type(exc).__name__}: {exc}".splitlines()[0])
            continue
        yield path, None if actual == expected else Drift(path, expected, actual)
