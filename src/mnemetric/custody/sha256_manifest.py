"""sha256 custody of a run's outputs (``data/custody/outputs.sha256.json``, schema ``mnemetric.outputs-sha256/v1``).

DVC hashes its outputs with md5; researchers publish sha256 (LongMemEval tracker issues #51, #53:
dataset sha256, judge snapshot, sha256 of the judge output). The pipeline writes one sha256 (and
size) per file of the run — which files is the family's (``Family.output_files``; LongMemEval's:
:func:`mnemetric.longmemeval.family.output_files`) — and :func:`verify` re-hashes the workspace (or
a revision, through :mod:`dvc.api`) against it, naming every file that drifted. This module imports
no family.

The file, typed once (:class:`Sha256Manifest`, reader beside writer; ``json.dump(indent=2)``):
``{"schema": "mnemetric.outputs-sha256/v1", "algorithm": "sha256", "files": {path: {"sha256", "size"}}}``,
paths sorted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from mnemetric.errors import InputError
from mnemetric.io import write_json_atomic
from mnemetric.records import Fields, read_json_file

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


_FIX = "written by the custody_manifest stage (`dvc repro custody_manifest`)"


@dataclass(frozen=True)
class FileDigest:
    """One file of the manifest: its sha256 (64 lowercase hex digits) and size in bytes."""

    sha256: str
    size: int

    @classmethod
    def from_record(cls, raw: Any, *, file: str, path: str) -> FileDigest:
        f = Fields.of(raw, file=file, record=path, fix=_FIX).only(("sha256", "size"))
        sha = f.string("sha256")
        if len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
            raise f.error("sha256", "expected a 64-hex-digit sha256")
        return cls(sha, f.count("size"))

    def to_record(self) -> dict[str, Any]:
        return {"sha256": self.sha256, "size": self.size}


@dataclass(frozen=True)
class Sha256Manifest:
    """data/custody/outputs.sha256.json: the sha256 and size of every file of a run, by path (sorted)."""

    files: Mapping[str, FileDigest]

    def __post_init__(self) -> None:
        object.__setattr__(self, "files", {p: self.files[p] for p in sorted(self.files)})

    @classmethod
    def from_record(cls, raw: Any, *, file: str) -> Sha256Manifest:
        """Validate a manifest; errors name the file, the record (``<file>`` or the path) and the field."""
        f = Fields.of(raw, file=file, record="<file>", fix=_FIX).only(("schema", "algorithm", "files"))
        if f.string("schema") != SCHEMA:
            raise f.error("schema", f"expected {SCHEMA!r}, got {f.raw['schema']!r}")
        if f.string("algorithm") != "sha256":
            raise f.error("algorithm", f"expected 'sha256', got {f.raw['algorithm']!r}")
        files = f.get("files", ((Mapping,), "an object of path -> {sha256, size}"))
        return cls({str(p): FileDigest.from_record(entry, file=file, path=str(p)) for p, entry in files.items()})

    def to_record(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "algorithm": "sha256", "files": {p: d.to_record() for p, d in self.files.items()}}


def write_sha256_manifest(path: str | Path, manifest: Sha256Manifest) -> None:
    """Write the manifest atomically (``json.dump(indent=2)``)."""
    write_json_atomic(path, manifest.to_record())


def read_sha256_manifest(path: str | Path) -> Sha256Manifest:
    """Read and validate a manifest file."""
    return Sha256Manifest.from_record(read_json_file(path, missing_fix="run the pipeline (dvc repro) first", fix=_FIX),
                                      file=str(path))


def build(files: list[str], opener: Callable[[str], AbstractContextManager[IO[bytes]]]) -> Sha256Manifest:
    """The manifest of ``files`` (sorted by path), each hashed through ``opener(path)``."""
    entries = {}
    for path in sorted(set(files)):
        with opener(path) as fh:
            sha, size = sha256_stream(fh)
        entries[path] = FileDigest(sha, size)
    return Sha256Manifest(entries)


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


def verify(files: Mapping[str, FileDigest],
           opener: Callable[[str], AbstractContextManager[IO[bytes]]]) -> Iterator[tuple[str, Drift | None]]:
    """(path, None) when a file still hashes to its sha256, else (path, Drift); every file is checked."""
    for path in sorted(files):
        expected = files[path].sha256
        try:
            with opener(path) as fh:
                actual, _ = sha256_stream(fh)
        except Exception as exc:  # noqa: BLE001 — a missing file (workspace or revision) is drift, named
            yield path, Drift(path, expected, None, f"{type(exc).__name__}: {exc}".splitlines()[0])
            continue
        yield path, None if actual == expected else Drift(path, expected, actual)


@dataclass(frozen=True)
class Sha256Shown:
    """What the doors (the card's judged-file bullet) read of the manifest: path -> sha256, typed. A manifest
    without ``files`` (or a file without ``sha256``) shows as not in custody; a value of the wrong type is an
    InputError naming the file, the path and the field."""

    sha256: Mapping[str, str | None]

    @classmethod
    def from_record(cls, raw: Any, *, file: str = DEFAULT_PATH) -> Sha256Shown:
        files = Fields.shown(raw, file=file, fix=_FIX).within("files")
        text = ((str,), "a string")
        return cls({str(p): Fields.shown(entry, file=file, record=str(p), fix=_FIX).maybe("sha256", text)
                    for p, entry in files.raw.items()})
