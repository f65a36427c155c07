"""Dry run: what a batch of chat requests would cost, without sending anything.

``plan(requests, cache)`` looks every request up in the response cache and estimates the cost of
the ones that would be sent (prompt tokens = ceil(chars / 4), output = ``max_tokens`` x ``n``),
so a ``--dry-run`` can print e.g. "1,500 requests: 1,200 cached, 300 to send, ~$0.84". It reads
the cache only: no API key, no network.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from mnemetric.llm.budget import PriceTable, estimate_chat_tokens
from mnemetric.llm.cache import ResponseCache, key_payload, request_key
from mnemetric.llm.replies import non_answer_reason
from mnemetric.llm.types import ChatRequest

log = logging.getLogger(__name__)


def plan(
    requests: Iterable[ChatRequest | Mapping[str, Any]],
    cache: ResponseCache | None,
    *,
    base_url: str | None = None,
    prices: PriceTable | None = None,
) -> dict[str, Any]:
    """Count cached vs to-send requests and estimate the dollars of those to send.

    ``base_url`` must be the one the client will use (it is part of the cache key); by default
    ``$OPENAI_BASE_URL`` or the OpenAI URL, as the client would resolve it. Models without a
    price contribute $0 and are logged as a warning.
    """
    total = cached = 0
    usd = 0.0
    unpriced: set[str] = set()
    for req in map(ChatRequest.coerce, requests):
        total += 1
        key = request_key(key_payload("chat", base_url, req.model, req.messages, req.params))
        hit = cache.get(key) if cache is not None else None
        if hit is not None and non_answer_reason(hit, req.text_from) is None:  # a non-answer is asked again
            cached += 1
            continue
        prompt, out = estimate_chat_tokens(req.messages, req.params)
        cost = prices.cost([req.model], prompt, out) if prices is not None else None
        if cost is None:
            unpriced.add(req.model)
        else:
            usd += cost
    if unpriced:
        log.warning("no price for model(s) %s: their requests are counted as $0", ", ".join(sorted(unpriced)))
    return {"requests_total": total, "cached": cached, "to_send": total - cached, "estimated_usd": usd}
