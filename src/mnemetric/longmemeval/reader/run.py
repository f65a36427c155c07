"""Answering every question of the run from its retrieved context (library side of stage answer).

A question whose model reply is a non-answer (mnemetric.llm.replies) gets no hypothesis line: it
is returned as a :class:`~mnemetric.llm.failures.QuestionFailure` (stage "answer") for the
``<hypotheses>.failures.jsonl`` sidecar, never as an empty answer that a judge would grade.
Hypothesis lines hold only what the inputs decide (no "cached" flag: that is per run); a chat
reader's line also names its request (``request_sha256``) and the output parameters sent
(``params_sent``), so the run manifest reads what was sent from the file.

A chat reader builds :class:`~mnemetric.execute.ModelCall` records (:func:`chat_calls`) and hands them
to the run's executor; it owns no client.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mnemetric.errors import ConfigError
from mnemetric.execute import Executor, ModelCall
from mnemetric.longmemeval.adapted import Query
from mnemetric.longmemeval.contexts import Context
from mnemetric.llm.failures import QuestionFailure
from mnemetric.longmemeval.reader.extractive import ExtractiveReader
from mnemetric.longmemeval.reader.prompt import build_prompt

def prompt_budget(spec: Mapping[str, Any]) -> int:
    """History tokens: model window − output tokens − margin (upstream keeps a 1000-token margin)."""
    budget = int(spec["context_window"]) - int(spec["max_tokens"]) - int(spec["margin_tokens"])
    if budget <= 0:
        raise ConfigError(f"reader {spec['name']}: context_window leaves no room for history ({budget} tokens)")
    return budget


def chat_calls(queries: Sequence[Query], contexts: Sequence[Context], spec: Mapping[str, Any]) -> list[ModelCall]:
    """One chat call per question (role ``reader``, tagged with its question id), in question order."""
    budget = prompt_budget(spec)
    params = {"temperature": spec["temperature"], "max_tokens": spec["max_tokens"], "n": 1}
    return [ModelCall.chat(role="reader", model=spec["model"], params=params, base_url=spec.get("base_url"),
                           tag=ctx.question_id, messages=[{"role": "user", "content": build_prompt(
                               q.text, q.date, ctx.items, history_format=spec["history_format"], mode=spec["mode"],
                               budget_tokens=budget)}])
            for q, ctx in zip(queries, contexts, strict=True)]


@dataclass(frozen=True)
class Answered:
    """What the reader produced: hypothesis records, and the questions it could not answer."""

    hypotheses: list[dict] = field(default_factory=list)
    failures: list[QuestionFailure] = field(default_factory=list)


def answer_extractive(queries: Sequence[Query], contexts: Sequence[Context], name: str,
                      min_overlap: int = 1) -> Answered:
    """The offline extractive reader's hypothesis per question (never a failure)."""
    reader = ExtractiveReader(min_overlap=int(min_overlap))
    return Answered([{"question_id": c.question_id, "hypothesis": reader.answer(q.text, c.items),
                      "reader": name} for q, c in zip(queries, contexts, strict=True)])


def answer_chat(queries: Sequence[Query], contexts: Sequence[Context], spec: Mapping[str, Any],
                executor: Executor) -> Answered:
    """One hypothesis record per answered question ({question_id, hypothesis} + our trace fields:
    reader, model, request_sha256, params_sent), one failure per question whose reply was a
    non-answer; both in question order."""
    outcomes = executor.run(chat_calls(queries, contexts, spec), desc="answer")
    out = Answered()
    for c, o in zip(contexts, outcomes, strict=True):
        if o.ok:
            out.hypotheses.append({"question_id": c.question_id, "hypothesis": o.text, "reader": spec["name"],
                                   "model": o.model, "request_sha256": o.request_sha256,
                                   "params_sent": dict(o.params_sent)})
        else:
            out.failures.append(QuestionFailure(c.question_id, "answer", o.reason, o.request_sha256,
                                                spec["model"], o.attempts))
    return out
