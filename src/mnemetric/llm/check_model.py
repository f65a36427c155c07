"""Is a model snapshot still served? One cheap request to an OpenAI-compatible endpoint, never cached.

A judge snapshot (LongMemEval's gpt-4o-2024-08-06) can be retired by its provider; a run that finds out
half-way fails every remaining question. :func:`check_model` asks once, with ``max_tokens`` small, bypassing
the response cache (a cached reply proves nothing about today) and without retries, and tells three cases
apart: ``served`` (a reply came; the model the server named is kept), ``not served`` (HTTP 404, e.g.
``model_not_found``), ``error`` (anything else: no key, a refused key, no connection, another status).
Nothing is written: the answer is for the terminal, never for a tracked output.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

SERVED: Final = "served"
NOT_SERVED: Final = "not served"
ERROR: Final = "error"
PROBE: Final = [{"role": "user", "content": "Reply with the word: ok"}]


@dataclass(frozen=True)
class ModelCheck:
    model: str
    base_url: str
    status: str
    """:data:`SERVED`, :data:`NOT_SERVED` or :data:`ERROR`."""
    detail: str
    resolved_model: str | None = None

    @property
    def exit_code(self) -> int:
        """0 served, 1 not served, 2 another error."""
        return {SERVED: 0, NOT_SERVED: 1}.get(self.status, 2)

    def line(self) -> str:
        return f"{self.model} at {self.base_url}: {self.status.upper()} ({self.detail})"


def check_model(model: str, base_url: str | None = None, *, max_tokens: int = 1, timeout: float = 30.0) -> ModelCheck:
    """Send one chat request for ``model`` (``base_url`` None: ``$OPENAI_BASE_URL`` or the SDK default; the key
    from ``$OPENAI_API_KEY``) and classify the outcome (module docstring)."""
    import openai

    try:
        sdk = openai.OpenAI(base_url=base_url, timeout=timeout, max_retries=0)
    except openai.OpenAIError as exc:
        probe = openai.OpenAI(base_url=base_url, api_key="sk-mnemetric-unset", max_retries=0)
        return ModelCheck(model, str(probe.base_url).rstrip("/"), ERROR, f"no API key: set OPENAI_API_KEY ({exc})")
    url = str(sdk.base_url).rstrip("/")
    try:
        reply = sdk.chat.completions.create(model=model, messages=PROBE, max_tokens=max_tokens)
    except openai.NotFoundError as exc:
        return ModelCheck(model, url, NOT_SERVED, f"HTTP 404 {_code(exc) or 'not found'}: {_message(exc)}")
    except openai.APIStatusError as exc:
        return ModelCheck(model, url, ERROR, f"HTTP {exc.status_code} {_code(exc) or ''}: {_message(exc)}".replace("  ", " "))
    except openai.APIConnectionError as exc:
        return ModelCheck(model, url, ERROR, f"no connection: {exc}")
    finally:
        sdk.close()
    named = getattr(reply, "model", None) or None
    return ModelCheck(model, url, SERVED, f"one reply, the server named {named!r}", named)


def _code(exc: Exception) -> str | None:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("code"):
            return str(inner["code"])
    return None


def _message(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
    return str(exc)
