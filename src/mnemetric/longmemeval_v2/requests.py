"""Request builders that reproduce upstream LongMemEval-V2's reader and LLM-checker requests exactly.

Rules from github.com/xiaowu0162/LongMemEval-V2 at be15ea6e995462f3391c1a610892df3f67dfa7bd (code
ours; shared/docs/upstream-v2-protocol.md §4-5); the TEXTS come from the pinned files at run time
(:mod:`.upstream_text`), never from this repository.

Reader (evaluation/harness.py build_messages / build_reader_request / the response text rule, with
evaluation/run_eval.py defaults):

* messages = ``[system: the domain's prompt, user: parts]``; parts, with no separators: one text
  part ``intro`` (+ ``empty_marker`` in the same part when there are no memory items); one part per
  memory item in order (``{"type": "text", "text": value}``, or ``{"type": "image_url",
  "image_url": {"url": data URL}}``); the question text part; the question image, if any, last.
* data URL = ``data:<MIME>;base64,<standard base64 of the file bytes>``, MIME from the file name
  (:func:`mimetypes.guess_type`), ``image/png`` when unknown.
* params: temperature 0.6, top_p 0.95, ``extra_body.top_k`` 20, 20,000 max tokens sent as
  ``max_tokens`` when a base URL is set (run_eval always sets one) else ``max_completion_tokens``;
  ``extra_body.chat_template_kwargs = {"enable_thinking": false}`` only when thinking is off AND a
  base URL is set AND the model is exactly ``Qwen/Qwen3.5-9B`` (otherwise "thinking off" sends
  nothing, as upstream). Transport options (timeout) are not params.
* response text: ``content`` stripped if it is a non-blank string; else, for a list, the stripped
  non-blank ``text`` of each part joined with ``"\\n"`` and stripped; else ``reasoning`` stripped;
  else None. Upstream aborts the run on empty text: the caller must treat None as a failed
  question, never as an answer.

LLM checkers (evaluation/qa_eval_metrics.py llm_abstention_checker / llm_gotchas_checker, as the
harness calls them: prediction = the raw response, parsed_prediction = the boxed answer):

* precheck: stripped raw response empty, or stripped gold answer empty → score False, no call.
* fill (:data:`.upstream_text.CHECKER_FILL_RULES`): question_text = the stripped question text;
  reference_answer = the stripped gold answer (``str()`` of a non-string); model_full_response = the
  stripped raw response; model_final_answer = the stripped parsed answer, or the stripped raw
  response when that is empty.
* params: model gpt-5.2, reasoning_effort "medium", max_completion_tokens 4096 (run_eval defaults);
  no temperature, no top_p; text only.
"""

from __future__ import annotations

import base64
import mimetypes
import os
from collections.abc import Mapping, Sequence
from typing import Any

from mnemetric.errors import ConfigError, PluginError
from mnemetric.io import require_file
from mnemetric.llm.replies import message_text
from mnemetric.longmemeval_v2.upstream_text import CheckerTexts, ReaderTexts

READER_MODEL = "Qwen/Qwen3.5-9B"
READER_TEMPERATURE = 0.6
READER_TOP_P = 0.95
READER_TOP_K = 20
READER_MAX_TOKENS = 20_000
READER_DEFAULTS = {"enable_thinking": True, "temperature": READER_TEMPERATURE, "top_p": READER_TOP_P,
                   "top_k": READER_TOP_K, "max_tokens": READER_MAX_TOKENS, "presence_penalty": None,
                   "repetition_penalty": None, "reasoning_effort": None}
"""run_eval.py's reader sampling (the keyword arguments of :func:`reader_params`): the official values."""
READER_TIMEOUT = 43_200.0
"""harness.py --timeout-seconds default (seconds per attempt; transport, not in the request)."""
READER_MAX_RETRIES = 10
"""harness.py OPENAI_MAX_RETRIES (the SDK's retries after the first attempt)."""
READER_TEXT_FROM = "content_or_reasoning"
"""The client's reply-text rule for the reader: upstream's content, else text parts, else reasoning."""
CHECKER_MODEL = "gpt-5.2"
CHECKER_REASONING_EFFORT = "medium"
CHECKER_MAX_COMPLETION_TOKENS = 4096
CHECKER_TIMEOUT = 43_200.0
"""harness.py --evaluator-timeout-seconds default; qa_eval_metrics.py retries OPENAI_MAX_RETRIES = 10 times."""
CHECKER_MAX_RETRIES = 10
DEFAULT_IMAGE_MIME = "image/png"
ITEM_TYPES = ("text", "image")


def image_data_url(path: str | os.PathLike[str]) -> str:
    """``data:<MIME from the file name, default image/png>;base64,<file bytes>``; a missing file is an InputError."""
    p = require_file(path)
    mime, _ = mimetypes.guess_type(str(p))
    return f"data:{mime or DEFAULT_IMAGE_MIME};base64,{base64.b64encode(p.read_bytes()).decode('ascii')}"


def _item(item: Any, index: int) -> tuple[str, str]:
    """(type, value) of a memory item given as a mapping or an object with ``type`` / ``value``."""
    kind = item.get("type") if isinstance(item, Mapping) else getattr(item, "type", None)
    value = item.get("value") if isinstance(item, Mapping) else getattr(item, "value", None)
    if kind not in ITEM_TYPES or not isinstance(value, str):
        raise PluginError("memory", f"query item {index}", f"expected type 'text' or 'image' and a string value; "
                          f"got type {kind!r}, value of type {type(value).__name__}")
    return kind, value


def _system_prompt(domain: str, texts: ReaderTexts) -> str:
    try:
        return texts.system_prompts[domain]
    except KeyError:
        raise ConfigError("domain", f"{domain!r} is not a LongMemEval-V2 domain; expected one of "
                          f"{sorted(texts.system_prompts)}") from None


def _reader_parts(memory_items: Sequence[Any], question_text: str, question_image: str | os.PathLike[str] | None,
                  texts: ReaderTexts, *, log: bool) -> list[dict[str, Any]]:
    def image(path: str) -> dict[str, Any]:
        if log:
            return {"type": "image_path", "image_path": path}
        return {"type": "image_url", "image_url": {"url": image_data_url(path)}}

    items = [_item(item, i) for i, item in enumerate(memory_items)]
    intro = texts.intro if items else texts.intro + texts.empty_marker
    parts: list[dict[str, Any]] = [{"type": "text", "text": intro}]
    for kind, value in items:
        parts.append({"type": "text", "text": value} if kind == "text" else image(value))
    parts.append({"type": "text", "text": texts.question_text(question_text)})
    if question_image is not None:
        parts.append(image(os.fspath(question_image)))
    return parts


def reader_messages(domain: str, memory_items: Sequence[Any], question_text: str,
                    question_image: str | os.PathLike[str] | None, texts: ReaderTexts) -> list[dict[str, Any]]:
    """The reader's chat messages: system prompt + one user message of content parts (see module doc)."""
    return [{"role": "system", "content": _system_prompt(domain, texts)},
            {"role": "user", "content": _reader_parts(memory_items, question_text, question_image, texts, log=False)}]


def reader_log_messages(domain: str, memory_items: Sequence[Any], question_text: str,
                        question_image: str | os.PathLike[str] | None, texts: ReaderTexts) -> list[dict[str, Any]]:
    """The same messages as logged in per_question.jsonl ``prompt_messages``: each image as
    ``{"type": "image_path", "image_path": path}`` instead of a data URL (no file is read)."""
    return [{"role": "system", "content": _system_prompt(domain, texts)},
            {"role": "user", "content": _reader_parts(memory_items, question_text, question_image, texts, log=True)}]


def reader_params(model: str = READER_MODEL, *, base_url: str | None, temperature: float | None = READER_TEMPERATURE,
                  top_p: float | None = READER_TOP_P, top_k: int | None = READER_TOP_K,
                  max_tokens: int = READER_MAX_TOKENS, enable_thinking: bool = True,
                  reasoning_effort: str | None = None, presence_penalty: float | None = None,
                  repetition_penalty: float | None = None) -> dict[str, Any]:
    """The reader request without its messages: ``{"model", max tokens, sampling, "extra_body"}``.

    Key order and presence as upstream's build_reader_request (optional keys only when not None;
    ``extra_body`` only when non-empty). ``base_url`` decides the max-tokens key and the thinking rule.
    """
    req: dict[str, Any] = {"model": model}
    req["max_tokens" if base_url else "max_completion_tokens"] = max_tokens
    optional = {"reasoning_effort": reasoning_effort, "temperature": temperature, "top_p": top_p,
                "presence_penalty": presence_penalty}
    req.update({k: v for k, v in optional.items() if v is not None})
    extra: dict[str, Any] = {}
    if top_k is not None:
        extra["top_k"] = top_k
    if repetition_penalty is not None:
        extra["repetition_penalty"] = repetition_penalty
    if base_url and model == READER_MODEL and not enable_thinking:
        extra["chat_template_kwargs"] = {"enable_thinking": False}
    if extra:
        req["extra_body"] = extra
    return req


def response_text(message: Mapping[str, Any]) -> str | None:
    """The reader's answer text from a choice's ``message`` dict (see module doc); None when empty.

    The rule is the LLM client's ``text_from="content_or_reasoning"`` (:func:`mnemetric.llm.replies.message_text`),
    the one the reader sends its requests with; this is its plain-text view for callers holding a message dict.
    """
    found = message_text(message, READER_TEXT_FROM)
    return found[0] if found else None


def _stripped(value: Any) -> str:
    """None → ""; a string stripped; anything else ``str()`` then stripped."""
    if value is None:
        return ""
    return value.strip() if isinstance(value, str) else str(value).strip()


def checker_precheck(raw_response: Any, gold: Any) -> bool:
    """True if the LLM checker must be called; False means upstream scores False without a call."""
    return bool(_stripped(raw_response)) and bool(_stripped(gold))


def checker_messages(name: str, question: str | None, gold: Any, raw_response: str, parsed_answer: str | None,
                     texts: CheckerTexts) -> list[dict[str, str]]:
    """The LLM checker's ``[system, user]`` messages, filled by the rules of the module doc.

    Only for a question that passes :func:`checker_precheck` (ValueError otherwise: upstream would
    not call the model, and the score is False).
    """
    prompt = texts.checkers.get(name)
    if prompt is None:
        raise ConfigError("eval_function", f"{name!r} is not an LLM checker; expected one of {sorted(texts.checkers)}")
    if not checker_precheck(raw_response, gold):
        raise ValueError("checker_messages: empty response or gold answer; upstream scores False without a call")
    raw = _stripped(raw_response)
    values = {"question_text": _stripped(question), "reference_answer": _stripped(gold),
              "model_full_response": raw, "model_final_answer": _stripped(parsed_answer) or raw}
    return [{"role": "system", "content": prompt.system}, {"role": "user", "content": prompt.user.fill(values)}]


def checker_params(model: str = CHECKER_MODEL, reasoning_effort: str | None = CHECKER_REASONING_EFFORT,
                   max_completion_tokens: int = CHECKER_MAX_COMPLETION_TOKENS) -> dict[str, Any]:
    """The checker request without its messages: model, max_completion_tokens, reasoning_effort (when set)."""
    req: dict[str, Any] = {"model": model, "max_completion_tokens": max_completion_tokens}
    if reasoning_effort is not None:
        req["reasoning_effort"] = reasoning_effort
    return req
