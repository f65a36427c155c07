"""The official cross-check: upstream's own scoring scripts, run unchanged, against our numbers.

Which scripts, their pins and our side of each comparison come from the family's
:class:`mnemetric.family.CrosscheckSpec` (``spec``; this module imports no family). For LongMemEval
(:data:`mnemetric.longmemeval.family.CROSSCHECK`): xiaowu0162/LongMemEval @
9e0b455f4ef0e2ab8f2e582289761153549043fc (shared/docs/upstream-protocol.md sections 2.5, 3.3, 3.4).
The scripts are read from a local checkout, each file verified by sha256 first, and run as separate
processes (``python -I SCRIPT ...``) in an isolated environment built from the spec's lock
(``crosscheck/upstream-v1.lock``); nothing of them is copied, imported or executed inside
Mnemetric. What they print is parsed and compared, number by number, with what Mnemetric computes
itself:

* ``print_retrieval_metrics.py LOG`` averages the metrics *stored in the log* over the questions
  whose id lacks "_abs" and prints, rounded to 4 decimals, session recall_all@5, ndcg_any@5,
  recall_all@10, ndcg_any@10 and turn recall_all/ndcg_any @5, @10, @50 (an empty turn line for
  session logs). Ours: ``spec.score_retrieval`` recomputes every metric from the ranking and
  the haystack (the exclude-"_abs" average).
* ``print_qa_metrics.py JUDGED REF`` prints per-type accuracy (count), task-averaged, overall and
  abstention accuracy (count), 4 decimals, ``nan`` for an empty bucket; it asserts every label's
  model is gpt-4o-2024-08-06 (``spec.judge_model``). Ours: ``spec.qa_estimates``.

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

from mnemetric.custody.upstream_env import _interpreter, describe_env, ensure_env, run_script
from mnemetric.errors import ConfigError, InputError, IntegrityError, PluginError
from mnemetric.family import CrosscheckSpec
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


def expected_hashes(spec: CrosscheckSpec, overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """The pinned sha256 per upstream file, with ``overrides`` (tests, other revisions) on top."""
    pinned = dict(spec.pinned_sha256)
    unknown = sorted(set(overrides or {}) - set(pinned))
    if unknown:
        raise ConfigError("expected_sha256", f"unknown upstream file(s) {unknown}; known: {sorted(pinned)}")
    return pinned | dict(overrides or {})


def verify_checkout(upstream_dir: str | Path, expected: Mapping[str, str], spec: CrosscheckSpec) -> dict[str, str]:
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


def _number(text: str) -> float | None:
    value = float(text)
    return None if value != value else value  # nan -> None


def parse_retrieval_output(text: str, script: str) -> dict[str, dict[str, float | None]]:
    """{"session": {name: value}, "turn": {...}} from print_retrieval_metrics.py's two lines."""
    head, sep, turn = text.partition("Turn-level metrics:")
    _, sep2, session = head.partition("Session-level metrics:")
    if not sep or not sep2:
        raise PluginError(f"upstream {Path(script).name}", "output", f"not the expected format: {text[:200]!r}")
    pattern = re.compile(r"([A-Za-z_]+@\d+) = ([-+0-9.eE]+|nan)")
    return {level: {k: _number(v) for k, v in pattern.findall(part)} for level, part in
            (("session", session), ("turn", turn))}


def parse_qa_output(text: str, script: str) -> dict[str, Any]:
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


def retrieval_checks(python: str | Path, script: Path, log: Path, granularity: str,
                     spec: CrosscheckSpec) -> list[Check]:
    """print_retrieval_metrics.py on ``log`` vs our exclude-"_abs" averages of the recomputed metrics."""
    scored = spec.score_retrieval(log, granularity)
    ours = scored["aggregate"]["exclude_abs"]
    printed = parse_retrieval_output(run_script(python, script, [log.resolve()]), str(script))
    expected = {"session": spec.printed["session"],
                "turn": spec.printed["turn"] if scored["granularity"] == "turn" else ()}
    checks = []
    for level, names in expected.items():
        extra = [n for n in printed[level] if n not in names]  # printed but not expected: ours None
        for name in (*names, *extra):
            mine = upstream_round(ours.get(level, {}).get(name)) if name in names else None
            checks.append(Check(script.name, f"{level}.{name}", mine, printed[level].get(name)))
    return checks


def _check_judged_for_upstream(judged: Path, reference: Path, spec: CrosscheckSpec) -> list[tuple[str, bool]]:
    """Inputs print_qa_metrics.py can read: JSONL judged lines by the official model, a JSON-list reference."""
    script, model = Path(spec.qa_script).name, spec.judge_model
    for path, first, form in ((judged, "{", "JSONL (one object per line)"), (reference, "[", "one JSON list")):
        with open(require_file(path), encoding="utf-8") as fh:
            head = fh.read(4096).lstrip()
        if not head.startswith(first):
            raise InputError(str(path), "<file>", "<file>", f"upstream {script} reads this file as {form}")
    pairs = []
    for qid, label, by in spec.judged_labels(judged):
        if by != model:
            raise InputError(str(judged), qid, "autoeval_label.model",
                             f"{by!r}: upstream {script} asserts every label is by {model}",
                             fix="cross-check a file judged by that model")
        pairs.append((qid, label))
    return pairs


def qa_checks(python: str | Path, script: Path, judged: Path, reference: Path, spec: CrosscheckSpec) -> list[Check]:
    """print_qa_metrics.py on (judged, reference) vs ``spec.qa_estimates`` on the same labels."""
    pairs = _check_judged_for_upstream(judged, reference, spec)
    ours = spec.qa_estimates(pairs, spec.reference_types(reference), str(judged))
    printed = parse_qa_output(run_script(python, script, [judged.resolve(), reference.resolve()]), str(script))
    name, types = script.name, spec.question_types
    checks = []
    for t in (*types, *[t for t in printed["per_type"] if t not in types]):
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
                 timeout: float, spec: CrosscheckSpec) -> list[Check]:
    """``evaluate_qa.py gpt-4o HYP REF`` against the configured endpoint vs the labels of ``judged``.

    Upstream writes HYP.eval-results-<alias> next to HYP, so HYP is copied into a temporary folder
    first. One check per question (label 1/0; None on the side that lacks it) plus the printed
    "Accuracy:" (micro mean, 4 decimals). Upstream retries failed requests forever: ``timeout``.
    """
    ours = {q: int(label) for q, label, _ in spec.judged_labels(judged)}
    with tempfile.TemporaryDirectory(prefix="mnemetric-crosscheck-") as tmp:
        copy = Path(tmp) / hypotheses.name
        shutil.copyfile(hypotheses, copy)
        out = run_script(python, script, [spec.judge_alias, copy, reference.resolve()], timeout=timeout)
        theirs = {q: int(label) for q, label, _ in spec.judged_labels(Path(f"{copy}.eval-results-{spec.judge_alias}"))}
    printed = re.search(r"^Accuracy: (\S+)$", out, re.M)
    if printed is None:
        raise PluginError(f"upstream {script.name}", "output", f"no 'Accuracy:' line: {out[-200:]!r}")
    checks = [Check(script.name, f"label.{q}", ours.get(q), theirs.get(q)) for q in sorted(set(ours) | set(theirs))]
    mine = sum(ours.values()) / len(ours) if ours else None
    return [*checks, Check(script.name, "accuracy", upstream_round(mine), _number(printed[1]))]


def _endpoint() -> str | None:
    return os.environ.get("OPENAI_BASE_URL") if os.environ.get("OPENAI_API_KEY") else None


def _judge_not_run(hypotheses: Path | None, judged: Path | None, spec: CrosscheckSpec) -> list[dict[str, str]]:
    if hypotheses is not None and judged is not None and _endpoint():
        return []
    reason = ("no endpoint configured (OPENAI_BASE_URL and OPENAI_API_KEY)" if not _endpoint()
              else "needs --hypotheses with --judged and --reference")
    return [{"script": Path(spec.judge_script).name, "reason": reason}]


def crosscheck(upstream_dir: str | Path, spec: CrosscheckSpec, *, retrieval_log: Path | None = None,
               granularity: str = "auto", judged: Path | None = None, reference: Path | None = None,
               hypotheses: Path | None = None, python: str | Path | None = None,
               env_dir: str | Path | None = None, lock: str | Path | None = None,
               expected_sha256: Mapping[str, str] | None = None, notes: Sequence[str] = (),
               judge_timeout: float = 3600.0) -> dict[str, Any]:
    """Verify the checkout, run the upstream scripts, compare; return the evidence record.

    ``python`` uses that interpreter instead of the locked venv (tests, offline use); the evidence
    then says ``built_from_lock: false``. ``expected_sha256`` overrides pins (``pinned`` false).
    evaluate_qa.py runs only with ``hypotheses`` (and judged + reference) and an endpoint
    (OPENAI_BASE_URL + OPENAI_API_KEY), recorded as ``judge_endpoint``; otherwise ``not_run`` says
    why. ``notes`` are recorded as given (e.g. how an input file was prepared). ``lock`` defaults to
    the spec's.
    """
    lock = spec.lock if lock is None else lock
    if retrieval_log is None and judged is None:
        raise ConfigError("crosscheck", "nothing to check", fix="pass --retrieval-log and/or --judged with --reference")
    if (judged is None) != (reference is None) or (hypotheses is not None and judged is None):
        raise ConfigError("crosscheck", "--judged and --reference go together (and --hypotheses needs both)",
                          fix="pass both")
    inputs = [p for p in (retrieval_log, judged, reference, hypotheses) if p is not None]
    for p in inputs:
        require_file(p)
    expected = expected_hashes(spec, expected_sha256)
    root = Path(upstream_dir)
    files = verify_checkout(root, expected, spec)
    interpreter = _interpreter(python) if python is not None else ensure_env(lock, env_dir)
    checks: list[Check] = []
    if retrieval_log is not None:
        checks += retrieval_checks(interpreter, root / spec.retrieval_script, Path(retrieval_log), granularity, spec)
    if judged is not None:
        checks += qa_checks(interpreter, root / spec.qa_script, Path(judged), Path(reference), spec)
    not_run = _judge_not_run(hypotheses, judged, spec)
    if not not_run:
        checks += judge_checks(interpreter, root / spec.judge_script, Path(hypotheses), Path(judged),
                               Path(reference), judge_timeout, spec)
    return {
        "schema": SCHEMA,
        "upstream": {"repo": spec.repo, "revision": spec.revision, "pinned": expected == dict(spec.pinned_sha256),
                     "files": files},
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
