"""The official cross-check: upstream's own scoring scripts, run unchanged, against our numbers.

Source: xiaowu0162/LongMemEval @ 9e0b455f4ef0e2ab8f2e582289761153549043fc
(shared/docs/upstream-protocol.md sections 2.5, 3.3, 3.4). The scripts are read from a local
checkout, each file verified by sha256 first, and run as separate processes (``python -I
SCRIPT ...``) in an isolated environment built from ``crosscheck/upstream-v1.lock``; nothing of
them is copied, imported or executed inside Mnemetric. What they print is parsed and compared,
number by number, with what Mnemetric computes itself:

* ``print_retrieval_metrics.py LOG`` averages the metrics *stored in the log* over the questions
  whose id lacks "_abs" and prints, rounded to 4 decimals, session recall_all@5, ndcg_any@5,
  recall_all@10, ndcg_any@10 and turn recall_all/ndcg_any @5, @10, @50 (an empty turn line for
  session logs). Ours: :func:`score_retrieval_log` recomputes every metric from the ranking and
  the haystack, averaged by :func:`average_exclude_abs`.
* ``print_qa_metrics.py JUDGED REF`` prints per-type accuracy (count), task-averaged, overall and
  abstention accuracy (count), 4 decimals, ``nan`` for an empty bucket; it asserts every label's
  model is gpt-4o-2024-08-06. Ours: :func:`mnemetric.longmemeval.scoring.qa.point_estimates`.

* ``evaluate_qa.py gpt-4o HYP REF`` (the judge; only when an endpoint is configured, see
  :func:`crosscheck`) labels each hypothesis; compared label by label with our judged file, and
  its printed micro accuracy with ours. Against one endpoint, equal labels on every question are
  evidence that both judges sent the same prompts and parsed the replies alike.

"Agree" means ``float(printed) == round(np.float64(ours), 4)`` (numpy's rounding, as upstream
rounds numpy floats), counts and labels equal, or both undefined (upstream ``nan``, ours ``None``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mnemetric.errors import ConfigError, InputError, IntegrityError, PluginError
from mnemetric.io import require_file, sha256_file, write_json_atomic
from mnemetric.longmemeval.judge.upstream_prompts import SHA256 as EVALUATE_QA_SHA256
from mnemetric.custody.upstream_env import (  # noqa: F401  (re-exported: the isolated environment)
    ENV_MARKER, _interpreter, default_env_dir, describe_env, ensure_env, env_python, read_lock, run_script,
)

SCHEMA = "mnemetric.crosscheck/v1"
REPO = "xiaowu0162/LongMemEval"
REVISION = "9e0b455f4ef0e2ab8f2e582289761153549043fc"
RETRIEVAL_SCRIPT = "src/evaluation/print_retrieval_metrics.py"
QA_SCRIPT = "src/evaluation/print_qa_metrics.py"
EVALUATE_QA = "src/evaluation/evaluate_qa.py"
PINNED_SHA256 = {
    RETRIEVAL_SCRIPT: "58b70c0b562ea57372a7774a554c347cd908e901b77ac0149fc90b097b6f1b8f",
    QA_SCRIPT: "e9283933a0cefb7a0ded7365e436ae3d1be5aac41853325e6155d83bf07607f0",
    "src/retrieval/eval_utils.py": "c98b8d1096877a15aa755c9de44fe33c195298466a2eb6f3c0f9f6bde8c72349",
    EVALUATE_QA: EVALUATE_QA_SHA256,
}
DEFAULT_LOCK = Path(__file__).resolve().parents[3] / "crosscheck" / "upstream-v1.lock"
RETRIEVAL_PROFILE = "longmemeval-session-upstream-v1"
PRINTED = {
    "session": ("recall_all@5", "ndcg_any@5", "recall_all@10", "ndcg_any@10"),
    "turn": ("recall_all@5", "ndcg_any@5", "recall_all@10", "ndcg_any@10", "recall_all@50", "ndcg_any@50"),
}
"""What print_retrieval_metrics.py prints per level (the turn line only for turn logs)."""
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


def expected_hashes(overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """The pinned sha256 per upstream file, with ``overrides`` (tests, other revisions) on top."""
    unknown = sorted(set(overrides or {}) - set(PINNED_SHA256))
    if unknown:
        raise ConfigError("expected_sha256", f"unknown upstream file(s) {unknown}; known: {sorted(PINNED_SHA256)}")
    return PINNED_SHA256 | dict(overrides or {})


def verify_checkout(upstream_dir: str | Path, expected: Mapping[str, str]) -> dict[str, str]:
    """sha256 of each upstream file, verified against ``expected``; IntegrityError on a mismatch."""
    root = Path(upstream_dir)
    if not root.is_dir():
        raise InputError(str(root), "<folder>", "<folder>", "is not a folder",
                         fix=f"pass a checkout of {REPO} at {REVISION}")
    out: dict[str, str] = {}
    for rel, want in sorted(expected.items()):
        path = require_file(root / rel, fix=f"pass a checkout of {REPO} at {REVISION}")
        actual = sha256_file(path)
        if actual != want:
            raise IntegrityError(f"{path}: not the pinned upstream file\n  expected sha256: {want}\n"
                                 f"  actual sha256:   {actual}\n  fix: check out {REPO} at {REVISION}")
        out[rel] = actual
    return out


def _number(text: str) -> float | None:
    value = float(text)
    return None if value != value else value  # nan -> None


def parse_retrieval_output(text: str, script: str = RETRIEVAL_SCRIPT) -> dict[str, dict[str, float | None]]:
    """{"session": {name: value}, "turn": {...}} from print_retrieval_metrics.py's two lines."""
    head, sep, turn = text.partition("Turn-level metrics:")
    _, sep2, session = head.partition("Session-level metrics:")
    if not sep or not sep2:
        raise PluginError(f"upstream {Path(script).name}", "output", f"not the expected format: {text[:200]!r}")
    pattern = re.compile(r"([A-Za-z_]+@\d+) = ([-+0-9.eE]+|nan)")
    return {level: {k: _number(v) for k, v in pattern.findall(part)} for level, part in
            (("session", session), ("turn", turn))}


def parse_qa_output(text: str, script: str = QA_SCRIPT) -> dict[str, Any]:
    """Per-type (accuracy, count), task-averaged, overall and abstention from print_qa_metrics.py."""
    per_type = {t: (_number(a), int(n)) for t, a, n in re.findall(r"^\t([a-z-]+): (\S+) \((\d+)\)$", text, re.M)}
    summary = {key: re.search(rf"^{label}: (\S+)(?: \((\d+)\))?$", text, re.M) for key, label in
               (("task_averaged", "Task-averaged Accuracy"), ("overall", "Overall Accuracy"),
                ("abstention", "Abstention Accuracy"))}
    missing = [k for k, m in summary.items() if m is None]
    if missing or not per_type:
        raise PluginError(f"upstream {Path(script).name}", "output",
                          f"not the expected format (no {missing or 'per-type lines'}): {text[:200]!r}")
    out: dict[str, Any] = {"per_type": per_type}
    out |= {k: _number(m[1]) for k, m in summary.items()}
    out["abstention_n"] = int(summary["abstention"][2]) if summary["abstention"][2] else None
    return out


def upstream_round(value: float | None) -> float | None:
    """round(np.float64(x), 4) — numpy's rounding, as upstream rounds np.mean results."""
    return None if value is None else float(round(np.float64(value), 4))


# ------------------------------------------------------------------ the two comparisons


def retrieval_checks(python: str | Path, script: Path, log: Path, granularity: str) -> list[Check]:
    """print_retrieval_metrics.py on ``log`` vs our exclude-"_abs" averages of the recomputed metrics."""
    from mnemetric.longmemeval.retrieval_log import score_retrieval_log

    scored = score_retrieval_log(log, granularity, RETRIEVAL_PROFILE)
    ours = scored["aggregate"]["exclude_abs"]
    printed = parse_retrieval_output(run_script(python, script, [log.resolve()]))
    expected = {"session": PRINTED["session"], "turn": PRINTED["turn"] if scored["granularity"] == "turn" else ()}
    checks = []
    for level, names in expected.items():
        extra = [n for n in printed[level] if n not in names]  # printed but not expected: ours None
        for name in (*names, *extra):
            mine = upstream_round(ours.get(level, {}).get(name)) if name in names else None
            checks.append(Check(script.name, f"{level}.{name}", mine, printed[level].get(name)))
    return checks


def _check_judged_for_upstream(judged: Path, reference: Path) -> list[tuple[str, bool]]:
    """Inputs print_qa_metrics.py can read: JSONL judged lines by the official model, a JSON-list reference."""
    from mnemetric.longmemeval.hypotheses import read_judged
    from mnemetric.longmemeval.scoring.qa import OFFICIAL_JUDGE_MODEL

    for path, first, form in ((judged, "{", "JSONL (one object per line)"), (reference, "[", "one JSON list")):
        with open(require_file(path), encoding="utf-8") as fh:
            head = fh.read(4096).lstrip()
        if not head.startswith(first):
            raise InputError(str(path), "<file>", "<file>", f"upstream {Path(QA_SCRIPT).name} reads this file as {form}")
    pairs = []
    for j in read_judged(judged):
        if j.model != OFFICIAL_JUDGE_MODEL:
            raise InputError(str(judged), j.question_id, "autoeval_label.model",
                             f"{j.model!r}: upstream {Path(QA_SCRIPT).name} asserts every label is by "
                             f"{OFFICIAL_JUDGE_MODEL}", fix="cross-check a file judged by that model")
        pairs.append((j.question_id, j.label))
    return pairs


def qa_checks(python: str | Path, script: Path, judged: Path, reference: Path) -> list[Check]:
    """print_qa_metrics.py on (judged, reference) vs :func:`point_estimates` on the same labels."""
    from mnemetric.longmemeval.hypotheses import read_reference_minimal
    from mnemetric.longmemeval.scoring.qa import QUESTION_TYPES, check_items, join_with_reference, point_estimates

    pairs = _check_judged_for_upstream(judged, reference)
    types = {r.question_id: r.question_type for r in read_reference_minimal(reference)}
    items, _ = join_with_reference(pairs, types, allow_partial=True, file=str(judged))
    ours = point_estimates(check_items(items, str(judged)))
    printed = parse_qa_output(run_script(python, script, [judged.resolve(), reference.resolve()]))
    name = script.name
    checks = []
    for t in (*QUESTION_TYPES, *[t for t in printed["per_type"] if t not in QUESTION_TYPES]):
        mine = ours["per_type"].get(t, {"accuracy": None, "n": None})
        up = printed["per_type"].get(t, (None, None))
        checks += [Check(name, f"{t}.accuracy", upstream_round(mine["accuracy"]), up[0]),
                   Check(name, f"{t}.n", mine["n"], up[1])]
    checks += [Check(name, "task_averaged", upstream_round(ours["task_averaged"]), printed["task_averaged"]),
               Check(name, "overall", upstream_round(ours["overall"]), printed["overall"]),
               Check(name, "abstention.accuracy", upstream_round(ours["abstention"]["accuracy"]), printed["abstention"]),
               Check(name, "abstention.n", ours["abstention"]["n"], printed["abstention_n"])]
    return checks


# ------------------------------------------------------------------ the whole cross-check


def judge_checks(python: str | Path, script: Path, hypotheses: Path, judged: Path, reference: Path,
                 timeout: float) -> list[Check]:
    """``evaluate_qa.py gpt-4o HYP REF`` against the configured endpoint vs the labels of ``judged``.

    Upstream writes HYP.eval-results-gpt-4o next to HYP, so HYP is copied into a temporary folder
    first. One check per question (label 1/0; None on the side that lacks it) plus the printed
    "Accuracy:" (micro mean, 4 decimals). Upstream retries failed requests forever: ``timeout``.
    """
    from mnemetric.longmemeval.hypotheses import read_judged

    ours = {j.question_id: int(j.label) for j in read_judged(judged)}
    with tempfile.TemporaryDirectory(prefix="mnemetric-crosscheck-") as tmp:
        copy = Path(tmp) / hypotheses.name
        shutil.copyfile(hypotheses, copy)
        out = run_script(python, script, ["gpt-4o", copy, reference.resolve()], timeout=timeout)
        theirs = {j.question_id: int(j.label) for j in read_judged(Path(f"{copy}.eval-results-gpt-4o"))}
    printed = re.search(r"^Accuracy: (\S+)$", out, re.M)
    if printed is None:
        raise PluginError(f"upstream {script.name}", "output", f"no 'Accuracy:' line: {out[-200:]!r}")
    checks = [Check(script.name, f"label.{q}", ours.get(q), theirs.get(q)) for q in sorted(set(ours) | set(theirs))]
    mine = sum(ours.values()) / len(ours) if ours else None
    return [*checks, Check(script.name, "accuracy", upstream_round(mine), _number(printed[1]))]


def _endpoint() -> str | None:
    return os.environ.get("OPENAI_BASE_URL") if os.environ.get("OPENAI_API_KEY") else None


def _judge_not_run(hypotheses: Path | None, judged: Path | None) -> list[dict[str, str]]:
    if hypotheses is not None and judged is not None and _endpoint():
        return []
    reason = ("no endpoint configured (OPENAI_BASE_URL and OPENAI_API_KEY)" if not _endpoint()
              else "needs --hypotheses with --judged and --reference")
    return [{"script": Path(EVALUATE_QA).name, "reason": reason}]


def crosscheck(upstream_dir: str | Path, *, retrieval_log: Path | None = None, granularity: str = "auto",
               judged: Path | None = None, reference: Path | None = None, hypotheses: Path | None = None,
               python: str | Path | None = None, env_dir: str | Path | None = None, lock: str | Path = DEFAULT_LOCK,
               expected_sha256: Mapping[str, str] | None = None, notes: Sequence[str] = (),
               judge_timeout: float = 3600.0) -> dict[str, Any]:
    """Verify the checkout, run the upstream scripts, compare; return the evidence record.

    ``python`` uses that interpreter instead of the locked venv (tests, offline use); the evidence
    then says ``built_from_lock: false``. ``expected_sha256`` overrides pins (``pinned`` false).
    evaluate_qa.py runs only with ``hypotheses`` (and judged + reference) and an endpoint
    (OPENAI_BASE_URL + OPENAI_API_KEY), recorded as ``judge_endpoint``; otherwise ``not_run`` says
    why. ``notes`` are recorded as given (e.g. how an input file was prepared).
    """
    if retrieval_log is None and judged is None:
        raise ConfigError("crosscheck", "nothing to check", fix="pass --retrieval-log and/or --judged with --reference")
    if (judged is None) != (reference is None) or (hypotheses is not None and judged is None):
        raise ConfigError("crosscheck", "--judged and --reference go together (and --hypotheses needs both)",
                          fix="pass both")
    inputs = [p for p in (retrieval_log, judged, reference, hypotheses) if p is not None]
    for p in inputs:
        require_file(p)
    expected = expected_hashes(expected_sha256)
    root = Path(upstream_dir)
    files = verify_checkout(root, expected)
    interpreter = _interpreter(python) if python is not None else ensure_env(lock, env_dir)
    checks: list[Check] = []
    if retrieval_log is not None:
        checks += retrieval_checks(interpreter, root / RETRIEVAL_SCRIPT, Path(retrieval_log), granularity)
    if judged is not None:
        checks += qa_checks(interpreter, root / QA_SCRIPT, Path(judged), Path(reference))
    not_run = _judge_not_run(hypotheses, judged)
    if not not_run:
        checks += judge_checks(interpreter, root / EVALUATE_QA, Path(hypotheses), Path(judged), Path(reference),
                               judge_timeout)
    return {
        "schema": SCHEMA,
        "upstream": {"repo": REPO, "revision": REVISION, "pinned": expected == PINNED_SHA256, "files": files},
        "environment": describe_env(interpreter, lock) | {"built_from_lock": python is None},
        "inputs": {str(p): sha256_file(p) for p in inputs},
        "checks": [c.to_record() for c in checks],
        "judge_endpoint": None if not_run else _endpoint(),
        "not_run": not_run,
        "notes": list(notes),
        "agree": bool(checks) and all(c.agree for c in checks),
    }


def write_evidence(path: str | Path, evidence: Mapping[str, Any]) -> None:
    """Write the evidence atomically (no clock time in it: it may be committed)."""
    write_json_atomic(path, dict(evidence))
