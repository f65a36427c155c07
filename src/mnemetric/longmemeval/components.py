"""The reader and the judge as components built by Hydra's ``_target_`` (conf/reader, conf/judge).

No ``kind:`` dispatch: each option names its class. A component that needs a model gets the LLM
client from an :data:`LLMFactory` the caller passes (the stage and the CLI build it from the run's
``llm:`` settings), so the offline ones never open a client and nothing duck-types. The stage and
`mnemetric judge` call the same :func:`judge_file`; the stage and nothing else calls
:meth:`Reader.answer`.

``kind`` stays as a descriptive field (the run manifest records which sort of judge produced the
labels); nothing dispatches on it. What the run manifest needs to know of a reader it asks the
component: ``prompt_module``, the module whose fingerprint names its prompt set (None: it sends no
prompts).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, ClassVar, ContextManager, Protocol

from mnemetric.errors import ConfigError
from mnemetric.llm.failures import QuestionFailure
from mnemetric.longmemeval.adapted import Query
from mnemetric.longmemeval.contexts import Context
from mnemetric.longmemeval.judge.run import (
    Judged,
    carry_failures,
    judge_lexical,
    judge_upstream_outcome,
    upstream_requests,
)
from mnemetric.longmemeval.judge.upstream_file import ENV_CHECKOUT, SHA256
from mnemetric.longmemeval.reference import Reference
from mnemetric.longmemeval.judge.upstream_prompts import PromptSet, load_prompt_set
from mnemetric.longmemeval.reader.run import Answered, answer_chat, answer_extractive, chat_requests

LLMFactory = Callable[[str | None, str], ContextManager[Any]]
"""(base_url or None, role) → a context manager giving an LLMClient (mnemetric.llm)."""


def llm_factory(llm: Mapping[str, Any], stats=None) -> LLMFactory:
    """The run's client factory: its ``llm:`` settings (concurrency, retries, budget, prices) and one
    usage counter for every client it makes."""
    from mnemetric.llm.settings import client_from_params

    def make(base_url: str | None, role: str) -> ContextManager[Any]:
        return client_from_params(llm, base_url, stats, role=role)
    return make


class Judge(Protocol):
    name: str
    alias: str
    """Suffix of the judged file (upstream: ``<hyp>.eval-results-<alias>``)."""

    def judge(self, hyps: Sequence[Mapping[str, Any]], refs: Mapping[str, Reference], file: str,
              llm: LLMFactory) -> Judged: ...

    def plan(self, hyps: Sequence[Mapping[str, Any]], refs: Mapping[str, Reference], file: str,
             llm: LLMFactory) -> dict[str, Any]: ...


@dataclass(frozen=True)
class OfflineLexicalJudge:
    """The offline lexical judge (mnemetric.longmemeval.judge.lexical): never official."""

    name: str = "lexical"
    alias: str = "lexical"
    kind: str = "lexical"

    def judge(self, hyps, refs, file, llm) -> Judged:
        return Judged(judge_lexical(hyps, refs, file))

    def plan(self, hyps, refs, file, llm) -> dict[str, Any]:
        return {"requests_total": 0, "cached": 0, "to_send": 0, "estimated_usd": 0.0,
                "note": "the lexical judge sends no requests"}


@dataclass(frozen=True)
class UpstreamJudge:
    """The upstream LongMemEval judge (evaluate_qa.py @ 9e0b455f): prompts read from the pinned file."""

    name: str
    alias: str
    model: str
    temperature: float = 0
    max_tokens: int = 10
    n: int = 1
    base_url: str | None = None
    longmemeval_dir: str | None = None
    """A checkout at the pinned revision; else MNEMETRIC_LONGMEMEVAL_DIR; else downloaded once."""
    evaluate_qa_sha256: str = SHA256
    kind: str = "upstream"

    def prompts(self) -> PromptSet:
        from mnemetric.llm.cache import default_cache_dir

        return load_prompt_set(self.longmemeval_dir or os.environ.get(ENV_CHECKOUT), default_cache_dir(),
                               expected_sha256=self.evaluate_qa_sha256)

    def spec(self) -> dict[str, Any]:
        return asdict(self)

    def judge(self, hyps, refs, file, llm) -> Judged:
        prompts = self.prompts()
        with llm(self.base_url, "judge") as client:
            return judge_upstream_outcome(hyps, refs, prompts, self.spec(), client, file)

    def plan(self, hyps, refs, file, llm) -> dict[str, Any]:
        prompts = self.prompts()
        with llm(self.base_url, "judge") as client:
            return client.plan(upstream_requests(hyps, refs, prompts, self.spec(), file))


def judge_file(judge: Judge, hyps: Sequence[Mapping[str, Any]], refs: Mapping[str, Reference], file: str,
               llm: LLMFactory, carried: Sequence[QuestionFailure] = ()) -> Judged:
    """Judge every hypothesis of ``file``: the judge's verdicts, the reader's failures carried over
    first. The one path for stage and CLI (each then reports; :func:`check_not_all_failed` stops a run
    in which nothing got a verdict)."""
    return carry_failures(carried, judge.judge(hyps, refs, file, llm), hyps, refs, file)


def write_judged(path, judged: Judged) -> None:
    """The judged file (upstream format) and its failures sidecar, both atomically."""
    from mnemetric.io import write_jsonl_atomic
    from mnemetric.llm.failures import failures_path, write_failures

    write_jsonl_atomic(path, judged.lines)
    write_failures(failures_path(path), judged.failures)


class Reader(Protocol):
    name: str

    def answer(self, queries: Sequence[Query], contexts: Sequence[Context], llm: LLMFactory) -> Answered: ...

    def plan(self, queries: Sequence[Query], contexts: Sequence[Context], llm: LLMFactory) -> dict[str, Any]:
        """Dry run: the requests it would send, how many the cache holds, estimated $ (sends nothing)."""
        ...


@dataclass(frozen=True)
class OfflineExtractiveReader:
    """Offline, deterministic: the retrieved sentence sharing most content words with the question."""

    name: str = "extractive"
    min_overlap: int = 1
    kind: str = "extractive"
    prompt_module: ClassVar[str | None] = None

    def answer(self, queries, contexts, llm) -> Answered:
        return answer_extractive(queries, contexts, self.name, self.min_overlap)

    def plan(self, queries, contexts, llm) -> dict[str, Any]:
        return {"requests_total": 0, "cached": 0, "to_send": 0, "estimated_usd": 0.0,
                "note": "the extractive reader sends no requests"}


@dataclass(frozen=True)
class ChatReader:
    """A chat model through the one LLM client (Mnemetric's own prompt wording)."""

    name: str
    model: str
    base_url: str | None = None
    history_format: str = "json"
    mode: str = "con"
    temperature: float = 0
    max_tokens: int = 800
    context_window: int = 128_000
    margin_tokens: int = 1000
    kind: str = "openai"
    prompt_module: ClassVar[str | None] = "mnemetric.longmemeval.reader.prompt"

    def __post_init__(self) -> None:
        if self.max_tokens < 1 or self.context_window < 1 or self.margin_tokens < 0:
            raise ConfigError("reader", f"max_tokens, context_window must be >= 1 and margin_tokens >= 0 "
                              f"(got {self.max_tokens}, {self.context_window}, {self.margin_tokens})")

    def answer(self, queries, contexts, llm) -> Answered:
        with llm(self.base_url, "reader") as client:
            return answer_chat(queries, contexts, asdict(self), client)

    def plan(self, queries, contexts, llm) -> dict[str, Any]:
        with llm(self.base_url, "reader") as client:
            return client.plan(chat_requests(queries, contexts, asdict(self)))
