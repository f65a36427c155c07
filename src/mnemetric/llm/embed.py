"""Embeddings through the LLM client: one cache row per text, single flight, usage per text.

Each text is cached on its own (key: base URL, model, text, output params — ``encoding_format`` among them
when it is "base64": :mod:`mnemetric.llm.embed_wire`), with the vector (floats), the
resolved model and the text's share of the request's token count. The server reports one
``prompt_tokens`` per request; it is split over the request's texts in proportion to their
lengths in characters (:func:`~mnemetric.llm.replies.apportion`: integers that sum to the
reported count), so the work usage of a text is the same whether it comes from the cache or the
network. (The split depends on which texts shared the request that first embedded a text.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mnemetric.llm.batch_files import went_by_batch
from mnemetric.llm.budget import estimate_prompt_tokens
from mnemetric.llm.cache import key_payload, output_params, request_key
from mnemetric.llm.claims import new_token
from mnemetric.llm.embed_wire import encoding_of, keyed_params
from mnemetric.llm.gather import gather_until_error
from mnemetric.llm.replies import apportion, parse_embeddings_response, usage_of
from mnemetric.llm.types import Usage


class EmbedMixin:
    """The embeddings half of :class:`~mnemetric.llm.client.LLMClient`."""

    def _embed_key(self, model: str, text: str, params: Mapping[str, Any]) -> tuple[dict, str]:
        payload = key_payload("embeddings", self.base_url, model, text, params)
        return payload, request_key(payload)

    async def _post_embed(self, model: str, texts: list[str], params: Mapping[str, Any]) -> dict[str, Any]:
        sent = output_params(params)
        encoding = encoding_of(sent)
        sent.pop("encoding_format", None)
        raw = await self._loop_state().sdk.embeddings.with_raw_response.create(
            model=model, input=texts, encoding_format=encoding,
            timeout=params.get("timeout", self.timeout), **sent,
        )
        return parse_embeddings_response(raw.http_response.content, len(texts))

    async def _embed_chunk(self, model: str, texts: list[str], params: Mapping[str, Any], token: str) -> dict[str, list]:
        estimate = self._price([model], estimate_prompt_tokens(texts), 0)
        data = await self._paid(model, estimate, lambda: self._post_embed(model, texts, params))
        resolved = str(data.get("model") or model)
        items = sorted(data["data"], key=lambda d: d.get("index", 0))
        order = [texts[item.get("index", n)] for n, item in enumerate(items)]
        shares = apportion(usage_of(data).prompt_tokens, [len(t) for t in order])
        vectors = {}
        for text, item, share in zip(order, items, shares):
            vectors[text] = item["embedding"]  # floats (a base64 reply decoded exactly: replies.py)
            row = {"model": resolved, "embedding": vectors[text], "usage": {"prompt_tokens": share}}
            if self.cache is not None:
                payload, key = self._embed_key(model, text, params)
                self.cache.put(key, payload, row, stage=self.role or "embeddings", release=token)
            self._use(model, resolved, Usage(share, 0))
        self._account(model, resolved, estimate, usage_of(data))
        return vectors

    def _embedding_hit(self, model: str, hit: Mapping[str, Any]) -> list[float]:
        self.stats.record_hit(model)
        tokens = int((hit.get("usage") or {}).get("prompt_tokens") or 0)
        self._use(model, str(hit.get("model") or model), Usage(tokens, 0), batch=went_by_batch(hit))
        return hit["embedding"]

    async def embed(self, model: str, texts: Sequence[str], **params: Any) -> list[list[float]]:
        """Embedding vectors for ``texts`` (in order). Each text is cached on its own; only the
        texts not in the cache are sent (a repeated text once), ``embed_batch_size`` per request.
        A text another process has claimed is waited for, not sent. If a request fails, the
        chunks already answered stay cached and the first error is raised.

        ``encoding_format`` in ``params`` ("float", the default, or "base64") is sent as given and is part of
        the key when not "float" (:mod:`mnemetric.llm.embed_wire`); the vectors come back as floats either way."""
        params = keyed_params(params)
        found: dict[str, list[float]] = {}
        unique = list(dict.fromkeys(texts))
        for _ in range(len(texts) - len(unique)):  # a repeated text is sent once: the repeats are hits
            self.stats.record_hit(model)
        pending = []
        for text in unique:
            hit = self.cache.get(self._embed_key(model, text, params)[1]) if self.cache is not None else None
            if hit is not None:
                found[text] = self._embedding_hit(model, hit)
            else:
                pending.append(text)
        token = new_token()  # one claim token per call (kept across rounds: a claim won while waiting is ours)
        while pending:
            pending = await self._embed_round(model, pending, params, found, token)
        return [found[t] for t in texts]

    async def _embed_round(self, model: str, pending: list[str], params: Mapping[str, Any],
                           found: dict[str, list[float]], token: str) -> list[str]:
        """Claim ``pending`` texts, send ours, wait for the others'; returns texts still to send."""
        mine, theirs = [], []
        for text in pending:
            state = self.cache.claim(self._embed_key(model, text, params)[1], token, self.claim_timeout) \
                if self.cache is not None else "mine"
            self.stats.taken_over += state == "taken"
            (mine if state in ("mine", "taken") else theirs).append(text)  # "done": stored meanwhile, read below
        size = max(1, self.embed_batch_size)
        chunks = [mine[i : i + size] for i in range(0, len(mine), size)]
        try:
            for vectors in await gather_until_error(chunks, lambda c: self._embed_chunk(model, c, params, token),
                                                    self.max_concurrency):
                found.update(vectors or {})
        finally:
            if self.cache is not None and mine:
                self.cache.release([self._embed_key(model, t, params)[1] for t in mine], token)
        left = []
        for text in theirs:
            key = self._embed_key(model, text, params)[1]
            hit = await self._claim_or_wait(key, model, token, get=self.cache.get)
            if hit is None:
                left.append(text)  # the other process gave up: ours now
            else:
                found[text] = self._embedding_hit(model, hit)
        return left

    def record_embedding_work(self, model: str, texts: Sequence[str], **params: Any) -> int:
        """Count the work usage of ``texts`` whose vectors a caller took from its own store (e.g.
        the dense memory's embedding cache), from their rows in this cache. Returns how many
        texts had no row (their tokens are unknown and counted as 0)."""
        params = keyed_params(params)
        missing = 0
        for text in dict.fromkeys(texts):
            hit = self.cache.get(self._embed_key(model, text, params)[1]) if self.cache is not None else None
            if hit is None:
                missing += 1
                self._use(model, model, Usage(0, 0))
                continue
            tokens = int((hit.get("usage") or {}).get("prompt_tokens") or 0)
            self._use(model, str(hit.get("model") or model), Usage(tokens, 0), batch=went_by_batch(hit))
        return missing
