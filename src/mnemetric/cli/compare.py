"""`mnemetric compare A B`: paired significance between two revisions (git or DVC experiments).

Each side is read at its revision without a checkout (mnemetric.revisions): params.yaml and
metrics/data.json from git, the judged file and the retrieval log from the DVC cache. The
statistics are mnemetric.longmemeval.compare's pure functions.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mnemetric.cli.registry import Handler, command
from mnemetric.cli.types import count, positive_int
from mnemetric.errors import InputError

if TYPE_CHECKING:
    from mnemetric.longmemeval.scoring.scored_retrieval import Metrics

_PARAMS = "params.yaml"


@dataclass(frozen=True)
class RunData:
    """What one revision says about its run."""

    name: str
    short: str
    keys: Any
    labels: dict[str, bool]
    retrieval: Mapping[str, Metrics] | None
    """question_id -> level -> metric -> value (``ScoredRetrieval.per_question``)."""
    types: dict[str, str]
    attribution: Any = None
    """The run's metrics/detail/attribution.json (AttributionFile), None when it has none."""
    memory_cost: Any = None
    """The run's memory-side cost record (``paths.memory_cost``, mnemetric.llm.memory_cost), None when it has none."""


def _path(params: dict, key: str, rev_name: str) -> str:
    value = (params.get("paths") or {}).get(key)
    if not isinstance(value, str):
        raise InputError(f"{rev_name}:{_PARAMS}", "<file>", f"paths.{key}",
                         "missing: this revision's params.yaml has an older layout (no such path)",
                         fix="compare revisions made with this version of Mnemetric (rerun the older one)")
    return value


def _via_file(text: str, name: str, where: str, parse: Callable[[Path], Any]) -> Any:
    """``parse`` over ``text`` written to a temporary file; errors name ``where`` (rev:path), not the temp file."""
    with tempfile.TemporaryDirectory(prefix="mnemetric-compare-") as tmp:
        file = Path(tmp) / Path(name).name
        file.write_text(text, encoding="utf-8")
        try:
            return parse(file)
        except InputError as exc:
            p = exc.problem
            raise InputError(where, p.record, p.field, p.message, fix=exc.fix) from None


def load_run(name: str, repo: Path) -> RunData:
    """Params, data metrics, judged labels and retrieval per-question metrics of revision ``name``."""
    from mnemetric import revisions
    from mnemetric.longmemeval.compare import keys_from
    from mnemetric.longmemeval.hypotheses import read_judged
    from mnemetric.longmemeval.scoring.score_retrieval import score_retrieval_log
    from mnemetric.longmemeval.suite import read_suite

    rev = revisions.resolve(name, repo)
    params = revisions.read_yaml(rev, _PARAMS, repo)
    if not isinstance(params, dict):
        raise InputError(f"{name}:{_PARAMS}", "<file>", "<root>", "expected a mapping")
    data = revisions.read_json(rev, _path(params, "metrics_data", name), repo)
    suite_path = _path(params, "suite", name)
    if not (data.get("suite") or {}).get("ids_sha256") and revisions.exists(rev, suite_path, repo):
        suite = _via_file(revisions.read_text(rev, suite_path, repo), suite_path, f"{name}:{suite_path}", read_suite)
        data = {**data, "suite": suite.to_record()}
    judged_path = _path(params, "judged", name)
    judged = _via_file(revisions.read_text(rev, judged_path, repo), judged_path, f"{name}:{judged_path}", read_judged)
    log_path = _path(params, "retrieval_log", name)
    scoring, retrieval = params.get("scoring") or {}, params.get("retrieval") or {}
    scored = _via_file(revisions.read_text(rev, log_path, repo), log_path, f"{name}:{log_path}",
                       lambda f: score_retrieval_log(f, retrieval.get("granularity", "auto"),
                                                     scoring.get("name", "longmemeval-session-upstream-v1"),
                                                     ks=scoring.get("ks") or (1, 3, 5, 10, 30, 50)))
    keys = keys_from(params, data, [(j.model, j.judge_trace) for j in judged])
    return RunData(name, rev.short, keys, {j.question_id: j.label for j in judged}, scored.per_question,
                   scored.question_types(), _attribution(rev, name, repo), _memory_cost(rev, params, name, repo))


def _memory_cost(rev: Any, params: dict, name: str, repo: Path) -> Any:
    """The memory-side cost record of revision ``rev`` (git-tracked, ``cache: false``), None when it has none."""
    from mnemetric import revisions

    path = (params.get("paths") or {}).get("memory_cost")
    if not isinstance(path, str) or not revisions.exists(rev, path, repo):
        return None
    text = revisions.read_text(rev, path, repo)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{name}:{path}", f"line {exc.lineno}", "<json>", f"not valid JSON ({exc.msg})") from None


def _attribution(rev: Any, name: str, repo: Path) -> Any:
    """The failure attribution of revision ``rev`` (git-tracked, ``cache: false``), None when it has none."""
    from mnemetric import revisions
    from mnemetric.longmemeval.attribution_file import PATH, AttributionFile

    where = f"{name}:{PATH}"
    try:
        text = revisions.read_text(rev, str(PATH), repo)
    except InputError:  # a run made before the attribution stage
        return None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(where, f"line {exc.lineno}", "<json>", f"not valid JSON ({exc.msg})") from None
    return AttributionFile.from_record(raw, file=where)


def attribution_moves(a: RunData, b: RunData) -> dict[str, Any] | None:
    """Counts per cause for A and B and the paired moves between causes (None unless both runs have them)."""
    from mnemetric.longmemeval.attribution import cause_moves

    if a.attribution is None or b.attribution is None:
        return None
    return cause_moves(a.attribution.by_id(), b.attribution.by_id())


def compare_runs(a: RunData, b: RunData, *, force: bool, resamples: int, seed: int,
                 alpha: float = 0.05) -> dict[str, Any]:
    """The whole comparison; NotComparable unless the keys agree or ``force``."""
    from mnemetric.llm.memory_cost import cost_comparison
    from mnemetric.longmemeval.compare import NotComparable, compare_qa, compare_retrieval, differences

    diffs = differences(a.keys, b.keys)
    if diffs and not force:
        raise NotComparable(diffs, a.name, b.name)
    types = {**a.types, **b.types}
    kw = {"resamples": resamples, "seed": seed, "level": 1 - alpha}
    return {
        "a": {"revision": a.name, "commit": a.short, "keys": a.keys.to_record()},
        "b": {"revision": b.name, "commit": b.short, "keys": b.keys.to_record()},
        "comparable": not diffs,
        "differences": [d.to_record() for d in diffs],
        "alpha": alpha,
        "qa": compare_qa(a.labels, b.labels, types, alpha=alpha, source=f"{a.name} vs {b.name} judged", **kw),
        "retrieval": compare_retrieval(a.retrieval or {}, b.retrieval or {},
                                       source=f"{a.name} vs {b.name} retrieval logs", **kw),
        "attribution": attribution_moves(a, b),
        "memory_cost": cost_comparison(a.memory_cost, b.memory_cost),
    }


def _num(x: float | None, signed: bool = False) -> str:
    return "—" if x is None else (f"{x:+.3f}" if signed else f"{x:.3f}")


def _p(x: float | None) -> str:
    return "" if x is None else f"{x:.4f}"


def _row(name: str, rec: dict[str, Any], alpha: float, holm: bool = False) -> list[str]:
    ci = "—" if rec.get("low") is None else f"[{rec['low']:+.3f}, {rec['high']:+.3f}]"
    p = rec.get("p_holm") if holm else rec.get("p_value")
    if rec.get("p_value") is not None:
        sig = "*" if p is not None and p < alpha else ""
    else:
        sig = "*" if rec.get("low") is not None and (rec["low"] > 0 or rec["high"] < 0) else ""
    return [name, str(rec["n"]), _num(rec["a_mean"]), _num(rec["b_mean"]), _num(rec["diff"], True) + sig, ci,
            _p(rec.get("p_value")), _p(rec.get("p_holm")) if holm else ""]


def rows(result: dict[str, Any]) -> list[list[str]]:
    """Table rows: the primary QA rows (overall, task-averaged), the exploratory ones (abstention,
    per type; starred by Holm-adjusted p), then retrieval per level."""
    qa, alpha = result["qa"], result.get("alpha", 0.05)
    out = [_row(k, qa[k], alpha) for k in ("overall", "task_averaged") if k in qa]
    explore = [("abstention", qa["abstention"])] if "abstention" in qa else []
    explore += [(f"  {t}", rec) for t, rec in qa["per_type"].items()]
    if explore:
        out.append(["exploratory (per type, Holm-adjusted p):", "", "", "", "", "", "", ""])
        out += [_row(name, rec, alpha, holm=True) for name, rec in explore]
    for lvl, block in result["retrieval"]["levels"].items():
        out += [_row(f"{lvl} {m}", rec, alpha) for m, rec in block.items()]
    return out


def header(result: dict[str, Any]) -> list[str]:
    level = 1 - result.get("alpha", 0.05)
    return ["metric", "n", "A", "B", "B − A", f"{level:.0%} CI (score)", "exact p", "Holm p"]


def _notes(result: dict[str, Any]) -> list[str]:
    alpha = result.get("alpha", 0.05)
    lines = [f"* exact paired test p < {alpha:g} (McNemar; sign test for non-0/1 metrics; exploratory rows: "
             "Holm-adjusted p); task_averaged: its interval excludes 0",
             "CI: Tango score interval for paired proportions (0/1 metrics), per-type Tango intervals combined "
             "by MOVER (task_averaged), paired percentile bootstrap (other metrics); the bootstrap interval of "
             "every row is in --json (bootstrap_low, bootstrap_high)"]
    note = (result["qa"].get("exploratory") or {}).get("note")
    return lines + ([note] if note else [])


def render_table(result: dict[str, Any]) -> str:
    head = header(result)
    body = [head, *rows(result)]
    widths = [max(len(r[i]) for r in body if r[1]) for i in range(len(head))]   # section lines have no n
    lines = [_title(result), ""]
    for j, r in enumerate(body):
        if not r[1] and j:
            lines.append(r[0])
            continue
        lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip())
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines + ["", *_notes(result), *_flip_lines(result, ""), "",
                              *_attribution_lines(result, "  "), *_cost_lines(result, "  ")])


def render_markdown(result: dict[str, Any]) -> str:
    head = header(result)
    lines = [f"### {_title(result)}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(c.strip() for c in r) + " |" for r in rows(result)]
    notes = [n.replace("*", "\\*", 1) if n.startswith("*") else n for n in _notes(result)]
    return "\n".join(lines + ["", *notes, "", *_flip_lines(result, "- "), "", *_attribution_lines(result, "- "),
                              *_cost_lines(result, "- ")])


def _cost_lines(result: dict[str, Any], bullet: str) -> list[str]:
    from mnemetric.llm.memory_cost import cost_lines

    lines = cost_lines(result.get("memory_cost"), bullet)
    return ["", *lines] if lines else []


def _title(result: dict[str, Any]) -> str:
    a, b = result["a"], result["b"]
    return f"B = {b['revision']} ({b['commit']}) against A = {a['revision']} ({a['commit']})"


def _flip_lines(result: dict[str, Any], bullet: str) -> list[str]:
    qa, flips = result["qa"], result["qa"]["flips"]
    lines = [f"flipped questions: {len(flips)} of {qa['n']}"]
    word = {True: "correct", False: "wrong"}
    lines += [f"{bullet or '  '}{f['question_id']} ({f['question_type']}): {word[f['old']]} -> {word[f['new']]}"
              for f in flips]
    for side, key in (("A", "only_in_a"), ("B", "only_in_b")):
        if qa[key]:
            lines.append(f"judged only in {side} (left out): {', '.join(qa[key])}")
    return lines


def _attribution_lines(result: dict[str, Any], bullet: str) -> list[str]:
    from mnemetric.longmemeval.attribution_report import compare_lines

    return compare_lines(result.get("attribution"), bullet)


def _alpha(text: str) -> float:
    """--alpha: a number strictly between 0 and 1 (argparse reports anything else, no traceback)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a level strictly between 0 and 1, got {text}")
    return value


def emit(text: str) -> None:
    """Print ``text``; a reader that closed the pipe early (``| head``) ends the output quietly."""
    import os

    try:
        print(text, flush=True)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit


@command("compare", "paired significance between two runs (git revisions, branches, tags, DVC experiments)",
         "Compare run B against run A on the same questions, read at each revision without a checkout "
         "(`workspace` = the files on disk). Refuses runs that are not comparable (dataset, question set, adapter, "
         "scoring profile, judge, reader, retrieval budget), naming every differing field, unless --force. QA: "
         "paired difference of overall and task-averaged accuracy (primary), per-type and abstention accuracy "
         "(exploratory, Holm-adjusted p), with a score interval for paired proportions, exact McNemar p, "
         "flipped questions; retrieval: paired differences of recall_all@5/10 and ndcg_any@5/10 (exclude_abs); "
         "failure attribution (metrics/detail/attribution.json): questions per cause in A and B and the moves "
         "between causes; memory-side cost (metrics/detail/memory_cost.json: the memory system's model requests "
         "per phase, tokens and dollars, and whether it is reproducible by replay) beside the accuracy difference. "
         "Exit 0, or 1 with --fail-on-regression METRIC when METRIC drops significantly: B - A < 0 with the "
         "exact paired test's two-sided p below --alpha (task_averaged: its score interval lies below 0).")
def _compare(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("a", metavar="A", help="baseline revision or experiment name")
    p.add_argument("b", metavar="B", help="candidate revision or experiment name")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--md", action="store_true", help="print a Markdown table")
    fmt.add_argument("--json", action="store_true", help="print the whole comparison as JSON")
    p.add_argument("--force", action="store_true", help="compare runs that are not comparable (differences first)")
    p.add_argument("--fail-on-regression", metavar="METRIC", action="append", default=[],
                   help="exit 1 if METRIC drops significantly by the exact paired test (overall, task_averaged, "
                        "a question type, recall_all@10, turn.ndcg_any@5, ...); may repeat; each is tested at --alpha")
    p.add_argument("--alpha", type=_alpha, default=0.05,
                   help="two-sided significance level of the gate and the stars; intervals at 1 - alpha (default 0.05)")
    p.add_argument("--resamples", type=positive_int, default=1000, help="bootstrap resamples")
    p.add_argument("--seed", type=count, default=0, help="bootstrap seed")
    p.add_argument("--repo", type=Path, default=Path("."), help="the project's git checkout")

    def run(a: argparse.Namespace) -> int:
        from mnemetric.longmemeval.compare import find_metric, gate_basis, refusal, regression

        result = compare_runs(load_run(a.a, a.repo), load_run(a.b, a.repo), force=a.force,
                              resamples=a.resamples, seed=a.seed, alpha=a.alpha)
        for metric in a.fail_on_regression:
            find_metric(result, metric)  # an unknown name stops before anything is printed
        if result["differences"] and not a.json:
            from mnemetric.longmemeval.compare import Difference
            diffs = [Difference(d["key"], d["field"], d["a"], d["b"]) for d in result["differences"]]
            print("warning (--force): " + refusal(diffs, a.a, a.b), file=sys.stderr)
        emit(json.dumps(result, indent=2) if a.json else render_markdown(result) if a.md else render_table(result))
        for metric in a.fail_on_regression:
            why = gate_basis(result, metric)
            if why:
                print(f"warning: {why}", file=sys.stderr)
        reasons = [r for r in (regression(result, m, a.alpha) for m in a.fail_on_regression) if r]
        for reason in reasons:
            print(f"regression: {reason}", file=sys.stderr)
        return 1 if reasons else 0
    return run
