"""LongMemEval's cross-check: upstream's own scoring scripts, and how to read what they print.

The family's half of :mod:`mnemetric.custody.crosscheck` (the frame: verify the checkout by sha256,
build the isolated interpreter from the lock, record the evidence). xiaowu0162/LongMemEval @
9e0b455f4ef0e2ab8f2e582289761153549043fc (shared/docs/upstream-protocol.md sections 2.5, 3.3, 3.4);
nothing of the scripts is copied, imported or executed inside Mnemetric:

* ``print_retrieval_metrics.py LOG`` averages the metrics *stored in the log* over the questions
  whose id lacks "_abs" and prints, rounded to 4 decimals, session recall_all@5, ndcg_any@5,
  recall_all@10, ndcg_any@10 and turn recall_all/ndcg_any @5, @10, @50 (an empty turn line for
  session logs). Ours: ``spec.score_retrieval`` recomputes every metric from the ranking and
  the haystack (the exclude-"_abs" average).
* ``print_qa_metrics.py JUDGED REF`` prints per-type accuracy (count), task-averaged, overall and
  abstention accuracy (count), 4 decimals, ``nan`` for an empty bucket; it asserts every label's
  model is gpt-4o-2024-08-06 (``spec.judge_model``). Ours: ``spec.qa_estimates``.
* ``evaluate_qa.py gpt-4o HYP REF`` (the judge; only when an endpoint is configured) labels each
  hypothesis; compared label by label with our judged file, and its printed micro accuracy with
  ours. Against one endpoint, equal labels on every question are evidence that both judges sent
  the same prompts and parsed the replies alike.

"Agree" is the frame's rule (:class:`mnemetric.custody.crosscheck.Check`, numbers rounded as
upstream rounds with :func:`~mnemetric.custody.crosscheck.upstream_round`).
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from pathlib import Path
from typing import Any

from mnemetric.custody.crosscheck import Check, endpoint, number as _number, upstream_round
from mnemetric.custody.upstream_env import run_script
from mnemetric.errors import ConfigError, InputError, PluginError
from mnemetric.io import require_file
from mnemetric.longmemeval.gate import PROFILE
from mnemetric.longmemeval.hypotheses import read_judged
from mnemetric.longmemeval.judge.upstream_file import REVISION, SHA256, UPSTREAM_REPO
from mnemetric.longmemeval.reference import reference_types  # question_id -> question_type
from mnemetric.longmemeval.rules import OFFICIAL_JUDGE_MODEL
from mnemetric.longmemeval.scoring.qa import QUESTION_TYPES as PRINT_ORDER
from mnemetric.longmemeval.scoring.qa import check_items, join_with_reference, point_estimates
from mnemetric.longmemeval.scoring.score_retrieval import score_retrieval_log

RETRIEVAL_SCRIPT = "src/evaluation/print_retrieval_metrics.py"
QA_SCRIPT = "src/evaluation/print_qa_metrics.py"
EVALUATE_QA = "src/evaluation/evaluate_qa.py"
LOCK = Path(__file__).resolve().parents[3] / "crosscheck" / "upstream-v1.lock"


@dataclass(frozen=True)
class CrosscheckSpec:
    """Upstream's own scoring scripts (pinned) and the family functions their output is compared with
    (a :class:`mnemetric.family.CrosscheckScripts`).

    ``score_retrieval(log, granularity)`` -> ``{"granularity", "aggregate": {"exclude_abs": {level:
    {metric: value}}}}``; ``judged_labels(path)`` -> [(question_id, label, model)];
    ``reference_types(path)`` -> {question_id: question_type}; ``qa_estimates(pairs, types, file)``
    -> ``{"per_type": {type: {"accuracy", "n"}}, "task_averaged", "overall", "abstention": {"accuracy", "n"}}``.
    The script outputs are parsed in the layouts of LongMemEval's print_retrieval_metrics.py and
    print_qa_metrics.py (module docstring). Inputs (:meth:`run`): ``retrieval_log``, ``granularity``,
    ``judged``, ``reference``, ``hypotheses``, ``judge_timeout``.
    """

    repo: str
    revision: str
    retrieval_script: str
    qa_script: str
    judge_script: str
    pinned_sha256: Mapping[str, str]
    """Upstream path -> sha256 of every file verified before a script runs."""
    lock: Path
    printed: Mapping[str, tuple[str, ...]]
    """Metric names the retrieval script prints per level."""
    question_types: tuple[str, ...]
    judge_model: str
    judge_alias: str
    """The model alias the judge script takes as its first argument; it writes ``HYP.eval-results-<alias>``."""
    score_retrieval: Callable[[Path, str], Mapping[str, Any]]
    judged_labels: Callable[[Path], list[tuple[str, bool, str | None]]]
    reference_types: Callable[[Path], Mapping[str, str]]
    qa_estimates: Callable[[Sequence[tuple[str, bool]], Mapping[str, str], str], Mapping[str, Any]]

    def input_files(self, inputs: Mapping[str, Any]) -> list[Path]:
        log, judged, reference, hyp = (inputs.get(k) for k in ("retrieval_log", "judged", "reference", "hypotheses"))
        if log is None and judged is None:
            raise ConfigError("crosscheck", "nothing to check", fix="pass --retrieval-log and/or --judged with --reference")
        if (judged is None) != (reference is None) or (hyp is not None and judged is None):
            raise ConfigError("crosscheck", "--judged and --reference go together (and --hypotheses needs both)",
                              fix="pass both")
        return [Path(p) for p in (log, judged, reference, hyp) if p is not None]

    def run(self, python: str | Path, root: Path, inputs: Mapping[str, Any]) -> tuple[list[Check], list[dict], str | None]:
        log, judged, reference, hyp = (inputs.get(k) for k in ("retrieval_log", "judged", "reference", "hypotheses"))
        checks: list[Check] = []
        if log is not None:
            checks += retrieval_checks(python, root / self.retrieval_script, Path(log),
                                       inputs.get("granularity") or "auto", self)
        if judged is not None:
            checks += qa_checks(python, root / self.qa_script, Path(judged), Path(reference), self)
        not_run = _judge_not_run(hyp, judged, self)
        if not not_run:
            checks += judge_checks(python, root / self.judge_script, Path(hyp), Path(judged), Path(reference),
                                   float(inputs.get("judge_timeout") or 3600.0), self)
        return checks, not_run, None if not_run else endpoint()


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


def _judge_not_run(hypotheses: Path | None, judged: Path | None, spec: CrosscheckSpec) -> list[dict[str, str]]:
    if hypotheses is not None and judged is not None and endpoint():
        return []
    reason = ("no endpoint configured (OPENAI_BASE_URL and OPENAI_API_KEY)" if not endpoint()
              else "needs --hypotheses with --judged and --reference")
    return [{"script": Path(spec.judge_script).name, "reason": reason}]


# ------------------------------------------------------------------ LongMemEval's side of each comparison


def score_retrieval(log: Path, granularity: str) -> Mapping[str, Any]:
    """The log's metrics recomputed from its rankings under the upstream profile (both averaging rules),
    as the record the generic cross-check reads (``ScoredRetrieval.to_record()``: granularity, aggregate)."""
    return score_retrieval_log(log, granularity, PROFILE).to_record()


def judged_labels(path: Path) -> list[tuple[str, bool, str | None]]:
    """(question_id, label, judge model) of each line of an upstream ``.eval-results-*`` file."""
    return [(j.question_id, j.label, j.model) for j in read_judged(path)]


def qa_estimates(pairs: Sequence[tuple[str, bool]], types: Mapping[str, str], file: str) -> dict[str, Any]:
    """print_qa_metrics.py's numbers from our side: per type, task-averaged, overall, abstention."""
    items, _ = join_with_reference(pairs, types, allow_partial=True, file=file)
    return point_estimates(check_items(items, file))


CROSSCHECK = CrosscheckSpec(
    repo=UPSTREAM_REPO, revision=REVISION, retrieval_script=RETRIEVAL_SCRIPT, qa_script=QA_SCRIPT,
    judge_script=EVALUATE_QA,
    pinned_sha256=MappingProxyType({
        RETRIEVAL_SCRIPT: "58b70c0b562ea57372a7774a554c347cd908e901b77ac0149fc90b097b6f1b8f",
        QA_SCRIPT: "e9283933a0cefb7a0ded7365e436ae3d1be5aac41853325e6155d83bf07607f0",
        "src/retrieval/eval_utils.py": "c98b8d1096877a15aa755c9de44fe33c195298466a2eb6f3c0f9f6bde8c72349",
        EVALUATE_QA: SHA256,
    }),
    lock=LOCK,
    printed=MappingProxyType({
        "session": ("recall_all@5", "ndcg_any@5", "recall_all@10", "ndcg_any@10"),
        "turn": ("recall_all@5", "ndcg_any@5", "recall_all@10", "ndcg_any@10", "recall_all@50", "ndcg_any@50"),
    }),
    question_types=PRINT_ORDER, judge_model=OFFICIAL_JUDGE_MODEL, judge_alias="gpt-4o", score_retrieval=score_retrieval,
    judged_labels=judged_labels, reference_types=reference_types, qa_estimates=qa_estimates,
)
