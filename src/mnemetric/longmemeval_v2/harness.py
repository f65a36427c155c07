"""Run a LongMemEval-V2 memory system over the questions of one domain: items, latency, budget cut.

Rules from github.com/xiaowu0162/LongMemEval-V2 at be15ea6e995462f3391c1a610892df3f67dfa7bd,
evaluation/harness.py build_prompt_row (lines ~540-596) and main (~1139-1320); code ours:

* memory_query_duration_seconds = ``perf_counter()`` after minus before ``validate(memory.query(text,
  image))`` — the query AND the item validation are timed; inserts are not (they happen before, when the
  memory is built: :func:`mnemetric.longmemeval_v2.memory.memories`).
* memory_post_query_duration_seconds times ``post_query_hook(query=, query_image=, memory_context=)`` on
  its own, right after; a memory without the hook behaves as upstream's base class (returns None).
* Then the validated items are cut to the token budget (:func:`mnemetric.longmemeval_v2.tokens.fit_to_budget`;
  not timed): memory_context = the kept prefix, memory_context_original_token_count,
  memory_context_token_count, memory_context_was_truncated = original > final.
* The memory gets the question text and the question image path only (see memory.py) — except that a memory
  with ``before_query(question_id)`` / ``after_query()`` (upstream's baselines, :mod:`.upstream_memory`) is told
  the question id before the timed query and after the hook, as upstream's set_query_context /
  clear_query_context.
* Per-question haystacks (no shared memory) may be built and queried on the executor's workers (:func:`run_memory`
  ``mapper``, opt-in: ``executor.workers`` > 1, or an executor whose map is remote, ``-S executor=dask``, whatever
  its ``workers``): each question's build + query + budget cut runs in one worker (:class:`MemoryTask`), results in
  question order, so the rows are those of a sequential run; the model calls the memory makes there are tallied
  there and added here (:func:`mnemetric.llm.tally.merge`), so ``memory_side`` counts the same. The measured
  latencies are then taken on the workers (``perf_counter`` in the worker process, on the workers' machines for a
  joined Dask scheduler) and are of concurrent queries; upstream's ``--prompt-build-max-workers`` default 1 keeps
  published ones sequential. Such a run is marked as a sequential one is (run_args.json's
  ``prompt_build_max_workers`` stays 1; the official verdict does not look at the executor): parallel timing is
  the user's choice, documented, not recorded. A shared memory is always built once and queried here.
* Model access: every memory is built with the run's executor (``mapper``) handed to it when it declares the
  CallsModels capability (:func:`~.memory.build_memory`, :mod:`mnemetric.execute.access`), so its calls spend under
  the run's one ``llm.budget`` and land in its one usage ledger (usage sidecar, run log). Such a memory is built and
  queried here, one question after another, whatever ``executor.workers`` or ``-S executor=dask`` say (the executor,
  its budget and its ledger live in this process), as LongMemEval's CallsModels systems are
  (mnemetric/longmemeval/retrieve.py). A memory that makes model calls without declaring it (through an executor
  of its own) may run on the workers; its calls are then tallied (``memory_side``) but never spend the run's budget
  nor reach its ledger.
* A memory whose own OpenAI clients call models (the UsesModelProxy capability, :mod:`mnemetric.execute.access`:
  upstream's rag and agentrunbook_r baselines, :mod:`.upstream_memory`) is built and queried here too, while the
  caller serves the loopback model proxy over the run's executor (:func:`.steps.memory_step`): each build is
  attributed to phase "ingest" of the question it is built for, each query (with its hooks) to phase "query", so
  its requests spend the run's budget, are cached, counted in its ledger and in ``memory_side``.

Mnemetric's additions, never in upstream's per_question fields (measurements: the untracked latency sidecar and
metrics/v2-latency.json, :mod:`.latency`): ``memory_build_seconds`` — perf_counter around building the memory
the question was answered from (the inserts; 0.0 for a question that reuses the shared memory); and
``timed_cache_served`` — how many answers of model calls made inside the timed query came from a cache
(:func:`mnemetric.llm.tally.tallying`: the response cache, an identical call's copy, the embedding store).
Timed calls are not forced cold: a warm cache shortens the measured latency, so a run with any such answer is
marked warm and gets no LAFS (:mod:`.latency`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from mnemetric.execute.access import calls_models, uses_model_proxy
from mnemetric.execute.calls import measuring_latency
from mnemetric.llm.proxy import current as current_proxy
from mnemetric.llm.tally import tallying
from mnemetric.longmemeval_v2.memory import MemoryFactory, TrajectoryMemory, build_memory, is_shared, validate_items
from mnemetric.longmemeval_v2.tokens import TokenCounter, fit_to_budget
from mnemetric.longmemeval_v2.trajectories import Trajectory


@dataclass(frozen=True)
class MemoryQuestion:
    """What the harness needs of one question to query a memory (the memory itself sees text and image)."""

    question_id: str
    text: str
    image: str | None
    """The image path as the memory and reader get it (or None)."""
    haystack_ids: tuple[str, ...]


@dataclass(frozen=True)
class MemoryOutcome:
    """The memory half of a per_question row."""

    memory_context: list[dict[str, str]]
    memory_query_duration_seconds: float
    memory_post_query_duration_seconds: float
    memory_post_query_metadata: Any
    memory_context_original_token_count: int
    memory_context_token_count: int
    memory_build_seconds: float = 0.0
    timed_cache_served: int = 0

    @property
    def memory_context_was_truncated(self) -> bool:
        return self.memory_context_original_token_count > self.memory_context_token_count

    def to_record(self) -> dict[str, Any]:
        """The per_question fields, in upstream's order."""
        return {"memory_context": self.memory_context,
                "memory_query_duration_seconds": self.memory_query_duration_seconds,
                "memory_post_query_duration_seconds": self.memory_post_query_duration_seconds,
                "memory_post_query_metadata": self.memory_post_query_metadata,
                "memory_context_original_token_count": self.memory_context_original_token_count,
                "memory_context_token_count": self.memory_context_token_count,
                "memory_context_was_truncated": self.memory_context_was_truncated}


def _no_hook(**_: Any) -> None:
    return None


def query_memory(memory: TrajectoryMemory, question: MemoryQuestion, *, system: str, counter: TokenCounter,
                 max_tokens: int) -> MemoryOutcome:
    """Query, validate, time, run the post-query hook, cut to the budget (module docstring)."""
    before, after = getattr(memory, "before_query", None), getattr(memory, "after_query", None)
    if before is not None:  # an upstream memory's query context (upstream_memory.py), set before the timer
        before(question.question_id)
    try:
        return _timed_query(memory, question, system=system, counter=counter, max_tokens=max_tokens)
    finally:
        if after is not None:
            after()


def _timed_query(memory: TrajectoryMemory, question: MemoryQuestion, *, system: str, counter: TokenCounter,
                 max_tokens: int) -> MemoryOutcome:
    with measuring_latency(), tallying() as timed:  # a timed model call is never deferred to a Batch API
        started = time.perf_counter()
        items = validate_items(memory.query(question.text, question.image), system=system,
                               question_id=question.question_id)
        duration = time.perf_counter() - started
    hook = getattr(memory, "post_query_hook", _no_hook)
    post_started = time.perf_counter()
    metadata = hook(query=question.text, query_image=question.image, memory_context=items)
    post_duration = time.perf_counter() - post_started
    kept, original, final = fit_to_budget(items, max_tokens, counter.count)
    return MemoryOutcome(kept, duration, post_duration, metadata, original, final, timed_cache_served=timed.cache_served)


def attributed(system: str, phase: str, question_id: str | None) -> Any:
    """While a model proxy serves this run (a UsesModelProxy memory), count its requests for (system, phase,
    question); else nothing."""
    proxy = current_proxy()
    if proxy is None:
        return contextlib.nullcontext()
    return proxy.attribute(system=system, phase=phase, question_id=question_id)


def _built(factory: MemoryFactory, questions: Sequence[MemoryQuestion], trajectories: Mapping[str, Trajectory],
           shared: bool, executor: Any = None, system: str = "") -> Iterator[tuple[TrajectoryMemory, float]]:
    """:func:`~.memory.memories` with the seconds each question's memory took to build (0.0 when reused)."""
    memory = None
    for question in questions:
        seconds = 0.0
        if memory is None or not shared:
            started = time.perf_counter()
            with attributed(system, "ingest", question.question_id):
                memory = build_memory(factory, question.haystack_ids, trajectories, executor)
            seconds = time.perf_counter() - started
        yield memory, seconds


class MemoryTask:
    """One question's fresh memory: build it, query it (:func:`query_memory`); picklable (a module-level class,
    no closure) for a process pool or a Dask cluster, where it runs in the worker."""

    def __init__(self, factory: MemoryFactory, trajectories: Mapping[str, Trajectory], *, system: str,
                 counter: TokenCounter, max_tokens: int):
        self.factory, self.trajectories, self.system = factory, trajectories, system
        self.counter, self.max_tokens = counter, max_tokens

    def __call__(self, question: MemoryQuestion) -> MemoryOutcome:
        started = time.perf_counter()
        memory = build_memory(self.factory, question.haystack_ids, self.trajectories)
        seconds = time.perf_counter() - started
        outcome = query_memory(memory, question, system=self.system, counter=self.counter,
                               max_tokens=self.max_tokens)
        return replace(outcome, memory_build_seconds=seconds)


def on_workers(mapper: Any) -> bool:
    """Whether ``mapper`` (the run's executor) builds per-question memories on its workers: one whose map is
    remote (``maps_remotely``: a Dask cluster, whatever its ``workers``), or whose ``workers`` setting is above 1;
    else they are built here, one after another (the default, as upstream's)."""
    if mapper is None or not callable(getattr(mapper, "map", None)):
        return False
    workers = getattr(mapper, "workers", None)
    return bool(getattr(mapper, "maps_remotely", False)) or (isinstance(workers, int) and workers > 1)


def factory_calls_models(factory: MemoryFactory) -> bool:
    """Whether the memories ``factory`` builds declare CallsModels: the factory's own ``calls_models`` (a conf
    option's, :class:`~.pipeline.MemoryOption`, knows it from the memory it built to check the option), else one
    memory built to look."""
    known = getattr(factory, "calls_models", None)
    return known if isinstance(known, bool) else calls_models(factory())


def factory_uses_model_proxy(factory: MemoryFactory) -> bool:
    """Whether the memories ``factory`` builds declare UsesModelProxy (as :func:`factory_calls_models`)."""
    known = getattr(factory, "uses_model_proxy", None)
    return known if isinstance(known, bool) else uses_model_proxy(factory())


def run_memory(factory: MemoryFactory, questions: Sequence[MemoryQuestion], trajectories: Mapping[str, Trajectory],
               *, system: str, counter: TokenCounter, max_tokens: int, mapper: Any = None,
               shared: bool | None = None) -> Iterator[MemoryOutcome]:
    """One :class:`MemoryOutcome` per question, in order, by the shared-haystack rule (memory.py). ``mapper``: the
    run's executor, handed to each memory that declares CallsModels; per-question memories on its workers when it
    offers them (:func:`on_workers`) and the memory does not call models through it (module docstring). ``shared``:
    the rule's answer decided over a larger run these questions are a shard of (None: decided over ``questions``)."""
    lists = [q.haystack_ids for q in questions]
    shared = is_shared(lists) if shared is None else shared
    if (len(questions) > 1 and not shared and on_workers(mapper) and not factory_calls_models(factory)
            and not factory_uses_model_proxy(factory)):
        task = MemoryTask(factory, trajectories, system=system, counter=counter, max_tokens=max_tokens)
        yield from list(mapper.map(task, questions, desc="v2 memory"))  # the whole map: the pool ends cleanly
        return
    for question, (memory, seconds) in zip(questions, _built(factory, questions, trajectories, shared, mapper,
                                                             system)):
        with attributed(system, "query", question.question_id):
            outcome = query_memory(memory, question, system=system, counter=counter, max_tokens=max_tokens)
        yield replace(outcome, memory_build_seconds=seconds)
