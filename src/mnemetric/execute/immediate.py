"""ImmediateExecutor: every call now, through the one LLM client layer (cache, claims, budget, retries).

One :class:`~mnemetric.llm.client.LLMClient` per (base URL, role, transport URL) — a reader and a judge
at one server each get a client of their own, recording their own role with what they cache — all sharing the run's response cache, ONE
:class:`~mnemetric.llm.budget.Budget` and ONE :class:`~mnemetric.llm.budget.UsageStats` (so a run whose
reader and checker talk to two servers still has one budget). Chat calls run at most
``llm.max_concurrency`` at once; identical calls (same key, same ``text_from``) are sent once and the
repeats counted as cache hits. After an error a call does not tolerate, no new call starts; the calls
in flight finish (their answers are cached), then the error is raised. Embedding calls are grouped by
(base URL, model, params, batch size) and embedded one text per cache row (:mod:`mnemetric.llm.embed`).

Beyond the :class:`~mnemetric.execute.executor.Executor` protocol it offers :meth:`record_work` (count the
work of embedding calls whose vectors a caller kept in its own store) and :meth:`around` (an executor over
one given client: its cache, budget and ledger). The run settings of the ``executor`` section
(:class:`mnemetric.execute.pool.RunSettings`: ``workers``, ``grace_seconds``, ``shard``) give :meth:`map`
(per-question work on a bounded process pool, :mod:`mnemetric.execute.pool`) and the graceful stop on
SIGINT/SIGTERM (:mod:`mnemetric.execute.interrupt`: no new request starts, those in flight are waited for
up to ``grace_seconds`` and their answers cached).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from tqdm.auto import tqdm

from mnemetric.execute.calls import ANSWER, FAILURE, NON_ANSWER, CallOutcome, ModelCall
from mnemetric.execute.interrupt import GracefulStop
from mnemetric.execute.pool import PoolMapper
from mnemetric.llm.budget import Budget, UsageStats
from mnemetric.llm.cache import ResponseCache
from mnemetric.llm.client import DEFAULT_MAX_CONCURRENCY, LLMClient
from mnemetric.llm.gather import gather_until_error
from mnemetric.llm.types import ChatRequest, ChatResult, LLMRequestError


def outcome_of(call: ModelCall, result: ChatResult, *, repeat: bool = False) -> CallOutcome:
    """The outcome of a chat call from the client's result (``repeat``: a copy served to an identical call)."""
    kind = ANSWER if result.ok else NON_ANSWER
    return CallOutcome(kind, call.key, call.params_sent, model=result.model, text=result.text,
                       texts=tuple(result.texts), text_source=result.text_source, usage=result.usage,
                       cost_usd=result.cost_usd, reason=result.failure,
                       attempts=0 if repeat else result.attempts, cached=result.cached or repeat)


class ImmediateExecutor(PoolMapper):
    """The live executor (module docstring). ``llm``: the run's ``llm:`` settings; ``workers``,
    ``grace_seconds``, ``shard``, ``address``: the ``executor`` section's run settings."""

    def __init__(self, llm: Mapping[str, Any] | None = None, *, name: str = "immediate", progress: bool = True,
                 cache: ResponseCache | None = None, use_cache: bool = True, usage: UsageStats | None = None,
                 budget: Budget | None = None, workers: int | None = None, grace_seconds: float | None = None,
                 shard: str | None = None, address: str | None = None):
        from mnemetric.llm.budget import PriceTable
        from mnemetric.llm.settings import budget_from_params

        self.name = name
        self.llm = dict(llm or {})
        self.progress = progress
        self.usage = usage if usage is not None else UsageStats()
        self.budget = budget if budget is not None else budget_from_params(self.llm)
        self.prices = PriceTable.from_dict(self.llm.get("prices"))
        self.max_concurrency = int(self.llm.get("max_concurrency", DEFAULT_MAX_CONCURRENCY))
        self._cache_arg, self._use_cache = cache, use_cache
        self._cache: ResponseCache | None = cache
        self._clients: dict[tuple[str, str | None, str], LLMClient] = {}
        self._around: dict[str, LLMClient] = {}
        self.set_run_settings(workers=workers, grace_seconds=grace_seconds, shard=shard, address=address)

    @classmethod
    def around(cls, client: LLMClient, *, progress: bool = False, name: str = "immediate") -> ImmediateExecutor:
        """An executor whose calls to ``client.base_url`` go through ``client`` (its cache, budget, ledger
        and retry policy): for code and tests that configure one client by hand."""
        ex = cls({"max_concurrency": client.max_concurrency}, name=name, progress=progress, cache=client.cache,
                 use_cache=client.cache is not None, usage=client.stats, budget=client.budget)
        ex.prices = client.prices or ex.prices
        ex._around[client.base_url] = client
        return ex

    def __repr__(self) -> str:
        return f"ImmediateExecutor(max_concurrency={self.max_concurrency})"

    # -- clients ---------------------------------------------------------------------------------
    @property
    def cache(self) -> ResponseCache | None:
        if self._cache is None and self._use_cache:
            self._cache = ResponseCache()
        return self._cache

    def client(self, base_url: str, role: str | None = None, transport_url: str | None = None) -> LLMClient:
        """The run's client for ``base_url`` and ``role`` (one per base URL, role and transport URL; shared
        cache, budget and ledger; :meth:`around`'s client serves every role at its URL). ``transport_url``:
        the URL as the call was given it (credentials included), used to reach the server."""
        if base_url in self._around:
            return self._around[base_url]
        key = (base_url, role, transport_url or base_url)
        if key not in self._clients:
            from mnemetric.llm.settings import client_from_params

            self._clients[key] = client_from_params(self.llm, transport_url or base_url, self.usage,
                                                    budget=self.budget, role=role, cache=self.cache,
                                                    use_cache=self._use_cache)
        return self._clients[key]

    def _client_for(self, call: ModelCall) -> LLMClient:
        return self.client(call.base_url, call.role, call.transport_url)

    # -- running ---------------------------------------------------------------------------------
    def run(self, calls: Sequence[ModelCall], *, desc: str = "llm", progress: bool | None = None) -> list[CallOutcome]:
        """One outcome per call, in order (the Executor protocol). ``progress``: show a bar (default: the
        executor's setting; a component calling once per question passes False)."""
        calls = list(calls)
        if not calls:
            return []
        return asyncio.run(self._run(calls, desc, self.progress if progress is None else progress))

    async def _run(self, calls: list[ModelCall], desc: str, progress: bool) -> list[CallOutcome]:
        outcomes: list[CallOutcome | None] = [None] * len(calls)
        chats = [i for i, c in enumerate(calls) if c.endpoint == "chat"]
        embeds = [i for i, c in enumerate(calls) if c.endpoint == "embeddings"]
        self._stop = GracefulStop(self.grace_seconds)
        try:
            with self._stop.handling(), tqdm(total=len(calls), desc=desc, unit="call", disable=not progress) as bar:
                if chats:
                    await self._run_chats(calls, chats, outcomes, bar)
                if embeds and not self._stop.requested:
                    await self._run_embeddings(calls, embeds, outcomes, bar)
        except asyncio.CancelledError:
            if not self._stop.requested:
                raise
            raise self._stop.error(f"{sum(o is None for o in outcomes)} call(s) unanswered after "
                                   f"{self.grace_seconds:g} s of grace") from None
        finally:
            for client in [*self._clients.values(), *self._around.values()]:
                await client.aclose_transport()
        if self._stop.requested:
            raise self._stop.error(f"{sum(o is not None for o in outcomes)} of {len(calls)} call(s) done, "
                                   "the requests in flight finished")
        return [o for o in outcomes if o is not None]

    async def _run_chats(self, calls: list[ModelCall], idx: list[int], outcomes: list, bar) -> None:
        copies: dict[int, list[int]] = {}
        first: dict[tuple[str, str], int] = {}
        for i in idx:
            copies.setdefault(first.setdefault((calls[i].key, calls[i].text_from), i), []).append(i)

        async def one(i: int) -> None:
            if self._stop.requested:  # a signal arrived: start nothing new (those in flight finish)
                return
            call = calls[i]
            client = self._client_for(call)
            try:
                result = await client.chat(call.model, call.messages, text_from=call.text_from, **call.params)
            except LLMRequestError as exc:
                if not call.tolerates(exc.status, no_reply=exc.no_reply):
                    raise
                failed = CallOutcome(FAILURE, call.key, call.params_sent, reason=str(exc),
                                     status=None if exc.no_reply else exc.status,
                                     attempts=exc.attempts)
                for j in copies[i]:
                    outcomes[j] = failed
                bar.update(len(copies[i]))
                return
            outcomes[i] = outcome_of(call, result)
            for j in copies[i][1:]:
                self.usage.record_hit(calls[j].model)
                if result.ok:
                    client._use(calls[j].model, result.model or calls[j].model, result.usage)
                outcomes[j] = outcome_of(calls[j], result, repeat=True)
            bar.update(len(copies[i]))
            bar.set_postfix(cached=self.usage.cache_hits, sent=self.usage.requests_sent, refresh=False)

        await gather_until_error(list(copies), one, self.max_concurrency)

    async def _run_embeddings(self, calls: list[ModelCall], idx: list[int], outcomes: list, bar) -> None:
        for members in self._embedding_groups(calls, idx).values():
            head = calls[members[0]]
            client = self._client_for(head)
            if head.batch_size is not None:
                client.embed_batch_size = head.batch_size
            vectors = await client.embed(head.model, [calls[i].text for i in members], **head.params)
            for i, vec in zip(members, vectors):
                outcomes[i] = CallOutcome(ANSWER, calls[i].key, calls[i].params_sent, model=head.model,
                                          embedding=tuple(float(x) for x in vec))
            bar.update(len(members))

    @staticmethod
    def _embedding_groups(calls: Sequence[ModelCall], idx: Sequence[int]) -> dict[tuple, list[int]]:
        groups: dict[tuple, list[int]] = {}
        for i in idx:
            c = calls[i]
            groups.setdefault((c.base_url, c.model, repr(c._params), c.batch_size), []).append(i)
        return groups

    def record_work(self, calls: Sequence[ModelCall]) -> None:
        """Count the work of embedding ``calls`` whose vectors the caller took from its own store (e.g. the
        dense memory's embedding cache), from their rows in the response cache; sends nothing. A text
        without a row counts 0 tokens (:meth:`mnemetric.llm.client.LLMClient.record_embedding_work`)."""
        calls = [c for c in calls if c.endpoint == "embeddings"]
        for members in self._embedding_groups(calls, range(len(calls))).values():
            head = calls[members[0]]
            self._client_for(head).record_embedding_work(head.model, [calls[i].text for i in members], **head.params)

    # -- dry run ---------------------------------------------------------------------------------
    def plan(self, calls: Sequence[ModelCall]) -> dict[str, Any]:
        """Cached vs to-send and the estimated dollars (reads the cache only; no key, no network)."""
        from mnemetric.llm.dry_run import plan as plan_requests

        total = {"requests_total": 0, "cached": 0, "to_send": 0, "estimated_usd": 0.0}
        by_url: dict[str, list[ChatRequest]] = {}
        for c in calls:
            if c.endpoint == "chat":
                by_url.setdefault(c.base_url, []).append(ChatRequest(c.model, c.messages, c.params, c.text_from))
        for url, reqs in by_url.items():
            part = plan_requests(reqs, self.cache, base_url=url, prices=self.prices)
            for k in total:
                total[k] += part[k]
        return total

    # -- lifetime --------------------------------------------------------------------------------
    def close(self) -> None:
        """Close the response cache if this executor opened it."""
        if self._cache is not None and self._cache_arg is None:
            self._cache.close()
            self._cache = None
        self._clients.clear()
        self._around.clear()

    def __enter__(self) -> ImmediateExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
