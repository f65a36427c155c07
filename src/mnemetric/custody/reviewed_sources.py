"""Re-hash the upstream files an inventory says were reviewed, in a local checkout.

Each family of the inventory (typed: :class:`mnemetric.custody.inventory_file.Inventory`) names its repository,
revision and ``reviewed_sources`` (path and sha256 of the file at that revision). Hashes are sha256 of the
file's bytes, as in the seed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from mnemetric.custody.inventory_file import Inventory
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


def _safe_relative(path: str, file: str, record: str) -> PurePosixPath:
    rel = PurePosixPath(path) if path else None
    if rel is None or rel.is_absolute() or ".." in rel.parts or "\\" in str(path):
        raise InputError(file, record, "reviewed_sources.path", f"not a relative path inside the repository: {path!r}")
    return rel


def verify_reviewed_sources(inventory: Inventory, upstream_dir_by_repo: Mapping[str, str | Path],
                            *, file: str = "<inventory>") -> list[SourceCheck]:
    """Re-hash every reviewed source of each family whose ``repository`` is a key of ``upstream_dir_by_repo``.

    status = ``match`` (sha256 equal), ``mismatch`` (differs) or ``missing`` (no regular file there).
    Families whose repository is not given are not checked (the caller says so). A path that leaves the
    checkout is an InputError naming ``file`` and the source (``families[i].reviewed_sources[j]``).
    """
    results = []
    for i, fam in enumerate(inventory.families):
        if fam.repository not in upstream_dir_by_repo:
            continue
        root = Path(upstream_dir_by_repo[fam.repository])
        if not root.is_dir():
            raise ConfigError(f"upstream checkout for {fam.repository}", f"{root} is not a folder",
                              fix=f"clone {fam.repository} and check out {fam.revision}")
        for j, src in enumerate(fam.reviewed_sources):
            rel = _safe_relative(src.path, file, f"families[{i}].reviewed_sources[{j}]")
            target = root / rel
            actual = sha256_file(target) if target.is_file() else None
            status = "missing" if actual is None else ("match" if actual == src.sha256 else "mismatch")
            results.append(SourceCheck(fam.repository, rel.as_posix(), src.sha256, actual, status))
    return results
