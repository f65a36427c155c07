"""The run manifest (``metrics/run.json``, schema ``mnemetric.run-manifest/v1``): the generic frame.

Deterministic by construction: no clock time, no git commit (a tracked file cannot hold the commit
that contains it); code identity is by content. A manifest is, in this order: ``schema``,
``benchmark`` (the family's ``display_name``), the family's own sections, and
``official_equivalence: {value, reasons}`` (:class:`mnemetric.official.OfficialEquivalence`) from
the family's own gate, ``Family.official_reasons`` (:func:`mnemetric.custody.gate.gate`;
:func:`build_manifest`, pure).

The sections are the family's (``Family.manifest_sections``; LongMemEval's are built in
:mod:`mnemetric.longmemeval.family`); the frame requires the ones its gate reads
(``Family.required_sections``) and knows no key inside them.

Helpers a family uses to fill its sections, family-free: :func:`config_sha256`,
:func:`spread`, :func:`params_sent` (the output parameters of the requests actually sent, as the
output lines record them next to each request sha256 — ``{"requests", "values", "not_in_cache"}``;
a line that names a request but records no parameters, e.g. a file written before they were recorded,
is counted in ``not_in_cache``, never filled in from conf), :func:`distinct`, :func:`package_versions`,
and the readers :func:`read_json_file`, :func:`read_lines`. A manifest is built from tracked files
alone (no cache is read). This module imports no family.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from mnemetric.custody.gate import gate
from mnemetric.errors import InputError, PluginError
from mnemetric.family import Family
from mnemetric.io import dumps_canonical, sha256_text, write_json_atomic
from mnemetric.official import KEY, OfficialEquivalence
from mnemetric.records import BOOLEAN, Fields

SCHEMA = "mnemetric.run-manifest/v1"
PACKAGES = ("dvc", "hydra-core", "omegaconf", "numpy", "rank-bm25", "bm25s", "openai", "httpx")
NOT_INSTALLED = "not installed"


def config_sha256(section: Any) -> str:
    """sha256 of the canonical JSON (sorted keys, no whitespace, non-ASCII escaped as ``\\uXXXX``:
    the committed run manifests' hashes were made so) of a params section."""
    return sha256_text(dumps_canonical(section, ascii=True))


def spread(values: Sequence[float]) -> dict[str, float] | None:
    """``{min, mean, max}`` of the values; None when there are none."""
    if not values:
        return None
    return {"min": min(values), "mean": sum(values) / len(values), "max": max(values)}


def params_sent(recorded: Iterable[tuple[str | None, Mapping[str, Any] | None]]) -> dict[str, Any] | None:
    """The distinct parameter sets sent, from ``(request_sha256, params_sent)`` of each output line: a
    line without a request sha256 sent nothing; one without ``params_sent`` is counted as not recorded
    (``not_in_cache``: the key keeps the manifest's layout). None when no line names a request."""
    sent = [params for sha, params in recorded if sha]
    if not sent:
        return None
    values: list[dict] = []
    for got in sent:
        if got is not None and dict(got) not in values:
            values.append(dict(got))
    missing = sum(got is None for got in sent)
    return {"requests": len(sent), "values": sorted(values, key=dumps_canonical), "not_in_cache": missing}


RESERVED = ("schema", "benchmark", "official_equivalence")


def distinct(values: Iterable[Any]) -> list[str]:
    """The distinct non-null values as strings, sorted."""
    return sorted({str(v) for v in values if v is not None})


@dataclass(frozen=True)
class RunManifest:
    """A run manifest of the frame, typed (reader beside writer): the family's display name, its sections in
    their order, the gate's verdict. :meth:`to_record` is the file's layout (module docstring)."""

    benchmark: str
    sections: Mapping[str, Any]
    official_equivalence: OfficialEquivalence

    def to_record(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "benchmark": self.benchmark, **{k: v for k, v in self.sections.items()},
                KEY: self.official_equivalence.to_record()}

    @classmethod
    def from_record(cls, raw: Any, *, file: str, required: Sequence[str] = ()) -> RunManifest:
        """Read back :meth:`to_record`; the schema, the benchmark, each ``required`` section (an object) and the
        verdict are checked, naming the field."""
        fix = "regenerate it (dvc repro)"
        if not isinstance(raw, Mapping):
            raise InputError(file, "<file>", "<manifest>", f"expected a JSON object, got {type(raw).__name__}", fix=fix)
        if raw.get("schema") != SCHEMA:
            raise InputError(file, "<file>", "schema", f"expected {SCHEMA!r}, got {raw.get('schema')!r}", fix=fix)
        if not isinstance(raw.get("benchmark"), str):
            raise InputError(file, "<file>", "benchmark", "missing or not a string", fix=fix)
        for key in required:
            if not isinstance(raw.get(key), Mapping):
                raise InputError(file, "<file>", key, "missing or not an object", fix=fix)
        sections = {k: v for k, v in raw.items() if k not in RESERVED}
        return cls(raw["benchmark"], sections, OfficialEquivalence.from_record(raw.get(KEY), file=file))


_TEXT = ((str,), "a string")
_COUNT = ((int,), "an integer")


@dataclass(frozen=True)
class ManifestShown:
    """What the result card's frame reads of any family's run manifest, typed: ``benchmark``,
    ``variant.name`` / ``.sha256_verified``, ``suite.name``, ``memory.name``, ``counts.judged`` /
    ``.questions`` / ``.failed``. A key the manifest lacks is None (shows as "—"); one of the wrong type is an
    InputError naming the file and the key. (The verdict is read by :class:`OfficialEquivalence`.)"""

    benchmark: str | None = None
    variant_name: str | None = None
    variant_sha256_verified: bool | None = None
    suite_name: str | None = None
    memory_name: str | None = None
    counts_judged: int | None = None
    counts_questions: int | None = None
    counts_failed: int | None = None

    @classmethod
    def from_record(cls, raw: Any, *, file: str) -> ManifestShown:
        f = Fields.shown(raw, file=file, fix="regenerate it (dvc repro)")
        v, c = f.within("variant"), f.within("counts")
        return cls(f.maybe("benchmark", _TEXT), v.maybe("name", _TEXT), v.maybe("sha256_verified", BOOLEAN),
                   f.within("suite").maybe("name", _TEXT), f.within("memory").maybe("name", _TEXT),
                   c.maybe("judged", _COUNT), c.maybe("questions", _COUNT), c.maybe("failed", _COUNT))


def read_run_manifest(path: str | Path, family: Family) -> RunManifest:
    """The run manifest at ``path``, checked against the frame and ``family``'s required sections."""
    return RunManifest.from_record(read_json_file(path), file=str(path), required=family.required_sections)


def write_run_manifest(path: str | Path, manifest: RunManifest) -> None:
    write_json_atomic(path, manifest.to_record())


def build_manifest(family: Family, sections: Mapping[str, Any]) -> dict[str, Any]:
    """The run manifest of ``family`` as the file holds it (:func:`frame_manifest`'s record). Pure."""
    return frame_manifest(family, sections).to_record()


def frame_manifest(family: Family, sections: Mapping[str, Any]) -> RunManifest:
    """The run manifest of ``family``: schema, benchmark, ``sections`` in their order, the family's gate. Pure.

    A section named like a frame key (:data:`RESERVED`), or a missing section the gate reads, is the family's
    error (PluginError)."""
    clash = [k for k in RESERVED if k in sections]
    if clash:
        raise PluginError(family.name, "manifest_sections", f"returned the frame's own key(s) {clash}",
                          fix="return only the family's sections; custody writes schema, benchmark and the gate")
    missing = [k for k in family.required_sections if k not in sections]
    if missing:
        raise PluginError(family.name, "manifest_sections", f"returned no {missing} section(s), which its gate reads",
                          fix="return every section of the family's required_sections")
    draft = {"schema": SCHEMA, "benchmark": family.display_name, **sections}
    return RunManifest(family.display_name, dict(sections), gate(draft, family))


# ---------------------------------------------------------------------------------------------
# Reading (the edges)


def package_versions(names: Iterable[str] = ("mnemetric", *PACKAGES)) -> dict[str, str]:
    """Installed distribution versions (``not installed`` when absent)."""
    out = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = NOT_INSTALLED
    return out


def read_json_file(path: str | Path) -> Any:
    """A JSON file; missing or invalid is an InputError naming it."""
    from mnemetric.io import require_file
    try:
        return json.loads(require_file(path).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(str(path), "<file>", "<json>", f"not valid JSON ({exc})") from None


def read_lines(path: str | Path, *, optional: bool = False) -> list[dict]:
    """The JSON objects of a JSONL file (an absent optional file: none); a bad line names file and line."""
    from mnemetric.io import read_jsonl
    if optional and not Path(path).is_file():
        return []
    out = []
    for line, obj in read_jsonl(path):
        if not isinstance(obj, dict):
            raise InputError(str(path), f"line {line}", "<line>", "expected a JSON object")
        out.append(obj)
    return out
