"""Adapters turn an upstream instance into what a memory system sees (and, apart, what we score with)."""

from .session import (
    AdaptedRecord,
    EvalSession,
    EvalView,
    MemorySession,
    MemoryView,
    Message,
    Query,
    SessionAdapter,
    read_adapted,
)

__all__ = [
    "AdaptedRecord",
    "EvalSession",
    "EvalView",
    "MemorySession",
    "MemoryView",
    "Message",
    "Query",
    "SessionAdapter",
    "read_adapted",
]
