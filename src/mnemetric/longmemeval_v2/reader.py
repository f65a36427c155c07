"""The LongMemEval-V2 reader: an OpenAI-compatible chat model through the one LLM client, or an offline stand-in.

Rules from github.com/xiaowu0162/LongMemEval-V2 at be15ea6e995462f3391c1a610892df3f67dfa7bd
(evaluation/harness.py build_messages / build_reader_request / call_reader_model_async /
score_prediction, run_eval.py defaults; code ours, texts read at run time — :mod:`.requests`,
:mod:`.upstream_text`):

* The request = :func:`~.requests.reader_messages` (system prompt of the domain; user parts: intro,
  memory items, question, question image as a data URL) + :func:`~.requests.reader_params` (temperature
  0.6, top_p 0.95, top_k 20, 20,000 max tokens, thinking rule).
* It is sent through :class:`mnemetric.llm.LLMClient` (cache, budget, retries). A rerun of the same
  requests is served from the cache: zero requests.
* The answer: ``response_parsed_boxed = extract_boxed_answer(response_raw)``; ``is_unknown`` of that.
* The response text is upstream's (harness.py extract_text_from_response_message): ``message.content``
  stripped if a non-blank string; else the stripped non-blank ``text`` of its parts joined with ``"\n"``;
  else ``message.reasoning`` stripped (never ``reasoning_content``) — the client's opt-in rule
  ``text_from="content_or_reasoning"`` (:mod:`mnemetric.llm.replies`). A reply answered from its parts or
  its reasoning is an answer like any other (cached); :attr:`ReaderReply.text_source` says which text it was.
* Upstream aborts the run on an empty reader text. Ours: a non-answer (no text in content or reasoning,
  a refusal, no choices … — after the client's bounded retries) makes the question FAILED with its
  reason, never an answer.
* A 400 (upstream: BadRequestError) gives an empty answer with zero usage, and the run goes on: the
  question is scored (0), as upstream.

:class:`OfflineReader` is ours, for the bundled sample with no model: it answers from the retrieved text
items only (module docstring of the class); its answers say nothing about any model; never official.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from mnemetric.llm import ChatResult, LLMClient, LLMRequestError
from mnemetric.longmemeval_v2.checkers import extract_boxed_answer, is_unknown
from mnemetric.longmemeval_v2.requests import READER_MODEL, READER_TEXT_FROM, reader_messages, reader_params
from mnemetric.longmemeval_v2.upstream_text import ReaderTexts

__all__ = ["OfflineReader", "OpenAIReader", "ReaderInput", "ReaderReply", "extract_boxed_answer", "is_unknown",
           "offline_reader", "openai_reader"]


@dataclass(frozen=True)
class ReaderInput:
    domain: str
    memory_context: Sequence[dict[str, str]]
    question_text: str
    question_image: str | None


@dataclass(frozen=True)
class ReaderReply:
    """One reader answer, or a failure (``failed`` set, ``response_raw`` None)."""

    response_raw: str | None
    usage: dict[str, int]
    failed: str | None = None
    cached: bool = False
    text_source: str | None = None
    """Which part of the reply ``response_raw`` is: "content", "content_parts" or "reasoning" (None offline,
    after a 400, or for a failure)."""

    @property
    def response_parsed_boxed(self) -> str | None:
        return None if self.response_raw is None else extract_boxed_answer(self.response_raw)


def _usage(prompt: int, completion: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


ZERO_USAGE = _usage(0, 0)


def _reply(result: ChatResult | None) -> ReaderReply:
    if result is None:  # a 400: upstream's empty answer with zero usage
        return ReaderReply("", dict(ZERO_USAGE))
    if not result.ok:
        return ReaderReply(None, dict(ZERO_USAGE), failed=f"reader gave no answer: {result.failure}")
    text = result.text.strip()
    if not text:
        return ReaderReply(None, dict(ZERO_USAGE), failed="reader text is empty")
    u = result.usage
    return ReaderReply(text, _usage(u.prompt_tokens, u.completion_tokens), cached=result.cached,
                       text_source=result.text_source)


@dataclass
class OpenAIReader:
    """Any OpenAI-compatible chat endpoint, through the one LLM client."""

    client: LLMClient
    texts: ReaderTexts
    model: str = READER_MODEL
    params: dict[str, Any] | None = None
    """Keyword arguments of :func:`~.requests.reader_params` (``base_url`` defaults to the client's)."""
    name: str = "openai"
    sends_reader_texts: ClassVar[bool] = True
    """Its requests carry the pinned upstream texts, so a run's official status depends on them."""

    @property
    def official(self) -> bool:
        """The run_eval reader: Qwen/Qwen3.5-9B, default sampling and thinking, texts from the pinned file."""
        return (self.model == READER_MODEL and self.texts.is_pinned
                and (self.params or {}) in ({}, {"enable_thinking": True}))

    def request(self, item: ReaderInput) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        kw = {"base_url": self.client.base_url, **(self.params or {})}
        params = reader_params(self.model, **kw)
        params.pop("model")
        messages = reader_messages(item.domain, item.memory_context, item.question_text, item.question_image,
                                   self.texts)
        return messages, params

    def answer_all(self, items: Sequence[ReaderInput]) -> list[ReaderReply]:
        requests = [self.request(i) for i in items]
        return [_reply(r) for r in asyncio.run(self._all(requests))]

    async def _one(self, messages: list[dict[str, Any]], params: dict[str, Any]) -> ChatResult | None:
        try:
            return await self.client.chat(self.model, messages, text_from=READER_TEXT_FROM, **params)
        except LLMRequestError as exc:
            if exc.status == 400:
                return None
            raise

    async def _all(self, requests: list[tuple[list, dict]]) -> list[ChatResult | None]:
        try:
            return list(await asyncio.gather(*(self._one(m, p) for m, p in requests)))
        finally:
            await self.client.aclose_transport()


_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset("a an and are as at be by did do does for from how in is it of on or the to was what when "
                  "where which who why with you your i my we our this that there their they".split())
_OPTION = re.compile(r"(?:^|\s)([A-H])[.)]\s+(.+?)(?=\s+[A-H][.)]\s+|$)")


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


@dataclass
class OfflineReader:
    """Answers from the retrieved text alone (ours; for the offline sample, never official).

    Multiple choice (options written ``A. … B. …`` in the question): the option whose words overlap the
    memory text most (first on ties). Otherwise: the memory line sharing the most words with the
    question (first on ties). No text items, or no overlap at all: ``\\boxed{UNKNOWN}``.
    """

    name: str = "offline"
    official: bool = False
    sends_reader_texts: ClassVar[bool] = False
    """It sends nothing: whether the pinned texts are at hand (environment) changes none of its outputs."""
    texts: ReaderTexts | None = None
    """The pinned reader texts when they are at hand (only for the prompt log); this reader never needs them."""

    def answer_all(self, items: Sequence[ReaderInput]) -> list[ReaderReply]:
        return [ReaderReply(self.answer(i), dict(ZERO_USAGE)) for i in items]

    def answer(self, item: ReaderInput) -> str:
        memory = "\n".join(i["value"] for i in item.memory_context if i["type"] == "text")
        options = _OPTION.findall(item.question_text)
        if memory and len(options) >= 2:
            mem_words = _words(memory)
            scores = [len(_words(text) & mem_words) for _, text in options]
            if max(scores) > 0:
                return f"\\boxed{{{options[scores.index(max(scores))][0]}}}"
        question = _words(item.question_text)
        best, best_score = "", 0
        for line in memory.splitlines():
            score = len(_words(line) & question)
            if score > best_score:
                best, best_score = line.strip(), score
        best = best.replace("{", "(").replace("}", ")")
        return f"\\boxed{{{best}}}" if best else "\\boxed{UNKNOWN}"


# --------------------------------------------------------------------------- construction (conf/v2/reader/*.yaml)

ClientFactory = Callable[[str | None, str], LLMClient]
"""(base_url or None, role) → an LLMClient with the run's ``llm:`` settings (the stage and the CLI make it)."""


def pinned_reader_texts(*, download: bool) -> ReaderTexts | None:
    """The pinned reader texts: checkout ``$MNEMETRIC_LONGMEMEVAL_V2_DIR``, else the cache, else a download
    when ``download``; None when they cannot be had and ``download`` is False."""
    import os

    from mnemetric.errors import MnemetricError
    from mnemetric.llm.cache import default_cache_dir
    from mnemetric.longmemeval_v2.upstream_text import load_reader_texts

    try:
        return load_reader_texts(os.environ.get("MNEMETRIC_LONGMEMEVAL_V2_DIR"), default_cache_dir(), download=download)
    except MnemetricError:
        if download:
            raise
        return None


def offline_reader(name: str = "offline") -> OfflineReader:
    """conf/v2/reader/offline.yaml: the offline reader, with the pinned texts if at hand (never downloaded)."""
    return OfflineReader(name=name, texts=pinned_reader_texts(download=False))


def openai_reader(*, connect: ClientFactory, model: str = READER_MODEL, base_url: str | None = None,
                  enable_thinking: bool = True, name: str = "openai") -> OpenAIReader:
    """conf/v2/reader/openai.yaml (``_partial_``; the run passes ``connect``): the chat reader through the one
    client, with the pinned texts (downloaded once into the cache if no checkout is named)."""
    return OpenAIReader(connect(base_url, "reader"), pinned_reader_texts(download=True), model=model,
                        params={"enable_thinking": enable_thinking}, name=name)
