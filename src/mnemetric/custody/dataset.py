"""Dataset custody: obtain a variant's file, verify it against its pin, record what was verified.

A variant (conf/variant/*.yaml) is either ``bundled`` (a file committed under data/sample/) or
``huggingface`` (repo + pinned revision + file). Either way the bytes are checked against the
pinned sha256 (and size, when known) before anything downstream may read them, and a custody
record says where they came from.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mnemetric.errors import ConfigError, DownloadError, IntegrityError
from mnemetric.io import atomic_open
from mnemetric.download import Pin, fetch, verify_file

SOURCES = ("bundled", "huggingface")


@dataclass(frozen=True)
class Variant:
    name: str
    source: str
    file: str
    sha256: str
    size: int | None
    license: str
    repo: str | None = None
    revision: str | None = None
    path: str | None = None
    """For bundled variants: the committed file."""

    @classmethod
    def from_params(cls, p: dict[str, Any]) -> "Variant":
        missing = [k for k in ("name", "source", "file", "sha256", "license") if not p.get(k)]
        if missing:
            raise ConfigError(f"params.yaml variant: missing {', '.join(missing)} (see conf/variant/)")
        if p["source"] not in SOURCES:
            raise ConfigError(f"params.yaml variant.source: {p['source']!r} is not one of {SOURCES}")
        if p["source"] == "huggingface" and not (p.get("repo") and p.get("revision")):
            raise ConfigError(f"variant {p['name']}: a huggingface variant needs repo and revision")
        if p["source"] == "bundled" and not p.get("path"):
            raise ConfigError(f"variant {p['name']}: a bundled variant needs path")
        return cls(p["name"], p["source"], p["file"], p["sha256"], p.get("size"), p["license"],
                   p.get("repo"), p.get("revision"), p.get("path"))

    def pin(self) -> Pin:
        return Pin(self.repo or "", self.revision or "", self.file, self.sha256, self.size)


def obtain(variant: Variant, raw_dir: Path, downloads_dir: Path, progress: bool | None = None) -> tuple[Path, dict]:
    """Put a verified copy of the variant's file at raw_dir/<file>; return it and its custody record."""
    if variant.source == "bundled":
        src = Path(variant.path or "")
        if not src.exists():
            raise DownloadError(f"{src}: the bundled sample is missing\n  fix: regenerate it with "
                                f"`mnemetric sample --out {src}` or restore it with git checkout")
        verify_file(src, variant.sha256, variant.size)
        origin = {"path": str(src)}
    else:
        pin = variant.pin()
        try:
            src = fetch(pin, downloads_dir, progress=progress)
        except DownloadError as exc:
            raise DownloadError(f"variant {variant.name}: {exc}") from None
        origin = {"url": pin.url(), "repo": variant.repo, "revision": variant.revision}
    dest = raw_dir / variant.file
    with atomic_open(dest, "wb") as out, open(src, "rb") as inp:
        shutil.copyfileobj(inp, out, 1 << 20)
    verify_file(dest, variant.sha256, variant.size)
    return dest, custody_record(variant, dest, origin, verified=True)


def custody_record(variant: Variant, dest: Path | None, origin: dict, verified: bool, error: str | None = None) -> dict:
    """What was verified, from where. No clock time: the record is a DVC output and must be a pure
    function of its inputs (the same bytes from the same pin give the same record)."""
    rec = {
        "variant": variant.name,
        "source": variant.source,
        **origin,
        "file": variant.file,
        "raw_path": str(dest) if dest else None,
        "sha256": variant.sha256 if verified else None,
        "expected_sha256": variant.sha256,
        "size": dest.stat().st_size if dest and verified else None,
        "expected_size": variant.size,
        "license": variant.license,
        "verified": verified,
    }
    if error:
        rec["error"] = error
    return rec


def failed_record(variant: Variant, error: Exception) -> dict:
    origin = {"url": variant.pin().url()} if variant.source == "huggingface" else {"path": variant.path}
    return custody_record(variant, None, origin, verified=False, error=str(error))


__all__ = ["Variant", "obtain", "failed_record", "IntegrityError"]
