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


COMPRESSED = ((b"\x1f\x8b", "gzip", "gunzip FILE"), (b"BZh", "bzip2", "bunzip2 FILE"),
              (b"\xfd7zXZ\x00", "xz", "unxz FILE"), (b"PK\x03\x04", "zip", "unzip FILE"),
              (b"(\xb5/\xfd", "zstd", "unzstd FILE"))
"""(magic bytes, format, the command that decompresses it): a compressed input is named as such
instead of failing later as text that is not UTF-8 (a gzip header's NUL bytes look UTF-16)."""


def file_problem(path: str | os.PathLike[str]) -> tuple[str, str | None] | None:
    """Why ``path`` cannot be read as a data file: (message, fix), or None when it is a regular file.

    Checked before any read: a missing path, a folder, a special file (a FIFO would block the
    reader forever, a device never ends), an unreadable file, compressed bytes (gzip, bzip2, xz,
    zip, zstd by their magic bytes)."""
    import stat

    p = Path(path)
    try:
        mode = p.stat().st_mode
    except FileNotFoundError:
        return "does not exist", None
    except OSError as exc:
        return f"cannot be read ({exc.strerror})", None
    if stat.S_ISDIR(mode):
        return "is a folder, not a file", None
    if not stat.S_ISREG(mode):
        kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a character device" if stat.S_ISCHR(mode) else
                "a block device" if stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) else "a special file")
        return (f"is {kind}, not a regular file: data files are read from disk (a pipe or device would block "
                "or never end)", "save the data to a regular file and pass that path")
    try:
        with open(p, "rb") as fh:
            head = fh.read(6)
    except OSError as exc:
        return f"cannot be read ({exc.strerror})", None
    for magic, name, command in COMPRESSED:
        if head.startswith(magic):
            return (f"is a {name} file (starts with the {name} magic bytes {magic.hex(' ')}), not text",
                    f"decompress it first ({command.replace('FILE', str(path))}) and pass the result")
    return None


def require_file(path: str | os.PathLike[str], fix: str | None = None) -> Path:
    """``path`` as a Path if it names a readable, regular, uncompressed file (see :func:`file_problem`),
    else InputError (file, "<file>", "<file>"); ``fix`` is suggested for a missing path."""
    from mnemetric.errors import InputError

    found = file_problem(path)
    if found is not None:
        message, own_fix = found
        raise InputError(str(path), "<file>", "<file>", message, fix=own_fix or fix)
    return Path(path)


class DuplicateKey(ValueError):
    """A JSON object names one key twice (``json`` keeps the last value silently; other readers the first)."""

    def __init__(self, key: str):
        self.key = key
        super().__init__(f"key {key!r} appears twice in one object")


def repeated_key(pairs: list[tuple[str, Any]]) -> str | None:
    """The first key that ``pairs`` (one JSON object, in file order) holds twice, else None."""
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            return key
        seen.add(key)
    return None


def unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` of strict JSON: the object as a dict, or DuplicateKey for a repeated key."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise DuplicateKey(repeated_key(pairs))
    return obj


DUPLICATE_FIX = "keep one value for the key: JSON readers disagree on which of the two counts"


def duplicate_key_error(file: str, record: str, exc: DuplicateKey, text: str | None = None):
    """The InputError for ``exc``, naming the key; with the record's ``text`` the record's question_id
    is added when it has one (``line 3 (q7)``)."""
    from mnemetric.errors import InputError

    qid = None
    if text is not None:
        with contextlib.suppress(ValueError, RecursionError):
            obj = json.loads(text)
            qid = obj.get("question_id") if isinstance(obj, dict) else None
    where = f"{record} ({qid})" if isinstance(qid, str) and qid else record
    return InputError(file, where, exc.key, f"duplicate key: {exc}", fix=DUPLICATE_FIX)


def read_jsonl(path: str | os.PathLike[str]) -> Iterator[tuple[int, Any]]:
    """Yield (line_number, object) for each non-empty line. A missing file, bytes that are not UTF-8,
    bad JSON, or a number JSON does not have (NaN, Infinity, -Infinity, or one that overflows to
    infinity such as 1e999: RFC 8259 numbers are finite; Python's json accepts them), or a key twice
    in one object raise InputError naming the file and line (and the key)."""
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

    decoder = json.JSONDecoder(parse_constant=constant, parse_float=finite, object_pairs_hook=unique_object)
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
            except DuplicateKey as exc:
                raise duplicate_key_error(*where, exc, line) from None
            except NotFinite as exc:
                raise InputError(*where, "<json>", f"{exc} is not valid JSON: numbers must be finite (no NaN or "
                                 "Infinity)", fix="write a finite number, null or a string instead") from None
            yield lineno, obj
