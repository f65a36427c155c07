"""The reader and the judge as components built by Hydra's ``_target_`` (conf/reader, conf/judge).

No ``kind:`` dispatch: each option names its class. A component that needs a model builds
:class:`~mnemetric.execute.ModelCall` records and hands them to the run's executor, which its
``answer`` / ``judge`` / ``plan`` method receives as ``executor`` (the stage and the CLI build ONE per
run with :func:`mnemetric.execute.build_executor`); the offline ones ignore it, so they never open a
client. The stage and `mnemetric judge` call the same :func:`judge_file`; stage answer and `mnemetric
answer` call the same :func:`mnemetric.longmemeval.answer.answer_file`.

``kind`` stays as a descriptive field (the run manifest records which sort of judge produced the
labels); nothing dispatches on it. What the run manifest needs to know of a reader it asks the
component: ``prompt_module``, the module whose fingerprint names its prompt set (None: it sends no
prompts).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, ClassVar, Protocol

from mnemetric.errors import ConfigError
from mnemetric.execute import Executor
from mnemetric.llm.failures import QuestionFailure
from mnemetric.longmemeval.adapted import Query
from mnemetric.longmemeval.contexts import Context
from mnemetric.longmemeval.judge.run import (
    Judged,
    PromptSetJudge,
    carry_failures,
    judge_lexical,
)
from mnemetric.longmemeval.judge.upstream_file import ENV_CHECKOUT, SHA256
from mnemetric.longmemeval.reference import Reference
from mnemetric.longmemeval.judge.upstream_prompts import PromptSet, load_prompt_set
from mnemetric.longmemeval.reader.run import Answered, answer_chat, answer_extractive, chat_calls


class Judge(Protocol):
    name: str
    alias: str
    """Suffix of the judged file (upstream: ``<hyp>.eval-results-<alias>``)."""

    def judge(self, hyps: Sequence[Mapping[str, Any]], refs: Mapping[str, Reference], file: str,
              executor: Executor) -> Judged: ...

    def plan(self, hyps: Sequence[Mapping[str, Any]], refs: Mapping[str, Reference], file: str,
             executor: Executor) -> dict[str, Any]: ...


@dataclass(frozen=True)
class OfflineLexicalJudge:
    """The offline lexical judge (mnemetric.longmemeval.judge.lexical): never official."""

    name: str = "lexical"
    alias: str = "lexical"
    kind: str = "lexical"

    def judge(self, hyps, refs, file, executor) -> Judged:
        return Judged(judge_lexical(hyps, refs, file))

    def plan(self, hyps, refs, file, executor) -> dict[str, Any]:
        return {"requests_total": 0, "cached": 0, "to_send": 0, "estimated_usd": 0.0,
                "note": "the lexical judge sends no requests"}


@dataclass(frozen=True)
class UpstreamJudge(PromptSetJudge):
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


def judge_file(judge: Judge, hyps: Sequence[Mapping[str, Any]], refs: Mapping[str, Reference], file: str,
               executor: Executor, carried: Sequence[QuestionFailure] = ()) -> Judged:
    """Judge every hypothesis of ``file``: the judge's verdicts, the reader's failures carried over
    first. The one path for stage and CLI (each then reports; :func:`check_not_all_failed` stops a run
    in which nothing got a verdict)."""
    return carry_failures(carried, judge.judge(hyps, refs, file, executor), hyps, refs, file)


def write_judged(path, judged: Judged) -> None:
    """The judged file (upstream format) and its failures sidecar, both atomically."""
    from mnemetric.io import write_jsonl_atomic
    from mnemetric.llm.failures import failures_path, write_failures

    write_jsonl_atomic(path, judged.lines)
    write_failures(failures_path(path), judged.failures)


class Reader(Protocol):
    name: str

    def answer(self, queries: Sequence[Query], contexts: Sequence[Context], executor: Executor) -> Answered: ...

    def plan(self, queries: Sequence[Query], contexts: Sequence[Context], executor: Executor) -> dict[str, Any]:
        """Dry run: the requests it would send, how many the cache holds, estimated $ (sends nothing)."""
        ...


@dataclass(frozen=True)
class OfflineExtractiveReader:
    """Offline, deterministic: the retrieved sentence sharing most content words with the question."""

    name: str = "extractive"
    min_overlap: int = 1
    kind: str = "extractive"
    prompt_module: ClassVar[str | None] = None

    def answer(self, queries, contexts, executor) -> Answered:
        return answer_extractive(queries, contexts, self.name, self.min_overlap)

    def plan(self, queries, contexts, executor) -> dict[str, Any]:
        return {"requests_total": 0, "cached": 0, "to_send": 0, "estimated_usd": 0.0,
                "note": "the extractive reader sends no requests"}


@dataclass(frozen=True)
class ChatReader:
    """A chat model through the run's executor (Mnemetric's own prompt wording)."""

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

    def answer(self, queries, contexts, executor) -> Answered:
        return answer_chat(queries, contexts, asdict(self), executor)

    def plan(self, queries, contexts, executor) -> dict[str, Any]:
        return executor.plan(chat_calls(queries, contexts, asdict(self)))
