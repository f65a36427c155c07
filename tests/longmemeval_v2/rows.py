"""Upstream-format per_question.jsonl rows for tests, written out key by key (not by our code)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TYPE_CATEGORY = {"static-environment": "static", "static-environment-abs": "static-abs",
                 "dynamic-environment": "dynamic", "dynamic-environment-abs": "dynamic-abs",
                 "procedure": "procedure", "procedure-abs": "procedure-abs", "errors-gotchas": "gotchas"}


def row(qid: str, qtype: str = "static-environment", *, correct: bool = False, unknown: bool = False,
        abstention: bool | None = None, query: float = 1.0, post: float = 0.0, prompt: int = 10,
        completion: int = 5, original: int = 100, final: int = 100, haystack: tuple[str, ...] = ("t1", "t2"),
        index: int = 0, **extra: Any) -> dict[str, Any]:
    """One row as upstream's harness writes it (keys in its order)."""
    if abstention is None:
        abstention = qtype.endswith("-abs")
    spec = "llm_abstention_checker" if abstention else "norm_phrase_set_match|separators=,"
    parsed = "UNKNOWN" if unknown else ("gold answer" if correct else "something else")
    ok = correct and not unknown
    out = {
        "index": index, "stream_index": index, "question_id": qid, "question_type": qtype,
        "category": TYPE_CATEGORY[qtype], "is_abstention_problem": abstention, "eval_function": spec,
        "question_text": f"question {qid}?", "question_image": None, "haystack_ids": list(haystack),
        "memory_context": [{"type": "text", "value": "memo"}], "memory_query_duration_seconds": query,
        "memory_post_query_duration_seconds": post, "memory_post_query_metadata": None,
        "memory_context_original_token_count": original, "memory_context_token_count": final,
        "memory_context_was_truncated": original > final,
        "prompt_messages": [{"role": "system", "content": "s"}], "answer_gold": "gold answer",
        "response_raw": f"thinking \\boxed{{{parsed}}}", "response_parsed_boxed": parsed, "is_unknown": unknown,
        "score": 1.0 if ok else 0.0, "score_bool": ok,
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
        "timestamp_utc": "2026-06-20T00:00:00+00:00",
    }
    out.update(extra)
    return out


def write_rows(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=True) + "\n" for r in rows), encoding="utf-8")
    return path
