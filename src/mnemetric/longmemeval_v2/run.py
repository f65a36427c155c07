"""One whole LongMemEval-V2 evaluation: validate, memory, reader, scoring, aggregation, combination, LAFS, summary.

Per domain, as upstream's evaluation/harness.py run (xiaowu0162/LongMemEval-V2 at
be15ea6e995462f3391c1a610892df3f67dfa7bd; a run is ONE domain): the domain's questions in questions.jsonl
order (index = stream_index = position among them; no shuffle), their haystack lists, the memory by the
shared-haystack rule (:mod:`.harness`), the reader, then scoring — a deterministic checker gets the parsed
boxed answer (:func:`~.checkers.score_deterministic`), an LLM checker the raw and parsed answers
(:mod:`.llm_checkers`); an is_unknown answer scores 0. per_question rows in upstream's keys
(:mod:`.per_question`; ``timestamp_utc`` is written as "" — no clock times in our outputs), the domain's
aggregated_metrics (:mod:`.aggregate`), then web + enterprise combined as
leaderboard/combine_aggregated_metrics.py (:mod:`.combine`), and the LAFS gain of the run's operating point
(accuracy = combined overall_full_set × 100, latency = combined memory_query avg_seconds; :mod:`.lafs`)
for the tier.

A question where upstream would abort (reader non-answer, judge reply without a label …) is a FAILED row
(reason in ``failed``), left out of the upstream numbers and counted apart; the run is then not official.

The Mnemetric summary (metrics/v2.json) is nested with stable keys (:func:`summary`); accuracies carry 95 %
Clopper–Pearson intervals over the scored questions (:func:`mnemetric.stats.clopper_pearson`);
``official_equivalence`` is false, with every reason, unless every official condition holds
(:func:`official_reasons`). Nothing returned holds a clock time (latencies are durations).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mnemetric.io import write_json_atomic
from mnemetric.longmemeval_v2.aggregate import aggregate, write_upstream_json
from mnemetric.longmemeval_v2.categories import CATEGORY_MAP
from mnemetric.longmemeval_v2.checkers import (
    LLM_CHECKERS, extract_boxed_answer, is_unknown, parse_eval_function, score_deterministic,
)
from mnemetric.longmemeval_v2.combine import combine_aggregates
from mnemetric.longmemeval_v2.harness import MemoryOutcome, MemoryQuestion, run_memory
from mnemetric.longmemeval_v2.haystacks import read_haystack
from mnemetric.longmemeval_v2.lafs import TIERS, lafs_summary
from mnemetric.longmemeval_v2.llm_checkers import CheckCase
from mnemetric.longmemeval_v2.memory import MemoryFactory
from mnemetric.longmemeval_v2.per_question import FAILED, UPSTREAM_KEYS, PerQuestionRow, write_per_question
from mnemetric.longmemeval_v2.questions import DOMAINS, Question, iter_questions
from mnemetric.longmemeval_v2.reader import ReaderInput, ReaderReply
from mnemetric.longmemeval_v2.requests import reader_log_messages
from mnemetric.longmemeval_v2.tokens import DEFAULT_MAX_TOKENS, TokenCounter
from mnemetric.longmemeval_v2.trajectories import iter_trajectories
from mnemetric.longmemeval_v2.upstream_text import ReaderTexts
from mnemetric.longmemeval_v2.validate import QUESTIONS_FILE, TRAJECTORIES_FILE, haystack_path, require_valid_root
from mnemetric.stats import clopper_pearson

SCHEMA = "mnemetric.longmemeval-v2.metrics/1"
_TIER_FILE = re.compile(r"lme_v2_(small|medium)\.json")


@dataclass(frozen=True)
class V2Run:
    rows: Mapping[str, list[PerQuestionRow]]
    """domain → per_question rows in stream order."""
    aggregated: Mapping[str, dict[str, Any]]
    combined: dict[str, Any] | None
    summary: dict[str, Any]
    provenance: Mapping[str, Any] = field(default_factory=dict)
    """What the components say about themselves (:func:`mnemetric.longmemeval_v2.pipeline.component_facts`);
    filled by ``run_from_settings``, empty for a bare :func:`run_v2`."""


def tier_of(haystack: str | Path) -> str | None:
    """The tier a haystack names: "small"/"medium" itself, or a file named lme_v2_<tier>.json; else None."""
    text = str(haystack)
    return text if text in TIERS else (m.group(1) if (m := _TIER_FILE.fullmatch(Path(text).name)) else None)


def _questions(root: Path, domain: str) -> list[Question]:
    return [q for q in iter_questions(root / QUESTIONS_FILE) if q.domain == domain]


def _identity(q: Question, i: int, haystack_ids: Sequence[str], image: str | None) -> dict[str, Any]:
    name = parse_eval_function(q.eval_function, file=QUESTIONS_FILE, record=q.id)[0]
    return {"index": i, "stream_index": i, "question_id": q.id, "question_type": q.question_type,
            "category": CATEGORY_MAP[q.question_type], "is_abstention_problem": name == "llm_abstention_checker",
            "eval_function": q.eval_function, "question_text": q.question, "question_image": image,
            "haystack_ids": list(haystack_ids)}


def _score(q: Question, reply: ReaderReply) -> tuple[str, str, bool, CheckCase | None, bool | None]:
    raw = reply.response_raw or ""
    parsed = extract_boxed_answer(raw)
    unknown = is_unknown(parsed)
    name, options = parse_eval_function(q.eval_function, file=QUESTIONS_FILE, record=q.id)
    if name in LLM_CHECKERS:
        return raw, parsed, unknown, CheckCase(name, q.question_type, q.question, q.answer, raw, parsed), None
    return raw, parsed, unknown, None, score_deterministic(name, options, parsed, q.answer)


def _row(base: dict[str, Any], mem: MemoryOutcome, rest: dict[str, Any] | None, failed: str | None,
         n: int) -> PerQuestionRow:
    raw = {**base, **mem.to_record()}
    for key in UPSTREAM_KEYS:
        raw.setdefault(key, None if rest is None else rest.get(key))
    if failed:
        raw[FAILED] = failed
    return PerQuestionRow.from_record(raw, file="<v2 run>", line=n)


def run_domain(root: Path, domain: str, haystack: Path, factory: MemoryFactory, *, reader: Any, checker: Any,
               counter: TokenCounter, max_tokens: int, texts: ReaderTexts | None,
               system: str, images_on: bool = True) -> list[PerQuestionRow]:
    """The per_question rows of one domain (module docstring). ``images_on`` False: a question image that
    is not on disk is left out (the memory and the reader get the question text alone; not official)."""
    questions = _questions(root, domain)
    lists = read_haystack(haystack)
    trajectories = {t.id: t for t in iter_trajectories(root / TRAJECTORIES_FILE)}
    images = [None if q.image is None or not (images_on or (root / q.image).exists()) else str(root / q.image)
              for q in questions]
    mqs = [MemoryQuestion(q.id, q.question, img, lists[q.id]) for q, img in zip(questions, images)]
    outcomes = list(run_memory(factory, mqs, trajectories, system=system, counter=counter, max_tokens=max_tokens))
    replies = reader.answer_all([ReaderInput(domain, m.memory_context, q.question, img)
                                 for q, m, img in zip(questions, outcomes, images)])
    scored = [None if r.failed else _score(q, r) for q, r in zip(questions, replies)]
    cases = [s[3] for s in scored if s is not None and s[3] is not None]
    verdicts = iter(checker.check_all(cases) if cases else [])
    rows = []
    for i, (q, mem, reply, s, img) in enumerate(zip(questions, outcomes, replies, scored, images)):
        base = _identity(q, i, lists[q.id], img)
        if s is None:
            rows.append(_row(base, mem, None, reply.failed, i + 1))
            continue
        raw, parsed, unknown, case, verdict = s
        failed = None
        if case is not None:
            outcome = next(verdicts)
            verdict, failed = outcome.verdict, outcome.failed
        ok = bool(verdict) and not unknown
        prompt = reader_log_messages(domain, mem.memory_context, q.question, img, texts) if texts else []
        rest = {"prompt_messages": prompt, "answer_gold": q.answer, "response_raw": raw,
                "response_parsed_boxed": parsed, "is_unknown": unknown, "score": 1.0 if ok else 0.0,
                "score_bool": ok, "usage": reply.usage, "timestamp_utc": ""}
        rows.append(_row(base, mem, None if failed else rest, failed, i + 1))
    return rows


def run_v2(root: str | Path, haystack: str | Path, domains: Sequence[str] = DOMAINS, *, factory: MemoryFactory,
           memory_name: str, reader: Any, checker: Any, counter: TokenCounter,
           max_tokens: int = DEFAULT_MAX_TOKENS, texts: ReaderTexts | None = None, check_images: bool = True,
           data_verified: bool = False, counter_note: str | None = None) -> V2Run:
    """Validate the data root, run every domain, aggregate, combine and summarise (module docstring).

    ``haystack`` is a tier ("small" / "medium") or a haystack file; ``texts`` the pinned reader texts
    (None: prompt_messages are logged empty — only the offline reader may run without them);
    ``data_verified``: the caller checked the data root's custody against the dataset pins.
    """
    root = Path(root)
    require_valid_root(root, haystack, check_images=check_images)
    hpath = haystack_path(root, haystack)
    rows = {d: run_domain(root, d, hpath, factory, reader=reader, checker=checker, counter=counter,
                          max_tokens=max_tokens, texts=texts, system=memory_name, images_on=check_images)
            for d in domains}
    aggregated = {d: aggregate(r, file=f"{d} per_question rows") for d, r in rows.items()}
    combined = (combine_aggregates(aggregated["web"], aggregated["enterprise"])
                if set(domains) == set(DOMAINS) else None)
    settings = {"haystack": hpath.name, "tier": tier_of(haystack), "domains": list(domains), "memory": memory_name,
                "reader": reader.name, "checker": checker.name, "token_counter": counter.name,
                "memory_context_max_tokens": max_tokens}
    reasons = official_reasons(settings, rows, reader=reader, checker=checker, counter=counter,
                               texts=texts, data_verified=data_verified, images=check_images)
    if counter_note:
        reasons.append(counter_note)
    return V2Run(rows, aggregated, combined, summary(settings, rows, aggregated, combined, reasons))


def official_reasons(settings: Mapping[str, Any], rows: Mapping[str, list[PerQuestionRow]], *, reader: Any,
                     checker: Any, counter: TokenCounter, texts: ReaderTexts | None,
                     data_verified: bool, images: bool = True) -> list[str]:
    """Every reason the run is not official; empty only when every official condition holds."""
    reasons = []
    if not data_verified:
        reasons.append("data root not verified against the pinned dataset revision")
    if not images:
        reasons.append("images off: screenshots and question images are not required to exist, and a missing "
                       "question image is left out (upstream's runs use them)")
    if settings["tier"] is None:
        reasons.append(f"haystack {settings['haystack']!r} is not an official tier file")
    if set(settings["domains"]) != set(DOMAINS):
        reasons.append("only " + ", ".join(settings["domains"]) + " run; official results combine both domains")
    if not getattr(reader, "official", False):
        reasons.append(f"reader {reader.name!r} is not the official Qwen/Qwen3.5-9B reader with pinned texts")
    if getattr(reader, "sends_reader_texts", True) and (texts is None or not texts.is_pinned):
        reasons.append("reader texts not read from the pinned upstream harness.py")
    uses_llm = any(r.eval_function.split("|")[0].strip() in LLM_CHECKERS for rs in rows.values() for r in rs)
    if uses_llm and not getattr(checker, "official", False):
        reasons.append(f"checker {checker.name!r} is not the official gpt-5.2 judge with pinned prompts")
    if not counter.official:
        reasons.append(f"token counter {counter.name!r} is not the Qwen/Qwen3.5-9B processor")
    if settings["memory_context_max_tokens"] != DEFAULT_MAX_TOKENS:
        reasons.append(f"memory_context_max_tokens {settings['memory_context_max_tokens']} != {DEFAULT_MAX_TOKENS}")
    failed = sum(1 for rs in rows.values() for r in rs if r.failed)
    if failed:
        reasons.append(f"{failed} question(s) failed where upstream aborts the run")
    return reasons


def accuracy(rows: Sequence[PerQuestionRow]) -> dict[str, Any]:
    """{value, correct, n, ci95_low, ci95_high, method} over the scored rows (score 1.0 = correct)."""
    scored = [r for r in rows if not r.failed]
    k, n = sum(1 for r in scored if r.score == 1.0), len(scored)
    ci = clopper_pearson(k, n)
    return {"value": k / n if n else None, "correct": k, "n": n, "ci95_low": ci[0] if ci else None,
            "ci95_high": ci[1] if ci else None, "method": "clopper-pearson"}


def _block(rows: Sequence[PerQuestionRow], agg: Mapping[str, Any]) -> dict[str, Any]:
    abstention = [r for r in rows if r.is_abstention_problem]
    non = [r for r in rows if not r.is_abstention_problem]
    by = {c: (agg.get("combined_abstention_by_category") or {}).get(c, {}).get("pct_correct")
          for c in ("static", "dynamic", "procedure")}
    by["gotchas"] = (agg.get("non_abstention_by_category") or {}).get("gotchas", {}).get("pct_correct")
    return {"questions": len(rows), "scored": sum(1 for r in rows if not r.failed),
            "failed": sum(1 for r in rows if r.failed),
            "accuracy": {"overall_full_set": accuracy(rows), "non_abstention_only": accuracy(non),
                         "abstention_only": accuracy(abstention)},
            "category_accuracy": by,
            "memory_query_avg_seconds": agg["memory_query"]["avg_seconds"],
            "memory_context": dict(agg["memory_context"])}


def _lafs(settings: Mapping[str, Any], combined: Mapping[str, Any] | None) -> dict[str, Any]:
    tier = settings["tier"]
    if combined is None or tier is None:
        return {"computed": False, "reason": "needs both domains and an official tier", "tier": tier}
    acc, latency = combined["overall"]["overall_full_set"], combined["memory_query"]["avg_seconds"]
    if acc is None or not latency or latency <= 0:
        return {"computed": False, "reason": "no accuracy or a latency that is not > 0", "tier": tier}
    s = lafs_summary(tier, [(acc * 100, latency, settings["memory"])])
    return {"computed": True, "tier": tier, "accuracy_percentage_points": acc * 100, "latency_seconds": latency,
            "reference_lafs": s["reference_lafs"], "submission_lafs": s["submission_lafs"],
            "lafs_gain": s["lafs_gain"]}


def summary(settings: Mapping[str, Any], rows: Mapping[str, list[PerQuestionRow]],
            aggregated: Mapping[str, Mapping[str, Any]], combined: Mapping[str, Any] | None,
            reasons: list[str]) -> dict[str, Any]:
    """metrics/v2.json: {schema, settings, domains, combined, lafs, official_equivalence} (stable keys)."""
    domains = {d: _block(rows[d], aggregated[d]) for d in rows}
    both = None
    if combined is not None:
        all_rows = [r for d in rows for r in rows[d]]
        both = _block(all_rows, combined) | {"memory_query_avg_seconds": combined["memory_query"]["avg_seconds"]}
    return {"schema": SCHEMA, "settings": dict(settings), "domains": domains, "combined": both,
            "lafs": _lafs(settings, combined),
            "official_equivalence": {"official": not reasons, "reasons": reasons}}


def write_run(out: str | Path, run: V2Run) -> list[Path]:
    """<out>/<domain>/per_question.jsonl and aggregated_metrics.json, combined_aggregated_metrics.json, v2.json."""
    out = Path(out)
    written = []
    for domain, rows in run.rows.items():
        (out / domain).mkdir(parents=True, exist_ok=True)
        write_per_question(out / domain / "per_question.jsonl", rows)
        write_upstream_json(out / domain / "aggregated_metrics.json", run.aggregated[domain])
        written += [out / domain / "per_question.jsonl", out / domain / "aggregated_metrics.json"]
    if run.combined is not None:
        write_upstream_json(out / "combined_aggregated_metrics.json", run.combined)
        written.append(out / "combined_aggregated_metrics.json")
    write_json_atomic(out / "v2.json", run.summary)
    written.append(out / "v2.json")
    return written


# --------------------------------------------------------------------------- components by option name (CLI)


def run_named(root: str | Path, haystack: str | Path, *, memory: str, memory_options: Mapping[str, Any] | None = None,
              domains: Sequence[str] = DOMAINS, reader: str = "offline", reader_model: str | None = None,
              reader_base_url: str | None = None, enable_thinking: bool = True, checker: str = "offline",
              judge_model: str | None = None, judge_base_url: str | None = None, token_counter: str = "auto",
              processor_path: str | None = None, max_tokens: int = DEFAULT_MAX_TOKENS, check_images: bool = True,
              data_verified: bool = False, llm: Mapping[str, Any] | None = None,
              conf: str | Path | None = None) -> V2Run:
    """:func:`run_v2` with every component named by its conf option (conf/v2/<group>/<name>.yaml, the files the
    DVC stage composes): the keyword arguments set the option's own keys where it has them (``top_k`` of
    bm25, ``model`` of openai, ``path`` of qwen …) and are ignored where it has not (the offline reader has no
    model). ``conf``: a project's conf folder whose v2/<group>/<name>.yaml options are found first
    (:func:`mnemetric.longmemeval_v2.pipeline.option`). Then the stage's own path,
    :func:`mnemetric.longmemeval_v2.pipeline.run_from_settings`."""
    from mnemetric.longmemeval_v2.pipeline import option, run_from_settings

    settings = {
        "name": "cli", "data_root": str(root), "haystack": haystack, "domains": list(domains),
        "max_tokens": max_tokens, "images": check_images,
        "memory": option("memory", memory, root, conf, **dict(memory_options or {})),
        "reader": option("reader", reader, root, conf, model=reader_model, base_url=reader_base_url,
                         enable_thinking=enable_thinking),
        "checker": option("checker", checker, root, conf, model=judge_model, base_url=judge_base_url),
        "token_counter": option("token_counter", token_counter, root, conf, path=processor_path),
    }
    return run_from_settings(settings, dict(llm or {}), data_verified=data_verified)
