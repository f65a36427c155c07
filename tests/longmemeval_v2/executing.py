"""Test support: a V2 component bound to a real ImmediateExecutor (real HTTP through the one LLM client layer),
its response cache in the test's folder, so a test can call ``answer_all(items)`` / ``check_all(cases)``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from mnemetric.execute import ImmediateExecutor
from mnemetric.llm import ResponseCache


def executor(tmp_path: Path, base_url: str | None = None, *, llm: dict | None = None, **client: Any) -> ImmediateExecutor:
    """An executor with the test's cache (``tmp_path/c.sqlite``) and ``llm`` settings; for ``base_url`` its client is
    made here with ``client`` keywords (short backoffs keep retry tests fast), sharing the executor's cache, budget
    and ledger as the executor's own clients do."""
    os.environ.setdefault("OPENAI_API_KEY", "sk-test")
    ex = ImmediateExecutor({"max_attempts": 4, **(llm or {})}, progress=False, cache=ResponseCache(tmp_path / "c.sqlite"))
    if base_url is not None:
        from mnemetric.llm import LLMClient
        from mnemetric.llm.cache import normalize_base_url

        kw = {"max_attempts": 4, "backoff_base": 0.05, **client}
        ex._around[normalize_base_url(base_url)] = LLMClient(base_url=base_url, api_key="sk-test", cache=ex.cache,
                                                             stats=ex.usage, budget=ex.budget, **kw)
    return ex


class Bound:
    """``component`` with ``executor``: answer_all / check_all take the items only; other attributes pass through."""

    def __init__(self, component: Any, executor: ImmediateExecutor):
        self.component, self.executor = component, executor

    def answer_all(self, items):
        return self.component.answer_all(items, self.executor)

    def check_all(self, cases):
        return self.component.check_all(cases, self.executor)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.component, name)
