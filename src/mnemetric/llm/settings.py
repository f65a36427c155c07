"""Building the one LLM client from params (conf `llm:` section + a role's base_url)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mnemetric.llm.budget import Budget, PriceTable, UsageStats
from mnemetric.llm.client import DEFAULT_MAX_CONCURRENCY, LLMClient


def budget_from_params(llm: Mapping[str, Any]) -> Budget:
    budget = llm.get("budget") or {}
    return Budget(max_requests=budget.get("max_requests"), max_usd=budget.get("max_usd"))


def client_from_params(llm: Mapping[str, Any], base_url: str | None = None, stats: UsageStats | None = None,
                       budget: Budget | None = None, *, role: str | None = None, **extra: Any) -> LLMClient:
    """An LLMClient with the run's concurrency, timeouts, retries, budget and price table.

    ``base_url`` None → the SDK reads OPENAI_BASE_URL (and OPENAI_API_KEY) from the environment;
    secrets never come from params. Pass one ``budget`` to several clients to share its limits.
    ``role`` ("reader", "judge", "embeddings") is recorded with every response the client caches.
    ``llm.non_answer_attempts`` (default 2) bounds how many non-answers one request may receive.
    """
    return LLMClient(
        base_url=base_url,
        max_concurrency=int(llm.get("max_concurrency", DEFAULT_MAX_CONCURRENCY)),
        timeout=float(llm.get("timeout", 120)),
        max_attempts=int(llm.get("max_attempts", 6)),
        non_answer_attempts=int(llm.get("non_answer_attempts", 2)),
        budget=budget or budget_from_params(llm),
        prices=PriceTable.from_dict(llm.get("prices")),
        stats=stats,
        role=role,
        **extra,
    )
