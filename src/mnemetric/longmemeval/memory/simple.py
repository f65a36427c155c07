"""Ceiling and floor baselines every report needs.

* ``full-context``: everything, newest first (the retrieve stage cuts it to the context budget).
* ``none``: retrieves nothing (the reader answers from the question alone).
* ``oracle``: the evidence first. It declares the ``LabelledCeiling`` capability (memory/base.py),
  so it does not rank by itself: the harness puts the targets first (in corpus order) and the rest
  after, as upstream's oracle retriever does (run_retrieval.py @ 9e0b455f). Any system declaring
  the capability gets the same treatment; the harness knows no concrete class.
"""

from __future__ import annotations

from dataclasses import dataclass

from mnemetric.longmemeval.adapted import MemorySession, Query
from mnemetric.longmemeval.memory.base import LabelledCeiling, Retrieved, TextMemory, check_granularity


@dataclass
class FullContext(TextMemory):
    name: str = "full-context"
    roles: tuple[str, ...] = ("user", "assistant")

    def retrieve(self, query: Query, granularity: str) -> list[Retrieved]:
        check_granularity(granularity)
        refs, _ = self.store.documents(granularity)
        return refs[::-1]  # newest first


@dataclass
class NoMemory:
    name: str = "none"

    def reset(self) -> None:
        pass

    def ingest(self, session: MemorySession) -> None:
        pass

    def retrieve(self, query: Query, granularity: str) -> list[Retrieved]:
        check_granularity(granularity)
        return []


@dataclass
class Oracle(FullContext, LabelledCeiling):
    """Ranks nothing itself; see the module docstring."""

    name: str = "oracle"
    roles: tuple[str, ...] = ("user",)

    def retrieve(self, query: Query, granularity: str) -> list[Retrieved]:
        check_granularity(granularity)
        refs, _ = self.store.documents(granularity)
        return refs  # corpus order; the harness moves the targets to the front
