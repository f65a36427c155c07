"""Memory systems: the one interface a researcher implements, and the baselines.

A memory system is reset, ingests a question's haystack sessions in chronological order
(adapter records: opaque ids, dates, messages) and retrieves for the query, returning ranked
items at session or turn granularity. It never sees labels: no answers, question types,
has_answer flags or upstream session ids. Systems are chosen by conf/memory/<name>.yaml and built
with Hydra's ``_target_``, so an outside package plugs in by config alone. Optional capabilities
(``CallsModels``, ``LabelledCeiling``, ``UsesModelProxy``) are declared by the system; see memory/base.py.
"""

from mnemetric.longmemeval.memory.base import (
    GRANULARITIES,
    CallsModels,
    LabelledCeiling,
    MemorySystem,
    Retrieved,
    SessionStore,
    TextMemory,
    UsesModelProxy,
)

__all__ = ["GRANULARITIES", "CallsModels", "LabelledCeiling", "MemorySystem", "Retrieved", "SessionStore",
           "TextMemory", "UsesModelProxy"]
