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

Helpers a family uses to fill its sections, family-free: :func:`nest`, :func:`config_sha256`,
:func:`spread`, :func:`params_sent` (the output parameters of the requests actually sent, read back
from the LLM response cache by request sha256 — ``{"requests", "values", "not_in_cache"}``; a row
absent from the cache is counted, never filled in from conf), :func:`distinct`,
:func:`package_versions`, and the readers :func:`read_json_file`, :func:`read_lines`,
:func:`cache_lookup`. This module imports no family.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from mnemetric.custody.gate import gate
from mnemetric.errors import InputError, PluginError
from mnemetric.family import Family
from mnemetric.io import dumps_canonical, sha256_text

SCHEMA = "mnemetric.run-manifest/v1"
PACKAGES = ("dvc", "hydra-core", "omegaconf", "numpy", "rank-bm25", "bm25s", "openai", "httpx")
NOT_INSTALLED = "not installed"
NOT_IN_CACHE = "not in cache"


def nest(flat: Mapping[str, Any]) -> dict[str, Any]:
    """``{"a.b": 1}`` -> ``{"a": {"b": 1}}`` (a stage's declared params as the composed layout)."""
    out: dict[str, Any] = {}
    for dotted, value in flat.items():
        node = out
        *parents, last = dotted.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    return out


def config_sha256(section: Any) -> str:
    """sha256 of the canonical JSON (sorted keys, no whitespace, non-ASCII escaped as ``\\uXXXX``:
    the committed run manifests' hashes were made so) of a params section."""
    return sha256_text(dumps_canonical(section, ascii=True))


def spread(values: Sequence[float]) -> dict[str, float] | None:
    """``{min, mean, max}`` of the values; None when there are none."""
    if not values:
        return None
    return {"min": min(values), "mean": sum(values) / len(values), "max": max(values)}


def params_sent(request_shas: Sequence[str | None], cached_params: Callable[[str], Mapping[str, Any] | None]
                ) -> dict[str, Any] | None:
    """The distinct parameter sets of the cached requests; rows absent from the cache are counted."""
    shas = [s for s in request_shas if s]
    if not shas:
        return None
    values: list[dict] = []
    missing = 0
    for sha in shas:
        got = cached_params(sha)
        if got is None:
            missing += 1
        elif dict(got) not in values:
            values.append(dict(got))
    return {"requests": len(shas), "values": sorted(values, key=dumps_canonical), "not_in_cache": missing}


RESERVED = ("schema", "benchmark", "official_equivalence")


def distinct(values: Iterable[Any]) -> list[str]:
    """The distinct non-null values as strings, sorted."""
    return sorted({str(v) for v in values if v is not None})


def build_manifest(family: Family, sections: Mapping[str, Any]) -> dict[str, Any]:
    """The run manifest of ``family``: schema, benchmark, ``sections`` in their order, the family's gate. Pure.

    A section named like a frame key (:data:`RESERVED`) is the family's error (PluginError)."""
    clash = [k for k in RESERVED if k in sections]
    if clash:
        raise PluginError(family.name, "manifest_sections", f"returned the frame's own key(s) {clash}",
                          fix="return only the family's sections; custody writes schema, benchmark and the gate")
    missing = [k for k in family.required_sections if k not in sections]
    if missing:
        raise PluginError(family.name, "manifest_sections", f"returned no {missing} section(s), which its gate reads",
                          fix="return every section of the family's required_sections")
    manifest = {"schema": SCHEMA, "benchmark": family.display_name, **sections}
    manifest["official_equivalence"] = gate(manifest, family).to_record()
    return manifest


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


def cache_lookup(cache_path: str | Path | None = None) -> Callable[[str], Mapping[str, Any] | None]:
    """request sha256 -> the cached request's ``params`` (None when absent); never creates a cache file."""
    from mnemetric.llm.cache import CACHE_FILENAME, default_cache_dir
    import sqlite3

    path = Path(cache_path) if cache_path is not None else default_cache_dir() / CACHE_FILENAME
    if not path.is_file():
        return lambda sha: None
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)

    def get(sha: str) -> Mapping[str, Any] | None:
        try:
            row = conn.execute("SELECT request_json FROM responses WHERE key=?", (sha,)).fetchone()
        except sqlite3.Error as exc:
            raise InputError(str(path), sha, "request_json", f"the LLM cache cannot be read ({exc})",
                             fix="point MNEMETRIC_CACHE_DIR at a Mnemetric cache") from None
        return None if row is None else json.loads(row[0]).get("params", {})
    return get
