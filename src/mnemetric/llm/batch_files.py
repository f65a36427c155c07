"""Batch-API files: the request lines we write, and the output / error lines we read (strictly).

One input line per request (OpenAI Batch API, also ``vllm run-batch``)::

    {"custom_id": <the response cache's request sha256>, "method": "POST", "url": "/v1/chat/completions",
     "body": {"model", "messages", <output parameters>}}

The body is rebuilt from the cache key's payload alone (:func:`request_body`: ``extra_body`` merged in as
the SDK would send it; embeddings one text per line, ``encoding_format`` the call's: "float" unless the key
names "base64", :mod:`mnemetric.llm.embed_wire`), so a line, a live call
and a cached row name the same request. Files are split at :data:`MAX_REQUESTS` lines or
:data:`MAX_BYTES` bytes (:func:`split_lines`).

An output or error line is ``{"id", "custom_id", "response": {"status_code", "request_id", "body"} | null,
"error": {"code", "message"} | null}``; results are matched by ``custom_id``, never by line order. A
per-request HTTP error may come with ``error: null`` and ``response.status_code: 400`` (openai-openapi
issue #302): :attr:`ResultLine.ok` checks both. :func:`read_results` reads a whole file before anything
is stored and refuses, naming the file and line: a line that is not a JSON object (the last one: the
file is truncated), a ``custom_id`` that is not one of the batch's requests, the same ``custom_id``
twice.

A usable reply is stored in the response cache with :data:`BATCH_MARK` added (:func:`cache_row`), so
whoever reads the row later (any executor) prices its work at the batch price (:func:`went_by_batch`).
"""

from __future__ import annotations

import json
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from mnemetric.errors import InputError
from mnemetric.io import dumps_canonical
from mnemetric.llm.embed_wire import FLOAT, decode_vector

BATCH_MARK: Final = "mnemetric_batch"
"""The key a cached row carries when its reply came through a Batch API: ``{"batch": id, "source": ...}``."""
MAX_REQUESTS: Final = 50_000
MAX_BYTES: Final = 200 * 1024 * 1024
"""OpenAI's input-file limits ("larger than the 209715200 maximum")."""
URLS: Final = {"chat": "/v1/chat/completions", "embeddings": "/v1/embeddings"}
KINDS: Final = {v: k for k, v in URLS.items()}


def went_by_batch(response: Mapping[str, Any] | None) -> bool:
    """Whether a cached row's reply came through a Batch API."""
    return isinstance(response, Mapping) and isinstance(response.get(BATCH_MARK), Mapping)


def request_body(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The request body of a cache-key payload (:func:`mnemetric.llm.cache.key_payload`)."""
    params = dict(payload.get("params") or {})
    extra = params.pop("extra_body", None) or {}
    if payload["kind"] == "chat":
        return {"model": payload["model"], "messages": payload["messages"], **params, **extra}
    encoding = params.pop("encoding_format", None) or FLOAT  # the call's format (absent from the key: float)
    return {"model": payload["model"], "input": payload["input"], "encoding_format": encoding, **params, **extra}


def request_line(key: str, payload: Mapping[str, Any]) -> bytes:
    """One input line (with its newline) for the request ``key``: keys sorted, so the same request gives the
    same bytes whoever writes it (the executor, or ``mnemetric batch export`` from the ledger)."""
    line = {"custom_id": key, "method": "POST", "url": URLS[payload["kind"]], "body": request_body(payload)}
    return (dumps_canonical(line) + "\n").encode("utf-8")


def split_lines(lines: Iterable[tuple[str, bytes]], max_requests: int = MAX_REQUESTS,
                max_bytes: int = MAX_BYTES) -> list[list[tuple[str, bytes]]]:
    """Consecutive groups of ``(key, line)`` within both limits (a single line over ``max_bytes``: an error)."""
    out: list[list[tuple[str, bytes]]] = []
    size = 0
    for key, line in lines:
        if len(line) > max_bytes:
            raise InputError("<batch input>", f"request {key}", "body",
                             f"one request is {len(line)} bytes, over the batch file limit of {max_bytes}",
                             fix="send it live (executor=immediate)")
        if not out or len(out[-1]) >= max_requests or size + len(line) > max_bytes:
            out.append([])
            size = 0
        out[-1].append((key, line))
        size += len(line)
    return out


@dataclass(frozen=True)
class ResultLine:
    """One line of an output or error file."""

    key: str
    """The ``custom_id``: the request's cache key."""
    line: int
    status: int | None
    body: Any
    error_code: str | None
    error_message: str | None
    request_id: str | None = None

    @property
    def ok(self) -> bool:
        """An HTTP 200 reply with an object body and no error (both fields checked)."""
        return self.error_code is None and self.error_message is None and self.status == 200 \
            and isinstance(self.body, dict)

    @property
    def reason(self) -> str:
        """Why this line is not a reply (for messages)."""
        if self.ok:
            return "ok"
        what = f"HTTP {self.status}" if self.status is not None else "no response"
        detail = self.error_message or ""
        if not detail and isinstance(self.body, dict) and isinstance(self.body.get("error"), dict):
            detail = str(self.body["error"].get("message") or "")
        code = f" [{self.error_code}]" if self.error_code else ""
        return f"{what}{code}: {detail}".rstrip(": ")


def _result(raw: Any, *, file: str, n: int, known: Container[str]) -> ResultLine:
    where = f"line {n}"
    if not isinstance(raw, dict):
        raise InputError(file, where, "<record>", f"expected a JSON object, got {type(raw).__name__}")
    key = raw.get("custom_id")
    if not isinstance(key, str) or not key:
        raise InputError(file, where, "custom_id", f"expected a non-empty string, got {key!r:.60}")
    if key not in known:
        raise InputError(file, f"{where} ({key})", "custom_id", "not a request of this batch (unknown custom_id)",
                         fix="import an output file against the batch it answers; nothing was stored from it")
    response, error = raw.get("response"), raw.get("error")
    if response is not None and not isinstance(response, dict):
        raise InputError(file, f"{where} ({key})", "response", "expected an object or null")
    if error is not None and not isinstance(error, dict):
        raise InputError(file, f"{where} ({key})", "error", "expected an object or null")
    if response is None and error is None:
        raise InputError(file, f"{where} ({key})", "response", "both response and error are null")
    status = response.get("status_code") if response else None
    if response is not None and (not isinstance(status, int) or isinstance(status, bool)):
        raise InputError(file, f"{where} ({key})", "response.status_code", f"expected an integer, got {status!r:.40}")
    return ResultLine(key, n, status, response.get("body") if response else None,
                      str(error.get("code") or "error") if error else None,
                      str(error.get("message") or "") if error else None,
                      response.get("request_id") if response else None)


def read_results(data: bytes, *, file: str, known: Container[str], seen: dict[str, str] | None = None) -> list[ResultLine]:
    """Every line of an output or error file, checked (module docstring) before the caller stores any.
    ``seen`` maps custom_ids already read (from the batch's other file) to where; updated."""
    seen = {} if seen is None else seen
    text = data.decode("utf-8", errors="replace")
    lines = text.split("\n")
    out = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            last = n == len(lines) or all(not rest.strip() for rest in lines[n:])
            why = "the file is truncated (its last line is not complete JSON)" if last else f"not valid JSON ({exc.msg})"
            raise InputError(file, f"line {n}", "<json>", why,
                             fix="download the file again (nothing was stored from it)") from None
        result = _result(raw, file=file, n=n, known=known)
        if result.key in seen:
            raise InputError(file, f"line {n} ({result.key})", "custom_id", f"a second result (first: {seen[result.key]})")
        seen[result.key] = f"{file} line {n}"
        out.append(result)
    return out


def cache_row(kind: str, body: Mapping[str, Any], mark: Mapping[str, Any]) -> dict[str, Any]:
    """The response-cache row of a usable reply (chat: the body; embeddings: one text's vector as floats, a
    base64 one decoded exactly, and tokens),
    with :data:`BATCH_MARK`. Raises ValueError for an embeddings body without exactly one vector."""
    if kind == "chat":
        return {**body, BATCH_MARK: dict(mark)}
    data = body.get("data")
    vector = decode_vector(data[0].get("embedding")) if isinstance(data, list) and len(data) == 1 \
        and isinstance(data[0], dict) else None
    if vector is None:
        raise ValueError("an embeddings reply must carry exactly one vector (a list of numbers, or base64 of "
                         "float32 values)")
    tokens = int((body.get("usage") or {}).get("prompt_tokens") or 0)
    return {"model": body.get("model"), "embedding": vector, "usage": {"prompt_tokens": tokens}, BATCH_MARK: dict(mark)}
