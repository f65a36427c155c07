"""Obtain one file of an upstream repository at a pinned revision, verified by its sha256.

Benchmark-agnostic: a :class:`PinnedFile` says *which* bytes we expect (repo, revision, path,
sha256); :func:`obtain` returns a local path holding exactly those bytes, or raises a clear
error. Where the bytes come from, in this order:

1. ``<checkout_dir>/<path>`` when a checkout is named (the caller passes ``checkout_dir``, usually
   from the repository's environment variable, see :func:`env_checkout`); verified, never copied.
   A checkout that lacks the file, or holds other bytes, is an error: there is no silent fallback.
2. The cache copy ``<cache_dir>/upstream/<sha256>/<basename>`` (content-addressed); verified.
3. A download from ``{base_url}/{repo}/{revision}/{path}`` (raw.githubusercontent.com layout)
   through :func:`mnemetric.download.fetch_small` (the project's one HTTP GET; never a token),
   stored in the cache (atomic write) only if its sha256 matches; a mismatch stores nothing.

Nothing obtained here is executed or imported: callers parse it (see :mod:`.literals`).

:class:`KnownPins` is a table of known (repo, revision, path) → sha256 pairs with a status:
"verified" (we hashed the file at that revision ourselves) or "reported" (a third party lists the
hash; we could not check it). A run that used a file whose status is not "verified" is never
official.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from mnemetric.errors import ConfigError, DownloadError, IntegrityError
from mnemetric.io import atomic_open, sha256_bytes, sha256_file

DEFAULT_BASE_URL = "https://raw.githubusercontent.com"
VERIFIED = "verified"
REPORTED = "reported"
STATUSES = (VERIFIED, REPORTED)

CHECKOUT_ENV: Mapping[str, str] = {
    "xiaowu0162/LongMemEval": "MNEMETRIC_LONGMEMEVAL_DIR",
    "xiaowu0162/LongMemEval-V2": "MNEMETRIC_LONGMEMEVAL_V2_DIR",
}
"""Repository → the environment variable that names a local checkout of it."""

_SHA256 = re.compile(r"[0-9a-f]{64}")
_REPO = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*")


def env_checkout(repo: str) -> str | None:
    """The environment variable naming a checkout of ``repo`` (None for a repository we do not map)."""
    return CHECKOUT_ENV.get(repo)


def checkout_from_env(repo: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The checkout folder named by ``repo``'s environment variable, if that variable is set and non-empty."""
    name = env_checkout(repo)
    value = (os.environ if environ is None else environ).get(name) if name else None
    return value or None


@dataclass(frozen=True)
class PinnedFile:
    """One upstream file: repository ``owner/name``, full commit, path inside the repo, sha256 of its bytes."""

    repo: str
    revision: str
    path: str
    """POSIX path inside the repository, e.g. ``evaluation/harness.py``."""
    sha256: str
    """Lower-case hex sha256 of the file's bytes."""

    def __post_init__(self) -> None:
        problems = []
        if not _REPO.fullmatch(self.repo):
            problems.append(f"repo {self.repo!r} is not 'owner/name'")
        if not self.revision or not re.fullmatch(r"[0-9a-f]{7,40}", self.revision):
            problems.append(f"revision {self.revision!r} is not a hex commit id")
        pure = PurePosixPath(self.path)
        if not self.path or pure.is_absolute() or ".." in pure.parts:
            problems.append(f"path {self.path!r} is not a relative path inside the repository")
        if not _SHA256.fullmatch(self.sha256):
            problems.append(f"sha256 {self.sha256!r} is not 64 lower-case hex digits")
        if problems:
            raise ConfigError("pinned upstream file", "; ".join(problems))

    @property
    def name(self) -> str:
        """The file's base name (the cache keeps it)."""
        return PurePosixPath(self.path).name

    def url(self, base: str = DEFAULT_BASE_URL) -> str:
        """Raw-file URL: ``{base}/{repo}/{revision}/{path}``."""
        return f"{base.rstrip('/')}/{self.repo}/{self.revision}/{self.path}"

    def cache_path(self, cache_dir: str | os.PathLike[str]) -> Path:
        """Where a verified download is kept: ``<cache_dir>/upstream/<sha256>/<basename>``."""
        return Path(cache_dir) / "upstream" / self.sha256 / self.name

    def describe(self) -> str:
        """``repo path @ revision`` for messages."""
        return f"{self.repo} {self.path} @ {self.revision}"


def fix_text(pin: PinnedFile) -> str:
    """How to make ``pin`` available: the env var, the clone + checkout commands, or the network."""
    folder = pin.repo.split("/", 1)[1]
    clone = f"git clone https://github.com/{pin.repo} && git -C {folder} checkout {pin.revision}"
    env = env_checkout(pin.repo)
    where = f"set {env} to" if env else "pass checkout_dir ="
    return (f"{where} a checkout of https://github.com/{pin.repo} at revision {pin.revision} ({clone}), "
            "or allow network access so Mnemetric can download and cache the file")


# --------------------------------------------------------------------------- the table of known pins


@dataclass(frozen=True)
class KnownPin:
    """One row of :class:`KnownPins`."""

    file: PinnedFile
    status: str
    """"verified" (hashed by us at that revision) or "reported" (third-party, unchecked)."""
    source: str = ""
    """Where the hash comes from (who checked it, when)."""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ConfigError("known pin status", f"{self.status!r} for {self.file.describe()}; expected one of {STATUSES}")

    @property
    def verified(self) -> bool:
        return self.status == VERIFIED


class KnownPins:
    """A table of known (repo, revision, path) → sha256 with a status; lookups accept a revision
    prefix of at least 7 hex digits when it names one revision unambiguously."""

    def __init__(self, entries: Iterable[KnownPin]):
        self._rows: dict[tuple[str, str, str], KnownPin] = {}
        for entry in entries:
            key = (entry.file.repo, entry.file.revision, entry.file.path)
            if key in self._rows and self._rows[key] != entry:
                raise ConfigError("known pins", f"two different rows for {entry.file.describe()}")
            self._rows[key] = entry

    def __iter__(self) -> Iterator[KnownPin]:
        return iter(self._rows.values())

    def __len__(self) -> int:
        return len(self._rows)

    def extended(self, entries: Iterable[KnownPin]) -> KnownPins:
        """A new table with ``entries`` added (for example a pin a user verified themselves)."""
        return KnownPins([*self, *entries])

    def get(self, repo: str, revision: str, path: str) -> KnownPin | None:
        """The row for (repo, revision or a unique prefix of it, path), else None."""
        rows = [r for (rp, rev, p), r in self._rows.items()
                if rp == repo and p == path and len(revision) >= 7 and rev.startswith(revision)]
        return rows[0] if len(rows) == 1 else None

    def pin(self, repo: str, revision: str, path: str) -> PinnedFile:
        """The pinned file for (repo, revision, path); ConfigError listing the known revisions if absent."""
        row = self.get(repo, revision, path)
        if row is None:
            known = [f"{r.file.revision} ({r.status})" for r in self if r.file.repo == repo and r.file.path == path]
            raise ConfigError(
                "upstream revision", f"no known sha256 for {repo} {path} @ {revision}; known: {', '.join(known) or 'none'}",
                fix="use a known revision, or verify the file yourself and add its (revision, path, sha256) to the table",
            )
        return row.file

    def status_of(self, pin: PinnedFile) -> str | None:
        """The status of exactly these bytes at this revision, else None (unknown revision or other hash)."""
        row = self._rows.get((pin.repo, pin.revision, pin.path))
        return row.status if row is not None and row.file.sha256 == pin.sha256 else None

    def is_verified(self, pin: PinnedFile) -> bool:
        """True only for a row with status "verified" and the same sha256."""
        return self.status_of(pin) == VERIFIED

    def matching(self, repo: str, path: str, sha256: str) -> tuple[KnownPin, ...]:
        """Every known revision whose file at ``path`` has exactly these bytes."""
        return tuple(r for r in self if r.file.repo == repo and r.file.path == path and r.file.sha256 == sha256)

    def verified_sha256s(self, repo: str, path: str) -> frozenset[str]:
        """sha256 values of ``path`` that we verified at some revision."""
        return frozenset(r.file.sha256 for r in self if r.file.repo == repo and r.file.path == path and r.verified)


# --------------------------------------------------------------------------- obtaining the bytes


def verify(path: Path, pin: PinnedFile, *, fix: str, known: KnownPins | None = None) -> Path:
    """Return ``path`` if its bytes hash to ``pin.sha256``; IntegrityError naming both hashes otherwise."""
    actual = sha256_file(path)
    if actual != pin.sha256:
        raise IntegrityError(_mismatch(str(path), pin, actual, fix, known))
    return path


def _mismatch(where: str, pin: PinnedFile, actual: str, fix: str, known: KnownPins | None) -> str:
    lines = [f"{where}: sha256 mismatch for {pin.describe()}",
             f"  expected sha256: {pin.sha256}", f"  actual sha256:   {actual}"]
    for row in known.matching(pin.repo, pin.path, actual) if known is not None else ():
        lines.append(f"  note: these bytes are {pin.path} at revision {row.file.revision} ({row.status})")
    lines.append(f"  fix: {fix}")
    return "\n".join(lines)


def obtain(pin: PinnedFile, *, checkout_dir: str | os.PathLike[str] | None = None,
           cache_dir: str | os.PathLike[str], download: bool = True, base_url: str = DEFAULT_BASE_URL,
           timeout: float = 60.0, known: KnownPins | None = None) -> Path:
    """Return a local path whose bytes hash to ``pin.sha256`` (checkout, else cache, else download).

    ``known`` (optional) lets a mismatch message say which other known revision the bytes are.
    """
    env = env_checkout(pin.repo)
    if checkout_dir:
        path = Path(checkout_dir) / pin.path
        if not path.is_file():
            named = f"{env} / checkout_dir" if env else "checkout_dir"
            raise ConfigError(named, f"{path}: file not found in the checkout it names ({checkout_dir})",
                              fix=fix_text(pin))
        fix = (f"the file is not the pinned upstream revision; run git -C {checkout_dir} checkout {pin.revision} "
               f"(or point {env or 'checkout_dir'} at a checkout of that revision)")
        return verify(path, pin, fix=fix, known=known)
    cached = pin.cache_path(cache_dir)
    if cached.is_file():
        fix = f"the cached copy is corrupted; delete {cached} and rerun to download it again, or {fix_text(pin)}"
        return verify(cached, pin, fix=fix, known=known)
    if not download:
        raise DownloadError(
            f"upstream {pin.describe()} is not available: no checkout given and no cached copy at {cached}, "
            f"and downloading is disabled\n  fix: {fix_text(pin)}"
        )
    url = pin.url(base_url)
    from mnemetric.download import fetch_small  # imported here: only the download path needs an HTTP client

    data = fetch_small(url, timeout=timeout, fix=fix_text(pin))
    actual = sha256_bytes(data)
    if actual != pin.sha256:
        fix = f"the server did not send the pinned bytes (a proxy or mirror?); {fix_text(pin)}"
        raise IntegrityError(_mismatch(f"{url}: downloaded", pin, actual, fix, known)
                             + f"\n  nothing was stored in the cache ({cached})")
    with atomic_open(cached, "wb") as fh:
        fh.write(data)
    return cached
