"""Prices, spending limits and usage counters for model calls.

* :class:`PriceTable` -- $ per 1M input / output tokens per model, built from a plain dict
  (as the Hydra config provides it).
* :class:`Budget` -- ``max_requests`` / ``max_usd``, checked *before* every network call; cache
  hits are free and never count. Going over raises :class:`BudgetExceeded`.
* :class:`UsageStats` -- counters for one run (passed in, never global), with ``to_dict()``:
  what this run sent, reused and paid. They go to the terminal and the untracked run log.
* :class:`WorkUsage` (``UsageStats.work``) -- the cost of the *work*: the usage recorded with
  each response used, whether it came from the cache or the network, priced by the price table.
  A pure function of the responses, so a cold and a warm run write the same bytes (it is what
  DVC-tracked files hold).

The cost of a request before it is sent is estimated as: prompt tokens = ceil(len(text) / 4)
over the text of all messages, plus ``max_tokens`` (times ``n``) output tokens.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from mnemetric.errors import ConfigError, MnemetricError
from mnemetric.llm.tally import note

DEFAULT_OUTPUT_TOKENS_ESTIMATE = 1024
"""Output tokens assumed by estimates when a request sets no ``max_tokens``."""


class BudgetExceeded(MnemetricError):
    """Sending the next request would go over ``max_requests`` or ``max_usd``."""


@dataclass(frozen=True)
class ModelPrice:
    """US dollars per 1M input (prompt) and output (completion) tokens; ``batch_discount``: the fraction
    taken off both for requests sent through a Batch API (OpenAI: 0.5), None when unknown (batch = live)."""

    input_per_1m: float
    output_per_1m: float
    batch_discount: float | None = None

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """Dollar cost of the given token counts."""
        return (prompt_tokens * self.input_per_1m + completion_tokens * self.output_per_1m) / 1e6

    def batch_cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """Dollar cost of the given token counts sent through a Batch API."""
        return self.cost(prompt_tokens, completion_tokens) * (1.0 - (self.batch_discount or 0.0))


_INPUT_KEYS = ("input", "input_per_1m", "input_usd_per_1m", "prompt")
_OUTPUT_KEYS = ("output", "output_per_1m", "output_usd_per_1m", "completion")


def _pick(entry: Mapping[str, Any], names: tuple[str, ...], model: str) -> float:
    for name in names:
        if name in entry:
            value = float(entry[name])
            if value < 0 or not math.isfinite(value):
                raise ConfigError(f"prices: model '{model}': '{name}' must be a non-negative number")
            return value
    raise ConfigError(f"prices: model '{model}': missing '{names[0]}' ($ per 1M tokens); give one of {names}")


class PriceTable:
    """Per-model prices. Lookup: exact name, else the longest configured prefix
    (so ``gpt-4o-2024-08-06`` is priced as ``gpt-4o`` unless it has its own entry)."""

    def __init__(self, prices: Mapping[str, ModelPrice] | None = None):
        self.prices: dict[str, ModelPrice] = dict(prices or {})

    @classmethod
    def from_dict(cls, data: Mapping[str, Mapping[str, Any]] | None) -> PriceTable:
        """Build from ``{model: {"input": $/1M, "output": $/1M, "batch_discount"?: 0..1}}``."""
        prices = {}
        for model, entry in (data or {}).items():
            if not isinstance(entry, Mapping):
                raise ConfigError(f"prices: model '{model}': expected a mapping with 'input' and 'output'")
            discount = entry.get("batch_discount")
            if discount is not None and (isinstance(discount, bool) or not isinstance(discount, (int, float))
                                         or not 0 <= float(discount) <= 1):
                raise ConfigError(f"prices: model '{model}': 'batch_discount' must be a number from 0 to 1 (the "
                                  f"fraction a Batch API takes off; OpenAI: 0.5), got {discount!r}")
            prices[str(model)] = ModelPrice(_pick(entry, _INPUT_KEYS, model), _pick(entry, _OUTPUT_KEYS, model),
                                            None if discount is None else float(discount))
        return cls(prices)

    def get(self, model: str) -> ModelPrice | None:
        """The price for ``model`` (exact, else longest prefix), or None if unknown."""
        if model in self.prices:
            return self.prices[model]
        prefixes = [name for name in self.prices if model.startswith(name)]
        return self.prices[max(prefixes, key=len)] if prefixes else None

    def first(self, models: Iterable[str]) -> ModelPrice | None:
        """The price of the first of ``models`` that has one (e.g. resolved, then requested)."""
        for model in models:
            price = self.get(model)
            if price is not None:
                return price
        return None

    def cost(self, models: Iterable[str], prompt_tokens: int, completion_tokens: int) -> float | None:
        """Cost using the first of ``models`` that has a price (e.g. resolved, then requested)."""
        price = self.first(models)
        return price.cost(prompt_tokens, completion_tokens) if price is not None else None


def _message_text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}, ...]
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return ""


def estimate_prompt_tokens(texts: Iterable[str]) -> int:
    """ceil(total characters / 4)."""
    return math.ceil(sum(len(t) for t in texts) / 4)


def estimate_chat_tokens(messages: Iterable[Mapping[str, Any]], params: Mapping[str, Any]) -> tuple[int, int]:
    """(prompt, output) token estimate for a chat request before it is sent."""
    prompt = estimate_prompt_tokens(_message_text(m) for m in messages)
    max_out = params.get("max_tokens") or params.get("max_completion_tokens") or DEFAULT_OUTPUT_TOKENS_ESTIMATE
    return prompt, int(max_out) * int(params.get("n") or 1)


def no_price_message(model: str, max_usd: float) -> str:
    """Why a request cannot be admitted under ``max_usd`` without a price, and the two ways on (the conf key
    that prices the model, or the override that drops the dollar limit)."""
    return (f"no price for model '{model}' but max_usd={max_usd} is set, so its cost cannot be bounded. Fix: price "
            f"it under llm.prices in conf/config.yaml (`{model}: {{input: <$ per 1M input tokens>, output: <$ per 1M "
            f"output tokens>}}`), or for one run -S '++llm.prices={{{model}: {{input: <$>, output: <$>}}}}' (merged "
            "into the table; a self-hosted server costs what its hardware costs: price it as you account for it); or "
            "drop the dollar limit with -S llm.budget.max_usd=null (max_requests still applies)")


@dataclass
class Budget:
    """Limits on uncached requests and dollars; ``None`` means unlimited.

    ``max_requests`` counts requests sent over the network (a request's retries are not extra
    requests). ``max_usd`` compares spent + in-flight estimates + this request's estimate.
    """

    max_requests: int | None = None
    max_usd: float | None = None
    requests: int = 0
    usd: float = 0.0
    reserved_usd: float = 0.0

    def reserve(self, model: str, estimated_usd: float | None) -> None:
        """Admit one request about to be sent, or raise :class:`BudgetExceeded`."""
        if self.max_requests is not None and self.requests + 1 > self.max_requests:
            raise BudgetExceeded(
                f"budget exceeded: request {self.requests + 1} to '{model}' would go over max_requests="
                f"{self.max_requests} (spent ${self.usd:.4f} so far). Raise the limit to continue; "
                "responses already received are cached and will not be paid for again."
            )
        if self.max_usd is not None:
            if estimated_usd is None:
                raise ConfigError(no_price_message(model, self.max_usd))
            total = self.usd + self.reserved_usd + estimated_usd
            if total > self.max_usd:
                raise BudgetExceeded(
                    f"budget exceeded: request {self.requests + 1} to '{model}' (estimated ${estimated_usd:.4f}) "
                    f"would bring spending to ${total:.4f} > max_usd=${self.max_usd:.4f} (spent ${self.usd:.4f}"
                    f" over {self.requests} request(s), ${self.reserved_usd:.4f} in flight). Raise max_usd to "
                    "continue; responses already received are cached and will not be paid for again."
                )
        self.requests += 1
        self.reserved_usd += estimated_usd or 0.0

    def settle(self, estimated_usd: float | None, actual_usd: float | None) -> None:
        """Replace a reservation by the actual cost (0 if the request failed)."""
        self.reserved_usd = max(0.0, self.reserved_usd - (estimated_usd or 0.0))
        self.usd += actual_usd or 0.0


@dataclass
class ModelUsage:
    """Counters for one (requested) model."""

    requests_sent: int = 0
    cache_hits: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    usd: float = 0.0
    non_answers: int = 0


@dataclass
class WorkUsage:
    """The cost of the work: one entry per response *used* (a usable answer, or one embedding
    vector), from the cache or the network alike. Non-answers are not used, so not counted here
    (what they cost is in the run counters).

    Tokens are summed as integers per (requested model, resolved model); dollars are computed
    from those sums when serialized -- usd = (prompt x input + completion x output) / 1e6 per
    pair, summed in sorted order -- so the result does not depend on the order responses arrived.
    """

    _sums: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    _prices: dict[tuple[str, str], ModelPrice | None] = field(default_factory=dict)
    _batch: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    """The part of ``_sums`` whose responses came through a Batch API (priced at the batch price)."""

    def add(self, requested: str, resolved: str, prompt_tokens: int, completion_tokens: int,
            price: ModelPrice | None, responses: int = 1, *, batch: bool = False) -> None:
        """Count ``responses`` response(s) with this usage (``batch``: they came through a Batch API)."""
        for sums in [self._sums.setdefault((requested, resolved), [0, 0, 0])] + (
                [self._batch.setdefault((requested, resolved), [0, 0, 0])] if batch else []):
            sums[0] += responses
            sums[1] += prompt_tokens * responses
            sums[2] += completion_tokens * responses
        self._prices[(requested, resolved)] = price

    def absorb(self, other: WorkUsage) -> None:
        """Add another ledger's work (its sums, batch part and prices) to this one."""
        for pair, sums in other._sums.items():
            mine = self._sums.setdefault(pair, [0, 0, 0])
            for i in range(3):
                mine[i] += sums[i]
            self._prices[pair] = other._prices.get(pair)
        for pair, sums in other._batch.items():
            mine = self._batch.setdefault(pair, [0, 0, 0])
            for i in range(3):
                mine[i] += sums[i]

    def _usd(self, pair: tuple[str, str], prompt: int, completion: int) -> float:
        price = self._prices[pair]
        if price is None:
            return 0.0
        if pair not in self._batch:
            return price.cost(prompt, completion)
        _, bp, bc = self._batch[pair]
        return price.cost(prompt - bp, completion - bc) + price.batch_cost(bp, bc)

    def to_dict(self) -> dict[str, Any]:
        """``{responses, prompt_tokens, completion_tokens, usd, unpriced_models, per_model}``;
        per_model is keyed by the requested model and names the resolved models. When any response came
        through a Batch API, every block also has ``batch_responses`` (after ``responses``) and its
        dollars are at the batch price (live-only runs write exactly the keys above)."""
        per_model: dict[str, dict[str, Any]] = {}
        unpriced: set[str] = set()
        batched = bool(self._batch)
        counts = ("responses", "batch_responses") if batched else ("responses",)
        for (requested, resolved), (n, prompt, completion) in sorted(self._sums.items()):
            block = per_model.setdefault(requested, {**{k: 0 for k in counts}, "prompt_tokens": 0,
                                                     "completion_tokens": 0, "usd": 0.0, "resolved_models": []})
            price = self._prices[(requested, resolved)]
            block["responses"] += n
            if batched:
                block["batch_responses"] += self._batch.get((requested, resolved), [0])[0]
            block["prompt_tokens"] += prompt
            block["completion_tokens"] += completion
            block["usd"] += self._usd((requested, resolved), prompt, completion)
            block["resolved_models"].append(resolved)
            if price is None:
                unpriced.add(resolved)
        total = {k: sum(b[k] for b in per_model.values()) for k in (*counts, "prompt_tokens", "completion_tokens")}
        usd = 0.0
        for name in sorted(per_model):
            usd += per_model[name]["usd"]
        return total | {"usd": usd, "unpriced_models": sorted(unpriced), "per_model": per_model}


@dataclass
class UsageStats:
    """What one run sent, reused and paid. Totals plus a per-model breakdown.

    Cache hits count in ``cache_hits`` only: their tokens and dollars were paid by an earlier run.
    ``non_answers`` counts replies that carried no answer (each one sent and paid);
    ``waited`` counts requests answered by another process that had claimed them first
    (they are cache hits too); ``taken_over`` counts claims of dead processes taken over.
    ``work`` holds the cost of the work (see :class:`WorkUsage`), which is what tracked files record.
    """

    requests_sent: int = 0
    cache_hits: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    usd: float = 0.0
    non_answers: int = 0
    waited: int = 0
    taken_over: int = 0
    per_model: dict[str, ModelUsage] = field(default_factory=dict)
    work: WorkUsage = field(default_factory=WorkUsage)

    def _model(self, model: str) -> ModelUsage:
        return self.per_model.setdefault(model, ModelUsage())

    def record_hit(self, model: str) -> None:
        """One response served from the cache."""
        note(cache_served=1)
        self.cache_hits += 1
        self._model(model).cache_hits += 1

    def record_retry(self, model: str) -> None:
        """One retried attempt."""
        self.retries += 1
        self._model(model).retries += 1

    def record_sent(self, model: str, prompt_tokens: int, completion_tokens: int, usd: float | None) -> None:
        """One request answered by the network."""
        note(requests_sent=1)
        for target in (self, self._model(model)):
            target.requests_sent += 1
            target.prompt_tokens += prompt_tokens
            target.completion_tokens += completion_tokens
            target.usd += usd or 0.0

    def record_non_answer(self, model: str) -> None:
        """One reply without a usable answer (already counted as sent)."""
        self.non_answers += 1
        self._model(model).non_answers += 1

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON view of this run's counters (terminal and run log; never a tracked file)."""
        data = {k: v for k, v in asdict(self).items() if k not in ("per_model", "work")}
        data["per_model"] = {m: asdict(u) for m, u in sorted(self.per_model.items())}
        return data
