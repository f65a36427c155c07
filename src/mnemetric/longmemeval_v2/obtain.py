"""Obtain what a LongMemEval-V2 run needs: download, verify, extract screenshots, record custody.

Files come from ``{HF_ENDPOINT}/datasets/{repo}/resolve/{revision}/{file}`` through the generic
downloader (mnemetric.download: resumable, HF_ENDPOINT, HF_TOKEN) and land at ``<root>/<file>``,
so ``root`` is laid out as an upstream data root (questions.jsonl, trajectories.jsonl,
haystacks/…, trajectory_screenshots/…). Upstream's own data/download_data.py (be15ea6) takes a
snapshot of the dataset's default branch unless told a revision, verifies nothing, and skips when
questions.jsonl and trajectories.jsonl exist whatever their content; here every file is pinned to
the revision and checked before use, and an existing file with the wrong hash is refused.

Verification of each file (pins.py): its own pin; or, for the screenshot archives, the dataset's
``checksums.sha256`` — trusted only when that file is itself pinned. ``official=True`` fails closed
before any download when a needed chain of trust ends at an unknown pin; otherwise such files are
used and recorded with ``"verified": false``.

The custody record has one entry per file in the shape of mnemetric.custody.dataset.custody_record
(variant, source, url, repo, revision, file, sha256, expected_sha256, size, verified, …) and no
clock time: it is a pure function of the inputs, fit to be tracked.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from mnemetric.download import Pin, _download, fetch
from mnemetric.errors import ConfigError, IntegrityError, InputError
from mnemetric.io import sha256_file, write_json_atomic
from mnemetric.longmemeval_v2.pins import CHECKSUMS_FILE, DATA_PINS, SCREENSHOT_ARCHIVES, DataPins, FilePin, archive_file, files_for, is_trusted
from mnemetric.longmemeval_v2.pins import require_pinned
from mnemetric.longmemeval_v2.screenshots import prepare_screenshots

_CHECKSUM_LINE = re.compile(r"^([0-9a-fA-F]{64}) [ *](.+)$")


def parse_checksums(path: Path) -> dict[str, str]:
    """A ``sha256sum``-style file ("<hex>  <path>" or "<hex> *<path>") → {path: lowercase hex}.

    Blank lines and ``#`` comments are skipped; a leading "./" is dropped from paths.
    """
    out: dict[str, str] = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _CHECKSUM_LINE.match(line.rstrip("\r"))
        if match is None:
            raise InputError(str(path), f"line {n}", "<line>", f"not a sha256sum line: {line[:80]!r}")
        name = match[2].removeprefix("./")
        if name in out and out[name] != match[1].lower():
            raise InputError(str(path), f"line {n}", name, "listed twice with different sha256")
        out[name] = match[1].lower()
    return out


def _pin(pins: DataPins, fp: FilePin, sha256: str | None) -> Pin:
    return Pin(pins.repo, pins.revision, fp.file, sha256 or "(unknown)", fp.size)


def _entry(pins: DataPins, fp: FilePin, path: Path, *, expected: str | None, expected_from: str | None,
           verified: bool, verification: str, tier: str, endpoint: str | None) -> dict[str, Any]:
    """One file's custody entry (custody.custody_record's keys, without verified_at)."""
    return {
        "variant": f"longmemeval-v2-{tier}",
        "source": "huggingface",
        "url": _pin(pins, fp, expected).url(endpoint),
        "repo": pins.repo,
        "revision": pins.revision,
        "file": fp.file,
        "sha256": expected if expected is not None else sha256_file(path),  # fetch checked expected
        "expected_sha256": expected,
        "expected_from": expected_from,
        "size": path.stat().st_size,
        "expected_size": fp.size,
        "license": pins.license,
        "verified": verified,
        "verification": verification,
    }


def fetch_unverified(pin: Pin, root: Path, *, endpoint: str | None = None, timeout: float = 60.0,
                     progress: bool | None = None) -> Path:
    """Download a file with no known sha256 (resumable; size checked when known). Non-official runs only.

    Uses the generic downloader's transfer step: mnemetric.download has no public unverified fetch.
    """
    final = root / pin.file
    final.parent.mkdir(parents=True, exist_ok=True)
    if final.exists():
        return final
    part = root / (pin.file + ".part")
    _download(pin.url(endpoint), part, pin, timeout, progress)
    if pin.size is not None and part.stat().st_size != pin.size:
        size = part.stat().st_size
        part.unlink()
        raise IntegrityError(f"{final}: size mismatch\n  expected size:   {pin.size} bytes\n  actual size:     {size} bytes")
    os.replace(part, final)
    return final


def _obtain_direct(fp: FilePin, pins: DataPins, root: Path, kw: dict, tier: str) -> dict[str, Any]:
    (root / fp.file).parent.mkdir(parents=True, exist_ok=True)
    if fp.sha256 is not None:
        path = fetch(_pin(pins, fp, fp.sha256), root, **kw)
        return _entry(pins, fp, path, expected=fp.sha256, expected_from="pin", verified=True,
                      verification="sha256 matches the pin", tier=tier, endpoint=kw.get("endpoint"))
    path = fetch_unverified(_pin(pins, fp, None), root, **kw)
    return _entry(pins, fp, path, expected=None, expected_from=None, verified=False,
                  verification="no pin: not verified", tier=tier, endpoint=kw.get("endpoint"))


def _obtain_vouched(fp: FilePin, pins: DataPins, root: Path, checksums: dict[str, str], kw: dict,
                    tier: str) -> dict[str, Any] | None:
    """An archive checked against its own pin and/or checksums.sha256; None when an optional one is unlisted."""
    listed = checksums.get(fp.file)
    if fp.sha256 is not None and listed is not None and listed != fp.sha256:
        raise IntegrityError(f"{fp.file}: the pin ({fp.sha256}) and {fp.verify_with} ({listed}) disagree")
    expected = fp.sha256 or listed
    if expected is None:
        if not fp.required:
            return None
        raise IntegrityError(f"{fp.verify_with} lists no sha256 for {fp.file}, so it cannot be verified\n"
                             f"  fix: check the dataset revision ({pins.revision}); pin the file with DataPins.with_sha256")
    (root / fp.file).parent.mkdir(parents=True, exist_ok=True)
    path = fetch(_pin(pins, fp, expected), root, **kw)
    voucher_trusted = is_trusted(pins.get(fp.verify_with), pins) if fp.verify_with else False
    if fp.sha256 is not None:
        origin, how, ok = "pin", "sha256 matches the pin", True
    elif voucher_trusted:
        origin, how, ok = fp.verify_with, f"sha256 matches {fp.verify_with}, which matches its pin", True
    else:
        origin, how, ok = fp.verify_with, f"sha256 matches {fp.verify_with}, which is itself unverified (no pin)", False
    return _entry(pins, fp, path, expected=expected, expected_from=origin, verified=ok, verification=how,
                  tier=tier, endpoint=kw.get("endpoint"))


def obtain(root: str | Path, tier: str, *, with_images: bool, official: bool, domain: str | None = None,
           pins: DataPins = DATA_PINS, endpoint: str | None = None, progress: bool | None = None,
           timeout: float = 60.0, link_mode: str = "symlink", custody_path: str | Path | None = None) -> dict[str, Any]:
    """Put every file a run needs under ``root``, verified; extract screenshots when images are used.

    Returns the custody record (also written atomically to ``custody_path`` when given).
    """
    root = Path(root)
    needed = files_for(tier, with_images, domain=domain, pins=pins)
    if official:
        require_pinned(needed, pins)
    root.mkdir(parents=True, exist_ok=True)
    kw = {"endpoint": endpoint, "timeout": timeout, "progress": progress}
    entries = [_obtain_direct(fp, pins, root, kw, tier) for fp in needed if fp.verify_with is None]
    vouched = [fp for fp in needed if fp.verify_with is not None]
    checksums = parse_checksums(root / CHECKSUMS_FILE) if vouched else {}
    entries += [e for fp in vouched if (e := _obtain_vouched(fp, pins, root, checksums, kw, tier)) is not None]
    record: dict[str, Any] = {
        "dataset": "longmemeval-v2", "source": "huggingface", "data_root": root.as_posix(), "repo": pins.repo, "revision": pins.revision, "license": pins.license,
        "tier": tier, "domain": domain, "with_images": with_images, "official": official,
        "all_verified": all(e["verified"] for e in entries), "files": entries,
    }
    if with_images:
        got = {e["file"] for e in entries}
        names = tuple(name for name, dom, _ in SCREENSHOT_ARCHIVES if archive_file(name) in got)
        record["screenshots"] = prepare_screenshots(root, names, mode=link_mode)["archives"]
    if custody_path is not None:
        write_json_atomic(custody_path, record)
    return record


# --------------------------------------------------------------------------- stage v2_prepare (the v2 option)

SOURCES = ("bundled", "huggingface")


def custody_path(custody_dir: str | Path, name: str) -> Path:
    """Where the custody record of the ``v2`` option ``name`` lives: <custody_dir>/v2-<name>.json."""
    return Path(custody_dir) / f"v2-{name}.json"


def is_verified(record: dict[str, Any]) -> bool:
    """Does a custody record verify its data root against the dataset pins? (official data, every file
    verified; a bundled root never does — it is ours, not the dataset's.)"""
    return record.get("source") == "huggingface" and bool(record.get("all_verified"))


def bundled_custody(root: str | Path, name: str) -> dict[str, Any]:
    """The custody record of a committed data root (the bundled sample; :func:`.data_custody.bundled_record`)."""
    from mnemetric.longmemeval_v2.data_custody import bundled_record

    if not Path(root).is_dir():
        raise ConfigError("v2.data_root", f"{root} is not a folder",
                          fix="restore the bundled sample (git checkout data/sample-v2) or choose another v2 option")
    return bundled_record(root, name).to_record()


def pins_for(settings: dict[str, Any], pins: DataPins = DATA_PINS) -> DataPins:
    """The dataset pins a ``huggingface`` v2 option may use: its repo and revision must be the pinned ones;
    ``checksums_sha256`` (when set) pins checksums.sha256, so the screenshot archives become verifiable."""
    for key, want in (("repo", pins.repo), ("revision", pins.revision)):
        if settings.get(key) != want:
            raise ConfigError(f"v2.{key}", f"{settings.get(key)!r}: only {want!r} has sha256 pins",
                              fix="use the official tier options (v2=small, v2=medium)")
    if settings.get("checksums_sha256"):
        pins = pins.with_sha256(CHECKSUMS_FILE, str(settings["checksums_sha256"]), source="v2.checksums_sha256")
    return pins


def prepare(settings: dict[str, Any], custody: str | Path, *, pins: DataPins = DATA_PINS,
            endpoint: str | None = None, progress: bool | None = None) -> dict[str, Any]:
    """Stage v2_prepare's work for the ``v2`` settings: a ``bundled`` root gets its custody recorded; a
    ``huggingface`` one gets exactly what its run needs downloaded into ``data_root`` (:func:`obtain`: the
    tier's haystack, both domains unless one is chosen, the screenshot archives only with ``images``),
    failing closed before any download when ``official`` and a file cannot be verified, or when the run's token
    counter cannot work here (the official counter's packages and processor files:
    :func:`.tokens.preflight_counter`). The record is
    written atomically to ``custody`` only after the root is obtained (and, for a bundled root, valid) and
    returned; a record of another data root is never replaced (:func:`.data_custody.refuse_other_root`).
    ``endpoint`` None: HF_ENDPOINT, else the Hub."""
    from mnemetric.longmemeval_v2.data_custody import refuse_other_root
    from mnemetric.longmemeval_v2.tokens import preflight_counter
    from mnemetric.longmemeval_v2.validate import require_valid_root

    source = settings.get("source")
    if source not in SOURCES:
        raise ConfigError("v2.source", f"{source!r} is not one of {', '.join(SOURCES)}")
    refuse_other_root(custody, settings["data_root"])
    if source == "bundled":
        record = bundled_custody(settings["data_root"], settings["name"])
        require_valid_root(settings["data_root"], settings.get("haystack", "small"),
                           check_images=bool(settings.get("images", True)))
        write_json_atomic(custody, record)
        return record
    domains = list(dict.fromkeys(settings["domains"]))
    domain, pins = domains[0] if len(domains) == 1 else None, pins_for(settings, pins)
    if settings["official"]:
        require_pinned(files_for(settings["haystack"], bool(settings["images"]), domain=domain, pins=pins), pins)
    preflight_counter(settings.get("token_counter"))  # the run's counter, before gigabytes are fetched for it
    record = obtain(settings["data_root"], settings["haystack"], with_images=bool(settings["images"]),
                    official=bool(settings["official"]), domain=domain, pins=pins, endpoint=endpoint,
                    progress=progress)
    write_json_atomic(custody, record)
    return record
