"""The official cross-check's frame: a family's upstream scoring scripts, run unchanged, against our numbers.

Which scripts, their pins, how to run them and how to read what they print are the family's
(``Family.crosscheck``, a :class:`mnemetric.family.CrosscheckScripts`; LongMemEval's is
:data:`mnemetric.longmemeval.family.CROSSCHECK`, its print parsers in
:mod:`mnemetric.longmemeval.crosscheck`). The frame, here: the checkout is verified file by file
against the pinned sha256 first; the scripts run as separate processes in an isolated environment
built from the spec's lock (:mod:`mnemetric.custody.upstream_env`), so nothing of them is copied,
imported or executed inside Mnemetric; the evidence (schema ``mnemetric.crosscheck/v1``) records
the upstream files, the environment, the inputs' sha256 and every :class:`Check`.

"Agree" means ``float(printed) == round(np.float64(ours), 4)`` (numpy's rounding, as upstream
rounds numpy floats; :func:`upstream_round`), counts and labels equal, or both undefined (upstream
``nan``, ours ``None``). This module imports no family.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mnemetric.custody.upstream_env import _interpreter, describe_env, ensure_env
from mnemetric.errors import ConfigError, InputError, IntegrityError
from mnemetric.family import CrosscheckScripts
from mnemetric.io import require_file, sha256_file, write_json_atomic

SCHEMA = "mnemetric.crosscheck/v1"
Number = float | int | None


@dataclass(frozen=True)
class Check:
    """One number printed by an upstream script, next to ours (rounded as upstream rounds)."""

    script: str
    metric: str
    ours: Number
    upstream: Number

    @property
    def agree(self) -> bool:
        return self.ours == self.upstream

    def to_record(self) -> dict[str, Any]:
        return {"script": self.script, "metric": self.metric, "ours": self.ours, "upstream": self.upstream,
                "agree": self.agree}

    @classmethod
    def from_record(cls, raw: Any, *, file: str, line: str) -> Check:
        if not isinstance(raw, dict):
            raise InputError(file, line, "<check>", f"expected an object, got {type(raw).__name__}")
        for key in ("script", "metric"):
            if not isinstance(raw.get(key), str):
                raise InputError(file, line, key, "missing or not a string")
        for key in ("ours", "upstream"):
            if raw.get(key) is not None and (isinstance(raw[key], bool) or not isinstance(raw[key], (int, float))):
                raise InputError(file, line, key, f"expected a number or null, got {raw[key]!r:.60}")
        check = cls(raw["script"], raw["metric"], raw.get("ours"), raw.get("upstream"))
        if raw.get("agree") is not check.agree:
            raise InputError(file, line, "agree", f"says {raw.get('agree')!r} but ours and upstream "
                             f"{'agree' if check.agree else 'differ'}")
        return check


def read_evidence(path: str | Path) -> tuple[dict[str, Any], list[Check]]:
    """A cross-check evidence file (schema mnemetric.crosscheck/v1): (the record, its typed checks)."""
    file = str(path)
    try:
        raw = json.loads(require_file(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(file, "<file>", "<json>", f"not valid JSON ({exc.msg})") from None
    if not isinstance(raw, dict) or raw.get("schema") != SCHEMA:
        raise InputError(file, "<file>", "schema", f"expected {SCHEMA!r}")
    if not isinstance(raw.get("checks"), list):
        raise InputError(file, "<file>", "checks", "missing or not a list")
    checks = [Check.from_record(c, file=file, line=f"index {i}") for i, c in enumerate(raw["checks"])]
    if raw.get("agree") is not (bool(checks) and all(c.agree for c in checks)):
        raise InputError(file, "<file>", "agree", "does not match the checks")
    return raw, checks


# ------------------------------------------------------------------ checkout and environment


def expected_hashes(spec: CrosscheckScripts, overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """The pinned sha256 per upstream file, with ``overrides`` (tests, other revisions) on top."""
    pinned = dict(spec.pinned_sha256)
    unknown = sorted(set(overrides or {}) - set(pinned))
    if unknown:
        raise ConfigError("expected_sha256", f"unknown upstream file(s) {unknown}; known: {sorted(pinned)}")
    return pinned | dict(overrides or {})


def verify_checkout(upstream_dir: str | Path, expected: Mapping[str, str], spec: CrosscheckScripts) -> dict[str, str]:
    """sha256 of each upstream file, verified against ``expected``; IntegrityError on a mismatch."""
    root, repo, revision = Path(upstream_dir), spec.repo, spec.revision
    if not root.is_dir():
        raise InputError(str(root), "<folder>", "<folder>", "is not a folder",
                         fix=f"pass a checkout of {repo} at {revision}")
    out: dict[str, str] = {}
    for rel, want in sorted(expected.items()):
        path = require_file(root / rel, fix=f"pass a checkout of {repo} at {revision}")
        actual = sha256_file(path)
        if actual != want:
            raise IntegrityError(f"{path}: not the pinned upstream file\n  expected sha256: {want}\n"
                                 f"  actual sha256:   {actual}\n  fix: check out {repo} at {revision}")
        out[rel] = actual
    return out


def number(text: str) -> float | None:
    """A printed number; ``nan`` is None (undefined on both sides agrees)."""
    value = float(text)
    return None if value != value else value  # nan -> None


def upstream_round(value: float | None) -> float | None:
    """round(np.float64(x), 4) — numpy's rounding, as upstream rounds np.mean results."""
    return None if value is None else float(round(np.float64(value), 4))


# ------------------------------------------------------------------ the two comparisons


def endpoint() -> str | None:
    """The endpoint a judge script would call (OPENAI_BASE_URL with OPENAI_API_KEY set), else None."""
    return os.environ.get("OPENAI_BASE_URL") if os.environ.get("OPENAI_API_KEY") else None


def crosscheck(upstream_dir: str | Path, spec: CrosscheckScripts, *, python: str | Path | None = None,
               env_dir: str | Path | None = None, lock: str | Path | None = None,
               expected_sha256: Mapping[str, str] | None = None, notes: Sequence[str] = (),
               **inputs: Any) -> dict[str, Any]:
    """Verify the checkout, run the family's upstream scripts, compare; return the evidence record.

    ``inputs`` are the family's (``spec.input_files`` checks them; LongMemEval: ``retrieval_log``,
    ``granularity``, ``judged``, ``reference``, ``hypotheses``, ``judge_timeout``). ``python`` uses
    that interpreter instead of the locked venv (tests, offline use); the evidence then says
    ``built_from_lock: false``. ``expected_sha256`` overrides pins (``pinned`` false). ``notes`` are
    recorded as given (e.g. how an input file was prepared). ``lock`` defaults to the spec's.
    """
    lock = spec.lock if lock is None else lock
    files_in = spec.input_files(inputs)
    for p in files_in:
        require_file(p)
    expected = expected_hashes(spec, expected_sha256)
    root = Path(upstream_dir)
    files = verify_checkout(root, expected, spec)
    interpreter = _interpreter(python) if python is not None else ensure_env(lock, env_dir)
    checks, not_run, judge_endpoint = spec.run(interpreter, root, inputs)
    return {
        "schema": SCHEMA,
        "upstream": {"repo": spec.repo, "revision": spec.revision, "pinned": expected == dict(spec.pinned_sha256),
                     "files": files},
        "environment": describe_env(interpreter, lock) | {"built_from_lock": python is None},
        "inputs": {str(p): sha256_file(p) for p in files_in},
        "checks": [c.to_record() for c in checks],
        "judge_endpoint": judge_endpoint,
        "not_run": not_run,
        "notes": list(notes),
        "agree": bool(checks) and all(c.agree for c in checks),
    }


def write_evidence(path: str | Path, evidence: Mapping[str, Any]) -> None:
    """Write the evidence atomically (no clock time in it: it may be committed)."""
    write_json_atomic(path, dict(evidence))
