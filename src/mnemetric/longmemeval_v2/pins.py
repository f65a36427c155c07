"""Data pins of LongMemEval-V2: the Hugging Face dataset revision and the sha256 of each file.

Source: shared/docs/upstream-v2-protocol.md §0 — dataset xiaowu0162/longmemeval-v2 (Apache-2.0) at
revision f152293e235517d504809563c833d7190b8c713b, named by several independent public locks; each
sha256 below agrees in at least two of them. The dataset carries its own ``checksums.sha256``
(37 entries), whose sha256 nobody has published yet, so its pin is ``None`` (unknown). The screenshot
archives (under ``trajectory_screenshots/`` in the dataset, where upstream's data/public_data.py
prepare_screenshots looks for them) are verified against that checksums file; their sizes come
from the same locks.

A pin of ``None`` means "unknown". ``official`` runs fail closed on an unknown pin anywhere in a
needed file's chain of trust (:func:`require_pinned`); other runs may go on and record the file as
unverified. Only data pins live here; upstream code pins are kept in mnemetric.upstream.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from mnemetric.errors import ConfigError
from mnemetric.longmemeval_v2.haystacks import TIERS, haystack_file
from mnemetric.longmemeval_v2.questions import DOMAINS

REPO = "xiaowu0162/longmemeval-v2"
REVISION = "f152293e235517d504809563c833d7190b8c713b"
LICENSE = "Apache-2.0"
TOTAL_SIZE = 7_120_369_667
"""Bytes of the whole dataset at REVISION (all files, per the locks)."""
CHECKSUMS_FILE = "checksums.sha256"
ARCHIVE_DIR = "trajectory_screenshots"
SCREENSHOT_ARCHIVES = (
    ("web_screenshots", "web", False),
    ("enterprise_screenshots_base", "enterprise", False),
    ("enterprise_screenshots_patch", "enterprise", True),
)
"""(name, domain, replaces existing trajectory folders), in upstream's order (prepare_screenshots)."""
_LOCKS = "agreeing public locks (upstream-v2-protocol.md §0)"


@dataclass(frozen=True)
class FilePin:
    """What we expect of one dataset file. ``sha256=None`` = not known."""

    file: str
    """Path inside the dataset (and inside a data root), e.g. haystacks/lme_v2_small.json."""
    sha256: str | None
    size: int | None = None
    verify_with: str | None = None
    """Another file whose sha256 list vouches for this one (the archives: checksums.sha256)."""
    required: bool = True
    """False: fetched only when the checksums file lists it (the enterprise patch archive)."""
    source: str = _LOCKS
    """Where the pin (or its absence) comes from."""


@dataclass(frozen=True)
class DataPins:
    """A dataset revision and its file pins."""

    repo: str
    revision: str
    license: str
    files: tuple[FilePin, ...]

    def get(self, file: str) -> FilePin:
        for pin in self.files:
            if pin.file == file:
                return pin
        raise ConfigError("pins", f"no pin entry for {file!r} in {self.repo}@{self.revision}")

    def with_sha256(self, file: str, sha256: str, source: str = "given by the user") -> "DataPins":
        """A copy in which ``file`` is pinned to ``sha256`` (e.g. checksums.sha256, once checked)."""
        if len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256):
            raise ConfigError(f"pins.{file}", f"{sha256!r} is not a lowercase hex sha256")
        pin = self.get(file)
        return replace(self, files=tuple(replace(p, sha256=sha256, source=source) if p is pin else p for p in self.files))


def _archive(name: str, size: int | None) -> FilePin:
    return FilePin(f"{ARCHIVE_DIR}/{name}.tar.gz", None, size, verify_with=CHECKSUMS_FILE,
                   required=not name.endswith("_patch"),
                   source=f"no published sha256; verified against the dataset's {CHECKSUMS_FILE}")


DATA_PINS = DataPins(REPO, REVISION, LICENSE, (
    FilePin("questions.jsonl", "0a3ae5ebea938c24d7800e1e0b0828e08ae1646f939a53853b2b8cdc08e292b7"),
    FilePin("trajectories.jsonl", "363cec9a8e87aa8d9101ce4e600aadbf7031d674056ebe4f969e8424abc5f3c6"),
    FilePin("haystacks/lme_v2_small.json", "9b5301defb23a088a5f06e45ff8d5f35e569d78305a66d492046a9fff9b46593"),
    FilePin("haystacks/lme_v2_medium.json", "4756d5126347f0d18f045bb6c47b08cb3b23e9db24386cc48a9b2879e7969b59"),
    FilePin("SCHEMA.md", "0672cf47cf16c30365648770628b433076bb3f5b73edded673af7dd6d5f3246f"),
    FilePin(CHECKSUMS_FILE, None, source="unknown: no public lock gives the sha256 of checksums.sha256"),
    _archive("web_screenshots", 2_562_302_847),
    _archive("enterprise_screenshots_base", 3_354_163_660),
    _archive("enterprise_screenshots_patch", None),
))
"""The pins of REVISION. SCHEMA.md is pinned but no run needs it."""


def archive_file(name: str) -> str:
    return f"{ARCHIVE_DIR}/{name}.tar.gz"


def files_for(tier: str, with_images: bool, *, domain: str | None = None,
              pins: DataPins = DATA_PINS) -> tuple[FilePin, ...]:
    """Exactly the files a run needs: questions, trajectories, the tier's haystack; with images also
    checksums.sha256 and the screenshot archives of the run's domain (both domains when None)."""
    if domain is not None and domain not in DOMAINS:
        raise ConfigError("domain", f"{domain!r} is not a LongMemEval-V2 domain", fix=f"use one of: {', '.join(DOMAINS)}")
    if tier not in TIERS:
        haystack_file(tier)  # raises the ConfigError naming the tiers
    needed = [pins.get("questions.jsonl"), pins.get("trajectories.jsonl"), pins.get(haystack_file(tier))]
    if with_images:
        needed.append(pins.get(CHECKSUMS_FILE))
        needed += [pins.get(archive_file(name)) for name, dom, _ in SCREENSHOT_ARCHIVES if domain in (None, dom)]
    return tuple(needed)


def is_trusted(pin: FilePin, pins: DataPins) -> bool:
    """Is ``pin`` verifiable back to a known sha256 (its own, or that of the file vouching for it)?"""
    if pin.sha256 is not None:
        return True
    return pin.verify_with is not None and is_trusted(pins.get(pin.verify_with), pins)


def unpinned(files: tuple[FilePin, ...], pins: DataPins = DATA_PINS) -> tuple[FilePin, ...]:
    """The files of ``files`` whose chain of trust ends at an unknown pin."""
    return tuple(p for p in files if not is_trusted(p, pins))


def require_pinned(files: tuple[FilePin, ...], pins: DataPins = DATA_PINS) -> None:
    """The official gate: ConfigError naming every file whose sha256 cannot be verified."""
    missing = unpinned(files, pins)
    if not missing:
        return
    roots = sorted({_root(p, pins) for p in missing})
    names = ", ".join(p.file for p in missing)
    raise ConfigError(
        "official", f"an official run needs verified data, but no sha256 is known for: {', '.join(roots)} "
        f"(so {names} cannot be verified)",
        fix=f"check {', '.join(roots)} against a trusted copy (sha256sum) and pin it (DVC: -S v2.checksums_sha256=<sha256>; "
            f"library: DataPins.with_sha256(file, sha256), or add it to mnemetric.longmemeval_v2.pins.DATA_PINS with "
            f"its source) — or run without images (-S v2.images=false; the run is then not official) — or as a "
            f"non-official run (-S v2.official=false), which records the file as unverified")


def _root(pin: FilePin, pins: DataPins) -> str:
    while pin.sha256 is None and pin.verify_with is not None:
        pin = pins.get(pin.verify_with)
    return pin.file
