"""The chat reader's prompt (Mnemetric's own wording; upstream's reader prompt is not copied).

Structure follows the facts of upstream run_generation.py (protocol §3.1): the history as
sessions with their dates (JSON or natural-language turns), then the current date and the
question; ``direct`` asks for the answer, ``con`` (chain-of-note) asks for notes on the relevant
sessions first. The history is cut to the model's budget — model window minus output tokens minus
a margin — counting o200k_base tokens (bpe-openai, tiktoken-compatible, vocabulary bundled):
items are chosen in retrieved order (later ones dropped first, the last kept one cut at a token),
then shown in date order, as upstream sorts its chunks by date.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from mnemetric.errors import ConfigError
from mnemetric.longmemeval.contexts import ContextItem

FORMATS = ("json", "nl")
MODES = ("direct", "con")

INTRO = ("Below are earlier chat sessions between you (the assistant) and the user, "
         "each with the date it took place. Use them to answer the user's question.")
ASK = {
    "direct": "Give a short, direct answer. If the sessions do not contain what is needed, say you do not know.\nAnswer:",
    "con": ("First note, for each session, anything it says that bears on the question; then reason over "
            "your notes and give the answer. If the sessions do not contain what is needed, say you do not "
            "know.\nNotes and answer:"),
}


def _encoding(name: str = "o200k_base"):
    import bpe_openai

    return bpe_openai.get_encoding(name)


def render_session(index: int, item: ContextItem, history_format: str) -> str:
    head = f"### Session {index}" + (f" (date: {item.date})" if item.date else "")
    msgs = [m.to_record() for m in item.messages]
    if history_format == "json":
        body = json.dumps(msgs, ensure_ascii=False)
    else:
        body = "\n".join(f"{m['role']}: {m['content']}" for m in msgs)
    return f"{head}\n{body}\n"


def render_history(items: Sequence[ContextItem], history_format: str, budget_tokens: int,
                   encoding_name: str = "o200k_base") -> tuple[str, int]:
    """History text within ``budget_tokens``; returns (text, tokens).

    Items are *chosen* in retrieved order (best first; the first that does not fit is cut at a
    token and ends the history), then *shown* in date order, as upstream's reader sorts its chunks
    by date (undated items keep their retrieved order).
    """
    if history_format not in FORMATS:
        raise ConfigError(f"reader.history_format: {history_format!r} is not one of {FORMATS}")
    enc = _encoding(encoding_name)
    kept: list[tuple[ContextItem, int | None]] = []  # (item, token cut or None)
    used = 0
    for i, item in enumerate(items, start=1):
        n = len(enc.encode(render_session(i, item, history_format)))
        if used + n > budget_tokens:
            if budget_tokens - used > 0:
                kept.append((item, budget_tokens - used))
            break
        kept.append((item, None))
        used += n
    order = sorted(range(len(kept)), key=lambda j: (kept[j][0].date or "", j))
    parts, total = [], 0
    for shown, j in enumerate(order, start=1):
        item, cut = kept[j]
        tokens = enc.encode(render_session(shown, item, history_format))[:cut]
        parts.append(enc.decode(tokens))
        total += len(tokens)
    return "\n".join(parts), total


def build_prompt(question: str, question_date: str | None, items: Sequence[ContextItem], *,
                 history_format: str = "json", mode: str = "con", budget_tokens: int = 100_000) -> str:
    """One user message: intro, history (cut to the budget), current date, question, instruction."""
    if mode not in MODES:
        raise ConfigError(f"reader.mode: {mode!r} is not one of {MODES}")
    history, _ = render_history(items, history_format, budget_tokens)
    date = f"Current date: {question_date}\n" if question_date else ""
    return f"{INTRO}\n\n{history or '(no sessions)'}\n\n{date}Question: {question}\n{ASK[mode]}"
