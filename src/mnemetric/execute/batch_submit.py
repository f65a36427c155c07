"""Submitting for :class:`~mnemetric.execute.batch.BatchExecutor`: the budget reserved per request, a ledger slot
opened and its file uploaded and its batch created (or, in export mode, its file written), and the message of an
export. A slot is entered in the ledger before anything leaves this machine; a failure while uploading or creating
drops a slot nothing was created from, or leaves an uploaded one for the next run to find (never paid twice).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mnemetric.execute.calls import ModelCall
from mnemetric.llm.batch_files import URLS
from mnemetric.llm.batch_ledger import EXPORTED, Slot
from mnemetric.llm.cache import canonical_json

if TYPE_CHECKING:
    from mnemetric.execute.batch import BatchExecutor


def reserve_budget(ex: BatchExecutor, chunk: list, want: dict[str, ModelCall], refused: dict) -> list:
    from mnemetric.llm.budget import BudgetExceeded

    for n, (key, _) in enumerate(chunk):
        estimate = ex._estimate(want[key])
        try:
            ex.budget.reserve(want[key].model, estimate)
        except BudgetExceeded as exc:
            refused["__error__"] = exc
            refused.update((k, None) for k, _ in chunk[n:])
            return chunk[:n]
        ex._reserved[key] = estimate
    return chunk


def open_slot(ex: BatchExecutor, base_url: str, kind: str, model: str, role: str | None, chunk: list,
              want: dict[str, ModelCall]) -> Slot | None:
    members = {k: canonical_json(want[k].payload) for k, _ in chunk}
    slot, taken = ex.ledger.reserve(mode=ex.mode, base_url=base_url, kind=kind, model=model, role=role,
                                    members=members, state=EXPORTED if ex.mode == "export" else "preparing")
    for key in set(members) - set(taken):  # submitted by another process meanwhile: not ours to pay
        ex.budget.settle(ex._reserved.pop(key, None), 0.0)
    if slot is None:
        return None
    if ex.mode == "export":
        from mnemetric.io import atomic_open

        with atomic_open(ex.export_dir / f"{slot.slot}.jsonl", "wb") as fh:
            fh.writelines(line for k, line in chunk if k in set(taken))
        return slot
    remote = ex.remote(ex._urls.get(base_url, base_url))
    try:
        slot = remote.upload(slot, {k: want[k].payload for k in taken})
        return remote.create(slot)
    except BaseException:
        current = ex.ledger.get(slot.slot)
        if current is not None and current.state == "preparing":
            ex.ledger.drop(slot.slot)  # nothing was created from it
        elif current is not None and current.state == "uploaded":
            ex.ledger.update(slot.slot, pid=0)  # the next run looks for its batch, or creates it
        for key in taken:
            ex.budget.settle(ex._reserved.pop(key, None), 0.0)
        raise


def export_message(ex: BatchExecutor, slots: list[Slot]) -> str:
    files = [f"  {ex.export_dir / (s.slot + '.jsonl')}: {s.requests} request(s), model {s.model}, {URLS[s.kind]}"
             if s.mode == "export" else f"  batch {s.name}: {s.requests} request(s) in flight at the Batch API "
             "(collected by a run with executor=batch)" for s in slots]
    return (f"exported {sum(s.requests for s in slots)} request(s) for another batch runner:\n" + "\n".join(files)
            + "\n  next: run each file, e.g. `vllm run-batch -i FILE -o OUT.jsonl --model MODEL`, then "
            "`mnemetric batch import OUT.jsonl`, then rerun this command (it sends nothing already imported)")
