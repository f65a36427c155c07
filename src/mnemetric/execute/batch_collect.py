"""Following batches until they end (:func:`follow`, with progress), reading a finished batch into the response cache (for :class:`~mnemetric.execute.batch.BatchExecutor`), and
importing the output file of another batch runner (``mnemetric batch import``).

Both read every line first (:func:`mnemetric.llm.batch_files.read_results`: a truncated file, an unknown or
repeated ``custom_id`` stop everything before a row is written), then store each usable reply with the
batch mark (its work is priced at the batch price by whoever reads it), then mark the slot done in the
ledger. A kill between the rows and the ledger write only repeats idempotent writes on the next run.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from tqdm.auto import tqdm

from mnemetric.errors import InputError
from mnemetric.execute.batch_remote import TERMINAL, BatchError, BatchPending, Remote
from mnemetric.llm.batch_files import ResultLine, cache_row, read_results
from mnemetric.llm.batch_ledger import DONE, EXPORTED, OPEN, Ledger
from mnemetric.llm.cache import ResponseCache
from mnemetric.llm.replies import non_answer_reason, parse_chat_response, usage_of
from mnemetric.llm.types import MalformedResponse, Usage


def classify(kind: str, line: ResultLine, text_from: str, mark: Mapping[str, Any]) -> tuple[str, str | None, Any]:
    """("stored", None, row) for a usable reply, else ("non_answer" | "malformed" | "error", reason, None)."""
    if not line.ok:
        return "error", line.reason, None
    if kind == "chat":
        try:
            parse_chat_response(json.dumps(line.body).encode("utf-8"))
        except MalformedResponse as exc:
            return "malformed", f"malformed reply: {exc}", None
        reason = non_answer_reason(line.body, text_from)
        return ("non_answer", reason, None) if reason else ("stored", None, cache_row("chat", line.body, mark))
    try:
        return "stored", None, cache_row("embeddings", line.body, mark)
    except ValueError as exc:
        return "malformed", f"malformed reply: {exc}", None


def collect(ex: Any, slot: Any, batch: Any, want: Mapping[str, Any]) -> tuple[dict[str, tuple], str | None]:
    """Store a terminal batch's replies; returns key → (kind, line, reason) for lines not stored, and the
    problem to report (a failed or cancelled batch, with its id), or None."""
    if batch.status == "failed":
        errors = "; ".join(f"{e.code}: {e.message}" + (f" (line {e.line})" if getattr(e, "line", None) else "")
                           for e in ((batch.errors.data if batch.errors else None) or []))
        for key in ex.ledger.keys(slot.slot):
            if key in ex._reserved:
                ex.budget.settle(ex._reserved.pop(key), 0.0)
        ex.ledger.finish(slot.slot, remote_status="failed", note=errors or None)
        return {}, (f"batch {batch.id} ({slot.requests} request(s), model {slot.model}) FAILED, nothing ran: "
                    f"{errors or 'the server gave no reason'}")
    keys = ex.ledger.keys(slot.slot)
    payloads = ex.ledger.payloads(slot.slot)
    lines = ex.remote(ex._url_of(slot)).download(slot, batch, set(keys))
    mark = {"batch": batch.id, "source": "openai"}
    rows, results, paid = [], {}, []
    for line in lines:
        call = want.get(line.key)
        kind, reason, row = classify(slot.kind, line, call.text_from if call else "content", mark)
        if line.ok and kind != "malformed":
            usage = Usage(int(row["usage"]["prompt_tokens"]), 0) if slot.kind == "embeddings" and row else usage_of(line.body)
            paid.append((line, str(line.body.get("model") or slot.model), usage))
        if row is not None:
            rows.append((line.key, row))
        else:
            results[line.key] = (kind, line, reason)
    for key, row in rows:
        payload = payloads.get(key) or (want[key].payload if key in want else None)
        if payload is not None:
            ex.cache.put(key, payload, row, stage=slot.role)
    for line, resolved, usage in paid:
        price = ex.prices.first([resolved, slot.model])
        cost = price.batch_cost(usage.prompt_tokens, usage.completion_tokens) if price else None
        ex.usage.record_sent(slot.model, usage.prompt_tokens, usage.completion_tokens, cost)
        ex.budget.settle(ex._reserved.pop(line.key, None), cost)
    for key in keys:
        if key in ex._reserved:  # no line: the batch ended before it ran (expired, cancelled): nothing paid
            ex.budget.settle(ex._reserved.pop(key), 0.0)
    ex.ledger.finish(slot.slot, remote_status=batch.status)
    problem = None
    if batch.status == "cancelled":
        problem = (f"batch {batch.id} (model {slot.model}) was CANCELLED: {len(rows)} of {slot.requests} "
                   "replies kept")
    return results, problem


def follow(ex: Any, slots: list, want: Mapping[str, Any], desc: str, progress: bool) -> tuple[dict, list]:
    """Poll until every slot has ended; collect each as it ends. Returns key → (kind, line, reason) for
    the lines that were not stored, and the problems (failed / cancelled batches) to report."""
    results: dict[str, tuple] = {}
    problems: list[str] = []
    started, open_slots = time.monotonic(), list(slots)
    with tqdm(total=sum(s.requests for s in slots), desc=f"{desc} (batch)", unit="req",
              disable=not progress) as bar:
        while open_slots:
            still, done_count, states = [], 0, []
            for slot in open_slots:
                slot = ex.ledger.get(slot.slot)
                if slot is None or slot.state == DONE:
                    done_count += slot.requests if slot else 0
                    continue
                if slot.state != "submitted" and slot.owner_gone:  # its preparer died meanwhile
                    slot = ex._recover(slot)
                    if slot is None:  # dropped: nothing was created; its requests go in the next round
                        continue
                if slot.state != "submitted":  # another live process is preparing it
                    still.append(slot)
                    continue
                batch = ex.remote(ex._url_of(slot)).retrieve(slot)
                states.append(f"{batch.id}: {batch.status}")
                if batch.status in TERMINAL:
                    found, problem = collect(ex, slot, batch, want)
                    results.update(found)
                    problems += [problem] if problem else []
                    done_count += slot.requests
                else:
                    still.append(slot)
                    counts = batch.request_counts
                    done_count += (int(counts.completed) + int(counts.failed)) if counts else 0
            bar.n = min(done_count, bar.total)
            bar.set_postfix_str("; ".join(states)[:120], refresh=False)
            bar.refresh()
            open_slots = still
            if open_slots:
                if ex.max_wait is not None and time.monotonic() - started > float(ex.max_wait):
                    raise BatchPending(f"batch(es) {', '.join(s.name for s in open_slots)} still running after "
                                       f"max_wait={ex.max_wait}s; rerun to collect (ledger {ex.ledger.path})")
                time.sleep(ex.poll_interval)
    return results, problems


SETTLED: Final = "settled: every reply was already in the response cache"


def settle_answered(ledger: Ledger, cache: ResponseCache, slots: Iterable[Any],
                    ended: Callable[[Any], bool] | None = None) -> list[str]:
    """Mark done each submitted or exported slot of ``slots`` all of whose requests have a reply in ``cache``:
    nothing is left to collect (a run killed after storing a batch's replies but before marking its slot
    done, an import killed likewise, or requests answered live meanwhile). Otherwise such a slot would stay
    open for ever, since a run whose calls are all cache hits never looks at the ledger again.

    A submitted slot is settled only when its batch has ended at the server (:data:`TERMINAL`): as the ledger
    last saw it, else as ``ended(slot)`` finds it now (a look at the server; None: no look). A batch still
    running there stays listed by `mnemetric batch status` and can still be cancelled (it bills until it ends).
    Returns the slots settled."""
    settled = []
    for slot in slots:
        if slot is None or slot.state not in ("submitted", EXPORTED):
            continue
        keys = ledger.keys(slot.slot)
        if not keys or not all(k in cache for k in keys):
            continue
        if slot.state == "submitted" and slot.remote_status not in TERMINAL and not (ended and ended(slot)):
            continue
        if slot.state == EXPORTED:
            ledger.update(slot.slot, completed=len(keys))  # `batch status`: N+0 of N done
        ledger.finish(slot.slot, note=SETTLED)
        settled.append(slot.slot)
    return settled


def remote_ended(ledger: Ledger) -> Callable[[Any], bool]:
    """``ended`` for :func:`settle_answered`: has the slot's batch ended at its server (looked up now; a server
    that cannot say counts as not ended)."""
    def ended(slot: Any) -> bool:
        try:
            return Remote(slot.base_url, ledger).retrieve(slot).status in TERMINAL
        except (BatchError, OSError):
            return False
    return ended


def import_output(paths: Sequence[str | Path], ledger: Ledger, cache: ResponseCache) -> dict[str, Any]:
    """Store the replies of batch output files (``vllm run-batch -o``, or a Batch API's files fetched by hand)
    whose requests the ledger has (an exported or open slot). Every file is read and checked before any
    row is written; an unknown ``custom_id`` names the file and line. A line for a request whose reply is
    stored (the same file imported again) is counted ``already`` and changes nothing. A
    slot all of whose requests now have a stored reply is marked done; one this import answered only in part
    stays as it was (its completed count updated) and is listed in ``unanswered``: slot → {"state", "requests",
    "missing": its requests with no stored reply, "no_line": of those, with no line in the files (a file cut
    at a line boundary, a runner that stopped), "not_stored": with an error, non-answer or malformed line}.
    Returns counts per outcome."""
    slots = ledger.slots(states=(*OPEN, EXPORTED))
    owner: dict[str, Any] = {}
    payloads: dict[str, dict] = {}
    for slot in slots:
        for key, payload in ledger.payloads(slot.slot).items():
            owner[key], payloads[key] = slot, payload
    stored = {key for slot in ledger.slots(states=(DONE,)) for key in ledger.keys(slot.slot)
              if key not in owner and key in cache}
    seen: dict[str, str] = {}
    read = []
    for path in paths:
        p = Path(path)
        if not p.is_file():
            raise InputError(str(p), "<file>", "<path>", "no such file")
        read += [(p, line) for line in read_results(p.read_bytes(), file=str(p), known=owner.keys() | stored,
                                                    seen=seen)]
    counts = {"stored": 0, "non_answer": 0, "error": 0, "malformed": 0, "already": 0}
    rows, answered = [], set()
    for p, line in read:
        if line.key in cache:  # imported before (its slot done, or answered only in part)
            counts["already"] += 1
            continue
        slot = owner[line.key]
        answered.add(line.key)
        kind, reason, row = classify(slot.kind, line, "content", {"batch": slot.batch_id or slot.slot, "source": "import"})
        counts[kind] += 1
        if row is not None:
            rows.append((line.key, row, slot))
    for key, row, slot in rows:
        cache.put(key, payloads[key], row, stage=slot.role)
    finished, unanswered = [], {}
    touched = {owner[line.key].slot for _, line in read if line.key in owner}  # slots these files answer
    for slot in {s.slot: s for s in owner.values()}.values():
        keys = ledger.keys(slot.slot)
        missing = [k for k in keys if k not in cache]
        if not missing:
            ledger.update(slot.slot, completed=len(keys))  # `batch status`: N+0 of N done
            ledger.finish(slot.slot, note="imported")
            finished.append(slot.slot)
        elif slot.slot in touched:
            ledger.update(slot.slot, completed=len(keys) - len(missing))
            no_line = sum(k not in answered for k in missing)
            unanswered[slot.slot] = {"state": slot.state, "requests": len(keys), "missing": len(missing),
                                     "no_line": no_line, "not_stored": len(missing) - no_line}
    return {**counts, "slots_done": finished, "unanswered": unanswered, "ledger": str(ledger.path), "state": DONE}
