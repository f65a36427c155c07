"""Memory-side cost as a result: serving the model proxy around a run, and its two records (generic).

:func:`serving` opens a :class:`~mnemetric.llm.proxy.ModelProxy` over the run's executor when the memory
system needs one (settings: the ``memory_llm`` params section, :data:`DEFAULTS`), else does nothing.

:func:`write_memory_cost` writes the **tracked** record (stage retrieve: ``metrics/detail/memory_cost.json``;
`mnemetric retrieve --memory-cost FILE`), only what the inputs decide, so a fresh clone's rerun gives the same
bytes. Layout (``json.dump(indent=2)``, keys in this order)::

    {"memory": str, "uses_model_proxy": bool,
     "replayable": bool,                  # false: a prompt held the clock or a random id (a rerun cannot replay it)
     "volatile": [str, ...],              # what was found (kinds, never values)
     "requests": {"chat": int, "embeddings": int},     # the library's requests, all phases
     "usage": <usage block>,              # the cost of the work, all phases (mnemetric.llm.usage's layout)
     "systems": {<system>: {<phase>: {"requests": {...}, "usage": <usage block>}}},   # phases: setup, ingest, query
     "part": {"shard": "K/N", "outputs_sha256": [str, ...]}}   # only a shard's record (`retrieve --shard`)

``part`` binds a shard's record to the outputs it was written beside (the sha256 of each file the shard wrote),
so `mnemetric merge --memory-cost` adds up the records of the PARTs given and no other (a stale record of an
earlier run of the same memory is refused by name). An unsharded or merged record has no ``part``.

A system without the proxy writes ``uses_model_proxy: false`` and zero counts (its own model calls, if
any, are in the stage's usage sidecar). :func:`finish_memory_run` prints and logs the **untracked** facts of
THIS run (sent, replayed, the measured hit rate, dollars paid, seconds per phase) as one ``memory_proxy``
line of the run log (:mod:`mnemetric.llm.run_log`; stage ``<stage>-memory``), and warns when the run is not reproducible by replay.

The tracked record is typed once in :mod:`mnemetric.llm.memory_cost_file` (``MemoryCost``, its reader and writer,
and the sums of a sharded run's parts).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from mnemetric.io import write_json_atomic
from mnemetric.llm.budget import WorkUsage
from mnemetric.llm.memory_cost_file import PartRef
from mnemetric.llm.proxy import ModelProxy
from mnemetric.llm.proxy_ledger import KINDS, ProxyLedger
from mnemetric.llm.run_log import append_run_log, run_entry

DEFAULTS = {"base_url": None, "port": 0}
"""The ``memory_llm`` section: the real endpoint behind the proxy (None: ``$OPENAI_BASE_URL``, else OpenAI;
the key only from ``$OPENAI_API_KEY``) and the loopback port (0: any free port)."""


def proxy_settings(section: Mapping[str, Any] | None) -> dict[str, Any]:
    """``memory_llm`` with its defaults; an unknown key is a ConfigError naming it."""
    from mnemetric.errors import ConfigError

    got = dict(section or {})
    unknown = sorted(set(got) - set(DEFAULTS))
    if unknown:
        raise ConfigError(f"memory_llm.{unknown[0]}", "is not a setting of the model proxy",
                          fix=f"use {', '.join(DEFAULTS)}")
    return {**DEFAULTS, **got}


@contextlib.contextmanager
def serving(needed: bool, executor: Any, section: Mapping[str, Any] | None, system: str) -> Iterator[ModelProxy | None]:
    """The model proxy for the run when ``needed`` (a UsesModelProxy memory system), else None."""
    if not needed:
        yield None
        return
    settings = proxy_settings(section)
    with ModelProxy(executor, base_url=settings["base_url"], port=int(settings["port"]), system=system) as proxy:
        yield proxy


def _total(ledger: ProxyLedger) -> tuple[dict[str, int], dict[str, Any]]:
    requests = dict.fromkeys(KINDS, 0)
    work = WorkUsage()
    for cost in ledger.phases.values():
        for k in KINDS:
            requests[k] += cost.requests[k]
        work.absorb(cost.work)
    return requests, work.to_dict()


def memory_cost_record(memory: str, proxy: ModelProxy | None) -> dict[str, Any]:
    """The tracked record (module docstring)."""
    ledger = proxy.ledger if proxy is not None else ProxyLedger()
    requests, usage = _total(ledger)
    work = ledger.work()
    return {"memory": memory, "uses_model_proxy": proxy is not None, "replayable": work["replayable"],
            "volatile": work["volatile"], "requests": requests, "usage": usage, "systems": work["systems"]}


def write_memory_cost(path: str | Path, memory: str, proxy: ModelProxy | None,
                      part: PartRef | None = None) -> dict[str, Any]:
    """Write the tracked record atomically (``part``: a shard's, bound to its outputs); returns it."""
    record = memory_cost_record(memory, proxy)
    if part is not None:
        record["part"] = part.to_record()
    write_json_atomic(path, record)
    return record


def finish_memory_run(stage: str, memory: str, proxy: ModelProxy | None) -> dict[str, Any] | None:
    """Print this run's memory-side facts, append them to the run log (untracked); None without a proxy."""
    if proxy is None:
        return None
    facts = proxy.ledger.this_run()
    total = facts["total"]
    rate = "-" if total["hit_rate"] is None else f"{total['hit_rate']:.1%}"
    phases = ", ".join(f"{ph} {b['requests']} req / {b['seconds']:.1f} s" for ph, b in
                       facts["systems"].get(memory, {}).items())
    print(f"{stage}: memory {memory} through the model proxy: {total['requests']} request(s), sent "
          f"{total['sent']}, replayed from the cache {total['replayed']} (hit rate {rate}), "
          f"${total['usd_paid']:.4f} paid" + (f"; {phases}" if phases else ""), file=sys.stderr)
    if not facts["replayable"]:
        print(f"{stage}: memory {memory} is NOT reproducible by replay: {'; '.join(facts['volatile'])} — a rerun "
              f"sends those requests again (measured hit rate {rate})", file=sys.stderr)
    entry = {**run_entry(f"{stage}-memory", proxy.executor.usage, total["seconds"]), "memory_proxy": {"memory": memory, **facts}}
    append_run_log(entry)
    return facts


# -- reading the tracked record back (`mnemetric compare`, the report) ----------------------------------------
def cost_summary(record: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """``{memory, uses_model_proxy, replayable, volatile, requests, ingest_requests, query_requests, prompt_tokens,
    completion_tokens, usd}`` of a tracked record (None for None: a run made before the record existed)."""
    if record is None:
        return None
    phases: dict[str, int] = {"setup": 0, "ingest": 0, "query": 0}
    for blocks in (record.get("systems") or {}).values():
        for phase, block in blocks.items():
            phases[phase] = phases.get(phase, 0) + sum((block.get("requests") or {}).values())
    usage = record.get("usage") or {}
    return {"memory": record.get("memory"), "uses_model_proxy": bool(record.get("uses_model_proxy")),
            "replayable": record.get("replayable", True), "volatile": list(record.get("volatile") or []),
            "requests": sum((record.get("requests") or {}).values()), "ingest_requests": phases["ingest"],
            "query_requests": phases["query"], "prompt_tokens": int(usage.get("prompt_tokens") or 0),
            "completion_tokens": int(usage.get("completion_tokens") or 0), "usd": float(usage.get("usd") or 0.0)}


def cost_comparison(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """``{a, b, diff}`` of two tracked records' summaries (diff: B − A of the counts and dollars), None when
    neither run has one."""
    sa, sb = cost_summary(a), cost_summary(b)
    if sa is None and sb is None:
        return None
    keys = ("requests", "ingest_requests", "query_requests", "prompt_tokens", "completion_tokens", "usd")
    diff = {k: sb[k] - sa[k] for k in keys} if sa is not None and sb is not None else None
    return {"a": sa, "b": sb, "diff": diff}


def _side(s: Mapping[str, Any] | None) -> str:
    if s is None:
        return "— (no memory_cost record)"
    if not s["uses_model_proxy"]:
        return f"{s['memory']}: no model proxy (0 requests)"
    tokens = s["prompt_tokens"] + s["completion_tokens"]
    return (f"{s['memory']}: {s['requests']} requests (ingest {s['ingest_requests']}, query {s['query_requests']}), "
            f"{tokens} tokens, ${s['usd']:.4f}" + ("" if s["replayable"] else " — NOT reproducible by replay"))


def cost_lines(comparison: Mapping[str, Any] | None, bullet: str = "  ") -> list[str]:
    """The memory-side cost beside the accuracy difference (`mnemetric compare`'s text and Markdown)."""
    if comparison is None:
        return []
    lines = ["memory-side cost (metrics/detail/memory_cost.json: the cost of the work, cache hits included):",
             f"{bullet}A {_side(comparison['a'])}", f"{bullet}B {_side(comparison['b'])}"]
    d = comparison.get("diff")
    if d is not None:
        lines.append(f"{bullet}B − A: {d['requests']:+d} requests, "
                     f"{d['prompt_tokens'] + d['completion_tokens']:+d} tokens, ${d['usd']:+.4f}")
    return lines


def report_section(record: Mapping[str, Any] | None) -> Any:
    """The report page's "Memory-side cost" section (a :class:`mnemetric.report.model.Section`) of a tracked record;
    None for a system without the model proxy (its page stays as it was)."""
    from mnemetric.report.model import Section, Table

    if not record or not record.get("uses_model_proxy"):
        return None
    rows = []
    for system, phases in (record.get("systems") or {}).items():
        for phase, block in phases.items():
            req, usage = block.get("requests") or {}, block.get("usage") or {}
            rows.append((system, phase, str(req.get("chat", 0)), str(req.get("embeddings", 0)),
                         str(usage.get("prompt_tokens", 0)), str(usage.get("completion_tokens", 0)),
                         f"${float(usage.get('usd') or 0.0):.4f}"))
    table = Table(("memory system", "phase", "chat requests", "embeddings requests", "prompt tokens",
                   "completion tokens", "cost of the work"), tuple(rows), numeric=(2, 3, 4, 5, 6))
    replay = ("A rerun replays every request from the response cache (the prompts hold no clock or random id)."
              if record.get("replayable", True) else
              "NOT reproducible by replay: " + "; ".join(record.get("volatile") or []) + ". A rerun sends those "
              "requests again; the run log has the measured hit rate.")
    text = (f"What {record.get('memory')} asked of models through the model proxy while it ingested the haystacks "
            "and answered the queries (cache hits count as the work they stand for; this run's hit rate and "
            "seconds are in the run log, never here). " + replay)
    return Section("memory-cost", "Memory-side cost", (text,), (table,))
