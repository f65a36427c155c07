"""The LLM client layer: one cached, budgeted, retrying client for every model call.

Readers, judges and embedders all go through :class:`LLMClient`; nothing else in Mnemetric
talks to a model server directly.
"""

from .budget import (
    DEFAULT_OUTPUT_TOKENS_ESTIMATE,
    Budget,
    BudgetExceeded,
    ModelPrice,
    ModelUsage,
    PriceTable,
    UsageStats,
    estimate_chat_tokens,
    estimate_prompt_tokens,
)
from .cache import (
    CACHE_FILENAME,
    ResponseCache,
    canonical_json,
    default_cache_dir,
    key_payload,
    normalize_base_url,
    request_key,
)
from .client import (
    ChatRequest,
    ChatResult,
    LLMClient,
    LLMRequestError,
    MalformedResponse,
    Usage,
    parse_retry_after,
)
from .dry_run import plan

__all__ = [
    "CACHE_FILENAME",
    "DEFAULT_OUTPUT_TOKENS_ESTIMATE",
    "Budget",
    "BudgetExceeded",
    "ChatRequest",
    "ChatResult",
    "LLMClient",
    "LLMRequestError",
    "MalformedResponse",
    "ModelPrice",
    "ModelUsage",
    "PriceTable",
    "ResponseCache",
    "Usage",
    "UsageStats",
    "canonical_json",
    "default_cache_dir",
    "estimate_chat_tokens",
    "estimate_prompt_tokens",
    "key_payload",
    "normalize_base_url",
    "parse_retry_after",
    "plan",
    "request_key",
]
