"""The one client through which Mnemetric talks to models (reader, judge, embeddings), one request (or
one embeddings batch) at a time: many calls at once — concurrency, dedup, the first-error gate — are
:class:`mnemetric.execute.ImmediateExecutor`'s, which runs every component's calls through this client.

Built on the official ``openai`` SDK's ``AsyncOpenAI`` so any OpenAI-compatible server works
(OpenAI, Azure-style proxies, vLLM, Ollama, LiteLLM): ``base_url`` / ``api_key`` come from the
arguments, else from the SDK's own ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` environment variables.
The SDK is built lazily, at the first request that must be sent: a dry run
(:func:`mnemetric.llm.dry_run.plan`) or a fully cached run needs no API key.

Every chat call goes: response cache -> claim the key (cross-process single flight,
:mod:`mnemetric.llm.claims`) -> budget check -> network (bounded concurrency, our own retry loop,
:mod:`mnemetric.llm.retry`) -> a usable answer is committed to the cache at once (and the claim
dropped) -> usage bookkeeping. A non-answer (:mod:`mnemetric.llm.replies`) is retried a bounded
number of times, never cached, and returned as a result with ``failure`` set: the caller reports
the question as failed. Which part of a reply is its text is the request's ``text_from`` rule
(default "content"; "content_or_reasoning" also takes text parts and ``message.reasoning``); the
rule is not in the cache key. The SDK's built-in retries are off.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import ssl
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mnemetric.llm.sdk import openai

from mnemetric.llm.batch_files import went_by_batch
from mnemetric.llm.budget import Budget, PriceTable, UsageStats, estimate_chat_tokens
from mnemetric.llm.cache import ResponseCache, key_payload, normalize_base_url, output_params, request_key, url_secrets
from mnemetric.llm.claims import new_token
from mnemetric.llm.embed import EmbedMixin
from mnemetric.llm.replies import chat_result, check_text_from, non_answer_reason, parse_chat_response, usage_of
from mnemetric.llm.tally import note
from mnemetric.llm.retry import RetryPolicy, parse_retry_after, send_with_retries, transport_knobs
from mnemetric.llm.types import ChatRequest, ChatResult, LLMRequestError, MalformedResponse, Usage

DEFAULT_MAX_CONCURRENCY = 32
"""Requests in flight at once when ``llm.max_concurrency`` is not set (conf/config.yaml sets the same): enough
for a judge run to be ~20x one-at-a-time against a 100 ms server (tests/bench/judge.py); a low rate-limit tier
answers 429, which the client retries with backoff (Retry-After honoured) — lower ``llm.max_concurrency`` there."""

__all__ = ["ChatRequest", "ChatResult", "LLMClient", "LLMRequestError", "MalformedResponse", "Usage",
           "parse_retry_after"]

PASS_THROUGH = ("extra_headers", "extra_query")
NO_KEY = "sk-mnemetric-unset"
"""Placeholder key used only to let the SDK resolve the base URL when no key is configured."""
POLL_START, POLL_MAX = 0.02, 0.5
"""Seconds between looks at a request another process has claimed (doubling up to the max)."""


@functools.lru_cache(maxsize=1)
def _ssl_context() -> ssl.SSLContext:
    """One TLS context per process, as httpx builds its default (certifi, or $SSL_CERT_FILE / $SSL_CERT_DIR):
    building it takes ~0.2 s, and an SDK client is built per event loop (the model proxy: one per request)."""
    import httpx

    return httpx.create_ssl_context()


@dataclass
class _LoopState:
    """SDK client and semaphore bound to one event loop (httpx pools are loop-bound)."""

    loop: asyncio.AbstractEventLoop
    sdk: openai.AsyncOpenAI
    semaphore: asyncio.Semaphore


class LLMClient(EmbedMixin):
    """Cached, budgeted, retrying client for chat completions and embeddings.

    Args:
        base_url / api_key: server and key; default to ``$OPENAI_BASE_URL`` / ``$OPENAI_API_KEY``
            (read by the SDK). The key is only ever held in memory and sent to the server.
        max_concurrency: most requests on the wire at once (per event loop).
        timeout: seconds per request attempt.
        max_attempts, backoff_base, backoff_cap, max_retry_after, non_answer_attempts: the retry
            policy (:class:`~mnemetric.llm.retry.RetryPolicy`).
        cache: a :class:`ResponseCache`; default opens the shared one unless ``use_cache=False``.
        budget, prices, stats: limits, price table and usage counters (fresh ones by default).
        role: who is asking ("reader", "judge", "embeddings"); recorded with each cached row.
        claim_timeout: age (s) after which another process's claim counts as abandoned (default:
            the longest one request can take under the retry policy).
    """

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
        timeout: float = 120.0,
        max_attempts: int = 6,
        backoff_base: float = 1.0,
        backoff_cap: float = 60.0,
        max_retry_after: float = 300.0,
        non_answer_attempts: int = 2,
        cache: ResponseCache | None = None,
        use_cache: bool = True,
        budget: Budget | None = None,
        prices: PriceTable | None = None,
        stats: UsageStats | None = None,
        embed_batch_size: int = 256,
        rng: Any = None,
        role: str | None = None,
        claim_timeout: float | None = None,
    ):
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be >= 1")
        self._base_url_arg, self._api_key = base_url, api_key
        self.max_concurrency, self.timeout = max_concurrency, timeout
        self.retry = RetryPolicy(max_attempts, backoff_base, backoff_cap, max_retry_after, non_answer_attempts,
                                 **({"rng": rng} if rng is not None else {}))
        self._owns_cache = cache is None and use_cache
        self.cache = cache if cache is not None else (ResponseCache() if use_cache else None)
        self.budget = budget or Budget()
        self.prices = prices
        self.stats = stats if stats is not None else UsageStats()
        self.embed_batch_size = embed_batch_size
        self.role = role
        self.claim_timeout = claim_timeout if claim_timeout is not None else self.retry.longest_request(timeout)
        self._spare_sdk, resolved_url = self._resolve_sdk()
        self.base_url = normalize_base_url(resolved_url)  # no credentials: safe to show
        self._url_secrets = [*url_secrets(base_url), *url_secrets(resolved_url)]
        self._state: _LoopState | None = None

    def __repr__(self) -> str:
        return f"LLMClient(base_url={self.base_url!r}, max_concurrency={self.max_concurrency})"

    @property
    def max_attempts(self) -> int:
        """Attempts per request for transport errors (the retry policy's)."""
        return self.retry.max_attempts

    # -- plumbing ------------------------------------------------------------------------------
    def _resolve_sdk(self) -> tuple[openai.AsyncOpenAI | None, str]:
        """The SDK (if credentials are configured) and the base URL it would use. Without a key the
        URL is resolved by an SDK built with a placeholder key, then dropped; the missing-key
        error is raised only when a request must really be sent."""
        try:
            sdk = self._new_sdk()
            return sdk, str(sdk.base_url)
        except LLMRequestError:
            probe = openai.AsyncOpenAI(base_url=self._base_url_arg, api_key=NO_KEY, max_retries=0)
            return None, str(probe.base_url)

    def _new_sdk(self) -> openai.AsyncOpenAI:
        try:
            return openai.AsyncOpenAI(
                base_url=self._base_url_arg, api_key=self._api_key, timeout=self.timeout, max_retries=0,
                http_client=openai.DefaultAsyncHttpxClient(verify=_ssl_context()),
            )
        except openai.OpenAIError as exc:
            raise LLMRequestError(
                "no API key: set OPENAI_API_KEY or pass api_key (for local servers such as vLLM or "
                f"Ollama any non-empty value works; a --dry-run needs none). SDK said: {exc}"
            ) from None

    def _loop_state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        if self._state is None or self._state.loop is not loop:
            sdk, self._spare_sdk = self._spare_sdk or self._new_sdk(), None
            self._state = _LoopState(loop, sdk, asyncio.Semaphore(self.max_concurrency))
        return self._state

    def _scrub(self, text: str) -> str:
        """Remove the API key and any credentials of the base URL from text we are about to show or raise."""
        sdk_key = getattr(self._state.sdk if self._state else None, "api_key", None)
        found = {self._api_key, sdk_key, *self._url_secrets}
        for secret in sorted((s for s in found if isinstance(s, str) and len(s) >= 4), key=len, reverse=True):
            text = text.replace(secret, "***")
        return text

    def _price(self, models: Iterable[str], prompt_tokens: int, completion_tokens: int) -> float | None:
        return self.prices.cost(models, prompt_tokens, completion_tokens) if self.prices else None

    def _use(self, model: str, resolved: str, usage: Usage, responses: int = 1, *, batch: bool = False) -> float | None:
        """Count ``responses`` used response(s) in the work usage (``batch``: a response that came through a
        Batch API, priced so in the work usage); return one's work cost at the live price."""
        price = self.prices.first([resolved, model]) if self.prices else None
        self.stats.work.add(model, resolved, usage.prompt_tokens, usage.completion_tokens, price, responses,
                            batch=batch)
        cost = price.cost(usage.prompt_tokens, usage.completion_tokens) if price else None
        note(work_responses=responses, prompt_tokens=usage.prompt_tokens * responses,
             completion_tokens=usage.completion_tokens * responses, usd=(cost or 0.0) * responses,
             unpriced_responses=0 if price else responses)
        return cost

    # -- network -------------------------------------------------------------------------------
    def _policy(self, params: Mapping[str, Any]) -> RetryPolicy:
        """The retry policy of one request: the client's, or ``max_retries`` + 1 attempts when the request says
        (a transport option, never in the key)."""
        if params.get("max_retries") is None:
            return self.retry
        return dataclasses.replace(self.retry, max_attempts=int(params["max_retries"]) + 1)

    async def _paid(self, model: str, estimate: float | None, call, params: Mapping[str, Any] | None = None) -> dict:
        """Budget check, then the network call (with retries) under the concurrency limit."""
        params = params or {}
        self.budget.reserve(model, estimate)
        try:
            async with self._loop_state().semaphore:
                return await send_with_retries(call, self._policy(params), model=model, base_url=self.base_url,
                                               timeout=float(params.get("timeout") or self.timeout), scrub=self._scrub,
                                               on_retry=lambda: self.stats.record_retry(model),
                                               knobs=transport_knobs(params))
        except BaseException:
            self.budget.settle(estimate, 0.0)
            raise

    def _account(self, model: str, resolved: str, estimate: float | None, usage: Usage) -> float | None:
        """Settle the budget and count one sent request; return what it cost."""
        cost = self._price([resolved, model], usage.prompt_tokens, usage.completion_tokens)
        self.budget.settle(estimate, cost)
        self.stats.record_sent(model, usage.prompt_tokens, usage.completion_tokens, cost)
        return cost

    # -- claims (single flight across processes) -----------------------------------------------
    async def _claim_or_wait(self, key: str, model: str, token: str, get=None,
                             text_from: str = "content") -> dict[str, Any] | None:
        """Claim ``key`` under ``token`` for sending (→ None), or wait for the response of whoever
        holds the claim (another process, or another call in this one) (→ it).

        Bounded: a claim older than ``claim_timeout`` (or of a dead process) is taken over.
        ``get`` reads the stored response (default: a usable chat response)."""
        get = get or (lambda k: self._usable_hit(k, model, text_from))
        delay, waited = POLL_START, False
        while True:
            state = self.cache.claim(key, token, self.claim_timeout)
            if state in ("mine", "taken"):
                self.stats.taken_over += state == "taken"
                return None
            if state == "done":
                hit = get(key)
                if hit is not None:
                    self.stats.waited += waited
                    return hit
                continue
            waited = True
            await asyncio.sleep(delay)
            delay = min(delay * 2, POLL_MAX)

    def _usable_hit(self, key: str, model: str, text_from: str = "content") -> dict[str, Any] | None:
        """The cached chat response, unless it is a non-answer under ``text_from`` (stored by an older
        version, or usable only under another rule): then it is evicted, so the question is asked again."""
        hit = self.cache.get(key) if self.cache is not None else None
        if hit is not None and non_answer_reason(hit, text_from) is not None:
            self.cache.delete([key])
            return None
        return hit

    # -- chat ----------------------------------------------------------------------------------
    async def _post_chat(self, model: str, messages: list[dict], params: Mapping[str, Any]) -> dict[str, Any]:
        extra = {k: params[k] for k in PASS_THROUGH if k in params}
        raw = await self._loop_state().sdk.chat.completions.with_raw_response.create(
            model=model, messages=messages, timeout=params.get("timeout", self.timeout),
            **output_params(params), **extra,
        )
        return parse_chat_response(raw.http_response.content)

    def _hit_result(self, hit: Mapping[str, Any], key: str, model: str, text_from: str) -> ChatResult:
        self.stats.record_hit(model)
        resolved = str(hit.get("model") or model)
        cost = self._use(model, resolved, usage_of(hit), batch=went_by_batch(hit))
        return chat_result(hit, key, cached=True, cost_usd=cost, attempts=0, text_from=text_from)

    async def chat(self, model: str, messages: Sequence[Mapping[str, Any]], *, text_from: str = "content",
                   **params: Any) -> ChatResult:
        """One chat completion: from the cache if this exact request was answered before, else sent.

        ``params`` are OpenAI request parameters (temperature, max_tokens, seed, extra_body, ...);
        ``timeout`` / ``extra_headers`` / ``extra_query`` are transport-only and not in the key.
        ``text_from`` is the reply-text rule (:mod:`mnemetric.llm.replies`; not sent, not in the key).
        A non-answer gives a result with ``failure`` set (never cached, never raised).
        """
        if params.get("stream"):
            raise ValueError("streaming is not supported by LLMClient.chat")
        check_text_from(text_from)
        messages = [dict(m) for m in messages]
        payload = key_payload("chat", self.base_url, model, messages, params)
        key = request_key(payload)
        token = new_token()  # one claim per call: concurrent calls for one key send it once too
        hit = self._usable_hit(key, model, text_from)
        if hit is None and self.cache is not None:
            hit = await self._claim_or_wait(key, model, token, text_from=text_from)
        if hit is not None:
            return self._hit_result(hit, key, model, text_from)
        try:
            return await self._send_chat(model, messages, params, payload, key, token, text_from)
        finally:
            if self.cache is not None:
                self.cache.release([key], token)  # no-op once the response is stored

    async def _send_chat(self, model: str, messages: list[dict], params: Mapping[str, Any], payload: dict,
                         key: str, token: str, text_from: str = "content") -> ChatResult:
        """Send until a usable answer or ``non_answer_attempts`` non-answers; commit a usable one."""
        prompt, out = estimate_chat_tokens(messages, params)
        estimate = self._price([model], prompt, out)
        attempts = self.retry.non_answer_attempts
        for attempt in range(1, attempts + 1):
            data = await self._paid(model, estimate, lambda: self._post_chat(model, messages, params), params)
            resolved = str(data.get("model") or model)
            if non_answer_reason(data, text_from) is None:
                if self.cache is not None:  # commit before anything else can fail
                    self.cache.put(key, payload, data, stage=self.role, release=token)
                self._account(model, resolved, estimate, usage_of(data))
                cost = self._use(model, resolved, usage_of(data))
                return chat_result(data, key, cached=False, cost_usd=cost, attempts=attempt, text_from=text_from)
            cost = self._account(model, resolved, estimate, usage_of(data))
            self.stats.record_non_answer(model)
            if attempt < attempts:
                self.stats.record_retry(model)
                await asyncio.sleep(self.retry.backoff(attempt))
        return chat_result(data, key, cached=False, cost_usd=cost, attempts=attempts, text_from=text_from)

    # -- lifetime (many calls at once: mnemetric.execute.ImmediateExecutor) ---------------------
    async def aclose_transport(self) -> None:
        """Close the HTTP connections of the current event loop's SDK client."""
        state, self._state = self._state, None
        if state is not None:
            await state.sdk.close()

    def close(self) -> None:
        """Close the response cache if this client opened it."""
        if self._owns_cache and self.cache is not None:
            self.cache.close()

    async def aclose(self) -> None:
        """Close HTTP connections and (if owned) the cache; for use from async code."""
        await self.aclose_transport()
        self.close()

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
