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

A memory system that declares the CallsModels capability (memory/base.py) is given the run's
executor here, before its first question.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from tqdm import tqdm

from mnemetric.errors import ConfigError
from mnemetric.io import atomic_open
from mnemetric.execute import Executor
from mnemetric.longmemeval.adapted import AdaptedRecord
from mnemetric.longmemeval.contexts import context_line
from mnemetric.longmemeval.harness import retrieve_all
from mnemetric.longmemeval.memory.base import MemorySystem, calls_models
from mnemetric.longmemeval.rules import GRANULARITIES


def check_retrieval_settings(granularity: str, k: int, budget: int, *, keys: Sequence[str]) -> None:
    """Granularity one of GRANULARITIES; context k and token budget integers >= 0. ``keys`` names
    the three settings as the caller's user spells them (params keys or command-line options)."""
    if granularity not in GRANULARITIES:
        raise ConfigError(keys[0], f"unknown granularity {granularity!r}",
                          fix=f"use one of {', '.join(GRANULARITIES)}")
    for key, value in zip(keys[1:], (k, budget), strict=True):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ConfigError(key, f"must be an integer >= 0, got {value!r}")


def configure_memory(memory: MemorySystem, executor: Executor | None) -> None:
    """Give a CallsModels system the run's executor (nothing for other systems or when ``executor`` is
    None: the system then uses its own defaults)."""
    if executor is not None and calls_models(memory):
        memory.use_executor(executor)


def write_retrieval(memory: MemorySystem, records: Iterable[AdaptedRecord], *, granularity: str, k: int,
                    budget: int, log: str | Path, contexts: str | Path | None = None, total: int | None = None,
                    executor: Executor | None = None) -> int:
    """Run ``memory`` over ``records`` → ``log`` (+ ``contexts``); returns the number of questions.

    ``k`` / ``budget``: at most k items within ``budget`` wordpunct-v1 tokens per reader context
    (harness.context_items). ``total`` only sizes the progress bar (stderr)."""
    configure_memory(memory, executor)
    bar = tqdm(records, total=total, desc=f"retrieve ({memory.name}, {granularity})", unit="q")
    n = 0
    with contextlib.ExitStack() as stack:
        log_fh = stack.enter_context(atomic_open(log))
        ctx_fh = stack.enter_context(atomic_open(contexts)) if contexts is not None else None
        for line, context in retrieve_all(memory, bar, granularity, k, budget):
            log_fh.write(json.dumps(line, ensure_ascii=False) + "\n")
            if ctx_fh is not None:
                ctx_fh.write(context_line(context))
            n += 1
    return n
