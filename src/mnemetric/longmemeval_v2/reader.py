"""The LongMemEval-V2 reader: an OpenAI-compatible chat model (calls sent by the run's executor), or an offline stand-in.

Rules from github.com/xiaowu0162/LongMemEval-V2 at be15ea6e995462f3391c1a610892df3f67dfa7bd
(evaluation/harness.py build_messages / build_reader_request / call_reader_model_async /
score_prediction, run_eval.py defaults; code ours, texts read at run time — :mod:`.requests`,
:mod:`.upstream_text`):

* The request = :func:`~.requests.reader_messages` (system prompt of the domain; user parts: intro,
  memory items, question, question image as a data URL) + :func:`~.requests.reader_params` (temperature
  0.6, top_p 0.95, top_k 20, 20,000 max tokens, thinking rule).
* It is a :class:`mnemetric.execute.ModelCall` (:meth:`OpenAIReader.calls`); the run's executor sends it
  (cache, budget, retries: one budget and one usage ledger per run) and :meth:`OpenAIReader.read` reads
  the :class:`~mnemetric.execute.CallOutcome`. A rerun of the same requests is served from the cache: zero
  requests. Each reply keeps the request sha256 and the parameters sent (the evidence per_question rows carry).
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
  question is scored (0), as upstream (the call tolerates 400: a ``failure`` outcome with status 400).

:class:`OfflineReader` is ours, for the bundled sample with no model: it answers from the retrieved text
items only (module docstring of the class); its answers say nothing about any model; never official.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from mnemetric.errors import PluginError
from mnemetric.execute import ANSWER, FAILURE, NO_REPLY, NON_ANSWER, CallOutcome, Executor, ModelCall
from mnemetric.llm.cache import normalize_base_url
from mnemetric.longmemeval_v2.checkers import extract_boxed_answer, is_unknown
from mnemetric.longmemeval_v2.requests import (READER_DEFAULTS, READER_MAX_RETRIES, READER_MODEL, READER_TEXT_FROM,
                                               READER_TIMEOUT, reader_messages, reader_params)
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
    request_sha256: str | None = None
    """The request's sha256 (the response cache's key); None when nothing was sent (the offline reader)."""
    params_sent: Mapping[str, Any] | None = field(default=None, compare=False)
    """The output parameters of the request as sent; None when nothing was sent."""

    @property
    def response_parsed_boxed(self) -> str | None:
        return None if self.response_raw is None else extract_boxed_answer(self.response_raw)


def _usage(prompt: int, completion: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


ZERO_USAGE = _usage(0, 0)


READER_ROLE = "reader"
TOLERATED = (400,)
"""HTTP statuses after which upstream goes on with an empty answer (harness.py: BadRequestError)."""


def read_reply(outcome: CallOutcome) -> ReaderReply:
    """A reader reply from the executor's outcome (module docstring): an answer's stripped text and usage; a
    tolerated 400 → upstream's empty answer with zero usage; a non-answer or an empty text → failed."""
    evidence = {"request_sha256": outcome.key, "params_sent": dict(outcome.params_sent)}
    if outcome.kind == FAILURE and outcome.status in TOLERATED:
        return ReaderReply("", dict(ZERO_USAGE), **evidence)
    if outcome.kind == NON_ANSWER or outcome.kind == FAILURE:
        return ReaderReply(None, dict(ZERO_USAGE), failed=f"reader gave no answer: {outcome.reason}", **evidence)
    if outcome.kind != ANSWER:
        raise PluginError("executor", f"reader request {outcome.key[:12]}…", f"no result yet ({outcome.kind})",
                          fix="rerun when the executor has it")
    text = outcome.text.strip()
    if not text:
        return ReaderReply(None, dict(ZERO_USAGE), failed="reader text is empty", **evidence)
    u = outcome.usage
    return ReaderReply(text, _usage(u.prompt_tokens, u.completion_tokens), cached=outcome.cached,
                       text_source=outcome.text_source, **evidence)


@dataclass
class OpenAIReader:
    """Any OpenAI-compatible chat endpoint: builds the calls, the run's executor sends them."""

    texts: ReaderTexts
    model: str = READER_MODEL
    base_url: str | None = None
    """The server (None: ``$OPENAI_BASE_URL``, else the OpenAI default), normalised as the cache keys it."""
    params: dict[str, Any] | None = None
    """Keyword arguments of :func:`~.requests.reader_params` (``base_url`` is this reader's)."""
    name: str = "openai"
    timeout: float | None = None
    """Seconds per attempt (transport: not in the request key); None: the run's ``llm.timeout``."""
    max_retries: int | None = None
    """Retries after the first attempt (transport); None: the run's ``llm.max_attempts``."""
    sends_reader_texts: ClassVar[bool] = True
    """Its requests carry the pinned upstream texts, so a run's official status depends on them."""
    calls_model: ClassVar[bool] = True

    @property
    def official(self) -> bool:
        """The run_eval reader: Qwen/Qwen3.5-9B, default sampling and thinking, texts from the pinned file."""
        return (self.model == READER_MODEL and self.texts.is_pinned
                and {**READER_DEFAULTS, **(self.params or {})} == READER_DEFAULTS)

    def request(self, item: ReaderInput) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        kw = {"base_url": normalize_base_url(self.base_url), **(self.params or {})}
        params = reader_params(self.model, **kw)
        params.pop("model")
        messages = reader_messages(item.domain, item.memory_context, item.question_text, item.question_image,
                                   self.texts)
        return messages, params

    def calls(self, items: Sequence[ReaderInput]) -> list[ModelCall]:
        """One chat call per item, tolerating a 400 (as upstream) and no reply after every attempt (a timeout:
        the question fails, the run goes on)."""
        transport = {k: v for k, v in (("timeout", self.timeout), ("max_retries", self.max_retries)) if v is not None}
        out = []
        for item in items:
            messages, params = self.request(item)
            out.append(ModelCall.chat(role=READER_ROLE, model=self.model, messages=messages,
                                      params={**params, **transport}, base_url=self.base_url,
                                      text_from=READER_TEXT_FROM, tolerate=(*TOLERATED, NO_REPLY)))
        return out

    def read(self, outcome: CallOutcome) -> ReaderReply:
        return read_reply(outcome)

    def answer_all(self, items: Sequence[ReaderInput], executor: Executor) -> list[ReaderReply]:
        """Every item's reply, the calls sent by the run's ``executor``."""
        return [self.read(o) for o in executor.run(self.calls(items), desc="v2 reader")]


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

    calls_model: ClassVar[bool] = False

    def answer_all(self, items: Sequence[ReaderInput], executor: Executor | None = None) -> list[ReaderReply]:
        """Every item's answer (no call: ``executor`` is not used)."""
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


def openai_reader(*, model: str = READER_MODEL, base_url: str | None = None, enable_thinking: bool = True,
                  temperature: float | None = READER_DEFAULTS["temperature"],
                  top_p: float | None = READER_DEFAULTS["top_p"], top_k: int | None = READER_DEFAULTS["top_k"],
                  max_tokens: int = READER_DEFAULTS["max_tokens"], presence_penalty: float | None = None,
                  repetition_penalty: float | None = None, reasoning_effort: str | None = None,
                  timeout: float | None = READER_TIMEOUT, max_retries: int | None = READER_MAX_RETRIES,
                  name: str = "openai", texts: ReaderTexts | None = None) -> OpenAIReader:
    """conf/v2/reader/openai.yaml: the chat reader with the pinned texts (downloaded once into the cache if no
    checkout is named); the run's executor sends its calls. The sampling keys are upstream's (run_eval.py:
    official only at those values); ``timeout`` / ``max_retries`` are upstream harness.py's transport (43,200 s,
    10 SDK retries), which change no answer: a reply that never comes fails its question, not the run.
    ``texts``: other reader texts (tests' stand-ins; such a reader is never official), else the pinned ones."""
    sampling = {"enable_thinking": enable_thinking, "temperature": temperature, "top_p": top_p, "top_k": top_k,
                "max_tokens": int(max_tokens), "presence_penalty": presence_penalty,
                "repetition_penalty": repetition_penalty, "reasoning_effort": reasoning_effort}
    return OpenAIReader(texts or pinned_reader_texts(download=True), model=model, base_url=base_url, params=sampling, name=name,
                        timeout=None if timeout is None else float(timeout),
                        max_retries=None if max_retries is None else int(max_retries))
