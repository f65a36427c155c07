"""Deterministic replies shaped as the memory libraries expect, for the loopback OpenAI server.

:class:`LibraryServer` is :class:`tests.support.openai_server.FakeOpenAIServer` whose chat replies read
the whole request body, so structured outputs can be answered:

* a ``response_format`` of type ``json_schema`` (graphiti's OpenAIGenericClient sends its pydantic
  models' schemas): a JSON instance of the schema (:func:`instance`), lists with one element, strings
  taken from the prompt's words (so entities and facts differ per session), date-named strings an ISO
  date, integers 0, booleans false;
* mem0's additive extraction prompt (its system prompt names the "Memory Extractor"; it asks for
  ``{"memory": [{"text": ..., "attributed_to": ...}]}``): one memory per message of the prompt's
  "New Messages" section, the message itself;
* anything else: the server's default echo.

Embeddings are bags of words hashed into the requested dimensions (non-negative, unit length), so texts
that share words are near and a search finds what a session said.

A library call fails on purpose with the server's ``unknown_models`` (HTTP 404 ``model_not_found``).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any

from tests.support.openai_server import FakeOpenAIServer, approx_tokens, default_reply

WORD = re.compile(r"[A-Za-z]{4,}")


def mem0_extraction(messages: list[dict[str, Any]]) -> str | None:
    """mem0's reply to its extraction prompt, or None when ``messages`` is not one."""
    system = str(messages[0].get("content", "")) if messages else ""
    if "Memory Extractor" not in system:
        return None
    prompt = str(messages[-1].get("content", ""))
    new = prompt.split("## New Messages", 1)[-1].split("## Observation Date", 1)[0]
    lines = [ln.strip() for ln in new.strip().splitlines() if ln.strip()]
    memories = [{"text": ln.split(":", 1)[-1].strip(), "attributed_to": ln.split(":", 1)[0]} for ln in lines
                if ":" in ln]
    return json.dumps({"memory": memories})


def _words(body: dict[str, Any]) -> list[str]:
    text = str((body.get("messages") or [{}])[-1].get("content", ""))
    return WORD.findall(text.split("<CURRENT MESSAGE>", 1)[-1]) or ["thing"]


DATE_FIELDS = re.compile(r"(_at|date|time)$")


def instance(schema: dict[str, Any], words: list[str], defs: dict[str, Any] | None = None, depth: int = 0,
             name: str = "") -> Any:
    """A value valid for JSON ``schema`` (the subset pydantic's ``model_json_schema`` writes); a string
    field named like a date (``valid_at``) holds an ISO date."""
    defs = schema.get("$defs", defs or {})
    if "$ref" in schema:
        return instance(defs[schema["$ref"].rsplit("/", 1)[-1]], words, defs, depth, name)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            options = [s for s in schema[key] if s.get("type") != "null"] or schema[key]
            return instance(options[0], words, defs, depth, name)
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type", "object")
    if kind == "object":
        props = schema.get("properties") or {}
        return {key: instance(sub, words, defs, depth + 1, key) for key, sub in props.items()}
    if kind == "array":
        return [] if depth > 3 else [instance(schema.get("items") or {}, words, defs, depth + 1)]
    if kind == "string":
        if schema.get("format") or DATE_FIELDS.search(name):
            return "2023-05-20T00:00:00Z"
        return words[depth % len(words)]
    if kind == "integer":
        return 0
    if kind == "number":
        return 0.0
    if kind == "boolean":
        return False
    return None


def structured(body: dict[str, Any]) -> str | None:
    fmt = body.get("response_format") or {}
    if fmt.get("type") != "json_schema":
        return None
    return json.dumps(instance(fmt["json_schema"]["schema"], _words(body)))


def word_embedding(text: str, dim: int) -> list[float]:
    counts = [0.0] * dim
    for word in WORD.findall(text.lower()) or [text]:
        counts[int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "big") % dim] += 1.0
    norm = math.sqrt(sum(x * x for x in counts)) or 1.0
    return [x / norm for x in counts]


class LibraryServer(FakeOpenAIServer):
    """The loopback server answering as the memory libraries expect (module docstring)."""

    def chat_payload(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body.get("messages") or []
        text = structured(body) or mem0_extraction(messages) or default_reply(messages)
        payload = super().chat_payload(body)
        for choice in payload["choices"]:
            choice["message"]["content"] = text
        usage = payload["usage"]
        usage["completion_tokens"] = approx_tokens(text) * len(payload["choices"])
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        return payload

    def embeddings_payload(self, body: dict[str, Any]) -> dict[str, Any]:
        payload = super().embeddings_payload(body)
        inputs = body.get("input")
        texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
        dim = int(body.get("dimensions") or self.embedding_dim)
        for item, text in zip(payload["data"], texts, strict=True):
            item["embedding"] = word_embedding(str(text), dim)
        return payload

    def chat_bodies(self) -> list[dict[str, Any]]:
        """The chat request bodies received, in arrival order."""
        return [r.body for r in list(self.requests) if r.path.endswith("/chat/completions")]
