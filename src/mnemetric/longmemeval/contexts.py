"""The contexts file (data/runs/contexts.jsonl): what the reader is given for each question.

One JSON line per question, written by the retrieve stage (and ``mnemetric retrieve --contexts``),
read by the answer stage and the readers. A Mnemetric format (upstream has no such file; its reader
expands the retrieval log itself, src/generation/run_generation.py @ 9e0b455f). Keys in this order:

* ``question_id``, ``memory`` (the memory system's name), ``granularity`` ("session" | "turn"),
  ``k`` (items asked for), ``budget_tokens``, ``tokenizer`` (the budget's counter, ``wordpunct-v1``),
  ``tokens`` (used, <= budget_tokens);
* ``items``: in retrieved order, each ``{session_id, upstream_session_id, turn_index, date, messages,
  truncated}``; ``turn_index`` is null for a session item; ``date`` null for an undated adapter;
  ``messages`` are ``{role, content}``; ``truncated`` marks the item cut at the budget (the last one).

Every error names the file, the line and the field.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from mnemetric.errors import InputError
from mnemetric.io import DuplicateKey, duplicate_key_error, require_file, unique_object, write_jsonl_atomic
from mnemetric.records import Fields, record_name

GRANULARITIES: Final = ("session", "turn")
_FIX: Final = "regenerate it with `dvc repro retrieve` (or `mnemetric retrieve ... --contexts FILE`)"


@dataclass(frozen=True)
class ContextMessage:
    """One message of a context item, as the memory view holds it."""

    role: str
    """``user`` or ``assistant`` (upstream's roles)."""
    content: str

    @classmethod
    def from_record(cls, raw: Any, *, file: str, line: int | str, prefix: str = "") -> ContextMessage:
        f = Fields.of(raw, file=file, record=record_name(line), prefix=prefix, fix=_FIX)
        return cls(f.string("role"), f.string("content"))

    def to_record(self) -> dict[str, Any]:
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True)
class ContextItem:
    session_id: str
    """Opaque session id of the memory view (``s003``)."""
    upstream_session_id: str
    turn_index: int | None
    """0-based turn of a turn item (its round: this turn and the next); None for a session item."""
    date: str | None
    """The memory view's session date (None for an undated adapter)."""
    messages: tuple[ContextMessage, ...]
    truncated: bool
    """True when the item was cut at the token budget (it then ends the context)."""

    @classmethod
    def from_record(cls, raw: Any, *, file: str, line: int | str, prefix: str = "") -> ContextItem:
        f = Fields.of(raw, file=file, record=record_name(line), prefix=prefix, fix=_FIX)
        sid, upstream = f.string("session_id"), f.string("upstream_session_id")
        turn = f.optional_integer("turn_index")
        if turn is not None and turn < 0:
            raise f.error("turn_index", f"expected >= 0, got {turn}")
        date = f.optional_string("date")
        msgs = f.array("messages", "a list of {role, content}")
        messages = tuple(ContextMessage.from_record(m, file=file, line=line, prefix=f"{prefix}messages[{i}].")
                         for i, m in enumerate(msgs))
        return cls(sid, upstream, turn, date, messages, f.boolean("truncated"))

    def to_record(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "upstream_session_id": self.upstream_session_id,
                "turn_index": self.turn_index, "date": self.date,
                "messages": [m.to_record() for m in self.messages], "truncated": self.truncated}


@dataclass(frozen=True)
class Context:
    """The reader's context for one question (one line of the contexts file)."""

    question_id: str
    memory: str
    granularity: str
    k: int
    budget_tokens: int
    tokenizer: str
    tokens: int
    items: tuple[ContextItem, ...]

    @classmethod
    def from_record(cls, raw: Any, *, file: str, line: int | str) -> Context:
        """Validate one line; errors name file, line (and question id once known) and field."""
        top = Fields.of(raw, file=file, record=record_name(line), fix=_FIX)
        qid, f = top.identified()
        here = f.record
        memory, granularity = f.string("memory"), f.string("granularity")
        if granularity not in GRANULARITIES:
            raise f.error("granularity", f"expected one of {list(GRANULARITIES)}, got {granularity!r}")
        k, budget = f.integer("k"), f.integer("budget_tokens")
        tokenizer, tokens = f.string("tokenizer"), f.integer("tokens")
        for name, value in (("k", k), ("budget_tokens", budget), ("tokens", tokens)):
            if value < 0:
                raise f.error(name, f"expected >= 0, got {value}")
        if tokens > budget:
            raise f.error("tokens", f"{tokens} tokens exceed budget_tokens {budget}")
        raw_items = f.array("items", "a list of context items")
        if len(raw_items) > k:
            raise f.error("items", f"{len(raw_items)} items but k is {k}")
        items = tuple(ContextItem.from_record(x, file=file, line=here, prefix=f"items[{i}].")
                      for i, x in enumerate(raw_items))
        return cls(qid, memory, granularity, k, budget, tokenizer, tokens, items)

    def to_record(self) -> dict[str, Any]:
        return {"question_id": self.question_id, "memory": self.memory, "granularity": self.granularity,
                "k": self.k, "budget_tokens": self.budget_tokens, "tokenizer": self.tokenizer,
                "tokens": self.tokens, "items": [i.to_record() for i in self.items]}


def iter_contexts(path: str | Path) -> Iterator[Context]:
    """Stream the contexts file line by line (empty lines skipped); a repeated question id is an error."""
    require_file(path, fix="run `dvc repro retrieve` first")
    seen: set[str] = set()
    with open(path, encoding="utf-8") as fh:
        for lineno, text in enumerate(fh, start=1):
            if not text.strip():
                continue
            try:
                raw = json.loads(text, object_pairs_hook=unique_object)
            except DuplicateKey as exc:
                raise duplicate_key_error(str(path), f"line {lineno}", exc, text) from None
            except json.JSONDecodeError as exc:
                raise InputError(str(path), f"line {lineno}", "<json>", f"not valid JSON ({exc.msg}, column {exc.colno})",
                                 fix=_FIX) from None
            ctx = Context.from_record(raw, file=str(path), line=lineno)
            if ctx.question_id in seen:
                raise InputError(str(path), f"line {lineno} ({ctx.question_id})", "question_id",
                                 "duplicate question_id", fix=_FIX)
            seen.add(ctx.question_id)
            yield ctx


def read_contexts(path: str | Path) -> list[Context]:
    """Every context of the file, in file order (see :func:`iter_contexts`)."""
    return list(iter_contexts(path))


def write_contexts(path: str | Path, contexts: Iterable[Context]) -> int:
    """Write the contexts file atomically (one ``json.dumps(..., ensure_ascii=False)`` line each)."""
    return write_jsonl_atomic(path, (c.to_record() for c in contexts))


def context_line(context: Context) -> str:
    """One line of the contexts file, newline included (for writers that stream several files)."""
    return json.dumps(context.to_record(), ensure_ascii=False) + "\n"
