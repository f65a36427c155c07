"""The one client through which Mnemetric talks to models (reader, judge, embeddings).

Built on the official ``openai`` SDK's ``AsyncOpenAI`` so any OpenAI-compatible server works
(OpenAI, Azure-style proxies, vLLM, Ollama, LiteLLM): ``base_url`` / ``api_key`` come from the
arguments, else from the SDK's own ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` environment variables.

Every call goes: response cache -> budget check -> network (bounded concurrency, our own retry
loop) -> commit to cache at once -> usage/cost bookkeeping. The SDK's built-in retries are off.

* Retried: HTTP 408/409/429/5xx, timeouts, connection errors and malformed JSON replies, with
  exponential backoff and full jitter; ``Retry-After`` / ``retry-after-ms`` are honoured.
* Not retried: 400/401/403/404/422 (and other 4xx) raise :class:`LLMRequestError` at once,
  saying what to fix.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import random
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import openai
from tqdm.auto import tqdm

from mnemetric.errors import MnemetricError

from .budget import Budget, PriceTable, UsageStats, estimate_chat_tokens, estimate_prompt_tokens
from .cache import ResponseCache, key_payload, normalize_base_url, output_params, request_key, url_secrets

RETRYABLE_STATUS = frozenset({408, 409, 429})
PASS_THROUGH = ("extra_headers", "extra_query")


class LLMRequestError(MnemetricError):
    """A model request failed in a way the user must fix (or the server kept failing)."""

    def __init__(self, message: str, *, status: int | None = None, attempts: int = 0):
        self.status = status
        self.attempts = attempts
        super().__init__(message)


class MalformedResponse(Exception):
    """The server answered HTTP 200 with a body that is not a usable OpenAI reply (retried)."""


@dataclass(frozen=True)
class Usage:
    """Token counts reported by the server."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """prompt + completion."""
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class ChatResult:
    """One chat answer. ``model`` is the model the server says it used (``response.model``).

    ``cost_usd`` is what *this call* cost: 0.0 for a cache hit, None if the model has no price.
    """

    text: str
    model: str
    usage: Usage
    request_sha256: str
    cached: bool
    cost_usd: float | None
    finish_reason: str | None = None
    texts: tuple[str, ...] = ()
    """All choices' texts (``n > 1``); ``text`` is the first."""


@dataclass(frozen=True)
class ChatRequest:
    """One chat request for :meth:`LLMClient.run_chat_batch` / :func:`plan`."""

    model: str
    messages: list[dict[str, Any]]
    params: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def coerce(cls, obj: ChatRequest | Mapping[str, Any]) -> ChatRequest:
        """Accept a ChatRequest or a mapping ``{"model", "messages", **params}``."""
        if isinstance(obj, ChatRequest):
            return obj
        rest = {k: v for k, v in obj.items() if k not in ("model", "messages", "params")}
        return cls(str(obj["model"]), list(obj["messages"]), {**dict(obj.get("params") or {}), **rest})


def parse_retry_after(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date), else None."""
    if not headers:
        return None
    lower = {str(k).lower(): str(v) for k, v in headers.items()}
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        try:
            value = float(lower[name]) / scale
        except (KeyError, ValueError):
            continue
        if math.isfinite(value):
            return max(0.0, value)
    try:
        when = email.utils.parsedate_to_datetime(lower["retry-after"])
    except (KeyError, TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _error_detail(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping) and inner.get("message"):
            return str(inner["message"])
    return str(getattr(exc, "message", "") or exc)


def _fatal_message(status: int, model: str, base_url: str, detail: str) -> str:
    fixes = {
        400: f"the server rejected the request as invalid: check the request (messages, max_tokens, "
        f"temperature and other parameters) for model '{model}'",
        401: f"authentication failed at {base_url}: check OPENAI_API_KEY (or the api_key passed in) is set "
        "and valid for this server",
        403: f"permission denied: check that OPENAI_API_KEY has access to model '{model}' (project/org)",
        404: f"not found: check the model name '{model}' and the base URL {base_url} (OPENAI_BASE_URL; "
        "OpenAI-compatible servers such as vLLM or Ollama usually end in /v1)",
        422: f"the server could not process the request: check the request parameters for model '{model}'",
    }
    fix = fixes.get(status, f"unexpected HTTP {status} for model '{model}' at {base_url}: check the request")
    return f"LLM request failed (HTTP {status}): {fix}. Server said: {detail}"


def _parse_json(raw: bytes) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise MalformedResponse(f"reply is not valid JSON ({exc.msg if hasattr(exc, 'msg') else exc})") from None
    if not isinstance(data, dict):
        raise MalformedResponse("reply is not a JSON object")
    return data


def parse_chat_response(raw: bytes) -> dict[str, Any]:
    """Decode and sanity-check a chat.completion body; :class:`MalformedResponse` if unusable."""
    data = _parse_json(raw)
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise MalformedResponse("reply has no 'choices'")
    if not all(isinstance(c, dict) and isinstance(c.get("message"), dict) for c in choices):
        raise MalformedResponse("reply choice has no 'message' object")
    return data


def parse_embeddings_response(raw: bytes, expected: int) -> dict[str, Any]:
    """Decode and sanity-check an embeddings body with ``expected`` vectors."""
    data = _parse_json(raw)
    items = data.get("data")
    if not isinstance(items, list) or len(items) != expected:
        raise MalformedResponse(f"reply has no 'data' list of {expected} embeddings")
    if not all(isinstance(i, dict) and isinstance(i.get("embedding"), list) for i in items):
        raise MalformedResponse("reply embedding is not a list of floats (encoding_format must be float)")
    return data


def _usage(data: Mapping[str, Any]) -> Usage:
    usage = data.get("usage") or {}
    return Usage(int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0))


def chat_result(data: Mapping[str, Any], key: str, *, cached: bool, cost_usd: float | None) -> ChatResult:
    """Build a :class:`ChatResult` from a (cached or fresh) chat.completion dict."""
    choices = sorted(data["choices"], key=lambda c: c.get("index", 0))
    texts = tuple(str(c["message"].get("content") or "") for c in choices)
    return ChatResult(
        text=texts[0],
        model=str(data.get("model") or ""),
        usage=_usage(data),
        request_sha256=key,
        cached=cached,
        cost_usd=cost_usd,
        finish_reason=choices[0].get("finish_reason"),
        texts=texts,
    )


@dataclass
class _LoopState:
    """SDK client and semaphore bound to one event loop (httpx pools are loop-bound)."""

    loop: asyncio.AbstractEventLoop
    sdk: openai.AsyncOpenAI
    semaphore: asyncio.Semaphore


class LLMClient:
    """Cached, budgeted, retrying client for chat completions and embeddings.

    Args:
        base_url / api_key: server and key; default to ``$OPENAI_BASE_URL`` / ``$OPENAI_API_KEY``
            (read by the SDK). The key is only ever held in memory and sent to the server.
        max_concurrency: most requests on the wire at once (per event loop).
        timeout: seconds per request attempt.
        max_attempts, backoff_base, backoff_cap: retry loop; the wait before retry ``k`` is
            uniform(0, min(cap, base * 2**(k-1))) unless the server sent Retry-After.
        max_retry_after: longest server-requested wait we honour (longer ones are clipped).
        cache: a :class:`ResponseCache`; default opens the shared one unless ``use_cache=False``.
        budget, prices, stats: limits, price table and usage counters (fresh ones by default).
    """

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        max_concurrency: int = 8,
        timeout: float = 120.0,
        max_attempts: int = 6,
        backoff_base: float = 1.0,
        backoff_cap: float = 60.0,
        max_retry_after: float = 300.0,
        cache: ResponseCache | None = None,
        use_cache: bool = True,
        budget: Budget | None = None,
        prices: PriceTable | None = None,
        stats: UsageStats | None = None,
        embed_batch_size: int = 256,
        rng: random.Random | None = None,
    ):
        if max_concurrency < 1 or max_attempts < 1:
            raise ValueError("max_concurrency and max_attempts must be >= 1")
        self._base_url_arg, self._api_key = base_url, api_key
        self.max_concurrency, self.timeout = max_concurrency, timeout
        self.max_attempts, self.backoff_base, self.backoff_cap = max_attempts, backoff_base, backoff_cap
        self.max_retry_after = max_retry_after
        self._owns_cache = cache is None and use_cache
        self.cache = cache if cache is not None else (ResponseCache() if use_cache else None)
        self.budget = budget or Budget()
        self.prices = prices
        self.stats = stats if stats is not None else UsageStats()
        self.embed_batch_size = embed_batch_size
        self._rng = rng or random.Random()
        self._spare_sdk: openai.AsyncOpenAI | None = self._new_sdk()
        self.base_url = normalize_base_url(str(self._spare_sdk.base_url))  # no credentials: safe to show
        self._url_secrets = [*url_secrets(base_url), *url_secrets(str(self._spare_sdk.base_url))]
        self._state: _LoopState | None = None

    def __repr__(self) -> str:
        return f"LLMClient(base_url={self.base_url!r}, max_concurrency={self.max_concurrency})"

    # -- plumbing ------------------------------------------------------------------------------
    def _new_sdk(self) -> openai.AsyncOpenAI:
        try:
            return openai.AsyncOpenAI(
                base_url=self._base_url_arg, api_key=self._api_key, timeout=self.timeout, max_retries=0
            )
        except openai.OpenAIError as exc:
            raise LLMRequestError(
                "no API key: set OPENAI_API_KEY or pass api_key (for local servers such as vLLM or "
                f"Ollama any non-empty value works). SDK said: {exc}"
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

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_retry_after)
        return self._rng.uniform(0.0, min(self.backoff_cap, self.backoff_base * 2 ** (attempt - 1)))

    # -- retry loop ----------------------------------------------------------------------------
    async def _send(self, model: str, call: Callable[[], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
        """Run ``call`` with our retry policy; raise :class:`LLMRequestError` when it cannot work."""
        last: BaseException | None = None
        for attempt in range(1, self.max_attempts + 1):
            retry_after = None
            try:
                return await call()
            except openai.APIStatusError as exc:
                status = exc.status_code
                if status not in RETRYABLE_STATUS and status < 500:
                    msg = _fatal_message(status, model, self.base_url, _error_detail(exc))
                    raise LLMRequestError(self._scrub(msg), status=status, attempts=attempt) from None
                last, retry_after = exc, parse_retry_after(exc.response.headers)
            except (openai.APIConnectionError, MalformedResponse) as exc:  # includes timeouts
                last = exc
            if attempt < self.max_attempts:
                self.stats.record_retry(model)
                await asyncio.sleep(self._backoff(attempt, retry_after))
        raise LLMRequestError(self._gave_up(model, last), attempts=self.max_attempts) from None

    def _gave_up(self, model: str, last: BaseException | None) -> str:
        if isinstance(last, openai.APITimeoutError):
            what = f"timed out after {self.timeout}s (raise timeout, lower max_concurrency)"
        elif isinstance(last, openai.APIConnectionError):
            what = f"could not connect to {self.base_url} (is the server running? check OPENAI_BASE_URL)"
        elif isinstance(last, MalformedResponse):
            what = f"server kept sending malformed replies: {last}"
        elif isinstance(last, openai.APIStatusError):
            what = f"HTTP {last.status_code}: {_error_detail(last)} (server overloaded or rate limited)"
        else:
            what = repr(last)
        return self._scrub(
            f"LLM request to model '{model}' at {self.base_url} failed after {self.max_attempts} attempt(s): "
            f"{what}. Responses received so far are cached; rerun to resume (or raise max_attempts)."
        )

    async def _paid(self, model: str, estimate: float | None, call: Callable[[], Awaitable[dict]]) -> dict:
        """Budget check, then the network call under the concurrency limit."""
        self.budget.reserve(model, estimate)
        try:
            async with self._loop_state().semaphore:
                return await self._send(model, call)
        except BaseException:
            self.budget.settle(estimate, 0.0)
            raise

    def _account(self, model: str, resolved: str, estimate: float | None, usage: Usage) -> float | None:
        cost = self._price([resolved, model], usage.prompt_tokens, usage.completion_tokens)
        self.budget.settle(estimate, cost)
        self.stats.record_sent(model, usage.prompt_tokens, usage.completion_tokens, cost)
        return cost

    # -- chat ----------------------------------------------------------------------------------
    async def _post_chat(self, model: str, messages: list[dict], params: Mapping[str, Any]) -> dict[str, Any]:
        extra = {k: params[k] for k in PASS_THROUGH if k in params}
        raw = await self._loop_state().sdk.chat.completions.with_raw_response.create(
            model=model, messages=messages, timeout=params.get("timeout", self.timeout),
            **output_params(params), **extra,
        )
        return parse_chat_response(raw.http_response.content)

    async def chat(self, model: str, messages: Sequence[Mapping[str, Any]], **params: Any) -> ChatResult:
        """One chat completion: from the cache if this exact request was answered before, else sent.

        ``params`` are OpenAI request parameters (temperature, max_tokens, seed, extra_body, ...);
        ``timeout`` / ``extra_headers`` / ``extra_query`` are transport-only and not in the key.
        """
        if params.get("stream"):
            raise ValueError("streaming is not supported by LLMClient.chat")
        messages = [dict(m) for m in messages]
        payload = key_payload("chat", self.base_url, model, messages, params)
        key = request_key(payload)
        hit = self.cache.get(key) if self.cache is not None else None
        if hit is not None:
            self.stats.record_hit(model)
            return chat_result(hit, key, cached=True, cost_usd=0.0)
        prompt, out = estimate_chat_tokens(messages, params)
        estimate = self._price([model], prompt, out)
        data = await self._paid(model, estimate, lambda: self._post_chat(model, messages, params))
        if self.cache is not None:
            self.cache.put(key, payload, data)  # commit before anything else can fail
        cost = self._account(model, str(data.get("model") or model), estimate, _usage(data))
        return chat_result(data, key, cached=False, cost_usd=cost)

    # -- embeddings ----------------------------------------------------------------------------
    async def _post_embed(self, model: str, texts: list[str], params: Mapping[str, Any]) -> dict[str, Any]:
        raw = await self._loop_state().sdk.embeddings.with_raw_response.create(
            model=model, input=texts, encoding_format="float",
            timeout=params.get("timeout", self.timeout), **output_params(params),
        )
        return parse_embeddings_response(raw.http_response.content, len(texts))

    async def _embed_chunk(self, model: str, texts: list[str], params: Mapping[str, Any]) -> dict[str, list]:
        estimate = self._price([model], estimate_prompt_tokens(texts), 0)
        data = await self._paid(model, estimate, lambda: self._post_embed(model, texts, params))
        resolved = str(data.get("model") or model)
        vectors = {}
        for item in sorted(data["data"], key=lambda d: d.get("index", 0)):
            text = texts[item.get("index", len(vectors))]
            vectors[text] = [float(x) for x in item["embedding"]]
            if self.cache is not None:
                payload = key_payload("embeddings", self.base_url, model, text, params)
                self.cache.put(request_key(payload), payload, {"model": resolved, "embedding": vectors[text]})
        self._account(model, resolved, estimate, _usage(data))
        return vectors

    async def embed(self, model: str, texts: Sequence[str], **params: Any) -> list[list[float]]:
        """Embedding vectors for ``texts`` (in order). Each text is cached on its own; only the
        texts not in the cache are sent (a repeated text once), ``embed_batch_size`` per request.
        If a request fails, the chunks already answered stay cached and the first error is raised."""
        found: dict[str, list[float]] = {}
        missing: list[str] = []
        unique = dict.fromkeys(texts)
        for _ in range(len(texts) - len(unique)):  # a repeated text is sent once: the repeats are hits
            self.stats.record_hit(model)
        for text in unique:
            hit = None
            if self.cache is not None:
                hit = self.cache.get(request_key(key_payload("embeddings", self.base_url, model, text, params)))
            if hit is not None:
                self.stats.record_hit(model)
                found[text] = hit["embedding"]
            else:
                missing.append(text)
        size = max(1, self.embed_batch_size)
        chunks = [missing[i : i + size] for i in range(0, len(missing), size)]
        for vectors in await self._embed_chunks(model, chunks, params):
            found.update(vectors)
        return [found[t] for t in texts]

    async def _embed_chunks(self, model: str, chunks: list[list[str]], params: Mapping[str, Any]) -> list[dict]:
        """Send every chunk, at most ``max_concurrency`` at once. After the first error no new chunk
        starts; chunks already on the wire finish (and are cached), then the first error is raised."""
        gate = asyncio.Semaphore(self.max_concurrency)
        errors: list[Exception] = []

        async def one(chunk: list[str]) -> dict[str, list]:
            async with gate:
                if errors:
                    return {}
                try:
                    return await self._embed_chunk(model, chunk, params)
                except Exception as exc:
                    errors.append(exc)
                    raise

        outcomes = await asyncio.gather(*(one(c) for c in chunks), return_exceptions=True)
        failed = errors or [o for o in outcomes if isinstance(o, BaseException)]
        if failed:
            raise failed[0]
        return outcomes

    # -- batches and sync wrappers -------------------------------------------------------------
    async def arun_chat_batch(
        self, requests: Iterable[ChatRequest | Mapping[str, Any]], progress: bool = True
    ) -> list[ChatResult]:
        """Run many chat requests, at most ``max_concurrency`` at once; results in input order.

        On the first error no new request starts; requests already on the wire finish (and are
        cached), then the error is raised. Identical requests (same cache key) are sent once: the
        first gets the answer, the repeats a copy of it counted as a cache hit (``cached=True``, $0).
        """
        reqs = [ChatRequest.coerce(r) for r in requests]
        copies = self._same_requests(reqs)
        results: list[ChatResult | None] = [None] * len(reqs)
        gate = asyncio.Semaphore(self.max_concurrency)
        errors: list[BaseException] = []
        with tqdm(total=len(reqs), desc="llm", unit="req", disable=not progress) as bar:

            async def one(i: int, req: ChatRequest) -> None:
                async with gate:
                    if errors:
                        return
                    try:
                        results[i] = await self.chat(req.model, req.messages, **req.params)
                    except Exception as exc:
                        errors.append(exc)
                        return
                    for j in copies[i][1:]:
                        self.stats.record_hit(reqs[j].model)
                        results[j] = replace(results[i], cached=True, cost_usd=0.0)
                    bar.update(len(copies[i]))
                    bar.set_postfix(cached=self.stats.cache_hits, sent=self.stats.requests_sent, refresh=False)

            await asyncio.gather(*(one(i, reqs[i]) for i in copies))
        if errors:
            raise errors[0]
        return [r for r in results if r is not None]

    def _same_requests(self, reqs: Sequence[ChatRequest]) -> dict[int, list[int]]:
        """Index of each distinct request's first occurrence -> indices of all its occurrences."""
        first: dict[str, int] = {}
        copies: dict[int, list[int]] = {}
        for i, req in enumerate(reqs):
            payload = key_payload("chat", self.base_url, req.model, [dict(m) for m in req.messages], req.params)
            copies.setdefault(first.setdefault(request_key(payload), i), []).append(i)
        return copies

    def run_chat_batch(
        self, requests: Iterable[ChatRequest | Mapping[str, Any]], progress: bool = True
    ) -> list[ChatResult]:
        """Synchronous :meth:`arun_chat_batch` (runs its own event loop)."""
        return asyncio.run(self._then_close(self.arun_chat_batch(requests, progress)))

    def run_embed(self, model: str, texts: Sequence[str], **params: Any) -> list[list[float]]:
        """Synchronous :meth:`embed` (runs its own event loop)."""
        return asyncio.run(self._then_close(self.embed(model, texts, **params)))

    def plan(self, requests: Iterable[ChatRequest | Mapping[str, Any]]) -> dict[str, Any]:
        """Dry run: how many of ``requests`` are cached, how many would be sent, estimated $."""
        from .dry_run import plan

        return plan(requests, self.cache, base_url=self.base_url, prices=self.prices)

    async def _then_close(self, coro: Awaitable[Any]) -> Any:
        try:
            return await coro
        finally:
            await self.aclose_transport()

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
