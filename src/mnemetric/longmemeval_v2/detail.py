"""metrics/detail/v2.json: why each V2 question went wrong, what the judge said, and the context by item type.

A Mnemetric addition (upstream LongMemEval-V2 attributes nothing and drops the LLM checker's reason); written by
stage v2_metrics from tracked inputs only (the step files), so a fresh clone writes the same bytes. No metric
changes. V2 data labels no evidence (a question row has no answer trajectory or state), so whether the memory
returned something relevant is read lexically: ``gold_in_context`` is true when some gold phrase (upstream's
phrase split and normalisation, :func:`.checkers.split_phrases`) occurs as a whole word in the normalised text of
the kept context items; null when the gold cannot be looked for (a multiple-choice letter, an abstention
question). Each question answered wrong gets every cause that holds (``applies``) and one ``cause``, the first
in this precedence (measurement before system, then memory before reader — as V1's attribution):

1. ``checker_disputed``: an LLM checker said wrong although the parsed answer holds every gold phrase
   (upstream's norm_phrase_set_match of the parsed answer against the gold): the verdict is in doubt; the
   checker's own reason is kept beside it (``checker_reason``);
2. ``memory_nothing_relevant``: the context was not cut and holds no item, or no gold phrase;
3. ``over_budget_cut``: the memory's items were cut to the token budget (original count > kept count) and the
   gold is not in what was kept (or cannot be looked for): the cut may have removed it;
4. ``reader_wrong``: the gold reached the reader (or cannot be looked for, in a context neither empty nor cut),
   and the reader answered wrong — abstention questions always land here (there is nothing to retrieve).

Failed questions (no verdict: a non-answer is never one) and correct ones get no cause. Beside the causes:
``tokens_by_type`` — kept items and their tokens per item type (text, image) as the run's token counter counts
each type alone (:func:`.steps.tokens_by_type`), summed per domain and over both.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mnemetric.io import write_json_atomic
from mnemetric.longmemeval_v2.checkers import (LLM_CHECKERS, eval_name, norm_phrase_set_match, normalize,
                                               split_phrases)
from mnemetric.longmemeval_v2.per_question import PerQuestionRow
from mnemetric.longmemeval_v2.step_rows import CheckRow, MemoryRow

DETAIL_PATH = "metrics/detail/v2.json"
SCHEMA = "mnemetric.longmemeval-v2.detail/1"
CAUSES = ("checker_disputed", "memory_nothing_relevant", "over_budget_cut", "reader_wrong")
CAUSE_TEXT = {"checker_disputed": "checker disputed (the gold is in the parsed answer)",
              "memory_nothing_relevant": "memory returned nothing relevant",
              "over_budget_cut": "over the token budget and cut",
              "reader_wrong": "gold reached the reader, answered wrong"}
PHRASE_CHECKERS = frozenset({"norm_phrase_set_match", "norm_phrase_set_match_ordered", "llm_gotchas_checker"})
TYPES = ("text", "image")


def gold_in_context(row: PerQuestionRow, items: Sequence[Mapping[str, str]]) -> bool | None:
    """Some gold phrase in the kept text items (module docstring); None when the gold cannot be looked for."""
    if row.is_abstention_problem or eval_name(row.eval_function) not in PHRASE_CHECKERS or row.answer_gold is None:
        return None
    phrases = set(split_phrases(row.answer_gold))
    text = normalize(" ".join(i["value"] for i in items if i.get("type") == "text"))
    return bool(phrases) and any(f" {p} " in f" {text} " for p in phrases)


def causes(row: PerQuestionRow, items: Sequence[Mapping[str, str]], found: bool | None) -> tuple[str, ...]:
    """Every cause that holds for a question answered wrong, in :data:`CAUSES` order."""
    out = []
    if (eval_name(row.eval_function) in LLM_CHECKERS and not row.is_abstention_problem and row.answer_gold
            and norm_phrase_set_match(row.response_parsed_boxed or "", row.answer_gold)):
        out.append("checker_disputed")
    cut = row.memory_context_original_token_count > row.memory_context_token_count
    if row.is_abstention_problem:
        return (*out, "reader_wrong")
    if not cut and (not items or found is False):
        out.append("memory_nothing_relevant")
    if cut and found is not True:
        out.append("over_budget_cut")
    if found is True or (found is None and items and not cut):
        out.append("reader_wrong")
    return tuple(out) or ("reader_wrong",)


def _question(m: MemoryRow, c: CheckRow, row: PerQuestionRow) -> dict[str, Any]:
    found = gold_in_context(row, m.memory_context) if not row.failed else None
    outcome = "failed" if row.failed else ("correct" if row.score_bool else "wrong")
    applies = causes(row, m.memory_context, found) if outcome == "wrong" else ()
    return {"question_id": row.question_id, "domain": m.domain, "question_type": row.question_type,
            "outcome": outcome, "cause": applies[0] if applies else None, "applies": list(applies),
            "gold_in_context": found, "context_items": len(m.memory_context),
            "truncated": m.memory_context_original_token_count > m.memory_context_token_count,
            "checker": c.checker, "checker_reason": c.checker_reason, "failed": row.failed}


def _counts(questions: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    causes_n = Counter(q["cause"] for q in questions if q["cause"])
    outcomes = Counter(q["outcome"] for q in questions)
    return {**{c: causes_n[c] for c in CAUSES}, **{o: outcomes[o] for o in ("correct", "wrong", "failed")}}


def _by_type(memory: Sequence[MemoryRow]) -> dict[str, Any]:
    total = {t: {"items": 0, "tokens": 0} for t in TYPES}
    counted = 0
    for m in memory:
        if m.tokens_by_type is None:
            continue
        counted += 1
        for t in TYPES:
            for k in ("items", "tokens"):
                total[t][k] += m.tokens_by_type[t][k]
    return {**total, "questions": counted, "context_tokens": sum(m.memory_context_token_count for m in memory)}


def detail_record(option: str, memory_name: str, memory: Sequence[MemoryRow], check: Sequence[CheckRow],
                  rows: Mapping[str, Sequence[PerQuestionRow]]) -> dict[str, Any]:
    """metrics/detail/v2.json (module docstring) from the step rows and the assembled per_question rows."""
    by_id = {(d, r.question_id): r for d, rs in rows.items() for r in rs}
    questions = [_question(m, c, by_id[m.domain, m.question_id]) for m, c in zip(memory, check)]
    domains = list(dict.fromkeys(m.domain for m in memory))
    return {"schema": SCHEMA, "v2": option, "memory": memory_name, "precedence": list(CAUSES),
            "counts": _counts(questions),
            "by_domain": {d: _counts([q for q in questions if q["domain"] == d]) for d in domains},
            "tokens_by_type": {**{d: _by_type([m for m in memory if m.domain == d]) for d in domains},
                               "combined": _by_type(memory)},
            "questions": questions}


def write_detail(path: str | Path, record: Mapping[str, Any]) -> None:
    write_json_atomic(path, dict(record))
