"""Running retrieval, one code path shared by the DVC stage and the `mnemetric` command.

:func:`write_retrieval` — run a memory system over adapted records (harness.retrieve_all) and
write the upstream-format retrieval log and, optionally, the reader contexts (contexts.py
``context_line``): one JSON line per question each (``json.dumps(..., ensure_ascii=False)``), both
through ``mnemetric.io.atomic_open``
(a file holds the complete run or is left untouched). Stage ``retrieve`` and ``mnemetric
retrieve`` call it, so the same records give the same bytes.

Its twin for scoring, ``retrieval_log.write_retrieval_scores`` (stage ``retrieval_metrics`` and
``mnemetric score-retrieval``), lives beside the log reader so that neither stage depends on the
other's code.

A memory system that declares the CallsModels capability (memory/base.py, :mod:`mnemetric.execute.access`) is
given the run's executor here (:func:`~mnemetric.execute.give_executor`), before its first question, and runs in
this process (its model calls go through the run's one executor). So does a system that declares UsesModelProxy: its library talks to the model proxy the caller
serves around this call (:func:`mnemetric.llm.memory_cost.serving`), which attributes its requests per
question and phase (harness.run_memory). Any other system runs on the executor's per-question pool (``executor.map``:
``executor.workers`` processes, or a Dask cluster), one :class:`RetrieveTask` per question, results in
question order: the same bytes as one worker. With a shard (:class:`mnemetric.shard.ShardRun`) only its
questions run, and each output gets its ``.shard.json`` manifest for `mnemetric merge`.
"""

from __future__ import annotations

import contextlib
import copy
import json
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

from tqdm import tqdm

from mnemetric.errors import ConfigError
from mnemetric.io import atomic_open
from mnemetric.execute import Executor, give_executor
from mnemetric.longmemeval.adapted import AdaptedLine, AdaptedRecord, as_record
from mnemetric.longmemeval.contexts import context_line
from mnemetric.longmemeval.harness import retrieve_all
from mnemetric.longmemeval.memory.base import MemorySystem, calls_models, uses_model_proxy
from mnemetric.longmemeval.rules import GRANULARITIES
from mnemetric.shard import FileLines, ShardRun, record_manifest


def check_retrieval_settings(granularity: str, k: int, budget: int, *, keys: Sequence[str]) -> None:
    """Granularity one of GRANULARITIES; context k and token budget integers >= 0. ``keys`` names
    the three settings as the caller's user spells them (params keys or command-line options)."""
    if granularity not in GRANULARITIES:
        raise ConfigError(keys[0], f"unknown granularity {granularity!r}",
                          fix=f"use one of {', '.join(GRANULARITIES)}")
    for key, value in zip(keys[1:], (k, budget), strict=True):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ConfigError(key, f"must be an integer >= 0, got {value!r}")


class RetrieveTask:
    """One question's retrieval (reset, ingest, retrieve, context): picklable, for a worker pool or a Dask
    cluster. Each thread that runs it uses its own copy of the memory system (systems are stateful)."""

    def __init__(self, memory: MemorySystem, granularity: str, k: int, budget: int):
        self.memory, self.granularity, self.k, self.budget = memory, granularity, k, budget
        self._local = threading.local()
        self._owner = threading.get_ident()

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k not in ("_local", "_owner")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._local, self._owner = threading.local(), None

    def _memory(self) -> MemorySystem:
        if threading.get_ident() == self._owner:
            return self.memory
        mine = getattr(self._local, "memory", None)
        if mine is None:
            mine = self._local.memory = copy.deepcopy(self.memory)
        return mine

    def __call__(self, item: AdaptedRecord | AdaptedLine) -> tuple[str, str]:
        """(upstream log line, contexts line) of one record (an unparsed line is parsed here, on the worker),
        serialised here (a worker sends back text)."""
        line, context = next(retrieve_all(self._memory(), [as_record(item)], self.granularity, self.k, self.budget))
        return json.dumps(line, ensure_ascii=False) + "\n", context_line(context)


def write_retrieval(memory: MemorySystem, records: Iterable[AdaptedRecord | AdaptedLine], *, granularity: str, k: int,
                    budget: int, log: str | Path, contexts: str | Path | None = None, total: int | None = None,
                    executor: Executor | None = None, shard: ShardRun | None = None) -> int:
    """Run ``memory`` over ``records`` → ``log`` (+ ``contexts``); returns the number of questions.

    ``records``: adapted records, or their unparsed lines (:meth:`AdaptedRecords.lines`), which the task
    parses where it runs (on the pool's workers, so the feeding process only reads lines).

    ``k`` / ``budget``: at most k items within ``budget`` wordpunct-v1 tokens per reader context
    (harness.context_items). ``total`` only sizes the progress bar (stderr). ``shard``: run only its
    questions and write the outputs' shard manifests."""
    give_executor(memory, executor)
    lines = FileLines()

    def chosen() -> Iterable[AdaptedRecord]:
        for pos, rec in enumerate(records):
            qid = rec.question_id if isinstance(rec, AdaptedLine) else rec.eval.question_id
            if shard is None or shard.keep(qid):
                lines.question_ids.append(qid)
                lines.keys.append([pos])
                yield rec

    task = RetrieveTask(memory, granularity, k, budget)
    pooled = executor is not None and callable(getattr(executor, "map", None)) and not calls_models(memory) \
        and not uses_model_proxy(memory)  # its library talks to this process's model proxy
    results = executor.map(task, chosen(), desc="retrieve") if pooled else map(task, chosen())
    if shard is not None and shard.ids is not None:
        total = len(shard.ids)
    bar = tqdm(results, total=total, desc=f"retrieve ({memory.name}, {granularity})", unit="q")
    n = 0
    with contextlib.ExitStack() as stack:
        log_fh = stack.enter_context(atomic_open(log))
        ctx_fh = stack.enter_context(atomic_open(contexts)) if contexts is not None else None
        for line, context in bar:
            log_fh.write(line)
            if ctx_fh is not None:
                ctx_fh.write(context)
            n += 1
        for out, output in ((log, "retrieval log"), (contexts, "contexts")):  # before the outputs are committed
            if out is not None:                                                  # (ShardRun.write_manifest)
                record_manifest(shard, out, lines, output=output)
    return n
