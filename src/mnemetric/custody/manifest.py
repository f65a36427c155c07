"""The run manifest (``metrics/run.json``, schema ``mnemetric.run-manifest/v1``): where a run's numbers came from.

Deterministic by construction: no clock time, no git commit (a tracked file cannot hold the commit
that contains it); code identity is by content (the component fingerprints of
``data/fingerprints/`` and the package versions). :func:`build_manifest` is pure over
:class:`RunInputs`; :func:`gather_inputs` does the reading. Keys (the inventory,
:mod:`mnemetric.custody.inventory`, reads ``benchmark``, ``variant.name``,
``variant.sha256_verified``, ``suite.name``, ``judge.name``, ``judge.kind``,
``judge.prompt_set_sha256``, ``counts.*`` and ``official_equivalence.*``):

* ``variant``: name, source, repo, revision, file, sha256 (conf) and ``sha256_verified`` (the
  custody record ``data/custody/<variant>.json``, key ``verified``).
* ``suite``: name, kind, size and ``ids_sha256`` (sha256 of the question-id list, from the suite file).
* ``adapter``: name, schema. ``memory``: name, ``config_sha256`` (sha256 of the canonical JSON of
  the ``memory`` params section), ``fingerprint_sha256`` (``data/fingerprints/memory.json``).
* ``reader`` / ``judge``: name, kind, requested model, ``resolved_models`` (what the server returned:
  hypotheses' ``model`` field, judged lines' ``autoeval_label.model``), ``prompt_set_sha256`` (the one
  set every judgment names, else null; all of them in ``prompt_set_sha256s``, judge only),
  ``endpoints``, and ``params_sent``: the output parameters of the requests actually sent, read back
  from the LLM response cache (:mod:`mnemetric.llm.cache`) by each line's request sha256 —
  ``{"requests", "values" (distinct parameter sets), "not_in_cache"}``; a row absent from the cache is
  counted as "not in cache", never filled in from conf. ``null`` when no request was made.
* ``retrieval``: requested (granularity, context_k, context_tokens) and delivered (per question:
  items and tokens, min/mean/max, from the contexts file).
* ``scoring.profile``, ``mnemetric_version``, ``packages`` (key package versions), ``counts``
  (questions in the suite, judged lines, failed = lines of ``<judged>.failures.jsonl``).
* ``official_equivalence``: ``{value, reasons}`` from :func:`mnemetric.custody.gate.official_equivalence`
  under the family's :class:`mnemetric.family.OfficialProtocol`.

The family (``benchmark`` = its ``display_name``, the reader prompt module, the gate's protocol) is
passed in by the door (stage run_manifest passes :data:`mnemetric.longmemeval.family.FAMILY`); this
module imports no family.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from mnemetric.custody.gate import official_equivalence
from mnemetric.errors import InputError
from mnemetric.family import Family
from mnemetric.io import dumps_canonical

SCHEMA = "mnemetric.run-manifest/v1"
PACKAGES = ("dvc", "hydra-core", "omegaconf", "numpy", "rank-bm25", "bm25s", "openai", "httpx")
NOT_INSTALLED = "not installed"
NOT_IN_CACHE = "not in cache"


@dataclass(frozen=True)
class RunInputs:
    """Everything a manifest is built from (already read; see :func:`gather_inputs`)."""

    params: Mapping[str, Any]
    """The composed params (params.yaml)."""
    custody: Mapping[str, Any]
    suite: Mapping[str, Any]
    memory_fingerprint: Mapping[str, Any]
    reader_fingerprint: Mapping[str, Any]
    hypotheses: Sequence[Mapping[str, Any]]
    judged: Sequence[Mapping[str, Any]]
    judged_failures: int
    contexts: Sequence[Mapping[str, Any]]
    cached_params: Callable[[str], Mapping[str, Any] | None] = field(compare=False)
    """request sha256 -> the ``params`` of the cached request, or None when the row is absent."""
    versions: Mapping[str, str] = field(default_factory=dict)


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
    """sha256 of the canonical JSON (sorted keys, no whitespace) of a params section."""
    return hashlib.sha256(json.dumps(section, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def spread(values: Sequence[float]) -> dict[str, float] | None:
    """``{min, mean, max}`` of the values; None when there are none."""
    if not values:
        return None
    return {"min": min(values), "mean": sum(values) / len(values), "max": max(values)}


def delivered_budget(contexts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Per question: the number of context items and their tokens (contexts file ``items``, ``tokens``)."""
    return {"questions": len(contexts), "items": spread([len(c.get("items") or []) for c in contexts]),
            "tokens": spread([c.get("tokens", 0) for c in contexts])}


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


def _distinct(values: Iterable[Any]) -> list[str]:
    return sorted({str(v) for v in values if v is not None})


def reader_block(p: Mapping[str, Any], fingerprint: Mapping[str, Any], hyps: Sequence[Mapping[str, Any]],
                 cached: Callable[[str], Mapping[str, Any] | None], prompt_module: str | None) -> dict[str, Any]:
    """The reader: ``prompt_set_sha256`` is the fingerprint of ``prompt_module`` for a model reader."""
    spec = p["reader"]
    llm = spec.get("kind") != "extractive"
    prompt = (fingerprint.get("modules") or {}).get(prompt_module) if llm and prompt_module else None
    return {"name": spec["name"], "kind": spec.get("kind"), "requested_model": spec.get("model"),
            "resolved_models": _distinct(h.get("model") for h in hyps), "prompt_set_sha256": prompt,
            "fingerprint_sha256": fingerprint.get("sha256"),
            "params_sent": params_sent([h.get("request_sha256") for h in hyps], cached)}


def judge_block(p: Mapping[str, Any], judged: Sequence[Mapping[str, Any]],
                cached: Callable[[str], Mapping[str, Any] | None]) -> dict[str, Any]:
    spec = p["judge"]
    traces = [j.get("mnemetric_judge") or {} for j in judged]
    prompt_sets = _distinct(t.get("prompt_set_sha256") for t in traces)
    return {"name": spec["name"], "kind": spec.get("kind"), "requested_model": spec.get("model"),
            "resolved_models": _distinct((j.get("autoeval_label") or {}).get("model") for j in judged),
            "prompt_set_sha256": prompt_sets[0] if len(prompt_sets) == 1 else None,
            "prompt_set_sha256s": prompt_sets,
            "endpoints": _distinct(t.get("endpoint") for t in traces),
            "params_sent": params_sent([t.get("request_sha256") for t in traces], cached)}


def gate(manifest: Mapping[str, Any], family: Family) -> tuple[bool, list[str]]:
    """The family's publishability gate; a family without an official protocol is never official."""
    if family.official is None:
        return False, [f"{family.display_name} has no official protocol to check a run against"]
    return official_equivalence(manifest, family.official)


def build_manifest(inp: RunInputs, family: Family) -> dict[str, Any]:
    """The run manifest of ``family`` (module docstring), official_equivalence included. Pure."""
    p, v = inp.params, inp.params["variant"]
    manifest = {
        "schema": SCHEMA, "benchmark": family.display_name, "mnemetric_version": inp.versions.get("mnemetric", NOT_INSTALLED),
        "variant": {"name": v["name"], "source": v.get("source"), "repo": v.get("repo"), "revision": v.get("revision"),
                    "file": v.get("file"), "sha256": v.get("sha256"),
                    "sha256_verified": inp.custody.get("verified") is True and inp.custody.get("sha256") == v.get("sha256")},
        "suite": {"name": p["suite"]["name"], "kind": p["suite"].get("kind"), "size": inp.suite.get("size"),
                  "ids_sha256": inp.suite.get("ids_sha256")},
        "adapter": {"name": p["adapter"]["name"], "schema": p["adapter"].get("schema")},
        "memory": {"name": p["memory"]["name"], "config_sha256": config_sha256(p["memory"]),
                   "fingerprint_sha256": inp.memory_fingerprint.get("sha256")},
        "reader": reader_block(p, inp.reader_fingerprint, inp.hypotheses, inp.cached_params,
                               family.reader_prompt_module),
        "judge": judge_block(p, inp.judged, inp.cached_params),
        "retrieval": {"requested": {k: p["retrieval"].get(k) for k in ("granularity", "context_k", "context_tokens")},
                      "delivered": delivered_budget(inp.contexts)},
        "scoring": {"profile": p["scoring"]["name"]},
        "packages": {name: inp.versions.get(name, NOT_INSTALLED) for name in PACKAGES},
        "counts": {"questions": len(inp.suite.get("question_ids") or []), "judged": len(inp.judged),
                   "failed": inp.judged_failures},
    }
    value, reasons = gate(manifest, family)
    manifest["official_equivalence"] = {"value": value, "reasons": reasons}
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


def gather_inputs(params: Mapping[str, Any], *, cache_path: str | Path | None = None) -> RunInputs:
    """Read every file a manifest is built from (paths from params)."""
    paths, variant = params["paths"], params["variant"]
    judged = paths["judged"]
    return RunInputs(
        params=params, custody=read_json_file(f"{paths['custody_dir']}/{variant['name']}.json"),
        suite=read_json_file(paths["suite"]),
        memory_fingerprint=read_json_file(f"{paths['fingerprints']}/memory.json"),
        reader_fingerprint=read_json_file(f"{paths['fingerprints']}/reader.json"),
        hypotheses=read_lines(paths["hypotheses"]), judged=read_lines(judged),
        judged_failures=len(read_lines(f"{judged}.failures.jsonl", optional=True)),
        contexts=read_lines(paths["contexts"]), cached_params=cache_lookup(cache_path), versions=package_versions())
