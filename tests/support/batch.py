"""Many chat requests through one hand-configured client, the way the pipeline runs them: an
:class:`~mnemetric.execute.ImmediateExecutor` around the client (its cache, budget, ledger and retry
policy), so client tests exercise the one batch loop there is (dedup, first-error gate, order)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from mnemetric.execute import CallOutcome, ImmediateExecutor, ModelCall
from mnemetric.llm.types import ChatRequest


def call_of(client: Any, request: ChatRequest | Mapping[str, Any]) -> ModelCall:
    """The ModelCall of a chat request sent to ``client``'s server."""
    req = ChatRequest.coerce(request)
    return ModelCall.chat(role=client.role or "reader", model=req.model, messages=req.messages, params=req.params,
                          base_url=client.base_url, text_from=req.text_from)


def run_batch(client: Any, requests: Iterable[ChatRequest | Mapping[str, Any]],
              progress: bool = False) -> list[CallOutcome]:
    """One outcome per request, in order (``reason`` says why a non-answer is one)."""
    return ImmediateExecutor.around(client, progress=progress).run([call_of(client, r) for r in requests])


def embed_batch(client: Any, model: str, texts: list[str], **params: Any) -> list[list[float]]:
    """The vectors of ``texts`` (in order) through an executor around ``client`` (its batch size)."""
    calls = [ModelCall.embedding(role=client.role or "embeddings", model=model, text=t, params=params,
                                 base_url=client.base_url) for t in texts]
    return [list(o.embedding) for o in ImmediateExecutor.around(client).run(calls)]


def plan_batch(client: Any, requests: Iterable[ChatRequest | Mapping[str, Any]]) -> dict[str, Any]:
    """The dry run of ``requests`` (cached vs to send, estimated $) against ``client``'s cache."""
    return ImmediateExecutor.around(client).plan([call_of(client, r) for r in requests])
