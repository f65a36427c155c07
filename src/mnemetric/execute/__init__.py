"""Model calls as data, execution as a component (generic: knows no family).

A component (a reader, a judge, a checker, a memory system that calls a model) never owns a client
loop: it builds :class:`ModelCall` records — frozen requests that carry their cache key — and hands
them to an :class:`Executor`, which returns one :class:`CallOutcome` per call (an answer, a
non-answer, a failure, or — for executors whose results come back later — pending). The stage or the
CLI builds ONE executor per run (conf group ``executor``, by ``_target_``) and passes it down, so a run
has one budget and one usage ledger whatever its components.

Modules: :mod:`.calls` (ModelCall, CallOutcome), :mod:`.executor` (the Executor protocol and
:func:`build_executor`), :mod:`.access` (the CallsModels and UsesModelProxy capabilities: how a memory system gets the executor), :mod:`.immediate` (ImmediateExecutor: the live client loop), :mod:`.batch` (BatchExecutor: the OpenAI Batch API, with
:mod:`.batch_remote` and :mod:`.batch_collect`; its ledger is :mod:`mnemetric.llm.batch_ledger`).
"""

from mnemetric.execute.calls import (ANSWER, FAILURE, KINDS, NON_ANSWER, NO_REPLY, PENDING, CallOutcome, ModelCall,
                                     latency_measured, measuring_latency, sent_params)
from mnemetric.execute.access import CallsModels, UsesModelProxy, calls_models, give_executor, uses_model_proxy
from mnemetric.execute.executor import Executor, build_executor
from mnemetric.execute.immediate import ImmediateExecutor

__all__ = ["ANSWER", "FAILURE", "KINDS", "NON_ANSWER", "NO_REPLY", "PENDING", "CallOutcome", "CallsModels", "Executor",
           "ImmediateExecutor", "ModelCall", "UsesModelProxy", "build_executor", "calls_models", "give_executor",
           "latency_measured", "measuring_latency", "sent_params", "uses_model_proxy"]
