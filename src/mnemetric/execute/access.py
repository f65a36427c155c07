"""Model access for a component whose protocol methods its harness fixes: the CallsModels capability (generic).

The one convention (:mod:`.executor`): a method that calls models takes the run's executor as its ``executor``
argument; a component that cannot take it there — a memory system, whose ``retrieve`` / ``query`` the harness
calls with the benchmark's arguments only — declares :class:`CallsModels` by defining ``use_executor(executor)``
and is handed the run's ONE executor (:func:`give_executor`) once, before its first model call, so its calls
(:class:`~mnemetric.execute.ModelCall` records handed to ``executor.run``) spend under the run's one budget and
are counted in its one usage ledger. Every family's harness honours it for any class that declares it; no class
is special-cased. A component that declares it runs in the process that holds the executor: a harness never
sends it to a worker pool (the executor, its budget and its ledger live here).

The second capability, :class:`UsesModelProxy`, is for a component whose model calls are made by code that is
not ours (a third-party library, a benchmark's own baseline) through an OpenAI client of its own: it cannot hand
ModelCall records to the executor, so its harness serves the loopback model proxy (:mod:`mnemetric.llm.proxy`:
the run's executor behind an OpenAI-compatible endpoint on 127.0.0.1) around its build and queries, attributes
each request to (component, phase, question), and runs the component in this process. The component points its
clients at the proxy (``mnemetric.llm.proxy.active().base_url``, or ``route(real_base_url)`` when its clients
talk to more than one endpoint) with the proxy's dummy key; the real endpoint and key stay in the harness.
Declared by inheriting :class:`UsesModelProxy` or by an attribute ``uses_model_proxy = True`` (class or
instance: a wrapper whose wrapped code may or may not call models says so per instance).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Protocol, runtime_checkable

if TYPE_CHECKING:
    from mnemetric.execute.executor import Executor


@runtime_checkable
class CallsModels(Protocol):
    """Optional capability: the component calls a model (see the module docstring)."""

    def use_executor(self, executor: Executor) -> None:
        """Take the run's executor (its budget, usage ledger and cache); make model calls through it."""


def calls_models(component: object) -> bool:
    """Whether ``component`` declares :class:`CallsModels` (it defines ``use_executor``)."""
    return isinstance(component, CallsModels)


def give_executor(component: object, executor: Executor | None) -> None:
    """Hand a CallsModels component the run's executor (nothing for other components, or when ``executor`` is
    None: the component then uses its own defaults)."""
    if executor is not None and calls_models(component):
        component.use_executor(executor)


class UsesModelProxy:
    """Optional capability: the component's own OpenAI clients call models through the model proxy (module
    docstring). Inherit to declare it."""

    uses_model_proxy: ClassVar[bool] = True


def uses_model_proxy(component: object) -> bool:
    """Whether ``component`` declares :class:`UsesModelProxy` (``uses_model_proxy`` is exactly True)."""
    return getattr(component, "uses_model_proxy", False) is True
