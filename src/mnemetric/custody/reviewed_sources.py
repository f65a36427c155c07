"""Re-hash the upstream files an inventory says were reviewed, in a local checkout.

Each family of the inventory names its repository, revision and ``reviewed_sources`` (path and
sha256 of the file at that revision). Hashes are sha256 of the file's bytes, as in the seed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from mnemetric.errors import ConfigError, InputError
from mnemetric.io import sha256_file



@dataclass(frozen=True)
class SourceCheck:
    """One reviewed source re-hashed in a local checkout: match, mismatch or missing."""

    repository: str
    path: str
    expected_sha256: str
    actual_sha256: str | None
    status: str

    def to_record(self) -> dict[str, Any]:
        return {"repository": self.repository, "path": self.path, "expected_sha256": self.expected_sha256,
                "actual_sha256": self.actual_sha256, "status": self.status}


def _safe_relative(path: Any, file: str, record: str) -> PurePosixPath:
    rel = PurePosixPath(path) if isinstance(path, str) and path else None
    if rel is None or rel.is_absolute() or ".." in rel.parts or "\\" in str(path):
        raise InputError(file, record, "reviewed_sources.path", f"not a relative path inside the repository: {path!r}")
    return rel


def verify_reviewed_sources(inventory: Mapping[str, Any], upstream_dir_by_repo: Mapping[str, str | Path],
                            *, file: str = "<inventory>") -> list[SourceCheck]:
    """Re-hash every reviewed source of each family whose ``repository`` is a key of ``upstream_dir_by_repo``.

    status = ``match`` (sha256 equal), ``mismatch`` (differs) or ``missing`` (no regular file there).
    Families whose repository is not given are not checked (the caller says so).
    """
    results = []
    for i, fam in enumerate(inventory.get("families", [])):
        repo = fam.get("repository")
        if repo not in upstream_dir_by_repo:
            continue
        root = Path(upstream_dir_by_repo[repo])
        if not root.is_dir():
            raise ConfigError(f"upstream checkout for {repo}", f"{root} is not a folder",
                              fix=f"clone {repo} and check out {fam.get('revision')}")
        for j, src in enumerate(fam.get("reviewed_sources", [])):
            record = f"families[{i}].reviewed_sources[{j}]"
            rel = _safe_relative(src.get("path") if isinstance(src, Mapping) else None, file, record)
            expected = src.get("sha256")
            if not isinstance(expected, str):
                raise InputError(file, record, "sha256", f"expected a hex string, got {expected!r}")
            target = root / rel
            actual = sha256_file(target) if target.is_file() else None
            status = "missing" if actual is None else ("match" if actual == expected else "mismatch")
            results.append(SourceCheck(repo, rel.as_posix(), expected, actual, status))
    return results
