"""The per-question files between the V2 steps (memory → read → check → metrics), typed once: reader beside writer.

Each file is JSONL, one row per question of the run, domains in run order and questions in stream order; every
row names its ``domain`` and ``question_id``. They are Mnemetric's own formats (upstream's harness keeps all of
this in memory and writes only per_question.jsonl); :func:`mnemetric.longmemeval_v2.steps.assemble` joins them
into upstream's per_question rows.

* :class:`MemoryRow` (``memory.jsonl``, stage v2_memory): the question's identity fields in upstream's keys
  (index … haystack_ids), the memory outcome after truncation and the kept items' tokens by item type
  (``memory_context_tokens_by_type``). No clock time: query latency is a measurement of the machine and goes to
  an untracked sidecar (:mod:`.steps`).
* :class:`ReadRow` (``read.jsonl``, stage v2_read): the reader's raw response, usage, the logged prompt, and
  the request's sha256 and parameters sent (null when nothing was sent); ``failed`` where upstream aborts.
* :class:`CheckRow` (``check.jsonl``, stage v2_check): the parsed answer, is_unknown, the verdict, and the
  judge request's sha256 and parameters sent for an LLM checker that was asked, its reason (``checker_reason``,
  when it gave one); ``failed`` where upstream aborts.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from mnemetric.errors import InputError
from mnemetric.io import atomic_open, read_jsonl
from mnemetric.longmemeval_v2.per_question import USAGE_KEYS, UPSTREAM_KEYS
from mnemetric.records import Fields

IDENTITY_KEYS = UPSTREAM_KEYS[:UPSTREAM_KEYS.index("memory_context")]
"""index … haystack_ids: the identity fields of a per_question row."""
MEMORY_KEYS = ("memory_context", "memory_post_query_metadata", "memory_context_original_token_count",
               "memory_context_token_count")
BY_TYPE = "memory_context_tokens_by_type"
"""Mnemetric's token accounting of the kept items by type ({text, image: {items, tokens}}; :func:`.steps.tokens_by_type`)."""
_OPT_STR = ((str, type(None)), "a string or null")
_OPT_BOOL = ((bool, type(None)), "true, false or null")
_OPT_OBJ = ((dict, type(None)), "an object or null")


def _where(raw: Any, file: str, line: int) -> Fields:
    qid = raw.get("question_id") if isinstance(raw, dict) else None
    return Fields.of(raw, file=file, record=f"line {line}" + (f" ({qid})" if isinstance(qid, str) else ""),
                     fix="rerun the V2 step that writes this file")


def _failed(f: Fields) -> str | None:
    if "failed" not in f.raw:
        return None
    reason = f.raw["failed"]
    if not isinstance(reason, str) or not reason.strip():
        raise f.error("failed", f"must be a non-empty reason string, got {reason!r}")
    return reason


def _evidence(f: Fields) -> tuple[str | None, dict[str, Any] | None]:
    sha, sent = f.get("request_sha256", _OPT_STR), f.get("params_sent", _OPT_OBJ)
    if sha is not None and (len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha)):
        raise f.error("request_sha256", f"expected 64 lowercase hex digits, got {sha!r}")
    if (sha is None) != (sent is None):
        raise f.error("params_sent", "a request sha256 and its params_sent come together (both or neither)")
    return sha, sent


@dataclass(frozen=True)
class MemoryRow:
    domain: str
    identity: Mapping[str, Any]
    """The upstream identity fields (:data:`IDENTITY_KEYS`), in that order."""
    memory_context: tuple[Mapping[str, str], ...]
    memory_post_query_metadata: Any
    memory_context_original_token_count: int
    memory_context_token_count: int
    tokens_by_type: Mapping[str, Mapping[str, int]] | None = None
    """:data:`BY_TYPE` (None in a row written before it existed)."""

    @property
    def question_id(self) -> str:
        return self.identity["question_id"]

    @classmethod
    def from_record(cls, raw: Any, *, file: str, line: int) -> MemoryRow:
        f = _where(raw, file, line).only(("domain", *IDENTITY_KEYS, *MEMORY_KEYS, BY_TYPE))
        missing = [k for k in IDENTITY_KEYS if k not in f.raw]
        if missing:
            raise f.error(missing[0], "missing")
        f.string("question_id")
        f.strings("haystack_ids")
        items = f.array("memory_context")
        for i, item in enumerate(items):
            if not (isinstance(item, dict) and isinstance(item.get("type"), str) and isinstance(item.get("value"), str)):
                raise f.error(f"memory_context[{i}]", f"expected a {{type, value}} item, got {item!r}"[:160])
        by_type = None
        if f.raw.get(BY_TYPE) is not None:
            t = f.at(BY_TYPE).only(("text", "image"))
            by_type = {k: {n: t.at(k).only(("items", "tokens")).count(n) for n in ("items", "tokens")}
                       for k in ("text", "image")}
        return cls(f.string("domain"), {k: f.raw[k] for k in IDENTITY_KEYS}, tuple(items),
                   f.raw.get("memory_post_query_metadata"), f.count("memory_context_original_token_count"),
                   f.count("memory_context_token_count"), by_type)

    def to_record(self) -> dict[str, Any]:
        return {"domain": self.domain, **self.identity, "memory_context": [dict(i) for i in self.memory_context],
                "memory_post_query_metadata": self.memory_post_query_metadata,
                "memory_context_original_token_count": self.memory_context_original_token_count,
                "memory_context_token_count": self.memory_context_token_count} | (
                   {BY_TYPE: {k: dict(v) for k, v in self.tokens_by_type.items()}} if self.tokens_by_type else {})


@dataclass(frozen=True)
class ReadRow:
    domain: str
    question_id: str
    response_raw: str | None
    usage: Mapping[str, int]
    prompt_messages: tuple[Any, ...]
    text_source: str | None = None
    request_sha256: str | None = None
    params_sent: Mapping[str, Any] | None = field(default=None)
    failed: str | None = None

    @classmethod
    def from_record(cls, raw: Any, *, file: str, line: int) -> ReadRow:
        f = _where(raw, file, line).only(("domain", "question_id", "response_raw", "usage", "prompt_messages",
                                           "text_source", "request_sha256", "params_sent", "failed"))
        usage = f.at("usage").only(USAGE_KEYS)
        counts = {k: usage.count(k) for k in USAGE_KEYS}
        sha, sent = _evidence(f)
        failed, response = _failed(f), f.get("response_raw", _OPT_STR)
        if (failed is None) == (response is None):
            raise f.error("response_raw", "a row has a response or a failure reason, not both and not neither")
        return cls(f.string("domain"), f.string("question_id"), response, counts,
                   tuple(f.array("prompt_messages")), f.get("text_source", _OPT_STR), sha, sent, failed)

    def to_record(self) -> dict[str, Any]:
        out = {"domain": self.domain, "question_id": self.question_id, "response_raw": self.response_raw,
               "usage": dict(self.usage), "prompt_messages": list(self.prompt_messages), "text_source": self.text_source,
               "request_sha256": self.request_sha256,
               "params_sent": None if self.params_sent is None else dict(self.params_sent)}
        return out | ({"failed": self.failed} if self.failed else {})


@dataclass(frozen=True)
class CheckRow:
    domain: str
    question_id: str
    checker: str
    """The eval function's name (upstream's checker)."""
    response_parsed_boxed: str | None
    is_unknown: bool | None
    score_bool: bool | None
    request_sha256: str | None = None
    params_sent: Mapping[str, Any] | None = field(default=None)
    failed: str | None = None
    checker_reason: str | None = None
    """An LLM checker's own reason for its verdict (:attr:`.llm_checkers.CheckOutcome.reason`), when it gave one."""

    @classmethod
    def from_record(cls, raw: Any, *, file: str, line: int) -> CheckRow:
        f = _where(raw, file, line).only(("domain", "question_id", "checker", "response_parsed_boxed", "is_unknown",
                                           "score_bool", "request_sha256", "params_sent", "failed", "checker_reason"))
        sha, sent = _evidence(f)
        failed, verdict = _failed(f), f.get("score_bool", _OPT_BOOL)
        if (failed is None) == (verdict is None):
            raise f.error("score_bool", "a row has a verdict or a failure reason, not both and not neither")
        return cls(f.string("domain"), f.string("question_id"), f.string("checker"),
                   f.get("response_parsed_boxed", _OPT_STR), f.get("is_unknown", _OPT_BOOL), verdict, sha, sent, failed,
                   f.get("checker_reason", _OPT_STR) if "checker_reason" in f.raw else None)

    def to_record(self) -> dict[str, Any]:
        out = {"domain": self.domain, "question_id": self.question_id, "checker": self.checker,
               "response_parsed_boxed": self.response_parsed_boxed, "is_unknown": self.is_unknown,
               "score_bool": self.score_bool, "request_sha256": self.request_sha256,
               "params_sent": None if self.params_sent is None else dict(self.params_sent)}
        return (out | ({"failed": self.failed} if self.failed else {})
                | ({"checker_reason": self.checker_reason} if self.checker_reason else {}))


def write_rows(path: str | os.PathLike[str], rows: Iterable[MemoryRow | ReadRow | CheckRow]) -> int:
    """Write step rows atomically, one canonical JSON object per line (ASCII, keys in field order)."""
    n = 0
    with atomic_open(path) as fh:
        for row in rows:
            fh.write(json.dumps(row.to_record(), ensure_ascii=True) + "\n")
            n += 1
    return n


def read_rows(path: str | os.PathLike[str], kind: type) -> list:
    """Every row of a step file as ``kind`` (MemoryRow, ReadRow or CheckRow); a repeated (domain, question_id)
    is an error naming its line."""
    from mnemetric.io import require_file

    require_file(path)
    rows, seen = [], {}
    for line, raw in read_jsonl(path):
        row = kind.from_record(raw, file=str(path), line=line)
        key = (row.domain, row.question_id)
        if key in seen:
            raise InputError(str(path), f"line {line} ({row.question_id})", "question_id",
                             f"repeats the question of line {seen[key]}")
        seen[key] = line
        rows.append(row)
    return rows


def by_domain(rows: Iterable[Any]) -> dict[str, list[Any]]:
    """Rows grouped by domain, in file order."""
    out: dict[str, list[Any]] = {}
    for row in rows:
        out.setdefault(row.domain, []).append(row)
    return out


def iter_ids(rows: Iterable[Any]) -> Iterator[tuple[str, str]]:
    for row in rows:
        yield row.domain, row.question_id
