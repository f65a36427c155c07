"""Answering every question of the run from its retrieved context (library side of stage answer)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..adapters import Query
from ..errors import ConfigError
from .extractive import ExtractiveReader
from .prompt import build_prompt

KINDS = ("extractive", "openai")


def prompt_budget(spec: Mapping[str, Any]) -> int:
    """History tokens: model window − output tokens − margin (upstream keeps a 1000-token margin)."""
    budget = int(spec["context_window"]) - int(spec["max_tokens"]) - int(spec["margin_tokens"])
    if budget <= 0:
        raise ConfigError(f"reader {spec['name']}: context_window leaves no room for history ({budget} tokens)")
    return budget


def chat_requests(queries: Sequence[Query], contexts: Sequence[Mapping[str, Any]],
                  spec: Mapping[str, Any]) -> list[dict]:
    budget = prompt_budget(spec)
    params = {"temperature": spec["temperature"], "max_tokens": spec["max_tokens"], "n": 1}
    return [{"model": spec["model"], "params": params, "messages": [{"role": "user", "content": build_prompt(
                q.text, q.date, ctx["items"], history_format=spec["history_format"], mode=spec["mode"],
                budget_tokens=budget)}]}
            for q, ctx in zip(queries, contexts, strict=True)]


def answer_all(queries: Sequence[Query], contexts: Sequence[Mapping[str, Any]], spec: Mapping[str, Any],
               client=None, progress: bool = True) -> list[dict]:
    """One hypothesis record per question ({question_id, hypothesis} + our trace fields)."""
    kind = spec.get("kind")
    if kind == "extractive":
        reader = ExtractiveReader(min_overlap=int(spec.get("min_overlap", 1)))
        return [{"question_id": c["question_id"], "hypothesis": reader.answer(q.text, c["items"]),
                 "reader": spec["name"]} for q, c in zip(queries, contexts, strict=True)]
    if kind != "openai":
        raise ConfigError(f"reader.kind: {kind!r} is not one of {KINDS} (see conf/reader/)")
    results = client.run_chat_batch(chat_requests(queries, contexts, spec), progress=progress)
    return [{"question_id": c["question_id"], "hypothesis": r.text, "reader": spec["name"], "model": r.model,
             "request_sha256": r.request_sha256, "cached": r.cached}
            for c, r in zip(contexts, results)]
