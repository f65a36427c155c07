"""The custody record of a LongMemEval-V2 data root (data/custody/v2-<name>.json), typed: reader beside writer,
and the check that every data file still is what the record says before a run uses it.

Written by stage v2_prepare (:mod:`.obtain`), one record per data root (``data_root`` is in the record; a run
refuses a record of another root). Each file entry has its ``sha256`` and ``size`` as recorded, what it was
checked against (``expected_sha256``: the dataset pin for official data; for the bundled sample the line of
its own ``SHA256SUMS``) and whether it matched (``verified``).

:func:`verify_root` is what a run calls before it reads the data: every listed file is hashed again and must
equal the record (else :class:`~mnemetric.errors.IntegrityError` naming the file, both hashes and the fix), and
for a bundled root no file may have appeared since. It returns :class:`DataCheck`: ``sha256_verified`` (true
only for official data whose every file matches its pin — never the bundled sample, which is ours) and the
files that match the record but not what they were checked against (``unverified``), each named.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mnemetric.errors import ConfigError, InputError, IntegrityError
from mnemetric.io import dumps_canonical, sha256_bytes, sha256_file, sha256_text, write_json_atomic

SOURCES = ("bundled", "huggingface")
SUMS_FILE = "SHA256SUMS"
"""The bundled sample's own sha256 manifest (written by its generator): what its files are checked against."""
_FILE_KEYS = ("file", "sha256", "size")
ENTRY_ORDER = ("variant", "source", "url", "repo", "revision", "file", "sha256", "expected_sha256", "expected_from",
               "size", "expected_size", "license", "verified", "verification")
"""The key order of an official file's entry (:func:`mnemetric.longmemeval_v2.obtain._entry`)."""


def _hex(value: Any) -> bool:
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)


@dataclass(frozen=True)
class CustodyFile:
    file: str
    sha256: str
    size: int
    expected_sha256: str | None = None
    verified: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)
    """The entry's other keys (url, repo, revision, verification …), kept in their order."""

    @classmethod
    def from_record(cls, raw: Any, *, file: str, index: int) -> CustodyFile:
        where = f"files[{index}]"
        if not isinstance(raw, dict):
            raise InputError(file, where, "<entry>", f"expected an object, got {type(raw).__name__}")
        name, sha, size = raw.get("file"), raw.get("sha256"), raw.get("size")
        if not isinstance(name, str) or not name:
            raise InputError(file, where, "file", f"expected a relative path, got {name!r}")
        if not _hex(sha):
            raise InputError(file, f"{where} ({name})", "sha256", f"expected 64 lowercase hex digits, got {sha!r}")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise InputError(file, f"{where} ({name})", "size", f"expected a byte count, got {size!r}")
        expected = raw.get("expected_sha256")
        if expected is not None and not _hex(expected):
            raise InputError(file, f"{where} ({name})", "expected_sha256", f"expected 64 hex digits or null, got {expected!r}")
        extra = {k: v for k, v in raw.items() if k not in (*_FILE_KEYS, "expected_sha256", "verified")}
        return cls(name, sha, size, expected, raw.get("verified") is True, extra)

    def to_record(self, *, bundled: bool) -> dict[str, Any]:
        if bundled:
            return {"file": self.file, "sha256": self.sha256, "size": self.size,
                    "expected_sha256": self.expected_sha256, "verified": self.verified}
        merged = {**self.extra, "file": self.file, "sha256": self.sha256, "expected_sha256": self.expected_sha256,
                  "size": self.size, "verified": self.verified}
        return {k: merged[k] for k in (*ENTRY_ORDER, *merged) if k in merged}


@dataclass(frozen=True)
class V2Custody:
    """One data root's custody record (module docstring)."""

    source: str
    data_root: str
    files: tuple[CustodyFile, ...]
    all_verified: bool
    facts: Mapping[str, Any] = field(default_factory=dict)
    """The record's other top-level keys (variant, repo, revision, tier, screenshots …), in file order."""

    @property
    def bundled(self) -> bool:
        return self.source == "bundled"

    @classmethod
    def from_record(cls, raw: Any, *, file: str) -> V2Custody:
        if not isinstance(raw, dict):
            raise InputError(file, "<file>", "<record>", f"expected a JSON object, got {type(raw).__name__}")
        if raw.get("dataset") != "longmemeval-v2":
            raise InputError(file, "<file>", "dataset", f"expected 'longmemeval-v2', got {raw.get('dataset')!r}")
        if raw.get("source") not in SOURCES:
            raise InputError(file, "<file>", "source", f"{raw.get('source')!r} is not one of {', '.join(SOURCES)}")
        root = raw.get("data_root")
        if not isinstance(root, str) or not root:
            raise InputError(file, "<file>", "data_root", "missing: a custody record names its data root",
                             fix="rerun stage v2_prepare (dvc repro v2_prepare) with this version of Mnemetric")
        entries = raw.get("files")
        if not isinstance(entries, list):
            raise InputError(file, "<file>", "files", "expected a list of file entries")
        files = tuple(CustodyFile.from_record(e, file=file, index=i) for i, e in enumerate(entries))
        facts = {k: v for k, v in raw.items() if k not in ("dataset", "source", "data_root", "files", "all_verified")}
        return cls(raw["source"], root, files, raw.get("all_verified") is True, facts)

    def to_record(self) -> dict[str, Any]:
        files = [f.to_record(bundled=self.bundled) for f in self.files]
        if self.bundled:
            return {"dataset": "longmemeval-v2", "source": "bundled", **self.facts, "data_root": self.data_root,
                    "all_verified": self.all_verified, "files": files}
        return {"dataset": "longmemeval-v2", "source": self.source, "data_root": self.data_root, **self.facts,
                "all_verified": self.all_verified, "files": files}

    @property
    def sha256_verified(self) -> bool:
        """Official data, every file verified against its pin (a bundled root never is)."""
        return self.source == "huggingface" and self.all_verified and all(f.verified for f in self.files)

    def unverified(self) -> list[CustodyFile]:
        """Files that did not match what they were checked against (the bundled sample's SHA256SUMS itself is the
        manifest, not a file to check)."""
        return [f for f in self.files if not f.verified and not (self.bundled and f.file == SUMS_FILE)]

    def files_sha256(self) -> str:
        """sha256 of the canonical JSON of ``[{"file", "sha256"}]`` sorted by file (run-v2.json's custody block)."""
        listed = sorted(({"file": f.file, "sha256": f.sha256} for f in self.files), key=lambda f: f["file"])
        return sha256_text(dumps_canonical(listed))


def read_custody(path: str | Path) -> tuple[V2Custody, bytes]:
    """The record at ``path`` and its bytes; a missing file says which stage writes it."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError("v2 custody", f"{path} does not exist: the data root has no custody record",
                          fix="run stage v2_prepare first (dvc repro v2_prepare)")
    data = path.read_bytes()
    try:
        raw = json.loads(data)
    except ValueError as exc:
        raise InputError(str(path), "<file>", "<json>", f"not valid JSON ({exc})") from None
    return V2Custody.from_record(raw, file=str(path)), data


def write_custody(path: str | Path, record: V2Custody) -> None:
    write_json_atomic(path, record.to_record())


def same_root(a: str | Path, b: str | Path) -> bool:
    """The same folder (relative paths are taken from the working directory, the repository root for a stage)."""
    return Path(a).resolve() == Path(b).resolve()


def refuse_other_root(path: str | Path, data_root: str | Path) -> None:
    """Stage v2_prepare's guard: never replace a record of another data root (a typo in ``-S v2.data_root``
    must not overwrite the committed record of the real one)."""
    path = Path(path)
    if not path.is_file():
        return
    try:
        recorded = json.loads(path.read_bytes()).get("data_root")
    except (ValueError, AttributeError):
        return
    if isinstance(recorded, str) and not same_root(recorded, data_root):
        raise ConfigError("v2.data_root", f"{path} is the custody record of {recorded}, not of {data_root}; "
                          "it is not replaced",
                          fix=f"give this data root its own option name (-S v2.name=<name>), or restore "
                              f"v2.data_root={recorded}")


def find_custody(custody_dir: str | Path, data_root: str | Path) -> Path | None:
    """The custody record in ``custody_dir`` (v2-*.json) whose ``data_root`` is ``data_root``, or None."""
    for path in sorted(Path(custody_dir).glob("v2-*.json")):
        try:
            recorded = json.loads(path.read_bytes()).get("data_root")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(recorded, str) and same_root(recorded, data_root):
            return path
    return None


@dataclass(frozen=True)
class DataCheck:
    """What :func:`verify_root` found (module docstring)."""

    custody_file: str
    custody_sha256: str
    files_sha256: str
    files_checked: int
    sha256_verified: bool
    unverified: tuple[str, ...] = ()
    """Files that match the record but did not match their pin / SHA256SUMS line."""
    reasons: tuple[str, ...] = ()
    """One reason per unverified file, naming it."""

    def to_record(self) -> dict[str, Any]:
        return {"custody_file": self.custody_file, "custody_sha256": self.custody_sha256,
                "files_sha256": self.files_sha256, "files_checked": self.files_checked,
                "sha256_verified": self.sha256_verified, "unverified": list(self.unverified),
                "reasons": list(self.reasons)}

    @classmethod
    def from_record(cls, raw: Any, *, file: str) -> DataCheck:
        keys = ("custody_file", "custody_sha256", "files_sha256", "files_checked", "sha256_verified", "unverified",
                "reasons")
        if not isinstance(raw, dict) or set(raw) != set(keys):
            raise InputError(file, "data", "<object>", f"expected exactly the keys {', '.join(keys)}",
                             fix="rerun stage v2_memory")
        return cls(raw["custody_file"], raw["custody_sha256"], raw["files_sha256"], int(raw["files_checked"]),
                   raw["sha256_verified"] is True, tuple(raw["unverified"]), tuple(raw["reasons"]))


def verify_root(custody_file: str | Path, data_root: str | Path, *, only: tuple[str, ...] | None = None) -> DataCheck:
    """Check ``data_root`` against its custody record before use (module docstring). ``only``: the files to hash
    (a later step that reads only questions.jsonl); default every listed file."""
    record, data = read_custody(custody_file)
    if not same_root(record.data_root, data_root):
        raise ConfigError("v2.data_root", f"{custody_file} is the custody record of {record.data_root}, not of "
                          f"{data_root}", fix="run stage v2_prepare for this data root (dvc repro v2_prepare)")
    root = Path(data_root)
    fix = (f"restore the file (git checkout {root.as_posix()}), or record the data as it is now with "
           "`dvc repro v2_prepare` (the run is then reported with the file named)")
    for f in record.files:
        if only is not None and f.file not in only:
            continue
        path = root / f.file
        if not path.is_file():
            raise IntegrityError(f"{path}: listed in the custody record {custody_file} but missing\n  fix: {fix}")
        actual = sha256_file(path)
        if actual != f.sha256:
            raise IntegrityError(f"{path}: changed since its custody record {custody_file} was written\n"
                                 f"  recorded sha256: {f.sha256}\n  actual sha256:   {actual}\n  fix: {fix}")
    if record.bundled and only is None:
        listed = {f.file for f in record.files}
        extra = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()
                       and p.relative_to(root).as_posix() not in listed)
        if extra:
            raise IntegrityError(f"{root / extra[0]}: not in the custody record {custody_file} "
                                 f"({len(extra)} file(s) added since)\n  fix: {fix}")
    against = SUMS_FILE if record.bundled else "its dataset pin"
    bad = record.unverified()
    reasons = tuple(f"data file {f.file} does not match {against}"
                    + (f" (sha256 {f.sha256}, expected {f.expected_sha256})" if f.expected_sha256 else " (no sha256 known)")
                    for f in bad)
    checked = len(record.files) if only is None else sum(1 for f in record.files if f.file in only)
    return DataCheck(Path(custody_file).as_posix(), sha256_bytes(data), record.files_sha256(), checked,
                     record.sha256_verified, tuple(f.file for f in bad), reasons)


def bundled_record(root: str | Path, name: str) -> V2Custody:
    """The custody of a committed data root (the bundled sample): every file's sha256 and size, sorted by path,
    each checked against the root's own SHA256SUMS (``expected_sha256``, ``verified``); the record is never
    ``all_verified`` (no dataset pin vouches for files we authored)."""
    from mnemetric.longmemeval_v2.obtain import parse_checksums

    root = Path(root)
    sums_path = root / SUMS_FILE
    sums = parse_checksums(sums_path) if sums_path.is_file() else {}
    files = []
    for f in sorted(root.rglob("*")):
        if f.is_file():
            rel, sha = f.relative_to(root).as_posix(), sha256_file(f)
            files.append(CustodyFile(rel, sha, f.stat().st_size, sums.get(rel), sums.get(rel) == sha))
    facts = {"variant": name, "verified": False,
             "verification": "bundled sample authored by Mnemetric: no dataset pin applies; each file checked "
                             f"against the sample's own {SUMS_FILE}"}
    return V2Custody("bundled", root.as_posix(), tuple(files), False, facts)
