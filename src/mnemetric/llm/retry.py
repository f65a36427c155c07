"""The retry policy of the LLM client, and its error messages.

* Retried: HTTP 408/409/429/5xx, timeouts, connection errors and malformed JSON replies, up to
  ``max_attempts`` attempts, with exponential backoff and full jitter: the wait before retry
  ``k`` is uniform(0, min(cap, base * 2**(k-1))), unless the server sent ``Retry-After`` /
  ``retry-after-ms`` (honoured up to ``max_retry_after`` seconds).
* Not retried: 400/401/403/404/422 (and other 4xx) raise :class:`LLMRequestError` at once,
  saying what to fix.
* Non-answers (see :mod:`mnemetric.llm.replies`) are a separate, smaller budget:
  ``non_answer_attempts`` responses in all (default 2: one retry, after the same backoff). A
  non-answer may be transient (a server hiccup, a flaky filter), but at temperature 0 a refusal
  usually repeats, and every retry is a paid request; so one retry, then the question is reported
  failed. Each non-answer attempt counts against the budget like any request.
"""

from __future__ import annotations

import asyncio
import email.utils
import math
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mnemetric.llm.sdk import openai

from mnemetric.llm.types import LLMRequestError, MalformedResponse

RETRYABLE_STATUS = frozenset({408, 409, 429})


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


@dataclass
class RetryPolicy:
    """How often and how long to retry (see the module docstring)."""

    max_attempts: int = 6
    backoff_base: float = 1.0
    backoff_cap: float = 60.0
    max_retry_after: float = 300.0
    non_answer_attempts: int = 2
    rng: random.Random = field(default_factory=random.Random)

    def __post_init__(self) -> None:
        if self.max_attempts < 1 or self.non_answer_attempts < 1:
            raise ValueError("max_attempts and non_answer_attempts must be >= 1")

    def backoff(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based)."""
        if retry_after is not None:
            return min(retry_after, self.max_retry_after)
        return self.rng.uniform(0.0, min(self.backoff_cap, self.backoff_base * 2 ** (attempt - 1)))

    def longest_request(self, timeout: float) -> float:
        """An upper bound on how long one request (all its attempts and waits) can take: used as
        the age after which another process's claim on a request counts as abandoned."""
        waits = (self.max_attempts - 1) * max(self.backoff_cap, min(self.max_retry_after, 60.0))
        return self.non_answer_attempts * (self.max_attempts * timeout + waits) + 60.0


def error_detail(exc: openai.APIStatusError) -> str:
    """The server's error message from an HTTP error reply."""
    body = exc.body
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping) and inner.get("message"):
            return str(inner["message"])
    return str(getattr(exc, "message", "") or exc)


def fatal_message(status: int, model: str, base_url: str, detail: str) -> str:
    """What to fix for a non-retryable HTTP status."""
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


OWN_TIMEOUT = "the timeout the request's component sets"
OWN_RETRIES = "that component's max_retries"
"""The knobs a request that carries its own transport (``timeout`` / ``max_retries`` in its params) answers to:
the llm settings' ``timeout`` and ``max_attempts`` do not apply to it."""


def transport_knobs(params: Mapping[str, Any]) -> tuple[str, str]:
    """The names of the timeout and attempts settings that govern a request with these params: its own
    (:data:`OWN_TIMEOUT`, :data:`OWN_RETRIES`) where it carries ``timeout`` / ``max_retries``, else the llm
    settings' ``timeout`` and ``max_attempts``."""
    return (OWN_TIMEOUT if params.get("timeout") else "timeout",
            OWN_RETRIES if params.get("max_retries") is not None else "max_attempts")


def gave_up_message(model: str, base_url: str, timeout: float, attempts: int, last: BaseException | None,
                    knobs: tuple[str, str] = ("timeout", "max_attempts")) -> str:
    """Why the retry loop stopped, and what to do (``knobs``: the names of the timeout and attempts settings
    that govern this request)."""
    if isinstance(last, openai.APITimeoutError):
        what = f"timed out after {timeout}s (raise {knobs[0]}, lower max_concurrency)"
    elif isinstance(last, openai.APIConnectionError):
        what = f"could not connect to {base_url} (is the server running? check OPENAI_BASE_URL)"
    elif isinstance(last, MalformedResponse):
        what = f"server kept sending malformed replies: {last}"
    elif isinstance(last, openai.APIStatusError):
        what = f"HTTP {last.status_code}: {error_detail(last)} (server overloaded or rate limited)"
    else:
        what = repr(last)
    return (f"LLM request to model '{model}' at {base_url} failed after {attempts} attempt(s): {what}. "
            f"Responses received so far are cached; rerun to resume (or raise {knobs[1]}).")


async def send_with_retries(call: Callable[[], Awaitable[dict[str, Any]]], policy: RetryPolicy, *, model: str,
                            base_url: str, timeout: float, scrub: Callable[[str], str],
                            on_retry: Callable[[], None],
                            knobs: tuple[str, str] = ("timeout", "max_attempts")) -> dict[str, Any]:
    """Run ``call`` under ``policy``; raise :class:`LLMRequestError` when it cannot work (its message names
    ``knobs``, see :func:`gave_up_message`)."""
    last: BaseException | None = None
    for attempt in range(1, policy.max_attempts + 1):
        retry_after = None
        try:
            return await call()
        except openai.APIStatusError as exc:
            status = exc.status_code
            if status not in RETRYABLE_STATUS and status < 500:
                msg = fatal_message(status, model, base_url, error_detail(exc))
                raise LLMRequestError(scrub(msg), status=status, attempts=attempt) from None
            last, retry_after = exc, parse_retry_after(exc.response.headers)
        except (openai.APIConnectionError, MalformedResponse) as exc:  # includes timeouts
            last = exc
        if attempt < policy.max_attempts:
            on_retry()
            await asyncio.sleep(policy.backoff(attempt, retry_after))
    message = gave_up_message(model, base_url, timeout, policy.max_attempts, last, knobs)
    status = last.status_code if isinstance(last, openai.APIStatusError) else None
    raise LLMRequestError(scrub(message), status=status, attempts=policy.max_attempts, no_reply=True) from None
