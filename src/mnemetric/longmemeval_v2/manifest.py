"""metrics/run-v2.json: where the V2 numbers came from, typed (reader beside writer), built from tracked files alone.

The run-manifest keys the task inventory reads (mnemetric.custody.inventory), nested with stable keys; no clock
time, no machine path. Every block comes from what a V2 step recorded in its own DVC output (stage v2_memory's
memory.json: settings, the data check, the memory; v2_read's read.json and read.jsonl: the reader and the
parameters its requests were sent with; v2_check's check.json and check.jsonl: the checker and its requests) —
never from the response cache.

``variant.sha256_verified`` is true only for a data root whose files matched their custody record when the run
read them and whose record verifies every file against the dataset pins — never the bundled sample, which is
not an official file; ``variant.unverified_files`` names the files that did not match their pin (or the
sample's SHA256SUMS).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mnemetric.errors import InputError
from mnemetric.io import dumps_canonical, sha256_text, write_json_atomic
from mnemetric.longmemeval_v2.data_custody import DataCheck
from mnemetric.longmemeval_v2.family import FAMILY
from mnemetric.longmemeval_v2.gate import SECTION as PROTOCOL
from mnemetric.longmemeval_v2.gate import GateFacts
from mnemetric.longmemeval_v2.summary_file import V2Summary
from mnemetric.official import KEY as OFFICIAL_KEY
from mnemetric.official import OfficialEquivalence
from mnemetric.records import Fields

MANIFEST_SCHEMA = "mnemetric.longmemeval-v2.run-manifest/1"
SECTIONS = ("variant", "suite", "memory", "reader", "judge", "token_counter", "counts")


def memory_facts(section: Mapping[str, Any], fingerprint_sha256: str | None) -> dict[str, Any]:
    """The memory option: name, target, its own keys (``settings``), ``config_sha256`` = sha256 of the
    canonical JSON of the whole section, and the code fingerprint (stage fingerprint's v2-memory.json)."""
    return {"name": section["name"], "target": section.get("_target_"),
            "settings": {k: v for k, v in section.items() if not str(k).startswith("_") and k != "name"},
            "config_sha256": sha256_text(dumps_canonical(dict(section))),
            "fingerprint_sha256": fingerprint_sha256}


def variant_block(settings: Mapping[str, Any], data: DataCheck | None) -> dict[str, Any]:
    """The data's identity: repo and revision (null for the bundled sample), the custody record's path, the sha256
    of its bytes and ``files_sha256`` (:meth:`.data_custody.V2Custody.files_sha256`), and what the run's check found."""
    return {"name": settings["name"], "data_root": settings["data_root"], "haystack": settings["haystack"],
            "sha256_verified": bool(data and data.sha256_verified),
            "source": settings.get("source"), "repo": settings.get("repo"), "revision": settings.get("revision"),
            "custody": {"file": data.custody_file if data else None, "sha256": data.custody_sha256 if data else None,
                        "files_sha256": data.files_sha256 if data else None},
            "unverified_files": list(data.unverified) if data else []}


@dataclass(frozen=True)
class RunManifestV2:
    path: str
    sections: Mapping[str, Mapping[str, Any]]
    """:data:`SECTIONS`, each a JSON object."""
    official_equivalence: OfficialEquivalence
    protocol: GateFacts | None = None
    """What the family's gate read (the ``protocol`` section, :mod:`mnemetric.longmemeval_v2.gate`)."""

    def to_record(self) -> dict[str, Any]:
        gate = {PROTOCOL: self.protocol.to_record()} if self.protocol is not None else {}
        return {"schema": MANIFEST_SCHEMA, "path": self.path, "benchmark": FAMILY.display_name,
                **{k: dict(self.sections[k]) for k in SECTIONS}, **gate,
                OFFICIAL_KEY: self.official_equivalence.to_record()}

    @classmethod
    def from_record(cls, raw: Any, *, file: str) -> RunManifestV2:
        if not isinstance(raw, dict):
            raise InputError(file, "<file>", "<manifest>", f"expected a JSON object, got {type(raw).__name__}")
        if raw.get("schema") != MANIFEST_SCHEMA:
            raise InputError(file, "<file>", "schema", f"expected {MANIFEST_SCHEMA!r}, got {raw.get('schema')!r}",
                             fix="regenerate it (dvc repro v2_metrics)")
        for key in SECTIONS:
            if not isinstance(raw.get(key), dict):
                raise InputError(file, "<file>", key, "missing or not an object", fix="regenerate it (dvc repro v2_metrics)")
        if not isinstance(raw["variant"].get("sha256_verified"), bool):
            raise InputError(file, "<file>", "variant.sha256_verified", "expected true or false")
        official = OfficialEquivalence.from_record(raw.get(OFFICIAL_KEY), file=file)
        protocol = GateFacts.from_record(raw[PROTOCOL], file=file) if PROTOCOL in raw else None
        return cls(str(raw.get("path")), {k: raw[k] for k in SECTIONS}, official, protocol)


def v2_manifest(settings: Mapping[str, Any], summary: V2Summary, path: str, *, data: DataCheck | None = None,
                facts: Mapping[str, Any] | None = None, fingerprint_sha256: str | None = None,
                reader_params_sent: Sequence[Mapping[str, Any]] = (),
                judge_params_sent: Sequence[Mapping[str, Any]] = (), protocol: GateFacts | None = None) -> RunManifestV2:
    """The manifest of one run (module docstring). ``settings``: the ``v2`` section; ``summary``: the run's v2.json
    summary (:class:`.summary_file.V2Summary`); ``facts``: the :mod:`.facts` blocks the steps recorded;
    ``*_params_sent``: the distinct parameter sets the requests were sent with (empty when nothing was sent);
    ``protocol``: what the gate read (the run's :attr:`mnemetric.longmemeval_v2.run.V2Run.protocol`), kept so the
    family's gate decides from the manifest."""
    both = summary.headline
    facts = facts or {}
    hidden = ("texts_pinned", "note")
    reader = {"name": settings["reader"]["name"], "model": settings["reader"].get("model")}
    reader |= {k: v for k, v in (facts.get("reader") or {}).items() if k not in reader and k not in hidden}
    reader["params_sent"] = [dict(p) for p in reader_params_sent]
    checker = settings["checker"]
    judge = {"name": checker["name"], "kind": (facts.get("checker") or {}).get("kind", "offline"),
             "model": checker.get("model"), "reasoning_effort": checker.get("reasoning_effort"),
             "max_completion_tokens": checker.get("max_completion_tokens"), "prompt_set_sha256": None}
    judge |= {k: v for k, v in (facts.get("checker") or {}).items() if k != "name"}
    judge["params_sent"] = [dict(p) for p in judge_params_sent]
    counter = {k: v for k, v in (facts.get("token_counter") or {}).items() if k not in hidden} or {
        "name": settings["token_counter"].get("name"), "official": None}
    sections = {
        "variant": variant_block(settings, data), "suite": {"name": "full"},
        "memory": memory_facts(settings["memory"], fingerprint_sha256), "reader": reader, "judge": judge,
        "token_counter": counter,
        "counts": {"questions": both.questions, "judged": both.scored, "failed": both.failed},
    }
    return RunManifestV2(path, sections, summary.official_equivalence, protocol)


def write_manifest(path: str | Path, manifest: RunManifestV2) -> None:
    write_json_atomic(path, manifest.to_record())


def read_manifest(path: str | Path) -> RunManifestV2:
    from mnemetric.records import read_json_file

    raw = read_json_file(path, missing_fix="run the V2 stages first (dvc repro v2_metrics)")
    return RunManifestV2.from_record(raw, file=str(path))


# ---------------------------------------------------------------------------------------------
# What the doors show (the card's custody bullets, the report's custody facts), of any manifest

_TEXT = ((str,), "a string")
_FLAG = ((bool,), "true or false")
_COUNT = ((int,), "an integer")
SHOWN: Mapping[str, tuple[tuple[str, ...], Any]] = {
    **{f"variant_{k}": (("variant", k), _TEXT)
       for k in ("name", "source", "repo", "revision", "data_root", "haystack")},
    "variant_sha256_verified": (("variant", "sha256_verified"), _FLAG),
    "custody_file": (("variant", "custody", "file"), _TEXT),
    "custody_sha256": (("variant", "custody", "sha256"), _TEXT),
    **{f"memory_{k}": (("memory", k), _TEXT) for k in ("name", "fingerprint_sha256", "config_sha256")},
    "reader_name": (("reader", "name"), _TEXT), "reader_model": (("reader", "model"), _TEXT),
    "reader_official": (("reader", "official"), _FLAG),
    "judge_name": (("judge", "name"), _TEXT), "judge_model": (("judge", "model"), _TEXT),
    "judge_prompt_set_sha256": (("judge", "prompt_set_sha256"), _TEXT),
    "judge_official": (("judge", "official"), _FLAG),
    "token_counter_name": (("token_counter", "name"), _TEXT),
    "token_counter_official": (("token_counter", "official"), _FLAG),
    **{f"counts_{k}": (("counts", k), _COUNT) for k in ("questions", "judged", "failed")},
}
"""What the doors read of metrics/run-v2.json: attribute -> (path, kind)."""


@dataclass(frozen=True)
class RunV2Shown:
    """What the doors (the card's custody bullets, the report's custody facts) read of metrics/run-v2.json, typed:
    :data:`SHOWN`. A key the manifest lacks (an older or partial one) is None and shows as not recorded; one of
    the wrong type is an InputError naming the file and the key."""

    variant_name: str | None = None
    variant_source: str | None = None
    variant_repo: str | None = None
    variant_revision: str | None = None
    variant_data_root: str | None = None
    variant_haystack: str | None = None
    variant_sha256_verified: bool | None = None
    custody_file: str | None = None
    custody_sha256: str | None = None
    memory_name: str | None = None
    memory_fingerprint_sha256: str | None = None
    memory_config_sha256: str | None = None
    reader_name: str | None = None
    reader_model: str | None = None
    reader_official: bool | None = None
    judge_name: str | None = None
    judge_model: str | None = None
    judge_prompt_set_sha256: str | None = None
    judge_official: bool | None = None
    token_counter_name: str | None = None
    token_counter_official: bool | None = None
    counts_questions: int | None = None
    counts_judged: int | None = None
    counts_failed: int | None = None

    @classmethod
    def from_record(cls, raw: Any, *, file: str = "metrics/run-v2.json") -> RunV2Shown:
        top = Fields.shown(raw, file=file, fix="regenerate it (dvc repro v2_metrics)")
        values = {}
        for attr, (path, kind) in SHOWN.items():
            view = top
            for part in path[:-1]:
                view = view.within(part)
            values[attr] = view.maybe(path[-1], kind)
        return cls(**values)
