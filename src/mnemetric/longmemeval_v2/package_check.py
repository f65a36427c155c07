"""Validate a LongMemEval-V2 leaderboard package (ours or hand-made): fail closed, stricter than upstream.

Upstream's step-1 and step-2 builders (leaderboard/ at be15ea6e995462f3391c1a610892df3f67dfa7bd) check the
files are there, the domains, unique ids, per_question ids == runtime ids, question-type counts,
count_all_questions, "qwen3.5-9b" / "gpt-5.2" as substrings of the models, and that every operating point has
the same method, tier, sorted question ids and haystack per domain. They never check the data or the tier's
question set (a 2+2-question sample run was accepted as "small"). Here, in two kinds:

* **refusals** (:class:`~mnemetric.errors.InputError`, naming the file): anything upstream's builders would
  refuse, and what makes the package not what it says — a file upstream needs missing, aggregated_metrics.json
  not the aggregate of its per_question.jsonl, a metric_overview.json or submission_overview.json (its LAFS
  block included) that is not what its runs give, operating points that disagree (method, tier, question ids,
  haystack), per_question rows that break upstream's invariants;
* **reasons it is not submittable** (:class:`~mnemetric.errors.Problem`, each naming its file): the question
  set is not the official tier's (checked against a data root whose questions.jsonl and tier haystack match
  the dataset pins, :mod:`.pins`; without one, that itself is a reason), a run not on the official protocol
  (reader exactly Qwen/Qwen3.5-9B with run_eval's sampling and thinking on, checker exactly gpt-5.2 at medium
  effort and 4096 tokens, memory budget 200,000), a question marked failed, an unfilled SYSTEM_DESCRIPTION.md
  template, a ``NOT_SUBMITTABLE.txt`` (what ``--unofficial`` writes).

The token counter: each run folder's ``runtime_inputs/token_counter.json`` (ours; upstream's step 1 copies
runtime_inputs/ whole, so it is in any package built from a Mnemetric run) must name the official counter
(:data:`OFFICIAL_COUNTER`, ``official: true``, no note); a run without the file (a hand-made package, or one from
upstream's own harness, which records no counter) or with another, unknown or malformed record is a reason,
named — fail closed, never taken on trust. The data custody of a Mnemetric run comes from its v2.json gate, read
by :func:`mnemetric.longmemeval_v2.package.build_package` before it builds.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mnemetric.errors import InputError, Problem
from mnemetric.io import sha256_file
from mnemetric.longmemeval_v2.aggregate import aggregate
from mnemetric.longmemeval_v2.aggregated import AggregatedMetrics, read_aggregated
from mnemetric.longmemeval_v2.combine import combine_aggregates
from mnemetric.longmemeval_v2.haystacks import TIERS, haystack_file
from mnemetric.longmemeval_v2.lafs import lafs_summary
from mnemetric.longmemeval_v2.per_question import PerQuestionRow, read_per_question
from mnemetric.longmemeval_v2.pins import DATA_PINS, DataPins
from mnemetric.longmemeval_v2.questions import DOMAINS
from mnemetric.longmemeval_v2.run_folder import COUNTER_FILE, RUN_FILES, RUNTIME_DIR, RUNTIME_FILES
from mnemetric.longmemeval_v2.tokens import OFFICIAL_PROCESSOR, QwenProcessorCounter
from mnemetric.longmemeval_v2.validate import QUESTIONS_FILE

OP_FILES = ("metric_overview.json", "operating_point_metadata.json")
ROOT_FILES = ("SYSTEM_DESCRIPTION.md", "submission_overview.json")
NOT_SUBMITTABLE = "NOT_SUBMITTABLE.txt"
TEMPLATE_MARK = "<!-- mnemetric: fill in -->"
OFFICIAL_ARGS = {"model": "Qwen/Qwen3.5-9B", "temperature": 0.6, "top_p": 0.95, "top_k": 20,
                 "max_completion_tokens": 20000, "reader_enable_thinking": True, "presence_penalty": None,
                 "repetition_penalty": None, "memory_context_max_tokens": 200000, "evaluator_model": "gpt-5.2",
                 "evaluator_reasoning_effort": "medium", "evaluator_max_completion_tokens": 4096}
"""run_args.json values of the official protocol (run_eval.py defaults; upstream-v2-protocol.md §4-5)."""
OFFICIAL_COUNTER = QwenProcessorCounter.name
"""The name the official token counter records (conf/v2/token_counter/qwen.yaml)."""
OVERVIEW_PATHS = {"overall_full_set": ("overall", "overall_full_set"),
                  "gotchas_accuracy": ("non_abstention_by_category", "gotchas", "pct_correct"),
                  "static_accuracy": ("combined_abstention_by_category", "static", "pct_correct"),
                  "dynamic_accuracy": ("combined_abstention_by_category", "dynamic", "pct_correct"),
                  "procedure_accuracy": ("combined_abstention_by_category", "procedure", "pct_correct"),
                  "memory_query_avg_seconds": ("memory_query", "avg_seconds")}
"""metric_overview.json: key → where in the combined aggregate (submission_utils.build_metric_overview)."""


def read_json(path: Path, kind: type = dict) -> Any:
    if not path.is_file():
        raise InputError(str(path), "<file>", "<file>", "missing: upstream's leaderboard builder needs it")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(str(path), "<file>", "<json>", f"not valid JSON ({exc})") from None
    if not isinstance(raw, kind):
        raise InputError(str(path), "<file>", "<root>", f"expected a JSON {kind.__name__}")
    return raw


def require_run_files(run_dir: Path) -> None:
    """Every file upstream's step-1 builder reads of a run folder (and memory_config.json), else refused."""
    for rel in (*RUN_FILES, *(f"{RUNTIME_DIR}/{f}" for f in RUNTIME_FILES)):
        if not (run_dir / rel).is_file():
            raise InputError(str(run_dir / rel), "<file>", "<file>",
                             "missing: a run folder holds aggregated_metrics.json, per_question.jsonl, run_args.json "
                             "and runtime_inputs/{questions,haystack,memory_config}.json",
                             fix="write the run with `mnemetric v2 run` / stage v2_metrics of this version")


def overview_of(combined: Mapping[str, Any], file: str) -> dict[str, Any]:
    """metric_overview.json of a combined aggregate."""
    out = {}
    for key, path in OVERVIEW_PATHS.items():
        value: Any = combined
        for part in path:
            if not isinstance(value, Mapping) or part not in value:
                raise InputError(file, "<combined>", ".".join(path), "missing from the combined metrics")
            value = value[part]
        out[key] = value
    return out


@dataclass(frozen=True)
class RunView:
    """One domain's run folder, read and checked (upstream's validate_run and more)."""

    folder: Path
    domain: str
    run_args: Mapping[str, Any]
    aggregated: AggregatedMetrics
    questions: list[Mapping[str, Any]]
    haystack: Mapping[str, Any]
    rows: list[PerQuestionRow]

    @property
    def ids(self) -> list[str]:
        return sorted(str(q.get("id")) for q in self.questions)

    def type_counts(self) -> dict[str, int]:
        counts = Counter(str(q.get("question_type")) for q in self.questions)
        return {k: counts[k] for k in sorted(counts)}


def read_run(folder: Path, domain: str) -> RunView:
    require_run_files(folder)
    args = read_json(folder / "run_args.json")
    agg = read_aggregated(folder / "aggregated_metrics.json")
    qfile, hfile = folder / RUNTIME_DIR / "questions.json", folder / RUNTIME_DIR / "haystack.json"
    questions, haystack = read_json(qfile, list), read_json(hfile)
    mfile = folder / RUNTIME_DIR / "memory_config.json"
    config = read_json(mfile)
    if not isinstance(config.get("memory_type"), str) or not config["memory_type"] \
            or not isinstance(config.get("memory_params"), dict):
        raise InputError(str(mfile), "<file>", "memory_type/memory_params", "expected {memory_type: a name, "
                         "memory_params: an object} (upstream's memory config)")
    if args.get("domain") != domain:
        raise InputError(str(folder / "run_args.json"), "<file>", "domain",
                         f"{args.get('domain')!r}, expected {domain!r}")
    ids = []
    for i, q in enumerate(questions):
        if not isinstance(q, dict) or not isinstance(q.get("id"), str) or not q["id"]:
            raise InputError(str(qfile), f"index {i}", "id", "expected an object with a non-empty string id")
        if q.get("domain") != domain:
            raise InputError(str(qfile), q["id"], "domain", f"{q.get('domain')!r}, expected {domain!r}")
        if not q.get("question_type"):
            raise InputError(str(qfile), q["id"], "question_type", "missing")
        if q["id"] in ids:
            raise InputError(str(qfile), q["id"], "id", "appears twice")
        ids.append(q["id"])
    pq = folder / "per_question.jsonl"
    rows = list(read_per_question(pq))
    if sorted(r.question_id for r in rows) != sorted(ids):
        gone = sorted(set(ids) - {r.question_id for r in rows})[:5]
        extra = sorted({r.question_id for r in rows} - set(ids))[:5]
        raise InputError(str(pq), "<file>", "question_id", f"does not cover runtime_inputs/questions.json exactly "
                         f"(missing {gone}, extra {extra})")
    by_id = {q["id"]: q for q in questions}
    for r in rows:
        q = by_id[r.question_id]
        if r.question_type != q.get("question_type") or r.eval_function != q.get("eval_function") \
                or r.answer_gold not in (None, q.get("answer")):
            raise InputError(str(pq), r.question_id, "question_type/eval_function/answer_gold",
                             "differs from runtime_inputs/questions.json")
        if list(r.haystack_ids) != haystack.get(r.question_id):
            raise InputError(str(pq), r.question_id, "haystack_ids", "differs from runtime_inputs/haystack.json")
    if sorted(haystack) != sorted(ids):
        raise InputError(str(hfile), "<file>", "<keys>", "its question ids are not runtime_inputs/questions.json's")
    view = RunView(folder, domain, args, agg, questions, haystack, rows)
    _check_aggregate(view)
    return view


def _check_aggregate(view: RunView) -> None:
    file = str(view.folder / "aggregated_metrics.json")
    count = view.aggregated.overall.count_all_questions
    scored = sum(1 for r in view.rows if not r.failed)
    if count not in (len(view.questions), scored) or not isinstance(count, int):
        raise InputError(file, "overall", "count_all_questions", f"{count!r}, but the run has {len(view.questions)} "
                         "questions")
    mine = aggregate(view.rows, file=str(view.folder / "per_question.jsonl"))
    theirs = {k: v for k, v in view.aggregated.to_record().items() if k not in ("completed_at_utc",)}
    if json.loads(json.dumps(mine)) != theirs:
        diff = sorted(k for k in set(mine) | set(theirs) if json.loads(json.dumps(mine.get(k))) != theirs.get(k))
        raise InputError(file, "<file>", ", ".join(diff), "is not the aggregate of per_question.jsonl "
                         "(upstream's harness rules)", fix="recompute it: mnemetric v2 aggregate")


def run_problems(view: RunView) -> list[Problem]:
    """Why this run is not on the official protocol (each naming its file)."""
    out, file = [], str(view.folder / "run_args.json")
    off = {k: view.run_args.get(k) for k, want in OFFICIAL_ARGS.items()
           if view.run_args.get(k) != want or isinstance(view.run_args.get(k), bool) != isinstance(want, bool)}
    if off:
        out.append(Problem(file, "<file>", ", ".join(off), "not the official protocol: " + "; ".join(
            f"{k} {v!r} (official {OFFICIAL_ARGS[k]!r})" for k, v in off.items())))
    out += counter_problems(view.folder)
    failed = [r.question_id for r in view.rows if r.failed]
    if failed:
        out.append(Problem(str(view.folder / "per_question.jsonl"), failed[0], "failed",
                           f"{len(failed)} question(s) failed where upstream aborts the run"))
    return out


def counter_problems(folder: Path) -> list[Problem]:
    """Why the run's token counter is not shown to be the official one (module docstring); [] when it is."""
    path = folder / RUNTIME_DIR / COUNTER_FILE
    file, official = str(path), f"the official {OFFICIAL_PROCESSOR} processor ({OFFICIAL_COUNTER!r})"
    if not path.is_file():
        return [Problem(file, "<file>", "token_counter", f"missing: the run records no token counter, so nothing "
                        f"shows its memory contexts were cut with {official} (a hand-made package or upstream's "
                        "harness records none); refused, not assumed")]
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        return [Problem(file, "<file>", "<json>", f"not valid JSON ({exc}): the token counter is unknown")]
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not raw["name"] \
            or not isinstance(raw.get("official"), bool):
        return [Problem(file, "<file>", "name/official", "expected {name: a string, official: true/false, note}: "
                        "the token counter is unknown")]
    if raw["name"] != OFFICIAL_COUNTER:
        return [Problem(file, "<file>", "name", f"token counter {raw['name']!r} is not {official}")]
    if raw["official"] is not True or raw.get("note"):
        why = f": {raw['note']}" if raw.get("note") else ""
        return [Problem(file, "<file>", "official", f"token counter {raw['name']!r} is recorded as not official{why}")]
    return []


@dataclass(frozen=True)
class OpView:
    folder: Path
    name: str
    method: str
    tier: str
    overview: Mapping[str, Any]
    runs: Mapping[str, RunView]


def read_op(folder: Path, submission: str) -> OpView:
    for name in OP_FILES:
        read_json(folder / name)
    overview, meta = read_json(folder / OP_FILES[0]), read_json(folder / OP_FILES[1])
    mfile = str(folder / OP_FILES[1])
    if meta.get("operating_point_name") != folder.name:
        raise InputError(mfile, "<file>", "operating_point_name", f"{meta.get('operating_point_name')!r}, but the "
                         f"folder is {folder.name!r}")
    if meta.get("submission_name") != submission:
        raise InputError(mfile, "<file>", "submission_name",
                         f"{meta.get('submission_name')!r}, expected {submission!r}")
    method, tier = meta.get("method"), meta.get("tier")
    if not isinstance(method, str) or not method:
        raise InputError(mfile, "<file>", "method", "missing")
    if tier not in TIERS:
        raise InputError(mfile, "<file>", "tier", f"{tier!r} is not a tier ({', '.join(TIERS)})")
    runs = {d: read_run(folder / d, d) for d in DOMAINS}
    for d, run in runs.items():
        block = meta.get("runs").get(d) if isinstance(meta.get("runs"), dict) else None
        if not isinstance(block, dict):
            raise InputError(mfile, "<file>", f"runs.{d}", "missing or not an object")
        if block.get("question_count") != len(run.questions) or block.get("question_type_counts") != run.type_counts():
            raise InputError(mfile, f"runs.{d}", "question_count/question_type_counts", "disagree with the run")
    combined = combine_aggregates(runs["web"].aggregated, runs["enterprise"].aggregated)
    mine = overview_of(combined, str(folder / OP_FILES[0]))
    if json.loads(json.dumps(mine)) != overview:
        raise InputError(str(folder / OP_FILES[0]), "<file>", "<values>", "is not what the web and enterprise runs "
                         "give (upstream's combination)", fix="rebuild the operating point")
    return OpView(folder, folder.name, method, tier, overview, runs)


def check_consistent(ops: list[OpView]) -> None:
    """Every operating point: the same method, tier, question ids and haystack per domain (else refused)."""
    first = ops[0]
    for op in ops[1:]:
        meta = str(op.folder / OP_FILES[1])
        if op.method != first.method:
            raise InputError(meta, "<file>", "method", f"{op.method!r}, but operating point {first.name!r} has "
                             f"{first.method!r}: one submission is one method")
        if op.tier != first.tier:
            raise InputError(meta, "<file>", "tier", f"{op.tier!r}, but operating point {first.name!r} has "
                             f"{first.tier!r}: tiers are never combined")
        for d in DOMAINS:
            inputs = op.folder / d / RUNTIME_DIR
            if op.runs[d].ids != first.runs[d].ids:
                raise InputError(str(inputs / "questions.json"), "<file>", "id", f"other {d} question ids than "
                                 f"operating point {first.name!r}")
            if op.runs[d].haystack != first.runs[d].haystack:
                raise InputError(str(inputs / "haystack.json"), "<file>", "<lists>", f"another {d} haystack than "
                                 f"operating point {first.name!r}")


def tier_problems(op: OpView, data_root: Path | None, pins: DataPins | None = None) -> list[Problem]:
    """Is the question set the official tier's? Against a data root whose files match the pins."""
    where, pins = str(op.folder), pins or DATA_PINS
    if data_root is None:
        return [Problem(where, "<package>", "question set", "not checked against the official tier: no data root "
                        "given (--data-root: a folder with the pinned questions.jsonl and haystacks/)")]
    files = (QUESTIONS_FILE, haystack_file(op.tier))
    bad = []
    for rel in files:
        path, want = data_root / rel, pins.get(rel).sha256
        got = sha256_file(path) if path.is_file() else None
        if got is None or got != want:
            bad.append(Problem(str(path), "<file>", "sha256", f"{got or 'missing'}; the pin of {pins.repo}@"
                               f"{pins.revision[:12]} is {want}: not the official data"))
    if bad:
        return bad
    official = [json.loads(line) for line in (data_root / QUESTIONS_FILE).read_text(encoding="utf-8").splitlines()
                if line.strip()]
    haystack = json.loads((data_root / files[1]).read_text(encoding="utf-8"))
    out = []
    for d in DOMAINS:
        run, want = op.runs[d], {q["id"]: q for q in official if q.get("domain") == d}
        qfile = str(run.folder / RUNTIME_DIR / "questions.json")
        if run.ids != sorted(want):
            out.append(Problem(qfile, "<file>", "id", f"{len(run.ids)} {d} questions; the official {op.tier} tier has "
                               f"{len(want)} (missing {len(set(want) - set(run.ids))}, extra "
                               f"{len(set(run.ids) - set(want))})"))
            continue
        for q in run.questions:
            o = want[q["id"]]
            text = q["question"].get("text") if isinstance(q.get("question"), dict) else q.get("question")
            if any(q.get(k) != o.get(k) for k in ("question_type", "answer", "eval_function")) or text != o["question"]:
                out.append(Problem(qfile, q["id"], "question", "differs from the official questions.jsonl"))
        if any(run.haystack[q] != haystack.get(q) for q in run.ids):
            out.append(Problem(str(run.folder / RUNTIME_DIR / "haystack.json"), "<file>", "<lists>",
                               f"not the official {op.tier} tier's haystack"))
    return out


def check_tree(root: Path, *, data_root: Path | None,
               pins: DataPins | None = None) -> tuple[dict[str, Any], list[Problem]]:
    """Check a package folder (module docstring): refusals raise; returns (submission_overview, reasons)."""
    overview = read_json(root / "submission_overview.json")
    submission = root.name
    ofile = str(root / "submission_overview.json")
    for key, want in (("submission_name", submission), ("archive_name", f"{submission}.tar.gz"),
                      ("system_description_file", "SYSTEM_DESCRIPTION.md")):
        if overview.get(key) != want:
            raise InputError(ofile, "<file>", key, f"{overview.get(key)!r}, expected {want!r}")
    code = overview.get("code_file")
    extra = sorted(p.name for p in root.iterdir() if p.name not in (*ROOT_FILES, "operating_points", NOT_SUBMITTABLE))
    if not isinstance(code, str) or extra != [code] or not (root / code).is_file():
        raise InputError(ofile, "<file>", "code_file", f"{code!r}, but the package root holds {extra}: exactly one "
                         "code file besides SYSTEM_DESCRIPTION.md, submission_overview.json and operating_points/")
    if not (root / ROOT_FILES[0]).is_file():
        raise InputError(str(root / ROOT_FILES[0]), "<file>", "<file>", "missing")
    opdir = root / "operating_points"
    names = sorted(p.name for p in opdir.iterdir()) if opdir.is_dir() else []
    if not names:
        raise InputError(str(opdir), "<folder>", "<entries>", "no operating point")
    ops = [read_op(opdir / n, submission) for n in names]
    check_consistent(ops)
    _check_overview(ofile, overview, ops)
    problems = [p for op in ops for run in op.runs.values() for p in run_problems(run)]
    problems += tier_problems(ops[0], data_root, pins)
    if TEMPLATE_MARK in (root / ROOT_FILES[0]).read_text(encoding="utf-8", errors="replace"):
        problems.append(Problem(str(root / ROOT_FILES[0]), "<file>", "<text>", "the unfilled template: describe "
                                "the system"))
    if (root / NOT_SUBMITTABLE).exists():
        problems.append(Problem(str(root / NOT_SUBMITTABLE), "<file>", "<file>",
                                "built with --unofficial: marked not submittable"))
    return overview, problems


def _check_overview(ofile: str, overview: Mapping[str, Any], ops: list[OpView]) -> None:
    method, tier = ops[0].method, ops[0].tier
    if overview.get("method") != method or overview.get("tier") != tier:
        raise InputError(ofile, "<file>", "method/tier", f"{overview.get('method')!r}/{overview.get('tier')!r}, but "
                         f"the operating points say {method!r}/{tier!r}")
    listed = overview.get("operating_points")
    if not isinstance(listed, list) or sorted(str((p or {}).get("name")) for p in listed) != [op.name for op in ops]:
        raise InputError(ofile, "<file>", "operating_points", "does not list exactly the operating_points/ folders")
    by = {op.name: op for op in ops}
    points = []
    for entry in listed:
        op = by[entry["name"]]
        acc, latency = op.overview["overall_full_set"], op.overview["memory_query_avg_seconds"]
        for key, value in (("overall_full_set", acc), ("memory_query_avg_seconds", latency)):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise InputError(str(op.folder / OP_FILES[0]), "<file>", key, f"{value!r} is not a number")
        if latency <= 0:
            raise InputError(str(op.folder / OP_FILES[0]), "<file>", "memory_query_avg_seconds",
                             f"{latency!r}: LAFS needs a latency > 0")
        acc = float(acc) * 100.0
        want = {"name": op.name, "metric_overview_file": f"operating_points/{op.name}/metric_overview.json",
                "overall_full_set": op.overview["overall_full_set"], "memory_query_avg_seconds": latency,
                "lafs_accuracy_percentage_points": acc, "lafs_latency_seconds": latency}
        if entry != want:
            raise InputError(ofile, f"operating_points ({op.name})", "<entry>", f"{entry!r}, expected {want!r}")
        points.append((acc, latency, op.name))
    if json.loads(json.dumps(lafs_summary(tier, points))) != overview.get("lafs"):
        raise InputError(ofile, "<file>", "lafs", "is not the LAFS of the operating points against the "
                         f"{tier} reference frontier (leaderboard/compute_lafs.py)")
