"""Atomic file output and hashing: the only way Mnemetric writes results.

A file written here either has its complete new content or does not exist / keeps its old
content: data goes to a temporary file in the same folder, is flushed and fsynced, then renamed
over the target. A crash or Ctrl-C never leaves a half-written file that looks complete.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

CHUNK = 1 << 20
_UMASK = os.umask(0)
os.umask(_UMASK)


_commit_guard: Callable[[], None] | None = None


def set_commit_guard(guard: Callable[[], None] | None) -> None:
    """Run ``guard`` before every atomic rename of this process (a stage sets one; None removes it)."""
    global _commit_guard
    _commit_guard = guard


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "w") -> Iterator[IO[Any]]:
    """Open a temporary sibling of ``path`` for writing; rename it over ``path`` on success."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.fchmod(fd, 0o666 & ~_UMASK)  # mkstemp makes 0600; give the file the usual mode
    binary = "b" in mode
    try:
        with os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8"})) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        if _commit_guard is not None:
            _commit_guard()  # e.g. "params.yaml still says what this stage read"; raising writes nothing
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(target.parent)


def _fsync_dir(folder: Path) -> None:
    """fsync a folder so a rename inside it survives a power loss (skipped where not supported)."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some platforms / file systems refuse to fsync a directory
    finally:
        os.close(fd)


def dumps_canonical(obj: Any, *, ascii: bool = False, finite: bool = False) -> str:
    """Canonical JSON, the one spelling of every content hash: sorted keys, no whitespace
    (separators ``,`` and ``:``), non-ASCII kept as UTF-8 text.

    ``ascii=True`` escapes non-ASCII as ``\\uXXXX`` (json's default; the custody config hash was
    always made so, and its committed hashes must not change). ``finite=True`` refuses NaN and
    Infinity (ValueError) instead of writing the non-JSON tokens (the LLM cache's keys and values).
    """
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=ascii, allow_nan=not finite)


def write_json_atomic(path: str | os.PathLike[str], obj: Any) -> None:
    with atomic_open(path) as fh:
        json.dump(obj, fh, indent=2, sort_keys=False, ensure_ascii=False)
        fh.write("\n")


def write_jsonl_atomic(path: str | os.PathLike[str], records: Iterable[Any]) -> int:
    n = 0
    with atomic_open(path) as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False))
            fh.write("\n")
            n += 1
    return n


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    return sha256_bytes(text.encode("utf-8"))


def sha256_file(path: str | os.PathLike[str]) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def require_file(path: str | os.PathLike[str], fix: str | None = None) -> Path:
    """``path`` as a Path if it names an existing file, else InputError (file, "<file>", "<file>")."""
    from mnemetric.errors import InputError

    p = Path(path)
    if not p.exists():
        raise InputError(str(path), "<file>", "<file>", "does not exist", fix=fix)
    if p.is_dir():
        raise InputError(str(path), "<file>", "<file>", "is a folder, not a file", fix=fix)
    return p


def read_jsonl(path: str | os.PathLike[str]) -> Iterator[tuple[int, Any]]:
    """Yield (line_number, object) for each non-empty line. A missing file, bytes that are not UTF-8,
    bad JSON, or a number JSON does not have (NaN, Infinity, -Infinity, or one that overflows to
    infinity such as 1e999: RFC 8259 numbers are finite; Python's json accepts them) raise
    InputError naming the file and line."""
    import math

    from mnemetric.errors import InputError

    class NotFinite(ValueError):
        pass

    def constant(text: str) -> float:
        raise NotFinite(text)

    def finite(text: str) -> float:
        value = float(text)
        if not math.isfinite(value):
            raise NotFinite(text)
        return value

    decoder = json.JSONDecoder(parse_constant=constant, parse_float=finite)
    with open(require_file(path), "rb") as fh:
        for lineno, data in enumerate(fh, start=1):
            where = (str(path), f"line {lineno}")
            try:
                line = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(*where, "<encoding>", f"byte 0x{data[exc.start]:02x} at column {exc.start + 1} is not "
                                 f"valid UTF-8 ({exc.reason})", fix="save the file as UTF-8") from None
            if not line.strip():
                continue
            try:
                obj = decoder.decode(line)
            except json.JSONDecodeError as exc:
                raise InputError(*where, "<json>", f"not valid JSON ({exc.msg})") from None
            except NotFinite as exc:
                raise InputError(*where, "<json>", f"{exc} is not valid JSON: numbers must be finite (no NaN or "
                                 "Infinity)", fix="write a finite number, null or a string instead") from None
            yield lineno, obj
