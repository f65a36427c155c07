"""The leaderboard package's tarball: written deterministically, read back safely.

Upstream (leaderboard/submission_utils.py create_tarball at be15ea6) packs the submission folder as
``<submission>.tar.gz`` (gzip, arcname = the folder's name) after refusing symlinks and anything that is not a
file or a folder. Ours packs the same tree and, so that the same inputs give the same bytes: members sorted by
path (a folder before what it holds), mtime 0, uid/gid 0, no user or group names, mode 0644 for files and 0755
for folders, PAX-free GNU format, and a gzip header with no file name and mtime 0. Written atomically.

:func:`extract_safely` is what ``mnemetric v2 package --check`` opens any tarball with (ours or hand-made):
every member must be a regular file or a folder whose normalised path stays inside one root folder named
``<submission>`` (the tarball's name without ``.tar.gz``) — no absolute path, no ``..``, no symlink, hard link,
device or FIFO, no member twice; the first offending member is refused by name before anything is extracted.
"""

from __future__ import annotations

import gzip
import io
import posixpath
import tarfile
from pathlib import Path, PurePosixPath

from mnemetric.errors import InputError
from mnemetric.io import atomic_open

SUFFIX = ".tar.gz"


def _members(root: Path) -> list[Path]:
    out = []
    for path in sorted(root.rglob("*"), key=lambda p: p.relative_to(root).as_posix()):
        if path.is_symlink():
            raise InputError(str(path), "<file>", "<type>", "a symlink: the package holds regular files only")
        if not (path.is_file() or path.is_dir()):
            raise InputError(str(path), "<file>", "<type>", "not a regular file or folder")
        out.append(path)
    return out


def _info(name: str, *, size: int = 0, folder: bool = False) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE if folder else tarfile.REGTYPE
    info.mode, info.size, info.mtime = (0o755 if folder else 0o644), size, 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def write_tarball(folder: Path, archive: Path) -> Path:
    """``folder`` as ``archive`` (``<name>.tar.gz``), arcname = the folder's name (module docstring)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as tar:
        tar.addfile(_info(folder.name, folder=True))
        for path in _members(folder):
            name = f"{folder.name}/{path.relative_to(folder).as_posix()}"
            if path.is_dir():
                tar.addfile(_info(name, folder=True))
            else:
                data = path.read_bytes()
                tar.addfile(_info(name, size=len(data)), io.BytesIO(data))
    with atomic_open(archive, "wb") as fh:
        with gzip.GzipFile(filename="", mode="wb", fileobj=fh, mtime=0) as gz:
            gz.write(buffer.getvalue())
    return archive


def submission_of(archive: Path) -> str:
    name = archive.name
    if not name.endswith(SUFFIX) or len(name) == len(SUFFIX):
        raise InputError(str(archive), "<file>", "<name>", f"a package is named <submission>{SUFFIX}")
    return name[: -len(SUFFIX)]


def _check_member(archive: Path, member: tarfile.TarInfo, root: str, seen: set[str]) -> str:
    where = f"member {member.name!r}"
    if not (member.isfile() or member.isdir()):
        kind = "a symlink" if member.issym() else "a hard link" if member.islnk() else "not a regular file or folder"
        raise InputError(str(archive), where, "<type>", f"{kind}: a package holds regular files and folders only")
    raw = member.name
    if raw.startswith("/") or PurePosixPath(raw).is_absolute() or "\\" in raw:
        raise InputError(str(archive), where, "<path>", "an absolute path: every member stays inside the package root")
    norm = posixpath.normpath(raw)
    if norm == ".." or norm.startswith("../") or "/../" in f"/{raw}/":
        raise InputError(str(archive), where, "<path>", "a path with '..' that escapes the package root")
    if norm.split("/")[0] != root:
        raise InputError(str(archive), where, "<path>", f"outside the package root {root}/ (the tarball's name)")
    if norm in seen:
        raise InputError(str(archive), where, "<path>", "appears twice in the tarball")
    seen.add(norm)
    return norm


def extract_safely(archive: Path, dest: Path) -> Path:
    """Check every member (module docstring), then extract into ``dest``; returns ``dest/<submission>``."""
    root = submission_of(archive)
    if not archive.is_file():
        raise InputError(str(archive), "<file>", "<file>", "does not exist")
    try:
        with tarfile.open(archive, "r:gz") as tar:
            members = tar.getmembers()
            seen: set[str] = set()
            for member in members:
                _check_member(archive, member, root, seen)
            for member in members:
                target = dest / posixpath.normpath(member.name)
                if member.isdir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                source = tar.extractfile(member)
                assert source is not None  # a regular file
                target.write_bytes(source.read())
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise InputError(str(archive), "<file>", "<tar.gz>", f"not a readable gzip tarball ({exc})") from None
    if not (dest / root).is_dir():
        raise InputError(str(archive), "<file>", "<path>", f"holds no package root {root}/")
    return dest / root
