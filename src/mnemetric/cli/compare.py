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
                   scored.question_types())


def compare_runs(a: RunData, b: RunData, *, force: bool, resamples: int, seed: int) -> dict[str, Any]:
    """The whole comparison; NotComparable unless the keys agree or ``force``."""
    from mnemetric.longmemeval.compare import NotComparable, compare_qa, compare_retrieval, differences

    diffs = differences(a.keys, b.keys)
    if diffs and not force:
        raise NotComparable(diffs, a.name, b.name)
    types = {**a.types, **b.types}
    kw = {"resamples": resamples, "seed": seed}
    return {
        "a": {"revision": a.name, "commit": a.short, "keys": a.keys.to_record()},
        "b": {"revision": b.name, "commit": b.short, "keys": b.keys.to_record()},
        "comparable": not diffs,
        "differences": [d.to_record() for d in diffs],
        "qa": compare_qa(a.labels, b.labels, types, source=f"{a.name} vs {b.name} judged", **kw),
        "retrieval": compare_retrieval(a.retrieval or {}, b.retrieval or {},
                                       source=f"{a.name} vs {b.name} retrieval logs", **kw),
    }


def _num(x: float | None, signed: bool = False) -> str:
    return "—" if x is None else (f"{x:+.3f}" if signed else f"{x:.3f}")


def _row(name: str, rec: dict[str, Any]) -> list[str]:
    ci = "—" if rec.get("low") is None else f"[{rec['low']:+.3f}, {rec['high']:+.3f}]"
    p = "" if rec.get("p_value") is None else f"{rec['p_value']:.4f}"
    sig = "*" if rec.get("low") is not None and (rec["low"] > 0 or rec["high"] < 0) else ""
    return [name, str(rec["n"]), _num(rec["a_mean"]), _num(rec["b_mean"]), _num(rec["diff"], True) + sig, ci, p]


def rows(result: dict[str, Any]) -> list[list[str]]:
    """Table rows: QA (overall, task-averaged, abstention, per type), then retrieval per level."""
    qa = result["qa"]
    out = [_row(k, qa[k]) for k in ("overall", "task_averaged", "abstention") if k in qa]
    out += [_row(f"  {t}", rec) for t, rec in qa["per_type"].items()]
    for lvl, block in result["retrieval"]["levels"].items():
        out += [_row(f"{lvl} {m}", rec) for m, rec in block.items()]
    return out


HEADER = ["metric", "n", "A", "B", "B − A", "95% CI (paired bootstrap)", "McNemar p"]


def render_table(result: dict[str, Any]) -> str:
    body = [HEADER, *rows(result)]
    widths = [max(len(r[i]) for r in body) for i in range(len(HEADER))]
    lines = [_title(result), ""]
    for j, r in enumerate(body):
        lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip())
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines + ["", "* the interval excludes 0", *_flip_lines(result, "")])


def render_markdown(result: dict[str, Any]) -> str:
    lines = [f"### {_title(result)}", "", "| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(c.strip() for c in r) + " |" for r in rows(result)]
    return "\n".join(lines + ["", "\\* the interval excludes 0", "", *_flip_lines(result, "- ")])


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
         "paired difference of overall, task-averaged and per-type accuracy with a paired bootstrap interval "
         "(stratified by type), exact McNemar p, flipped questions; retrieval: paired differences of "
         "recall_all@5/10 and ndcg_any@5/10 (exclude_abs). Exit 0, or 1 with --fail-on-regression METRIC "
         "when METRIC drops significantly (its interval of B - A lies below 0).")
def _compare(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("a", metavar="A", help="baseline revision or experiment name")
    p.add_argument("b", metavar="B", help="candidate revision or experiment name")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--md", action="store_true", help="print a Markdown table")
    fmt.add_argument("--json", action="store_true", help="print the whole comparison as JSON")
    p.add_argument("--force", action="store_true", help="compare runs that are not comparable (differences first)")
    p.add_argument("--fail-on-regression", metavar="METRIC", action="append", default=[],
                   help="exit 1 if METRIC drops significantly (overall, task_averaged, a question type, "
                        "recall_all@10, turn.ndcg_any@5, ...); may repeat")
    p.add_argument("--resamples", type=positive_int, default=1000, help="bootstrap resamples")
    p.add_argument("--seed", type=count, default=0, help="bootstrap seed")
    p.add_argument("--repo", type=Path, default=Path("."), help="the project's git checkout")

    def run(a: argparse.Namespace) -> int:
        from mnemetric.longmemeval.compare import find_metric, refusal, regression

        result = compare_runs(load_run(a.a, a.repo), load_run(a.b, a.repo), force=a.force,
                              resamples=a.resamples, seed=a.seed)
        for metric in a.fail_on_regression:
            find_metric(result, metric)  # an unknown name stops before anything is printed
        if result["differences"] and not a.json:
            from mnemetric.longmemeval.compare import Difference
            diffs = [Difference(d["key"], d["field"], d["a"], d["b"]) for d in result["differences"]]
            print("warning (--force): " + refusal(diffs, a.a, a.b), file=sys.stderr)
        emit(json.dumps(result, indent=2) if a.json else render_markdown(result) if a.md else render_table(result))
        for metric in a.fail_on_regression:
            if find_metric(result, metric).get("high") is None:
                print(f"warning: {metric} has no interval (too few questions), so it cannot gate", file=sys.stderr)
        reasons = [r for r in (regression(result, m) for m in a.fail_on_regression) if r]
        for reason in reasons:
            print(f"regression: {reason}", file=sys.stderr)
        return 1 if reasons else 0
    return run
