"""The judge-audit file (`mnemetric judge-audit validity --out`, default metrics/detail/judge_audit.json): writer
and typed reader side by side.

Layout (keys in this order; no clock, no "sent this run" counter — a rerun from the caches writes the
same bytes)::

    official_equivalence  {value: false, reasons: [...]}        (an audit is never a score)
    judged_file           {path, sha256}                         (the verdicts audited)
    reference_file        {path, sha256} | null
    judges                [{name, judge, model, kind, controls, adversarial, agreement_with_run, repeat, failed}]
    pairwise              [{a, b, n, agreement, kappa, kappa_se, kappa_ci95}]
    disputed              {question_id: [reason, ...]}
    items                 [{set, question_id, question_type, hypothesis, expected, donor, labels: {judge: bool|null}}]

What each number means: :mod:`mnemetric.longmemeval.judge_audit.summary`. Other code (failure
attribution: "judge disputed") reads it through :func:`read_judge_audit`, never by key.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mnemetric.errors import InputError
from mnemetric.io import require_file, write_json_atomic
from mnemetric.official import KEY, OfficialEquivalence

DEFAULT_PATH = "metrics/detail/judge_audit.json"
KEYS = ("official_equivalence", "judged_file", "reference_file", "judges", "pairwise", "disputed", "items")
_FIX = "rerun `mnemetric judge-audit validity` with this version of Mnemetric"


def write_judge_audit(path: str | Path, record: Mapping[str, Any]) -> None:
    """Write the audit record atomically (keys checked against :data:`KEYS`)."""
    if tuple(record) != KEYS:
        raise ValueError(f"a judge-audit record has the keys {KEYS}, got {tuple(record)}")
    write_json_atomic(path, dict(record))


@dataclass(frozen=True)
class JudgeSummary:
    """One matrix judge's headline numbers (None: not measured)."""

    name: str
    positive_acceptance: float | None
    negative_acceptance: float | None
    adversarial_acceptance: Mapping[str, float | None]
    """rule → share of graded adversarial answers the judge accepted."""
    kappa_with_run: float | None
    agreement_with_run: float | None
    flip_rate: float | None
    """Repeat-judging flip rate (None: an offline judge, or no repeats)."""


@dataclass(frozen=True)
class JudgeAudit:
    """The judge-audit file, typed for its readers."""

    official_equivalence: OfficialEquivalence
    judged_file: str
    judged_sha256: str
    judges: tuple[JudgeSummary, ...]
    disputed: Mapping[str, tuple[str, ...]]
    """question_id → why its verdict is in doubt (controls or matrix disagree)."""
    raw: Mapping[str, Any]
    """The whole record, for the report's tables."""

    def is_disputed(self, question_id: str) -> bool:
        return question_id in self.disputed


def _num(value: Any, file: str, where: str, name: str) -> float | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise InputError(file, where, name, f"expected a number or null, got {value!r:.60}", fix=_FIX)
    return value


def _judge(raw: Any, file: str, i: int) -> JudgeSummary:
    where = f"judges[{i}]"
    if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str):
        raise InputError(file, where, "name", "expected an object with a string name", fix=_FIX)
    try:
        controls, adv, agree = raw["controls"], raw["adversarial"], raw["agreement_with_run"]["overall"]
        repeat = raw["repeat"]
        return JudgeSummary(
            raw["name"], _num(controls["positive"]["acceptance"], file, where, "controls.positive.acceptance"),
            _num(controls["negative"]["acceptance"], file, where, "controls.negative.acceptance"),
            {r: _num(b["acceptance"], file, where, f"adversarial.{r}.acceptance") for r, b in adv.items()},
            _num(agree["kappa"], file, where, "agreement_with_run.overall.kappa"),
            _num(agree["agreement"], file, where, "agreement_with_run.overall.agreement"),
            None if repeat is None else _num(repeat["flip_rate"], file, where, "repeat.flip_rate"))
    except (KeyError, TypeError) as exc:
        raise InputError(file, where, str(exc).strip("'"), "missing or not an object", fix=_FIX) from None


def read_judge_audit(path: str | Path) -> JudgeAudit:
    """The audit file, checked: a missing key or a wrong type names the file and the field."""
    file = str(path)
    text = require_file(Path(path), fix="run `mnemetric judge-audit validity JUDGED REF` first").read_text("utf-8")
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(file, f"line {exc.lineno}", "(file)", f"not valid JSON: {exc.msg}", fix=_FIX) from None
    if not isinstance(raw, dict):
        raise InputError(file, "index 0", "(file)", "expected a JSON object", fix=_FIX)
    missing = [k for k in KEYS if k not in raw]
    if missing:
        raise InputError(file, "<file>", missing[0], "missing: not a judge-audit file", fix=_FIX)
    gate = OfficialEquivalence.from_record(raw[KEY], file=file)
    judged = raw["judged_file"]
    if not isinstance(judged, Mapping) or not isinstance(judged.get("path"), str) or not isinstance(judged.get("sha256"), str):
        raise InputError(file, "<file>", "judged_file", "expected {path, sha256}", fix=_FIX)
    if not isinstance(raw["judges"], list):
        raise InputError(file, "<file>", "judges", "expected a list", fix=_FIX)
    disputed = raw["disputed"]
    if not isinstance(disputed, Mapping) or not all(
            isinstance(v, list) and all(isinstance(s, str) for s in v) for v in disputed.values()):
        raise InputError(file, "<file>", "disputed", "expected {question_id: [reason, ...]}", fix=_FIX)
    return JudgeAudit(gate, judged["path"], judged["sha256"],
                      tuple(_judge(j, file, i) for i, j in enumerate(raw["judges"])),
                      {q: tuple(v) for q, v in disputed.items()}, raw)
