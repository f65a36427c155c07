"""Compare two LongMemEval-V2 runs on the same questions: paired accuracy, and query latency apart.

A Mnemetric addition: upstream LongMemEval-V2 (xiaowu0162/LongMemEval-V2 @ be15ea6e) compares no runs.
Input is what a run writes per domain, ``per_question.jsonl`` in upstream's keys (:mod:`.per_question`);
a run is a folder of ``<domain>/per_question.jsonl`` (``mnemetric v2 run`` output) or one domain's file.

Comparability (:func:`check_same_questions`): the two runs must hold the same domains and, per domain, the
same question ids, and each question the same identity fields (question_type, eval_function,
question_text, question_image, haystack_ids; answer_gold where both rows have it) — so a different data
revision, tier (haystack) or subset is refused, naming what differs (:class:`NotComparable`). Image paths
are compared as images, not as strings (:func:`same_image`): upstream's harness writes each question image
as an absolute resolved path, a Mnemetric run as a path under its data root (relative to the repository), so
an upstream run of the same data compares: two paths that both exist here name the same image when their
bytes are equal (sha256); a path that does not exist here is matched by its last two parts (folder/file).

Accuracy, per question i (key = domain, question_id; pairs sorted by domain then id) with s_i = float(score)
in {0, 1} for each run (upstream's ``overall_full_set`` is the mean of s over the scored rows). Rows marked
``failed`` (a question where upstream would have aborted) are left out of every accuracy number *pairwise*
— a question failed in either run is in neither mean — and listed in ``left_out``. With B − A throughout:

* ``overall_full_set`` / ``overall_non_abstention_only`` / ``overall_abstention_only``: all pairs / pairs
  whose eval function is not / is llm_abstention_checker;
* ``per_domain.<domain>``; ``per_category.<category>`` (every category of CATEGORY_MAP, pooled over the
  domains, by the row's category as upstream assigns it: a non-abstention row may sit in an ``-abs`` one);
* each record (``mnemetric.stats.compare_paired``): means, diff, Tango's score interval for paired
  proportions (``low``/``high``, named by ``interval_method``; never [0, 0], even with no discordant
  pair), exact two-sided McNemar p from the discordant pairs (``a_only`` = right in A only, ``b_only``
  = right in B only); an empty slice has n = 0 and nulls;
* the paired percentile bootstrap is kept as ``bootstrap_low``/``bootstrap_high`` (secondary): for the
  three overall slices stratified by domain (each domain is a run of fixed size, combined as the
  leaderboard combines them); per domain and per category pooled (a category's per-domain cells can
  hold one or two questions, where stratified resampling keeps no variance);
* a star marks McNemar p < 0.05 (each slice tested on its own: the per-domain and per-category rows
  are exploratory and not adjusted for multiplicity).

Latency (``latency``), reported apart and never mixed into accuracy: over each run's own scored rows
(as its aggregated_metrics.json ``memory_query`` block), d = memory_query_duration_seconds,
p50 = sorted(d)[n // 2], p95 = sorted(d)[min(n − 1, int(0.95 n))], avg = Σd / n (upstream aggregate rules);
per domain and pooled over the domains (the pooled avg equals the leaderboard's combined avg_seconds, the
LAFS latency; pooled p50/p95 are ours: upstream's combination drops them). diff = B − A, no interval: the
durations are wall-clock measurements of two runs, not paired outcomes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mnemetric.errors import ConfigError, InputError, MnemetricError
from mnemetric.longmemeval_v2.categories import CATEGORY_MAP
from mnemetric.longmemeval_v2.per_question import PerQuestionRow, read_per_question
from mnemetric.longmemeval_v2.questions import DOMAINS
from mnemetric.stats.paired import compare_paired

SCHEMA = "mnemetric.longmemeval-v2-compare/1"
PER_QUESTION = "per_question.jsonl"
CATEGORIES: tuple[str, ...] = tuple(dict.fromkeys(CATEGORY_MAP.values()))
IDENTITY = ("question_type", "eval_function", "question_text", "question_image", "haystack_ids", "answer_gold")
OVERALL = ("overall_full_set", "overall_non_abstention_only", "overall_abstention_only")
_RUN_DIR = re.compile(r"^.+_(web|enterprise)_[^_]+$")
"""Upstream's run folder name ``<method>_<domain>_<tier>``."""
SHOWN = 5


@dataclass(frozen=True)
class V2Run:
    """One run: its name (as given) and its per_question rows by domain (file order)."""

    name: str
    rows: Mapping[str, tuple[PerQuestionRow, ...]]


class NotComparable(MnemetricError):
    """Two V2 runs do not hold the same questions (the message lists what differs)."""

    def __init__(self, a_name: str, b_name: str, problems: Sequence[str]):
        self.problems = list(problems)
        head = f"{a_name} and {b_name} are not comparable: they do not hold the same questions"
        super().__init__("\n".join([head, *(f"  {p}" for p in self.problems)])
                         + "\n  fix: compare two runs of the same data root, tier (haystack) and domains")


def _domain_from_name(folder: Path) -> str | None:
    if folder.name in DOMAINS:
        return folder.name
    m = _RUN_DIR.match(folder.name)
    return m.group(1) if m else None


def read_run(path: str | Path, domain: str | None = None) -> V2Run:
    """A run from a folder of ``<domain>/per_question.jsonl``, or one domain's per_question.jsonl (a file, or
    a folder holding it): that domain is ``domain``, else read from the folder name (``web``, ``enterprise``
    or upstream's ``<method>_<domain>_<tier>``). With ``domain`` and domain subfolders, only that domain."""
    p = Path(path)
    if domain is not None and domain not in DOMAINS:
        raise ConfigError("--domain", f"unknown domain {domain!r}", fix=f"one of: {', '.join(DOMAINS)}")
    if p.is_dir() and not (p / PER_QUESTION).is_file():
        found = [d for d in DOMAINS if (p / d / PER_QUESTION).is_file() and domain in (None, d)]
        if not found:
            want = f"{domain}/{PER_QUESTION}" if domain else f"<domain>/{PER_QUESTION} (web, enterprise)"
            raise InputError(str(p), "<folder>", PER_QUESTION, f"no {want} in this folder",
                             fix="pass a `mnemetric v2 run` output folder or a per_question.jsonl file")
        return V2Run(str(path), {d: tuple(read_per_question(p / d / PER_QUESTION)) for d in found})
    file = p / PER_QUESTION if p.is_dir() else p
    if not file.is_file():
        raise InputError(str(p), "<file>", "<path>", "no such file or folder")
    name = domain or _domain_from_name(file.parent)
    if name is None:
        raise ConfigError("--domain", f"the domain of {file} is not known from its folder name",
                          fix="say it: --domain web or --domain enterprise")
    return V2Run(str(path), {name: tuple(read_per_question(file))})


def _shown(ids: Sequence[str]) -> str:
    more = f" … and {len(ids) - SHOWN} more" if len(ids) > SHOWN else ""
    return ", ".join(ids[:SHOWN]) + more


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def same_image(a: str | None, b: str | None) -> bool:
    """Do two question-image paths name the same image (module docstring)? Equal strings, or both files readable
    here with equal bytes, or (a path not readable here) the same last two path parts."""
    if a == b:
        return True
    if a is None or b is None:
        return False
    pa, pb = Path(a), Path(b)
    if pa.is_file() and pb.is_file():
        from mnemetric.io import sha256_file

        return pa.resolve() == pb.resolve() or sha256_file(pa) == sha256_file(pb)
    return len(pa.parts) >= 2 and len(pb.parts) >= 2 and pa.parts[-2:] == pb.parts[-2:]


def _identity_problems(domain: str, ra: Mapping[str, PerQuestionRow], rb: Mapping[str, PerQuestionRow]) -> list[str]:
    out = []
    for qid in sorted(set(ra) & set(rb)):
        for f in IDENTITY:
            va, vb = getattr(ra[qid], f), getattr(rb[qid], f)
            if f == "question_image" and same_image(va, vb):
                continue
            if va != vb and not (f == "answer_gold" and None in (va, vb)):
                out.append(f"{domain}/{qid}: {f} differs ({_plain(va)!r} vs {_plain(vb)!r})")
    return out


def check_same_questions(a: V2Run, b: V2Run) -> None:
    """NotComparable unless both runs hold the same domains, question ids and identity fields."""
    problems = [f"domain {d} only in {side.name}" for side, other in ((a, b), (b, a))
                for d in side.rows if d not in other.rows]
    identity: list[str] = []
    for d in (d for d in DOMAINS if d in a.rows and d in b.rows):
        ra = {r.question_id: r for r in a.rows[d]}
        rb = {r.question_id: r for r in b.rows[d]}
        for side, mine, theirs in ((a, ra, rb), (b, rb, ra)):
            only = sorted(set(mine) - set(theirs))
            if only:
                problems.append(f"{d}: {len(only)} question(s) only in {side.name}: {_shown(only)}")
        identity += _identity_problems(d, ra, rb)
    if identity:
        problems += identity[:SHOWN] + ([f"… and {len(identity) - SHOWN} more field differences"]
                                        if len(identity) > SHOWN else [])
    if problems:
        raise NotComparable(a.name, b.name, problems)


@dataclass(frozen=True)
class Pair:
    domain: str
    question_id: str
    category: str
    abstention: bool
    a: float
    b: float


def pairs(a: V2Run, b: V2Run) -> tuple[list[Pair], list[str], list[str]]:
    """(scored pairs sorted by domain then id, ``domain/id`` failed in A, failed in B); same questions assumed."""
    out, failed_a, failed_b = [], [], []
    for d in (d for d in DOMAINS if d in a.rows):
        rb = {r.question_id: r for r in b.rows[d]}
        for ra in sorted(a.rows[d], key=lambda r: r.question_id):
            other = rb[ra.question_id]
            key = f"{d}/{ra.question_id}"
            failed_a += [key] if ra.failed else []
            failed_b += [key] if other.failed else []
            if not (ra.failed or other.failed):
                out.append(Pair(d, ra.question_id, ra.category, ra.is_abstention_problem,
                                float(ra.score), float(other.score)))
    return out, failed_a, failed_b


def _paired(ps: Sequence[Pair], strata: str | None, labels: Sequence[str] | None, kw: Mapping[str, Any],
            source: str) -> dict[str, Any]:
    groups = [getattr(p, strata) for p in ps] if strata else None
    return compare_paired([p.a for p in ps], [p.b for p in ps], groups, "micro", labels=labels if strata else None,
                          source=source, **kw).to_record()


def compare_accuracy(ps: Sequence[Pair], domains: Sequence[str], *, resamples: int = 1000, seed: int = 0,
                     level: float = 0.95, source: str = "<v2 runs>") -> dict[str, Any]:
    """The paired accuracy records (module docstring) over the scored pairs ``ps``."""
    kw = {"resamples": resamples, "seed": seed, "level": level}
    slices = {"overall_full_set": list(ps), "overall_non_abstention_only": [p for p in ps if not p.abstention],
              "overall_abstention_only": [p for p in ps if p.abstention]}
    out: dict[str, Any] = {k: _paired(v, "domain", domains, kw, source) for k, v in slices.items()}
    out["per_domain"] = {d: _paired([p for p in ps if p.domain == d], None, None, kw, source) for d in domains}
    out["per_category"] = {c: _paired([p for p in ps if p.category == c], None, None, kw, source)
                           for c in CATEGORIES}
    return out


def _quantiles(durations: Sequence[float]) -> dict[str, Any]:
    """n, p50, p95 and avg of ``durations`` by upstream's aggregate rules; nulls when empty."""
    d, n = sorted(float(x) for x in durations), len(durations)
    if n == 0:
        return {"n": 0, "p50_seconds": None, "p95_seconds": None, "avg_seconds": None}
    total = 0.0
    for x in durations:
        total += x
    return {"n": n, "p50_seconds": d[n // 2], "p95_seconds": d[min(n - 1, int(0.95 * n))], "avg_seconds": total / n}


def _latency_pair(a_rows: Sequence[PerQuestionRow], b_rows: Sequence[PerQuestionRow]) -> dict[str, Any]:
    qa, qb = (_quantiles([r.memory_query_duration_seconds for r in rows if not r.failed]) for rows in (a_rows, b_rows))
    diff = {k: None if qa[k] is None or qb[k] is None else qb[k] - qa[k]
            for k in ("p50_seconds", "p95_seconds", "avg_seconds")}
    return {"a": qa, "b": qb, "diff": diff}


def compare_latency(a: V2Run, b: V2Run) -> dict[str, Any]:
    """memory_query latency of each run per domain and pooled, and B − A (module docstring)."""
    domains = [d for d in DOMAINS if d in a.rows]
    return {
        "field": "memory_query_duration_seconds",
        "rule": "each run's scored rows; p50 = sorted[n // 2], p95 = sorted[min(n - 1, int(0.95 n))], "
                "avg = sum / n; diff = B - A; no interval (measured wall-clock time)",
        "overall": _latency_pair([r for d in domains for r in a.rows[d]], [r for d in domains for r in b.rows[d]]),
        "per_domain": {d: _latency_pair(a.rows[d], b.rows[d]) for d in domains},
    }


def flips(ps: Sequence[Pair]) -> list[dict[str, Any]]:
    """Scored questions whose outcome differs, in pair order: old = A right, new = B right."""
    return [{"domain": p.domain, "question_id": p.question_id, "category": p.category, "old": p.a == 1.0,
             "new": p.b == 1.0} for p in ps if p.a != p.b]


def _side(run: V2Run, domains: Sequence[str]) -> dict[str, Any]:
    return {"name": run.name, "domains": list(domains), "rows": sum(len(run.rows[d]) for d in domains),
            "failed": sum(1 for d in domains for r in run.rows[d] if r.failed)}


def compare_v2(a: V2Run, b: V2Run, *, resamples: int = 1000, seed: int = 0, level: float = 0.95) -> dict[str, Any]:
    """The whole comparison of run B against run A; NotComparable unless they hold the same questions."""
    check_same_questions(a, b)
    ps, failed_a, failed_b = pairs(a, b)
    domains = [d for d in DOMAINS if d in a.rows]
    return {
        "schema": SCHEMA, "a": _side(a, domains), "b": _side(b, domains),
        "questions": sum(len(a.rows[d]) for d in domains), "paired": len(ps),
        "left_out": {"failed_in_a": failed_a, "failed_in_b": failed_b},
        "accuracy": compare_accuracy(ps, domains, resamples=resamples, seed=seed, level=level,
                                     source=f"{a.name} vs {b.name}"),
        "flips": flips(ps),
        "latency": compare_latency(a, b),
    }


def _num(x: float | None, fmt: str) -> str:
    return "—" if x is None else format(x, fmt)


def _acc_row(name: str, rec: Mapping[str, Any]) -> list[str]:
    ci = "—" if rec["low"] is None else f"[{rec['low']:+.3f}, {rec['high']:+.3f}]"
    sig = "*" if rec["p_value"] is not None and rec["p_value"] < 0.05 else ""
    return [name, str(rec["n"]), _num(rec["a_mean"], ".3f"), _num(rec["b_mean"], ".3f"),
            _num(rec["diff"], "+.3f") + sig, ci, _num(rec["p_value"], ".4f")]


def _table(header: Sequence[str], body: Sequence[Sequence[str]]) -> list[str]:
    rows = [list(header), *body]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
             for r in rows]
    return [lines[0], "  ".join("-" * w for w in widths), *lines[1:]]


def render_table(result: Mapping[str, Any]) -> str:
    """Plain-text report: the accuracy table, then the latency table, then flips and left-out questions."""
    acc, lat = result["accuracy"], result["latency"]
    body = [_acc_row(k, acc[k]) for k in OVERALL]
    body += [_acc_row(f"domain {d}", rec) for d, rec in acc["per_domain"].items()]
    body += [_acc_row(f"  {c}", rec) for c, rec in acc["per_category"].items() if rec["n"]]
    head = f"B = {result['b']['name']} against A = {result['a']['name']} ({result['paired']} paired questions)"
    header = ["slice", "n", "A", "B", "B − A", "95% CI (score)", "McNemar p"]
    lines = [head, "", "accuracy (score), B − A:", *_table(header, body),
             "* exact McNemar p < 0.05 (each slice on its own: domain and category rows are exploratory, unadjusted)",
             "CI: Tango score interval for paired proportions; the paired bootstrap interval is in --json"]
    lat_body = [[f"{scope} {k.split('_')[0]}", _num(rec["a"][k], ".3f"), _num(rec["b"][k], ".3f"),
                 _num(rec["diff"][k], "+.3f")]
                for scope, rec in (("overall", lat["overall"]), *lat["per_domain"].items())
                for k in ("p50_seconds", "p95_seconds")]
    lines += ["", "memory query latency (seconds), reported apart from accuracy:",
              *_table(["slice", "A", "B", "B − A"], lat_body)]
    lines += ["", f"flipped questions: {len(result['flips'])}"]
    word = {True: "correct", False: "wrong"}
    lines += [f"  {f['domain']}/{f['question_id']} ({f['category']}): {word[f['old']]} -> {word[f['new']]}"
              for f in result["flips"]]
    for side, key in (("A", "failed_in_a"), ("B", "failed_in_b")):
        if result["left_out"][key]:
            lines.append(f"failed in {side} (left out of accuracy): {', '.join(result['left_out'][key])}")
    return "\n".join(lines)
