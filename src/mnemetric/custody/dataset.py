"""Dataset custody: obtain a variant's file, verify it against its pin, record what was verified.

A variant (conf/variant/*.yaml) is either ``bundled`` (a file committed under data/sample/) or
``huggingface`` (repo + pinned revision + file). Either way the bytes are checked against the
pinned sha256 (and size, when known) before anything downstream may read them, and a custody
record says where they came from: data/custody/<variant>.json, :class:`DatasetCustody` (reader
beside writer; ``json.dump(indent=2)``), keys in this order: ``variant``, ``source``, where the bytes
came from (bundled: ``path``; huggingface: ``url``, ``repo``, ``revision``; a failed download:
``url``), ``file``, ``raw_path``, ``sha256`` (null unless verified), ``expected_sha256``, ``size``
(null unless verified), ``expected_size``, ``license``, ``verified``, and ``error`` when it failed.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mnemetric.errors import ConfigError, DownloadError, IntegrityError
from mnemetric.io import atomic_open, write_json_atomic
from mnemetric.download import Pin, fetch, verify_file
from mnemetric.records import OPTIONAL_INTEGER, Fields, read_json_file

SOURCES = ("bundled", "huggingface")
ORIGIN_KEYS = ("path", "url", "repo", "revision")
"""Where the bytes came from, in file order (each present only when known)."""
_FIX = "regenerate it with `dvc repro prepare`"


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


@dataclass(frozen=True)
class DatasetCustody:
    """The custody record of one variant's file (data/custody/<variant>.json). No clock time: it is a
    DVC output and a pure function of its inputs (the same bytes from the same pin give the same record)."""

    variant: str
    source: str
    """One of SOURCES."""
    file: str
    raw_path: str | None
    sha256: str | None
    """The verified sha256 (None unless verified)."""
    expected_sha256: str
    size: int | None
    expected_size: int | None
    license: str
    verified: bool
    path: str | None = None
    url: str | None = None
    repo: str | None = None
    revision: str | None = None
    error: str | None = None

    @classmethod
    def from_record(cls, raw: Any, *, file: str) -> DatasetCustody:
        """Validate a custody record; errors name the file and the field."""
        keys = ("variant", "source", *ORIGIN_KEYS, "file", "raw_path", "sha256", "expected_sha256", "size",
                "expected_size", "license", "verified", "error")
        f = Fields.of(raw, file=file, record="<file>", fix=_FIX).only(keys)
        source = f.string("source")
        if source not in SOURCES:
            raise f.error("source", f"expected one of {list(SOURCES)}, got {source!r}")
        origin = {k: f.string(k) for k in ORIGIN_KEYS if k in f.raw}
        rec = cls(f.string("variant"), source, f.string("file"), f.optional_string("raw_path"),
                  f.optional_string("sha256"), f.string("expected_sha256"), f.get("size", OPTIONAL_INTEGER),
                  f.get("expected_size", OPTIONAL_INTEGER), f.string("license"), f.boolean("verified"),
                  **origin, error=f.string("error") if "error" in f.raw else None)
        if rec.verified and rec.sha256 != rec.expected_sha256:
            raise f.error("sha256", f"{rec.sha256} is not the expected {rec.expected_sha256}, yet verified is true")
        if not rec.verified and rec.sha256 is not None:
            raise f.error("sha256", "a file that was not verified has no sha256 (expected null)")
        return rec

    def to_record(self) -> dict[str, Any]:
        origin = {k: getattr(self, k) for k in ORIGIN_KEYS if getattr(self, k) is not None}
        rec = {"variant": self.variant, "source": self.source, **origin, "file": self.file, "raw_path": self.raw_path,
               "sha256": self.sha256, "expected_sha256": self.expected_sha256, "size": self.size,
               "expected_size": self.expected_size, "license": self.license, "verified": self.verified}
        if self.error:
            rec["error"] = self.error
        return rec


def write_dataset_custody(path: str | Path, record: DatasetCustody) -> None:
    """Write the custody record atomically (``json.dump(indent=2)``)."""
    write_json_atomic(path, record.to_record())


def read_dataset_custody(path: str | Path) -> DatasetCustody:
    """Read and validate data/custody/<variant>.json."""
    raw = read_json_file(path, missing_fix="run `dvc repro prepare` first", fix=_FIX)
    return DatasetCustody.from_record(raw, file=str(path))


def obtain(variant: Variant, raw_dir: Path, downloads_dir: Path,
           progress: bool | None = None) -> tuple[Path, DatasetCustody]:
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


def custody_record(variant: Variant, dest: Path | None, origin: dict[str, str | None], verified: bool,
                   error: str | None = None) -> DatasetCustody:
    """What was verified, from where (``origin``: some of ORIGIN_KEYS)."""
    return DatasetCustody(variant.name, variant.source, variant.file, str(dest) if dest else None,
                          variant.sha256 if verified else None, variant.sha256,
                          dest.stat().st_size if dest and verified else None, variant.size, variant.license,
                          verified, **origin, error=error)


def failed_record(variant: Variant, error: Exception) -> DatasetCustody:
    origin = {"url": variant.pin().url()} if variant.source == "huggingface" else {"path": variant.path}
    return custody_record(variant, None, origin, verified=False, error=str(error))


__all__ = ["DatasetCustody", "Variant", "obtain", "failed_record", "read_dataset_custody", "write_dataset_custody",
           "IntegrityError"]
