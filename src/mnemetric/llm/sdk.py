"""The ``openai`` SDK, imported on first use.

Importing ``openai`` costs about a second of CPU (its types, httpx, pydantic, aiohttp). Every pipeline stage
imports :mod:`mnemetric.llm` (budgets, failures, the cache), but only a stage that sends a request needs the
SDK; so the modules that use it say ``from mnemetric.llm.sdk import openai`` and the first attribute read
(``openai.AsyncOpenAI``, ``openai.APIStatusError`` in an ``except`` clause, ...) imports the real package.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class _LazyModule:
    """Stands for a module until an attribute is read; then imports it and answers from it."""

    def __init__(self, name: str):
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str) -> Any:
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return getattr(self._module, attr)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"


openai: Any = _LazyModule("openai")
