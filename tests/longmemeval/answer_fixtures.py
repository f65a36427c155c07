"""Hand-written inputs for the answer job: an adapted file of three questions and their contexts."""

from __future__ import annotations

import json
from pathlib import Path

QUESTIONS = {  # question_id → question text
    "q-bike": "What color is my new bike?",
    "q-car": "Where did I park the car?",
    "q-dog": "What is my dog's name?",
}

CONTEXT_MESSAGES = {  # question_id → the messages of its one retrieved session
    "q-bike": [("user", "I bought a bike last week. It is red and fast."),
               ("assistant", "Your new bike color sounds great! Enjoy it.")],
    "q-car": [("user", "The car is parked at home. I like the park near the car wash.")],
    "q-dog": [("user", "Hello there.")],
}


def adapted_record(qid: str, question: str) -> dict:
    """One adapted line (memory | eval view) with one session, in the adapter's schema."""
    date = "2023/05/20 (Sat) 10:00"
    return {"memory": {"schema": "mnemetric.longmemeval-session/v3",
                       "query": {"query_id": f"id-{qid}", "text": question, "date": date,
                                 "prefix": f"[Current date: {date}]"},
                       "sessions": [{"session_id": "s001", "date": date, "prefix": f"[Session date: {date}]",
                                     "messages": [{"role": "user", "content": "hi"}], "position": 0}]},
            "eval": {"question_id": qid, "question_type": "single-session-user", "question": question,
                     "answer": "x", "question_date": date, "abstention": False, "answer_session_ids": ["answer_1"],
                     "sessions": [{"session_id": "s001", "upstream_id": "answer_1", "date": date,
                                   "has_answer": [True]}]}}


def context_record(qid: str, messages: list[tuple[str, str]]) -> dict:
    return {"question_id": qid, "memory": "bm25", "granularity": "session", "k": 1, "budget_tokens": 100,
            "tokenizer": "wordpunct-v1", "tokens": 20,
            "items": [{"session_id": "s001", "upstream_session_id": "answer_1", "turn_index": None, "date": None,
                       "messages": [{"role": r, "content": c} for r, c in messages], "truncated": False}]}


def write_inputs(folder: Path) -> tuple[Path, Path]:
    """adapted.jsonl and contexts.jsonl in ``folder``; returns (contexts, adapted)."""
    adapted, contexts = folder / "adapted.jsonl", folder / "contexts.jsonl"
    adapted.write_text("".join(json.dumps(adapted_record(q, t)) + "\n" for q, t in QUESTIONS.items()),
                       encoding="utf-8")
    contexts.write_text("".join(json.dumps(context_record(q, m)) + "\n" for q, m in CONTEXT_MESSAGES.items()),
                        encoding="utf-8")
    return contexts, adapted
