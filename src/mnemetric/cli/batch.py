"""`mnemetric batch status|cancel|forget|export|import`: the ledger of batches (mnemetric.execute.batch).

The ledger (``batch-ledger.sqlite3`` beside the response cache, ``$MNEMETRIC_CACHE_DIR``) lists every batch a
run submitted with ``executor=batch`` or exported with ``executor=batch-export``, and what became of it.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from mnemetric.cli.registry import Handler, group, subcommand
from mnemetric.errors import ConfigError
from mnemetric.execute.batch_remote import BatchError

group("batch", "the OpenAI Batch API ledger: status, cancel, forget; export/import batch files for other runners",
      "Batches submitted by `-S executor=batch` / `--executor batch` (or exported by executor=batch-export) are "
      "kept in a ledger beside the response cache, so a killed run resumes them without paying twice. These "
      "commands show and steer them, and move batch files to and from other batch runners (vllm run-batch).")


def _ledger_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ledger", type=Path, default=None,
                   help="ledger file (default: batch-ledger.sqlite3 beside the response cache, $MNEMETRIC_CACHE_DIR)")


def _ledger(a: argparse.Namespace) -> Any:
    """The ledger ``--ledger`` names, else the default beside the response cache (a context manager)."""
    from mnemetric.llm.batch_ledger import LEDGER_FILENAME, Ledger
    from mnemetric.llm.cache import default_cache_dir

    return Ledger(a.ledger or default_cache_dir() / LEDGER_FILENAME)


def _cache_path(a: argparse.Namespace) -> Path:
    """The response cache beside ``--ledger``, else the default one (the ledger's folder is the cache's)."""
    from mnemetric.llm.cache import CACHE_FILENAME, default_cache_dir

    return (a.ledger.parent if a.ledger else default_cache_dir()) / CACHE_FILENAME


@contextmanager
def _batches(a: argparse.Namespace, names: Sequence[str] | None,
             states: tuple[str, ...] | None = None) -> Iterator[tuple[Any, list[Any]]]:
    """The open ledger (:func:`_ledger`) and the slots a subcommand acts on: the ones ``names`` names (by slot
    or batch id, all looked up first: one the ledger lacks stops the command before any is acted on), or
    with ``names`` None, every slot in ``states`` (None: every slot), oldest first."""
    with _ledger(a) as ledger:
        yield ledger, ledger.slots(states=states) if names is None else [_slot(ledger, n) for n in names]


def _slot(ledger: Any, name: str) -> Any:
    slot = ledger.get(name)
    if slot is None:
        raise BatchError(f"{ledger.path}: no batch or slot {name!r} (see `mnemetric batch status`)")
    return slot


def _in_state(ledger: Any, slots: Sequence[Any], state: str, why: str) -> Iterator[Any]:
    """``slots`` one by one, each checked, as it is reached, to be in ``state``: another state stops the
    command there (``why`` says why), after the earlier slots were acted on."""
    for s in slots:
        if s.state != state:
            raise BatchError(f"{ledger.path}: {s.name} is {s.state}, {why}")
        yield s


def _row(s) -> dict:
    when = datetime.fromtimestamp(s.created_at, timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")
    return {"batch": s.batch_id, "slot": s.slot, "state": s.state, "status": s.remote_status, "mode": s.mode,
            "model": s.model, "endpoint": s.kind, "base_url": s.base_url, "requests": s.requests,
            "completed": s.completed, "failed": s.failed, "created": when, "note": s.note}


@subcommand("batch", "status", "list the batches of the ledger (open ones refreshed from the server)",
            "One line per batch: its id, state in the ledger (preparing, uploaded, submitted, exported, done), "
            "status at the server and request counts. Open batches are looked up at their server unless --offline. "
            "A submitted or exported batch all of whose replies are in the response cache (a run killed after "
            "storing them) is marked done first; a submitted one only once its batch has ended at the server.")
def _status(p: argparse.ArgumentParser) -> Handler:
    _ledger_option(p)
    p.add_argument("--offline", action="store_true",
                   help="no network, no API key: the ledger as it stands (a slot whose replies are all cached and "
                        "whose batch the ledger saw end is still marked done)")
    p.add_argument("--json", action="store_true", help="print JSON rows")
    p.add_argument("--all", action="store_true", help="include batches that are done")

    def handler(a: argparse.Namespace) -> int:
        from mnemetric.execute.batch_collect import remote_ended, settle_answered
        from mnemetric.execute.batch_remote import Remote
        from mnemetric.llm.batch_ledger import DONE
        from mnemetric.llm.cache import ResponseCache

        cache_path = _cache_path(a)
        with _ledger(a) as ledger:
            if cache_path.is_file():  # a slot whose replies are all cached is done (a run killed before marking it;
                with ResponseCache(cache_path) as cache:  # a submitted one once its batch has ended at the server)
                    settle_answered(ledger, cache, ledger.slots(states=("submitted", "exported")),
                                    ended=None if a.offline else remote_ended(ledger))
            slots = ledger.slots()
            rows = []
            for s in slots:
                if s.state == DONE and not a.all:
                    continue
                row = _row(s)
                if not a.offline and s.state == "submitted":
                    try:
                        Remote(s.base_url, ledger).retrieve(s)
                        row = _row(ledger.get(s.slot))
                    except BatchError as exc:
                        row["error"] = str(exc).splitlines()[0]
                rows.append(row)
        if a.json:
            print(json.dumps(rows, indent=2))
            return 0
        print(f"ledger {ledger.path}: {len(rows)} batch(es)" + ("" if a.all else " not done (--all: every one)"))
        for r in rows:
            print(f"  {r['batch'] or r['slot']}: {r['state']}/{r['status'] or '-'} {r['model']} {r['endpoint']}, "
                  f"{r['completed']}+{r['failed']} of {r['requests']} done, created {r['created']}"
                  + (f" — {r['error']}" if r.get("error") else "") + (f" ({r['note']})" if r.get("note") else ""))
        return 0
    return handler


@subcommand("batch", "cancel", "cancel batches in flight (their finished replies are kept by the run that collects)",
            "Asks the server to cancel each batch (status cancelling, then cancelled, with partial output). A run "
            "waiting on it stores what finished and reports the batch as cancelled; a rerun submits the rest.")
def _cancel(p: argparse.ArgumentParser) -> Handler:
    _ledger_option(p)
    p.add_argument("batch", nargs="*", help="batch ids (or slot ids)")
    p.add_argument("--all", action="store_true", help="every submitted batch of the ledger")

    def handler(a: argparse.Namespace) -> int:
        from mnemetric.execute.batch_remote import Remote

        with _batches(a, None if a.all else a.batch, ("submitted",)) as (ledger, slots):
            if not slots:
                raise ConfigError("batch cancel", "no batch named", fix="name the batches to cancel, or pass --all")
            for s in _in_state(ledger, slots, "submitted", "not a submitted batch; nothing to cancel at a server "
                               "(`mnemetric batch forget` drops a slot)"):
                batch = Remote(s.base_url, ledger).cancel(s)
                print(f"{batch.id}: {batch.status}")
        return 0
    return handler


@subcommand("batch", "forget", "drop batches from the ledger (their requests are submitted again by the next run)",
            "For a batch the server no longer has (deleted, expired files, another account): the ledger stops "
            "waiting for it. If the batch did run, its requests are paid again when the next run submits them.")
def _forget(p: argparse.ArgumentParser) -> Handler:
    _ledger_option(p)
    p.add_argument("batch", nargs="+", help="batch ids (or slot ids)")

    def handler(a: argparse.Namespace) -> int:
        with _ledger(a) as ledger:
            for name in a.batch:  # one by one: an unknown name stops the command after the ones before it
                s = _slot(ledger, name)
                ledger.drop(s.slot)
                print(f"forgot {s.name} ({s.requests} request(s), {s.state})")
        return 0
    return handler


@subcommand("batch", "export", "write the batch JSONL of exported requests, for any batch runner (vllm run-batch)",
            "Writes one <slot>.jsonl per exported slot (executor=batch-export put them in the ledger): lines "
            "{custom_id, method, url, body} with custom_id = the response cache's request key. Run them, e.g. "
            "`vllm run-batch -i FILE -o OUT.jsonl --model MODEL`, then `mnemetric batch import OUT.jsonl`.")
def _export(p: argparse.ArgumentParser) -> Handler:
    _ledger_option(p)
    p.add_argument("--out", type=Path, required=True, help="folder for the .jsonl files")
    p.add_argument("slot", nargs="*", help="slots to write (default: every exported one)")

    def handler(a: argparse.Namespace) -> int:
        from mnemetric.io import atomic_open
        from mnemetric.llm.batch_files import request_line
        from mnemetric.llm.batch_ledger import EXPORTED

        with _batches(a, a.slot or None, (EXPORTED,)) as (ledger, slots):
            for s in _in_state(ledger, slots, EXPORTED, "not exported: only requests no server is running are "
                               "exported (no request is paid twice)"):
                path = a.out / f"{s.slot}.jsonl"
                with atomic_open(path, "wb") as fh:
                    fh.writelines(request_line(k, v) for k, v in ledger.payloads(s.slot).items())
                print(f"{path}: {s.requests} request(s), model {s.model}")
        return 0
    return handler


@subcommand("batch", "import", "store a batch runner's output file(s) in the response cache",
            "Each line {custom_id, response: {status_code, body}, error} must answer an exported (or open) request "
            "of the ledger: an unknown custom_id, a truncated file or a repeated custom_id stops the import before "
            "anything is stored. A file imported again adds nothing (its lines are counted 'already stored'). "
            "Usable replies are cached (marked as batch replies); errors and non-answers are "
            "counted and left to the next run. A slot the files answer only in part (a file cut at a line "
            "boundary, a runner that stopped, error lines) is named with how many of its requests still have no "
            "reply, and the exit status is 3 (replies not all in yet), else 0.")
def _import(p: argparse.ArgumentParser) -> Handler:
    _ledger_option(p)
    p.add_argument("files", nargs="+", type=Path, help="output files (vllm run-batch -o, or a Batch API output file)")

    def handler(a: argparse.Namespace) -> int:
        from mnemetric.execute.batch_collect import import_output
        from mnemetric.llm.batch_ledger import EXPORTED
        from mnemetric.llm.cache import ResponseCache

        with _ledger(a) as ledger, ResponseCache(_cache_path(a)) as cache:
            done = import_output(a.files, ledger, cache)
        print(f"imported: {done['stored']} stored, {done['non_answer']} non-answer(s), {done['error']} error(s), "
              f"{done['malformed']} malformed, {done['already']} already stored; "
              f"slots done: {', '.join(done['slots_done']) or 'none'}")
        for slot, n in done["unanswered"].items():
            print(f"  {slot}: {n['missing']} of {n['requests']} request(s) still have no stored reply ({n['no_line']} "
                  f"with no line in the file(s): a file cut short or a runner that stopped; {n['not_stored']} with an "
                  f"error, non-answer or malformed line); the slot stays {n['state']}: "
                  + (f"run its requests again (`mnemetric batch export --out DIR {slot}`) and import that output"
                     if n["state"] == EXPORTED else "a run with executor=batch collects the rest from its batch"))
        if done["unanswered"]:
            print(f"exit 3: {sum(n['missing'] for n in done['unanswered'].values())} request(s) of "
                  f"{len(done['unanswered'])} slot(s) still have no reply")
            return 3
        return 0
    return handler
