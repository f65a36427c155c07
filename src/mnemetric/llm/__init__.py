"""The LLM client layer: one cached, budgeted, retrying client for every model call.

Readers, judges and embedders all go through :class:`LLMClient`; nothing else in Mnemetric
talks to a model server directly. Modules: ``types`` (requests, results, errors), ``replies``
(parsing, the non-answer rule), ``retry`` (the retry policy), ``cache`` (the SQLite response
cache) and ``claims`` (cross-process single flight), ``budget`` (prices, limits, usage),
``dry_run`` (plans from the cache only), ``failures`` (the failed-questions sidecar), ``run_log``
(the untracked per-run log).
"""

from mnemetric.llm.budget import (
    DEFAULT_OUTPUT_TOKENS_ESTIMATE,
    Budget,
    BudgetExceeded,
    ModelPrice,
    ModelUsage,
    PriceTable,
    UsageStats,
    WorkUsage,
    estimate_chat_tokens,
    estimate_prompt_tokens,
)
from mnemetric.llm.cache import (
    CACHE_FILENAME,
    CacheRow,
    ResponseCache,
    canonical_json,
    default_cache_dir,
    key_payload,
    normalize_base_url,
    request_key,
)
from mnemetric.llm.client import LLMClient
from mnemetric.llm.dry_run import plan
from mnemetric.llm.failures import AllQuestionsFailed, QuestionFailure, failures_path, read_failures, write_failures
from mnemetric.llm.replies import TEXT_FROM, message_text, non_answer_reason
from mnemetric.llm.retry import RetryPolicy, parse_retry_after
from mnemetric.llm.types import ChatRequest, ChatResult, LLMRequestError, MalformedResponse, Usage

__all__ = [
    "CACHE_FILENAME",
    "DEFAULT_OUTPUT_TOKENS_ESTIMATE",
    "TEXT_FROM",
    "AllQuestionsFailed",
    "Budget",
    "BudgetExceeded",
    "CacheRow",
    "ChatRequest",
    "ChatResult",
    "LLMClient",
    "LLMRequestError",
    "MalformedResponse",
    "ModelPrice",
    "ModelUsage",
    "PriceTable",
    "QuestionFailure",
    "ResponseCache",
    "RetryPolicy",
    "Usage",
    "UsageStats",
    "WorkUsage",
    "canonical_json",
    "default_cache_dir",
    "estimate_chat_tokens",
    "estimate_prompt_tokens",
    "failures_path",
    "key_payload",
    "message_text",
    "non_answer_reason",
    "normalize_base_url",
    "parse_retry_after",
    "plan",
    "read_failures",
    "request_key",
    "write_failures",
]
