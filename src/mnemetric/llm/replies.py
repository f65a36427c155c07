"""Reading server replies: malformed bodies (retried as transport errors), non-answers, results.

A *malformed* body (not JSON, not an object, a choice that is not an object with a ``message``
object, an embeddings list of the wrong length) is a transport problem: the client retries it.

A *non-answer* is a well-formed chat.completion that carries no verdict or answer. The rule,
checked on every choice (``n > 1``: all of them must be usable):

* ``choices`` missing or empty → "no choices";
* ``message.refusal`` set (non-empty) → "refusal: <text>";
* ``finish_reason`` other than "stop" or "length" (e.g. "content_filter", "tool_calls", or
  missing) → "finish_reason '<value>'";
* ``message.content`` null → "content is null"; not a string → "content is not a string";
  empty or only whitespace → "content is empty".

A non-answer is never cached and never becomes a label: upstream evaluate_qa.py @ 9e0b455f reads
``completion.choices[0].message.content.strip()``, which raises on null content and turns empty
content into the label "no"; we report the question as failed instead.

Where a reply's text comes from is a per-request choice, ``text_from`` (:data:`TEXT_FROM`):

* ``"content"`` (the default): ``message.content``, a non-blank string, unchanged (not stripped);
  anything else is a non-answer as above.
* ``"content_or_reasoning"`` (opt-in): ``message.content`` stripped if it is a non-blank string; else,
  for a list of parts, the stripped non-blank ``text`` of each part (a dict's ``"text"`` key) joined
  with ``"\n"`` and stripped; else ``message.reasoning`` stripped if it is a non-blank string. Only
  ``reasoning`` is read, never ``reasoning_content`` (the rule of LongMemEval-V2
  evaluation/harness.py extract_text_from_response_message, github.com/xiaowu0162/LongMemEval-V2 at
  be15ea6e995462f3391c1a610892df3f67dfa7bd; code ours). A reply with none of these is a non-answer
  ("no text in content or reasoning (content is null)", ...); the refusal and finish_reason rules
  apply as for "content".
* ``"content_or_parts"`` (opt-in): ``message.content`` stripped if it is a string; else, for a list of
  parts, the ``text`` of every dict part whose ``"text"`` is a string — not stripped one by one, empty
  ones included — joined with ``"\n"`` and then stripped; ``reasoning`` (or any other field) is never
  read (the rule of LongMemEval-V2 evaluation/qa_eval_metrics.py _call_chat_completion, lines 531-544,
  github.com/xiaowu0162/LongMemEval-V2 at be15ea6e995462f3391c1a610892df3f67dfa7bd; code ours).
  Upstream raises for anything else (null content, a list with no text) and *returns* ``""`` for a
  blank content string; here both are a non-answer ("content is empty", "content parts have no
  text", "content is null", ...), never a text, so an empty reply is never turned into a verdict. The
  refusal and finish_reason rules apply as for "content".

:func:`message_text` names the text it used: "content", "content_parts" or "reasoning".
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mnemetric.llm.embed_wire import decode_vector
from mnemetric.llm.types import ChatResult, MalformedResponse, Usage

OK_FINISH_REASONS = frozenset({"stop", "length"})
TEXT_FROM = ("content", "content_or_reasoning", "content_or_parts")
"""The reply-text rules (module docstring); "content" is the default."""


def check_text_from(text_from: str) -> str:
    """``text_from`` if it is one of :data:`TEXT_FROM`, else ValueError (a programming error)."""
    if text_from not in TEXT_FROM:
        raise ValueError(f"text_from must be one of {', '.join(TEXT_FROM)}; got {text_from!r}")
    return text_from


def _stripped_str(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def message_text(message: Mapping[str, Any], text_from: str = "content") -> tuple[str, str] | None:
    """(text, where it came from) of a choice's ``message`` under rule ``text_from``; None if it has none.

    "content": the content string as sent (source "content") when it is non-blank. "content_or_reasoning"
    and "content_or_parts": see the module docstring (sources "content", "content_parts", "reasoning"; the
    text stripped; a blank text is None).
    """
    content = message.get("content")
    if check_text_from(text_from) == "content":
        return (content, "content") if isinstance(content, str) and content.strip() else None
    if text_from == "content_or_parts":
        return _content_or_parts(content)
    if _stripped_str(content):
        return content.strip(), "content"
    if isinstance(content, list):
        parts = (_stripped_str(p.get("text")) for p in content if isinstance(p, Mapping))
        joined = "\n".join(p for p in parts if p).strip()
        if joined:
            return joined, "content_parts"
    reasoning = _stripped_str(message.get("reasoning"))
    return (reasoning, "reasoning") if reasoning else None


def _content_or_parts(content: Any) -> tuple[str, str] | None:
    """Rule "content_or_parts" (module docstring): a string stripped; else string ``text`` of dict parts
    joined with "\n", stripped; None when that leaves nothing (upstream: "" for a blank string, else raises)."""
    if isinstance(content, str):
        return (content.strip(), "content") if content.strip() else None
    if isinstance(content, list):
        texts = [p["text"] for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str)]
        joined = "\n".join(texts).strip()
        if joined:
            return joined, "content_parts"
    return None


def _parse_json(raw: bytes) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise MalformedResponse(f"reply is not valid JSON ({exc.msg if hasattr(exc, 'msg') else exc})") from None
    if not isinstance(data, dict):
        raise MalformedResponse("reply is not a JSON object")
    return data


def parse_chat_response(raw: bytes) -> dict[str, Any]:
    """Decode a chat.completion body; :class:`MalformedResponse` if it is structurally unusable.

    An empty or missing ``choices`` list is *not* malformed: it is a non-answer (see
    :func:`non_answer_reason`), so it is reported, not retried as a transport error.
    """
    data = _parse_json(raw)
    choices = data.get("choices")
    if choices is not None and not isinstance(choices, list):
        raise MalformedResponse("reply 'choices' is not a list")
    if not all(isinstance(c, dict) and isinstance(c.get("message"), dict) for c in choices or []):
        raise MalformedResponse("reply choice has no 'message' object")
    return data


def _content_problem(content: Any) -> str | None:
    if content is None:
        return "content is null"
    if not isinstance(content, str):
        return f"content is not a string ({type(content).__name__})"
    if not content.strip():
        return "content is empty"
    return None


def _choice_problem(choice: Mapping[str, Any], text_from: str) -> str | None:
    message = choice["message"]
    refusal = message.get("refusal")
    if refusal:
        return f"refusal: {str(refusal)[:200]}"
    finish = choice.get("finish_reason")
    if finish not in OK_FINISH_REASONS:
        return f"finish_reason {finish!r}"
    if text_from == "content":
        return _content_problem(message.get("content"))
    if message_text(message, text_from) is not None:
        return None
    content = message.get("content")
    why = "content parts have no text" if isinstance(content, list) else _content_problem(content)
    return why if text_from == "content_or_parts" else f"no text in content or reasoning ({why})"


def non_answer_reason(data: Mapping[str, Any], text_from: str = "content") -> str | None:
    """Why a parsed chat.completion is a non-answer under rule ``text_from`` (module docstring), or None
    if usable."""
    check_text_from(text_from)
    choices = data.get("choices")
    if not choices:
        return "no choices"
    for choice in sorted(choices, key=lambda c: c.get("index", 0)):
        problem = _choice_problem(choice, text_from)
        if problem is not None:
            return problem if len(choices) == 1 else f"choice {choice.get('index', 0)}: {problem}"
    return None


def parse_embeddings_response(raw: bytes, expected: int) -> dict[str, Any]:
    """Decode and sanity-check an embeddings body with ``expected`` vectors; each ``embedding`` becomes a list
    of floats (a base64 one decoded exactly: :func:`mnemetric.llm.embed_wire.decode_vector`)."""
    data = _parse_json(raw)
    items = data.get("data")
    if not isinstance(items, list) or len(items) != expected:
        raise MalformedResponse(f"reply has no 'data' list of {expected} embeddings")
    if not all(isinstance(i, dict) for i in items):
        raise MalformedResponse("reply 'data' has an item that is not an object")
    decoded = [decode_vector(i.get("embedding")) for i in items]
    if any(v is None for v in decoded):
        raise MalformedResponse("reply embedding is neither a list of numbers nor base64 of float32 values")
    return {**data, "data": [{**i, "embedding": v} for i, v in zip(items, decoded)]}


def usage_of(data: Mapping[str, Any]) -> Usage:
    """The ``usage`` block of a reply (missing counts are 0)."""
    usage = data.get("usage") or {}
    return Usage(int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0))


def chat_result(data: Mapping[str, Any], key: str, *, cached: bool, cost_usd: float | None,
                attempts: int = 1, text_from: str = "content") -> ChatResult:
    """Build a :class:`ChatResult` from a (cached or fresh) chat.completion dict, the text of each choice
    taken by rule ``text_from``; a non-answer gives a result with ``failure`` set and empty text."""
    failure = non_answer_reason(data, text_from)
    choices = sorted(data.get("choices") or [], key=lambda c: c.get("index", 0))
    found = [] if failure else [message_text(c["message"], text_from) for c in choices]
    texts = tuple(f[0] for f in found if f is not None)
    return ChatResult(
        text=texts[0] if texts else "",
        model=str(data.get("model") or ""),
        usage=usage_of(data),
        request_sha256=key,
        cached=cached,
        cost_usd=cost_usd,
        finish_reason=choices[0].get("finish_reason") if choices else None,
        texts=texts,
        failure=failure,
        attempts=attempts,
        text_sources=tuple(f[1] for f in found if f is not None),
    )


def apportion(total: int, weights: list[int]) -> list[int]:
    """Split ``total`` tokens over items in proportion to ``weights`` (largest remainder; ties to
    the earlier item), so the parts are integers that sum to ``total``. Equal weights if all are 0.

    Used for embeddings: the server reports one token count per request, we store one per text.
    Worked example: total 10, weights [1, 1, 2] → exact shares 2.5, 2.5, 5 → [3, 2, 5].
    """
    if not weights:
        return []
    if sum(weights) <= 0:
        weights = [1] * len(weights)
    whole = sum(weights)
    parts = [total * w // whole for w in weights]
    order = sorted(range(len(weights)), key=lambda i: (-(total * weights[i] % whole), i))
    for i in order[: total - sum(parts)]:
        parts[i] += 1
    return parts
