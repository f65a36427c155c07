"""One whole LongMemEval-V2 evaluation: validate, the steps (memory, reader, scoring), aggregation, combination,
LAFS, summary.

The steps and their rules are :mod:`.steps` (upstream's harness.py at be15ea6e995462f3391c1a610892df3f67dfa7bd:
a run is ONE domain, questions in questions.jsonl order, the shared-haystack rule, the reader, upstream's
checkers). Here: :func:`run_v2` runs them all in one process — every model call of the run (a memory that
declares CallsModels, the reader and LLM checkers) through ONE executor, so one budget and one usage ledger — and :func:`finish` turns per_question
rows into the domain's aggregated_metrics (:mod:`.aggregate`), web + enterprise combined as
leaderboard/combine_aggregated_metrics.py (:mod:`.combine`), and the LAFS gain of the run's operating point
(accuracy = combined overall_full_set × 100, latency = combined memory_query avg_seconds; :mod:`.lafs`) for
the tier — only when the data is the verified official tier (else ``computed`` false with the reason). The
DVC stages run the same steps one per stage (stages v2_memory … v2_metrics).

A question where upstream would abort (reader non-answer, judge reply without a label …) is a FAILED row
(reason in ``failed``), left out of the upstream numbers and counted apart; the run is then not official.

The Mnemetric summary (v2.json; metrics/v2.json without latency) is nested with stable keys (:func:`summary`;
typed: :class:`.summary_file.V2Summary`); accuracies carry 95 %
Clopper–Pearson intervals over the scored questions (:func:`mnemetric.stats.clopper_pearson`);
``official_equivalence`` is :class:`mnemetric.official.OfficialEquivalence` ``{value, reasons}``: false, with
every reason, unless every official condition holds (:func:`official_reasons`). Nothing returned holds a
clock time (latencies are durations).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mnemetric.execute import Executor
from mnemetric.longmemeval_v2.aggregate import aggregate_metrics
from mnemetric.longmemeval_v2.aggregated import AggregatedMetrics, CombinedMetrics, write_aggregated, write_combined
from mnemetric.longmemeval_v2.checkers import LLM_CHECKERS
from mnemetric.longmemeval_v2.combine import combine_metrics
from mnemetric.longmemeval_v2.data_custody import DataCheck
from mnemetric.longmemeval_v2.facts import checker_facts, counter_facts, reader_facts
from mnemetric.longmemeval_v2.gate import GateFacts
from mnemetric.longmemeval_v2.gate import reasons as gate_reasons
from mnemetric.longmemeval_v2.lafs import TIERS, lafs_summary
from mnemetric.longmemeval_v2.memory import QUESTION_ONLY, MemoryFactory
from mnemetric.longmemeval_v2.per_question import PerQuestionRow, write_per_question
from mnemetric.longmemeval_v2.questions import DOMAINS
from mnemetric.longmemeval_v2.selection import Selection
from mnemetric.longmemeval_v2.steps import (assemble, check_step, chosen_questions, domain_questions, memory_step,
                                            read_step)
from mnemetric.longmemeval_v2.summary_file import Lafs, V2Summary, write_summary
from mnemetric.longmemeval_v2.tokens import DEFAULT_MAX_TOKENS, TokenCounter
from mnemetric.longmemeval_v2.upstream_text import ReaderTexts
from mnemetric.longmemeval_v2.validate import haystack_path, require_valid_root
from mnemetric.official import OfficialEquivalence
from mnemetric.stats import clopper_pearson

SCHEMA = "mnemetric.longmemeval-v2.metrics/1"
_TIER_FILE = re.compile(r"lme_v2_(small|medium)\.json")


@dataclass(frozen=True)
class V2Run:
    rows: Mapping[str, list[PerQuestionRow]]
    """domain → per_question rows in stream order."""
    aggregated: Mapping[str, AggregatedMetrics]
    """domain → its aggregated_metrics.json (typed)."""
    combined: CombinedMetrics | None
    """combined_aggregated_metrics.json (typed), when the run has both domains."""
    summary: V2Summary
    """v2.json (typed, :mod:`.summary_file`)."""
    provenance: Mapping[str, Any] = field(default_factory=dict)
    """What the components say about themselves (:mod:`.facts`: reader, checker, token_counter blocks), private
    facts left out."""
    protocol: GateFacts | None = None
    """What the gate read (run-v2.json's ``protocol`` section)."""
    facts: Mapping[str, Any] = field(default_factory=dict)
    """The components' facts blocks as :func:`finish` got them (private facts kept: a shard part records them)."""
    memory_cost: Mapping[str, Any] | None = None
    """A UsesModelProxy memory's requests through the model proxy, per system and phase
    (:func:`mnemetric.llm.memory_cost.memory_cost_record`; `mnemetric v2 run` writes it to OUT/memory_cost.json);
    None for any other memory."""


def tier_of(haystack: str | Path) -> str | None:
    """The tier a haystack names: "small"/"medium" itself, or a file named lme_v2_<tier>.json; else None."""
    text = str(haystack)
    return text if text in TIERS else (m.group(1) if (m := _TIER_FILE.fullmatch(Path(text).name)) else None)


def run_settings(haystack: Path, tier_from: str | Path, domains: Sequence[str], *, memory: str, reader: str,
                 checker: str, token_counter: str, max_tokens: int,
                 memory_query_context: str = QUESTION_ONLY) -> dict[str, Any]:
    """metrics/v2.json's ``settings`` block (``memory_query_context``: what the memory saw of each question,
    :data:`~.memory.QUESTION_ONLY` or :data:`~.memory.UPSTREAM_ROW`)."""
    return {"haystack": haystack.name, "tier": tier_of(tier_from), "domains": list(domains), "memory": memory,
            "memory_query_context": memory_query_context, "reader": reader, "checker": checker,
            "token_counter": token_counter, "memory_context_max_tokens": max_tokens}


def run_v2(root: str | Path, haystack: str | Path, domains: Sequence[str] = DOMAINS, *, factory: MemoryFactory,
           memory_name: str, reader: Any, checker: Any, counter: TokenCounter, executor: Executor | None = None,
           max_tokens: int = DEFAULT_MAX_TOKENS, texts: ReaderTexts | None = None, check_images: bool = True,
           data: DataCheck | None = None, counter_note: str | None = None,
           select: Selection | None = None, memory_query_context: str = QUESTION_ONLY,
           keep: Callable[[str], bool] | None = None, shard_reason: str | None = None) -> V2Run:
    """Validate the data root, run every step, aggregate, combine and summarise (module docstring).

    ``haystack`` is a tier ("small" / "medium") or a haystack file; ``executor`` the run's one executor (None:
    the immediate executor with default ``llm:`` settings, made only if a component calls a model); ``texts``
    the pinned reader texts (None: prompt_messages are logged empty — only the offline reader may run without
    them); ``data``: the data root checked against its custody record (:func:`.data_custody.verify_root`;
    None: not verified); ``select``: a subset of the questions (:mod:`.selection`; the run is then not official);
    ``keep`` / ``shard_reason``: a question shard of that run (:mod:`.shards`) and its not-official reason.
    """
    root = Path(root)
    require_valid_root(root, haystack, check_images=check_images)
    hpath = haystack_path(root, haystack)
    own = None
    if executor is None and (getattr(reader, "calls_model", False) or getattr(checker, "calls_model", False)
                             or getattr(factory, "calls_models", False) is True
                             or getattr(factory, "uses_model_proxy", False) is True):
        from mnemetric.execute import build_executor

        executor = own = build_executor(None, {})
    try:
        memory, latencies = memory_step(root, hpath, domains, factory, counter=counter, max_tokens=max_tokens,
                                        system=memory_name, images_on=check_images, select=select,
                                        mapper=executor, keep=keep)
        read = read_step(memory, reader, executor, texts)
        check = check_step(root, memory, read, checker, executor)
    finally:
        if own is not None:
            own.close()
    rows = assemble(root, memory, read, check, latencies)
    settings = run_settings(hpath, haystack, domains, memory=memory_name, reader=reader.name, checker=checker.name,
                            token_counter=counter.name, max_tokens=max_tokens,
                            memory_query_context=memory_query_context)
    facts = {"reader": reader_facts(reader, texts), "checker": checker_facts(checker),
             "token_counter": counter_facts(counter, counter_note)}
    subset = None
    if select is not None:  # a shard's reason names the whole run's selection, not the shard's part of it
        chosen = len(memory) if keep is None else sum(map(len, chosen_questions(root, domains, select).values()))
        subset = subset_reason(root, domains, select, chosen)
    done = finish(settings, rows, facts, data=data, images=check_images, subset=subset, shard=shard_reason)
    return replace(done, memory_cost=latencies.memory_cost) if latencies.memory_cost is not None else done


def subset_reason(root: str | Path, domains: Sequence[str], select: Selection | None, chosen: int) -> str | None:
    """The not-official reason of a run that asks ``chosen`` questions picked by ``select`` (None: every question)."""
    if select is None:
        return None
    return select.reason(chosen, sum(1 for d in domains for _ in domain_questions(Path(root), d)))


def finish(settings: Mapping[str, Any], rows: Mapping[str, list[PerQuestionRow]], facts: Mapping[str, Any], *,
           data: DataCheck | None, images: bool, subset: str | None = None,
           shard: str | None = None) -> V2Run:
    """Aggregate each domain, combine both, decide official_equivalence, summarise (module docstring).
    ``facts``: :mod:`.facts` blocks ``reader``, ``checker``, ``token_counter`` (the run's provenance); ``subset``:
    the reason a subset run is not official (:meth:`.selection.Selection.reason`); ``shard``: a shard's. Both are
    gate facts (the manifest's ``protocol`` section), so the family's gate decides them from the manifest too."""
    aggregated = {d: aggregate_metrics(r, file=f"{d} per_question rows") for d, r in rows.items()}
    combined = (combine_metrics(aggregated["web"], aggregated["enterprise"])
                if set(rows) == set(DOMAINS) else None)
    protocol = gate_facts(settings, rows, facts, data=data, images=images, subset=subset, shard=shard)
    reasons = gate_reasons(protocol)
    provenance = {k: {f: v for f, v in block.items() if f not in PRIVATE_FACTS} for k, block in facts.items()}
    result = summary(settings, rows, aggregated, None if combined is None else combined.to_record(), reasons)
    if result.lafs.computed and not (data is not None and data.sha256_verified):
        result = replace(result, lafs=Lafs(False, settings["tier"],
                                           reason="the data is not the verified official tier (the bundled sample "
                                                  "never is)"))
    return V2Run(rows, aggregated, combined, result, provenance, protocol, dict(facts))


PRIVATE_FACTS = ("texts_pinned", "note")
"""Facts the official verdict reads that run-v2.json's component blocks do not repeat."""


def gate_facts(settings: Mapping[str, Any], rows: Mapping[str, list[PerQuestionRow]], facts: Mapping[str, Any], *,
               data: DataCheck | None, images: bool = True, subset: str | None = None,
               shard: str | None = None) -> GateFacts:
    """What the gate reads of this run (:class:`mnemetric.longmemeval_v2.gate.GateFacts`), from its settings, rows
    and the steps' facts."""
    reader, checker, counter = facts["reader"], facts["checker"], facts["token_counter"]
    uses_llm = any(r.eval_function.split("|")[0].strip() in LLM_CHECKERS for rs in rows.values() for r in rs)
    return GateFacts(
        data_verified=bool(data is not None and data.sha256_verified),
        data_reasons=tuple(data.reasons) if data is not None else (), images=bool(images),
        haystack=str(settings["haystack"]), tier=settings["tier"], domains=tuple(settings["domains"]),
        reader=str(reader["name"]), reader_official=bool(reader["official"]),
        reader_sends_prompts=bool(reader["sends_prompts"]), reader_texts_pinned=bool(reader.get("texts_pinned")),
        uses_llm_checker=uses_llm, checker=str(checker["name"]), checker_official=bool(checker["official"]),
        token_counter=str(counter["name"]), token_counter_official=bool(counter["official"]),
        token_counter_note=counter.get("note") or None,
        memory_context_max_tokens=int(settings["memory_context_max_tokens"]),
        memory_query_context=str(settings.get("memory_query_context") or QUESTION_ONLY),
        failed=sum(1 for rs in rows.values() for r in rs if r.failed), subset=subset, shard=shard)


def official_reasons(settings: Mapping[str, Any], rows: Mapping[str, list[PerQuestionRow]],
                     facts: Mapping[str, Any], *, data: DataCheck | None, images: bool = True) -> list[str]:
    """Every reason the run is not official: the family's gate (:func:`mnemetric.longmemeval_v2.gate.reasons`)
    over :func:`gate_facts`."""
    return gate_reasons(gate_facts(settings, rows, facts, data=data, images=images))


def accuracy(rows: Sequence[PerQuestionRow], *, failed_as_wrong: bool = False) -> dict[str, Any]:
    """{value, correct, n, ci95_low, ci95_high, method} over the scored rows (score 1.0 = correct); with
    ``failed_as_wrong`` over every row, a failed one counted wrong."""
    scored = list(rows) if failed_as_wrong else [r for r in rows if not r.failed]
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
    failed = sum(1 for r in rows if r.failed)
    block = {"questions": len(rows), "scored": len(rows) - failed, "failed": failed,
             "accuracy": {"overall_full_set": accuracy(rows), "non_abstention_only": accuracy(non),
                          "abstention_only": accuracy(abstention)}}
    if failed:  # where calls failed: the same accuracies with the failed questions counted wrong, beside
        block["accuracy_failed_as_wrong"] = {
            "overall_full_set": accuracy(rows, failed_as_wrong=True),
            "non_abstention_only": accuracy(non, failed_as_wrong=True),
            "abstention_only": accuracy(abstention, failed_as_wrong=True)}
    return block | {"category_accuracy": by, "memory_query_avg_seconds": agg["memory_query"]["avg_seconds"],
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
            aggregated: Mapping[str, AggregatedMetrics], combined: Mapping[str, Any] | None,
            reasons: list[str]) -> V2Summary:
    """v2.json: {schema, settings, domains, combined, lafs, official_equivalence} (:class:`.summary_file.V2Summary`,
    checked as it is built)."""
    domains = {d: _block(rows[d], aggregated[d].to_record()) for d in rows}
    both = None
    if combined is not None:
        all_rows = [r for d in rows for r in rows[d]]
        both = _block(all_rows, combined) | {"memory_query_avg_seconds": combined["memory_query"]["avg_seconds"]}
    return V2Summary.from_record({"schema": SCHEMA, "settings": dict(settings), "domains": domains, "combined": both,
                                  "lafs": _lafs(settings, combined),
                                  "official_equivalence": OfficialEquivalence.of(reasons).to_record()},
                                 file="<v2 summary>")


def write_run(out: str | Path, run: V2Run, settings: Mapping[str, Any] | None = None, *,
              started_at_utc: str | None = None) -> list[Path]:
    """<out>/<domain>/per_question.jsonl and aggregated_metrics.json, combined_aggregated_metrics.json, v2.json.

    With ``settings`` (the run's ``v2`` section: data_root, haystack, memory, reader …) each domain folder also
    gets upstream's run_args.json and runtime_inputs/ (:mod:`.run_folder`), so upstream's leaderboard builder and
    `mnemetric v2 package` read it as a run of upstream's harness."""
    from mnemetric.longmemeval_v2.run_folder import counter_record, write_upstream_run

    out = Path(out)
    written = []
    for domain, rows in run.rows.items():
        (out / domain).mkdir(parents=True, exist_ok=True)
        write_per_question(out / domain / "per_question.jsonl", rows)
        write_aggregated(out / domain / "aggregated_metrics.json", run.aggregated[domain])
        written += [out / domain / "per_question.jsonl", out / domain / "aggregated_metrics.json"]
        if settings is not None:
            g = run.protocol
            counter = None if g is None else counter_record(g.token_counter, g.token_counter_official,
                                                            g.token_counter_note)
            written += write_upstream_run(out / domain, domain, rows, settings=settings,
                                          checker=run.provenance.get("checker") or {}, counter=counter,
                                          started_at_utc=started_at_utc)
    if run.combined is not None:
        write_combined(out / "combined_aggregated_metrics.json", run.combined)
        written.append(out / "combined_aggregated_metrics.json")
    write_summary(out / "v2.json", run.summary)
    written.append(out / "v2.json")
    return written
