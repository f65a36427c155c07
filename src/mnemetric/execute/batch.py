"""BatchExecutor: the run's model calls through the OpenAI Batch API (or exported for another batch runner).

``-S executor=batch`` (stages) or ``--executor batch`` (commands). For the calls of one ``run``:

1. a call already answered in the response cache is answered from it (0 requests), as live; an open ledger slot
   holding it all of whose replies are cached (a run killed between storing them and marking it) is marked done;
2. a call whose latency is measured (:attr:`ModelCall.timed`, or made inside :func:`measuring_latency`,
   e.g. a LongMemEval-V2 memory's timed ``query``) is sent live, by the immediate executor;
3. the rest become batch lines (``custom_id`` = the cache key; :mod:`mnemetric.llm.batch_files`), one
   batch per (server, endpoint, model), split at ``max_requests_per_batch`` / ``max_bytes_per_batch``;
   each batch is entered in the ledger (:mod:`mnemetric.llm.batch_ledger`), uploaded (``purpose=batch``),
   created (``completion_window: 24h``) and polled every ``poll_interval`` seconds with progress shown
   (:mod:`.batch_remote`); its output and error files are downloaded into the SAME response cache, so a
   batch run and a live run are interchangeable and a rerun sends nothing.

A request already in a batch in flight (this run was killed, or another process submitted it) is never
submitted again: the run waits for that batch instead. Results are read as live ones are:

* a usable reply is cached and answers its calls; its work is priced at the batch price (the price
  table's ``batch_discount``) in the usage ledger, the usage sidecar counts it in ``batch_responses``, and
  ``CallOutcome.cost_usd`` stays the live-price cost of the work (so judged lines are the same bytes
  whichever executor ran them);
* a non-answer is never cached nor a verdict: it is resubmitted until ``llm.non_answer_attempts`` replies,
  then returned as a non-answer (the component reports the question failed);
* an error line (``error`` set, or ``response.status_code`` not 200: both are checked) whose status the
  call tolerates is a failure outcome; 408/409/429/5xx, a malformed body and a request a batch did not
  run (``expired``, ``cancelled``) are resubmitted (``llm.max_attempts`` submissions at most); any other
  error is raised, naming the request, after everything else is stored;
* a ``failed`` or ``cancelled`` batch is reported with its id (what it finished is kept).

One run at a time: the executor keeps per-run state (the budget reservations, its ledger and cache
connections), so a second thread calling :meth:`BatchExecutor.run` or :meth:`~BatchExecutor.plan` while one
is under way gets :class:`ConcurrentUse` at once (nothing is submitted twice); calls from one thread after
another, or from several processes (the ledger is shared safely), are fine. Per-question work runs on the pool
of the run settings (``workers``, ``grace_seconds``, ``shard``: :class:`~mnemetric.execute.pool.PoolMapper`), as
with every executor.

``wait: false`` submits and stops with :class:`~.batch_remote.BatchPending` (exit 3): a rerun collects.
``mode: export`` (conf option ``batch-export``) writes the batch files to ``export_dir`` for another batch
runner (``vllm run-batch``) instead of submitting; ``mnemetric batch import`` stores their output.
"""

from __future__ import annotations

import contextlib
import threading
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from mnemetric.errors import ConfigError, InputError, MnemetricError
from mnemetric.execute.batch_remote import BatchError, BatchPending, Remote
from mnemetric.execute.batch_submit import export_message, open_slot, reserve_budget
from mnemetric.execute.calls import ANSWER, FAILURE, NON_ANSWER, CallOutcome, ModelCall, latency_measured
from mnemetric.execute.immediate import ImmediateExecutor, outcome_of
from mnemetric.execute.pool import PoolMapper
from mnemetric.llm.batch_files import MAX_BYTES, MAX_REQUESTS, request_line, split_lines, went_by_batch
from mnemetric.llm.batch_ledger import DONE, EXPORTED, LEDGER_FILENAME, OPEN, Ledger, Slot
from mnemetric.llm.budget import Budget, PriceTable, UsageStats, estimate_chat_tokens, estimate_prompt_tokens
from mnemetric.llm.cache import ResponseCache
from mnemetric.llm.replies import chat_result, non_answer_reason, usage_of
from mnemetric.llm.types import LLMRequestError, Usage

MODES = ("openai", "export")
RETRYABLE = frozenset({408, 409, 429})


def _retryable(status: int | None) -> bool:
    return status is None or status in RETRYABLE or status >= 500


class ConcurrentUse(MnemetricError):
    """A BatchExecutor used by two threads at once (module docstring)."""


class BatchExecutor(PoolMapper):
    """The Batch-API executor (module docstring). ``llm``: the run's ``llm:`` settings; ``workers``,
    ``grace_seconds``, ``shard``: the ``executor`` section's run settings."""

    def __init__(self, llm: Mapping[str, Any] | None = None, *, name: str = "batch", progress: bool = True,
                 mode: str = "openai", poll_interval: float = 30.0, max_requests_per_batch: int = MAX_REQUESTS,
                 max_bytes_per_batch: int = MAX_BYTES, wait: bool = True, max_wait: float | None = None,
                 ledger: str | None = None, export_dir: str = ".mnemetric/batch-export",
                 cache: ResponseCache | None = None, usage: UsageStats | None = None, budget: Budget | None = None,
                 workers: int | None = None, grace_seconds: float | None = None, shard: str | None = None,
                 address: str | None = None):
        from mnemetric.llm.settings import budget_from_params

        if mode not in MODES:
            raise ConfigError("executor.mode", f"{mode!r} is not one of {list(MODES)}")
        for key, value, low in (("poll_interval", poll_interval, 0), ("max_requests_per_batch", max_requests_per_batch, 1),
                                ("max_bytes_per_batch", max_bytes_per_batch, 1)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < low or (key == "poll_interval" and value <= 0):
                raise ConfigError(f"executor.{key}", f"expected a positive number, got {value!r}")
        for key, value, most in (("max_requests_per_batch", max_requests_per_batch, MAX_REQUESTS),
                                 ("max_bytes_per_batch", max_bytes_per_batch, MAX_BYTES)):
            if value > most:
                raise ConfigError(f"executor.{key}", f"{value} is over the Batch API's limit: it takes at most "
                                  f"{MAX_REQUESTS} requests and {MAX_BYTES} bytes per file", fix=f"set {most} or less")
        self.name, self.mode, self.progress, self.wait = name, mode, progress, bool(wait)
        self.llm = dict(llm or {})
        self.poll_interval, self.max_wait = float(poll_interval), max_wait
        self.max_requests, self.max_bytes = int(max_requests_per_batch), int(max_bytes_per_batch)
        self.export_dir = Path(export_dir)
        self.usage = usage if usage is not None else UsageStats()
        self.budget = budget if budget is not None else budget_from_params(self.llm)
        self.prices = PriceTable.from_dict(self.llm.get("prices"))
        self.max_attempts = int(self.llm.get("max_attempts", 6))
        self.non_answer_attempts = int(self.llm.get("non_answer_attempts", 2))
        self._cache_arg, self._cache = cache, cache
        self._ledger_path, self._ledger = ledger, None
        self._live: ImmediateExecutor | None = None
        self._remotes: dict[str, Remote] = {}
        self._urls: dict[str, str] = {}
        """base URL → the URL the calls were given (credentials included), for the transport only."""
        self._reserved: dict[str, float | None] = {}
        """key → the budget reservation of a request this run submitted (settled when its line is read)."""
        self._busy = threading.Lock()
        self.set_run_settings(workers=workers, grace_seconds=grace_seconds, shard=shard, address=address)

    def __repr__(self) -> str:
        return f"BatchExecutor(mode={self.mode!r}, poll_interval={self.poll_interval})"

    # -- parts -----------------------------------------------------------------------------------
    @property
    def cache(self) -> ResponseCache:
        if self._cache is None:
            self._cache = ResponseCache()
        return self._cache

    @property
    def ledger(self) -> Ledger:
        if self._ledger is None:
            self._ledger = Ledger(self.ledger_path)
        return self._ledger

    @property
    def ledger_path(self) -> Path:
        """``ledger`` as given, else the ledger file beside the response cache."""
        return Path(self._ledger_path) if self._ledger_path else self.cache.path.parent / LEDGER_FILENAME

    def live(self) -> ImmediateExecutor:
        """The immediate executor for timed calls (same cache, budget and usage ledger)."""
        if self._live is None:
            self._live = ImmediateExecutor(self.llm, progress=self.progress, cache=self.cache, usage=self.usage,
                                           budget=self.budget, grace_seconds=self.grace_seconds)
        return self._live

    def remote(self, url: str | None) -> Remote:
        if url not in self._remotes:
            self._remotes[url] = Remote(url, self.ledger, timeout=float(self.llm.get("timeout", 120)),
                                        max_attempts=self.max_attempts)
        return self._remotes[url]

    # -- answers ---------------------------------------------------------------------------------
    def _work(self, model: str, resolved: str, usage: Usage, batch: bool) -> float | None:
        price = self.prices.first([resolved, model])
        self.usage.work.add(model, resolved, usage.prompt_tokens, usage.completion_tokens, price, batch=batch)
        return price.cost(usage.prompt_tokens, usage.completion_tokens) if price else None

    def _answer(self, call: ModelCall, hit: Mapping[str, Any], *, cached: bool, repeat: bool = False) -> CallOutcome:
        """The outcome of ``call`` from its cached row (work usage counted as the live client counts it)."""
        if cached or repeat:
            self.usage.record_hit(call.model)
        resolved, batch = str(hit.get("model") or call.model), went_by_batch(hit)
        if call.endpoint == "embeddings":
            tokens = int((hit.get("usage") or {}).get("prompt_tokens") or 0)
            self._work(call.model, resolved, Usage(tokens, 0), batch)
            return CallOutcome(ANSWER, call.key, call.params_sent, model=call.model, cached=cached or repeat,
                               embedding=tuple(float(x) for x in hit["embedding"]))
        result = chat_result(hit, call.key, cached=cached, cost_usd=None, attempts=0 if cached else 1,
                             text_from=call.text_from)
        if result.ok:
            cost = self._work(call.model, resolved, usage_of(hit), batch)
            result = chat_result(hit, call.key, cached=cached, cost_usd=cost, attempts=0 if cached else 1,
                                 text_from=call.text_from)
        return outcome_of(call, result, repeat=repeat)

    def _usable(self, call: ModelCall, hit: Mapping[str, Any] | None) -> bool:
        if hit is None:
            return False
        return call.endpoint == "embeddings" or non_answer_reason(hit, call.text_from) is None

    # -- running ---------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _one_at_a_time(self, what: str) -> Iterator[None]:
        if not self._busy.acquire(blocking=False):
            raise ConcurrentUse(f"BatchExecutor.{what} called while another thread is running this executor: it "
                                "keeps one run's state (budget reservations, ledger and cache connections) and is not "
                                "thread-safe; nothing was submitted for this call")
        try:
            yield
        finally:
            self._busy.release()

    def run(self, calls: Sequence[ModelCall], *, desc: str = "llm", progress: bool | None = None) -> list[CallOutcome]:
        """One outcome per call, in order (the Executor protocol; module docstring). One thread at a time."""
        with self._one_at_a_time("run"):
            return self._run(list(calls), desc, progress)

    def _run(self, calls: list[ModelCall], desc: str, progress: bool | None) -> list[CallOutcome]:
        progress = self.progress if progress is None else progress
        outcomes: list[CallOutcome | None] = [None] * len(calls)
        timed = [i for i, c in enumerate(calls) if c.timed or latency_measured()]
        if timed:
            for i, o in zip(timed, self.live().run([calls[i] for i in timed], desc=desc, progress=progress)):
                outcomes[i] = o
        groups: dict[str, list[int]] = {}
        for i, c in enumerate(calls):
            if outcomes[i] is None:
                groups.setdefault(c.key, []).append(i)
        pending: dict[str, list[int]] = {}
        hits = []
        for key, idx in groups.items():
            hit = self.cache.get(key)
            if self._usable(calls[idx[0]], hit):
                hits.append(key)
                for i in idx:
                    outcomes[i] = self._answer(calls[i], hit, cached=True)
            else:
                if hit is not None:
                    self.cache.delete([key])  # a stored non-answer (older version): asked again, as live
                pending[key] = idx
        if hits:
            self._settle(hits)
        if pending:
            self._batched(calls, pending, outcomes, desc, progress)
        return [o for o in outcomes if o is not None]

    def _settle(self, hits: list[str]) -> None:
        """Mark done the ledger's open slots holding these cache hits whose replies are all cached
        (:func:`~.batch_collect.settle_answered`: a run killed between storing and marking). No ledger
        file: nothing to settle (none is made)."""
        from mnemetric.execute.batch_collect import settle_answered

        if self._ledger is None and not self.ledger_path.exists():
            return
        held = set(self.ledger.holders(hits, ("submitted", EXPORTED)).values())
        settle_answered(self.ledger, self.cache, [self.ledger.get(s) for s in sorted(held)])  # no network here:
        # a submitted slot whose batch the ledger has not seen end is left to `mnemetric batch status`

    def _batched(self, calls: list[ModelCall], pending: dict[str, list[int]], outcomes: list, desc: str,
                 progress: bool) -> None:
        sends: Counter[str] = Counter()
        non_answers: Counter[str] = Counter()
        fatal: list[str] = []
        while pending:
            want = {k: calls[idx[0]] for k, idx in pending.items()}
            slots, refused = self._submit(want)
            if self.mode == "export":
                raise BatchPending(export_message(self, slots))
            if not self.wait:
                raise BatchPending(f"{sum(s.requests for s in slots)} request(s) in batch(es) "
                                   f"{', '.join(s.name for s in slots)} (ledger {self.ledger.path}); rerun to collect "
                                   "their replies (`mnemetric batch status` shows progress)")
            results, problems = self._follow(slots, want, desc, progress)
            for key in list(pending):
                idx, call = pending[key], want[key]
                hit = self.cache.get(key)
                if self._usable(call, hit):
                    for n, i in enumerate(idx):
                        outcomes[i] = self._answer(calls[i], hit, cached=False, repeat=n > 0)
                    del pending[key]
                    continue
                if key in refused:
                    continue
                sends[key] += 1
                kind, line, reason = results.get(key, ("missing", None, "the batch ended before it ran"))
                outcome = None
                if kind == "non_answer":
                    non_answers[key] += 1
                    self.usage.record_non_answer(call.model)
                    if non_answers[key] >= self.non_answer_attempts:
                        outcome = CallOutcome(NON_ANSWER, key, call.params_sent, model=line.body.get("model") or "",
                                              reason=reason, attempts=non_answers[key])
                elif kind == "error" and line.status in call.tolerate:
                    outcome = CallOutcome(FAILURE, key, call.params_sent, reason=reason, status=line.status,
                                          attempts=sends[key])
                elif kind == "error" and not _retryable(line.status):
                    fatal.append(f"  {key} ({call.role}{', ' + call.tag if call.tag else ''}): {reason}")
                    del pending[key]
                elif sends[key] >= self.max_attempts and call.tolerates(None, no_reply=True):
                    outcome = CallOutcome(FAILURE, key, call.params_sent, reason=f"no reply after {sends[key]} batch "
                                          f"submission(s): {reason}", attempts=sends[key])
                elif sends[key] >= self.max_attempts:
                    fatal.append(f"  {key}: no reply after {sends[key]} batch submission(s): {reason}")
                    del pending[key]
                if outcome is not None:
                    for i in idx:
                        outcomes[i] = outcome
                    del pending[key]
            if problems:
                raise BatchError("\n".join(problems) + "\n  the replies they finished are cached; rerun to submit the "
                                 "rest")
            if refused:
                raise refused.pop("__error__")
        if fatal:
            raise LLMRequestError(f"{len(fatal)} batch request(s) failed (the other replies are cached):\n"
                                  + "\n".join(fatal[:20]))

    # -- submitting ------------------------------------------------------------------------------
    def _estimate(self, call: ModelCall) -> float | None:
        price = self.prices.first([call.model])
        if call.endpoint == "chat":
            prompt, out = estimate_chat_tokens(call.messages, call.params)
        else:
            prompt, out = estimate_prompt_tokens([call.text]), 0
        return price.batch_cost(prompt, out) if price else None

    def _recover(self, slot: Slot) -> Slot | None:
        """A held slot as this run can use it: a dead process's unfinished preparation dropped (None) or
        completed (an uploaded file's batch found or created)."""
        if slot.state == "preparing" and slot.owner_gone:
            self.ledger.drop(slot.slot)
            return None
        if slot.state == "uploaded" and slot.owner_gone:
            return self.remote(self._url_of(slot)).create(slot)
        return slot

    def _url_of(self, slot: Slot) -> str:
        return self._urls.get(slot.base_url, slot.base_url)

    def _submit(self, want: dict[str, ModelCall]) -> tuple[list[Slot], dict]:
        """Submit (or export) every wanted request no open slot holds; return the slots to wait for and the
        keys the budget refused (with the error under ``"__error__"``)."""
        for call in want.values():
            self._urls.setdefault(call.base_url, call.transport_url or call.base_url)
        held_states = (*OPEN, EXPORTED) if self.mode == "export" else OPEN
        waiting: dict[str, Slot] = {}
        for slot_id in set(self.ledger.holders(want, held_states).values()):
            slot = self.ledger.get(slot_id)
            slot = self._recover(slot) if slot is not None and slot.mode == self.mode else slot
            if slot is not None and slot.state != DONE:
                waiting[slot.slot] = slot
        held = self.ledger.holders(want, held_states)
        groups: dict[tuple, list[str]] = {}
        for key, call in want.items():
            if key not in held:
                groups.setdefault((call.base_url, call.endpoint, call.model, call.role), []).append(key)
        lines = {group: [(k, request_line(k, want[k].payload)) for k in keys] for group, keys in groups.items()}
        self._check_sizes(want, [kl for group in lines.values() for kl in group])  # before any batch is submitted
        refused: dict = {}
        for (base_url, kind, model, role), group in lines.items():
            for chunk in split_lines(group, self.max_requests, self.max_bytes):
                if refused:
                    refused.update((k, None) for k, _ in chunk)
                    continue
                chunk = reserve_budget(self, chunk, want, refused)
                if not chunk:
                    continue
                slot = open_slot(self, base_url, kind, model, role, chunk, want)
                if slot is not None:
                    waiting[slot.slot] = slot
        for key, slot_id in self.ledger.holders([k for k in want if k not in refused], held_states).items():
            if slot_id not in waiting:
                waiting[slot_id] = self.ledger.get(slot_id)
        return [s for s in waiting.values() if s is not None], refused

    def _check_sizes(self, want: dict[str, ModelCall], lines: list[tuple[str, bytes]]) -> None:
        """Refuse, before any batch is submitted, a request whose batch line alone is over ``max_bytes``."""
        for key, line in lines:
            size = len(line)
            if size <= self.max_bytes:
                continue
            call = want[key]
            raise InputError("<batch input file>", f"request {key} ({call.role}{', ' + call.tag if call.tag else ''}, "
                             f"model {call.model})", "body", f"one request is {size} bytes as a batch line, over the "
                             f"file limit executor.max_bytes_per_batch = {self.max_bytes} (the Batch API's: "
                             f"{MAX_BYTES}); nothing was submitted",
                             fix="send it live (executor=immediate)" + ("" if self.max_bytes == MAX_BYTES else
                                                                       ", or raise executor.max_bytes_per_batch"))

    def _follow(self, slots: list[Slot], want: dict[str, ModelCall], desc: str, progress: bool) -> tuple[dict, list]:
        from mnemetric.execute.batch_collect import follow

        return follow(self, slots, want, desc, progress)

    # -- dry run and lifetime --------------------------------------------------------------------
    def plan(self, calls: Sequence[ModelCall]) -> dict[str, Any]:
        """Cached / in a batch in flight / to send, and the estimated dollars at the batch price (no network)."""
        with self._one_at_a_time("plan"):
            return self._plan(calls)

    def _plan(self, calls: Sequence[ModelCall]) -> dict[str, Any]:
        total = cached = 0
        usd, to_send = 0.0, []
        for call in calls:
            total += 1
            if self._usable(call, self.cache.get(call.key)):
                cached += 1
            else:
                to_send.append(call)
        in_flight = self.ledger.holders([c.key for c in to_send], OPEN)
        for call in to_send:
            if call.key not in in_flight:
                usd += self._estimate(call) or 0.0
        return {"requests_total": total, "cached": cached, "to_send": total - cached, "estimated_usd": usd,
                "in_flight": len({c.key for c in to_send if c.key in in_flight})}

    def close(self) -> None:
        if self._live is not None:
            self._live.close()
            self._live = None
        for remote in self._remotes.values():
            remote.sdk.close()
        self._remotes.clear()
        if self._ledger is not None:
            self._ledger.close()
            self._ledger = None
        if self._cache is not None and self._cache_arg is None:
            self._cache.close()
            self._cache = None

    def __enter__(self) -> BatchExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
