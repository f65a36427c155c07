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
     "systems": {<system>: {<phase>: {"requests": {...}, "usage": <usage block>}}}}   # phases: setup, ingest, query

A system without the proxy writes ``uses_model_proxy: false`` and zero counts (its own model calls, if
any, are in the stage's usage sidecar). :func:`finish_memory_run` prints and logs the **untracked** facts of
THIS run (sent, replayed, the measured hit rate, dollars paid, seconds per phase) as one ``memory_proxy``
line of the run log (:mod:`mnemetric.llm.run_log`; stage ``<stage>-memory``), and warns when the run is not reproducible by replay.

The tracked record is typed once here: :class:`MemoryCost` (reader :func:`read_memory_cost`, writer
:func:`write_memory_cost_record`), and :func:`sum_memory_costs` adds up the records of the disjoint parts of one
sharded run (`mnemetric merge`): counts and tokens exactly, dollars summed as :func:`mnemetric.llm.usage.sum_usage`
sums them (the unsharded run's up to float rounding), ``replayable`` only when every part is, ``volatile`` united.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from mnemetric.errors import InputError
from mnemetric.io import write_json_atomic
from mnemetric.llm.budget import WorkUsage
from mnemetric.llm.proxy import ModelProxy
from mnemetric.llm.proxy_ledger import KINDS, PHASES, ProxyLedger
from mnemetric.llm.run_log import append_run_log, run_entry
from mnemetric.llm.usage import UsageRecord, sum_usage
from mnemetric.records import Fields, read_json_file

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


_FIX: Final = "regenerate it by rerunning the memory step (stage retrieve / v2_memory, or `mnemetric v2 run`)"
_FIELDS: Final = ("memory", "uses_model_proxy", "replayable", "volatile", "requests", "usage", "systems")


def _requests(f: Fields, name: str) -> tuple[int, ...]:
    """``{chat, embeddings}`` as counts in :data:`KINDS` order."""
    block = f.at(name).only(KINDS)
    return tuple(block.count(k) for k in KINDS)


@dataclass(frozen=True)
class PhaseWork:
    """What one memory system asked through the proxy in one phase (``systems.<system>.<phase>``)."""

    system: str
    phase: str
    """One of :data:`mnemetric.llm.proxy_ledger.PHASES`."""
    requests: tuple[int, ...]
    """Requests per kind, in :data:`KINDS` order."""
    usage: UsageRecord

    def to_record(self) -> dict[str, Any]:
        return {"requests": dict(zip(KINDS, self.requests, strict=True)), "usage": self.usage.to_record()}


@dataclass(frozen=True)
class MemoryCost:
    """The tracked memory-side cost record (module docstring)."""

    memory: str
    uses_model_proxy: bool
    replayable: bool
    volatile: tuple[str, ...]
    requests: tuple[int, ...]
    """All phases' requests per kind, in :data:`KINDS` order."""
    usage: UsageRecord
    systems: tuple[PhaseWork, ...]
    """Systems in sorted order, each one's phases in :data:`PHASES` order (the writer's order)."""

    @classmethod
    def from_record(cls, raw: Any, *, file: str) -> MemoryCost:
        """Validate a record: known fields only, counts non-negative, the totals the sums of the phases'."""
        f = Fields.of(raw, file=file, record="<file>", fix=_FIX).only(_FIELDS)
        requests = _requests(f, "requests")
        usage = UsageRecord.from_record(f.get("usage", ((dict,), "a usage block")), file=file, line="usage")
        systems = []
        for system, phases in f.at("systems").raw.items():
            pf = Fields.of(phases, file=file, record="<file>", prefix=f"systems.{system}.", fix=_FIX)
            for phase in phases:
                if phase not in PHASES:
                    raise pf.error(phase, f"not a phase (expected one of {', '.join(PHASES)})")
                block = pf.at(phase).only(("requests", "usage"))
                systems.append(PhaseWork(system, phase, _requests(block, "requests"),
                                         UsageRecord.from_record(block.get("usage", ((dict,), "a usage block")),
                                                                 file=file, line=f"systems.{system}.{phase}.usage")))
        for i, kind in enumerate(KINDS):
            summed = sum(w.requests[i] for w in systems)
            if summed != requests[i]:
                raise f.error(f"requests.{kind}", f"total {requests[i]} is not the phases' sum {summed}")
        for name in ("responses", "prompt_tokens", "completion_tokens"):
            summed = sum(getattr(w.usage, name) for w in systems)
            if summed != getattr(usage, name):
                raise f.error(f"usage.{name}", f"total {getattr(usage, name)} is not the phases' sum {summed}")
        return cls(f.string("memory"), f.boolean("uses_model_proxy"), f.boolean("replayable"), f.strings("volatile"),
                   requests, usage, tuple(systems))

    def to_record(self) -> dict[str, Any]:
        systems: dict[str, dict[str, Any]] = {}
        for w in self.systems:
            systems.setdefault(w.system, {})[w.phase] = w.to_record()
        return {"memory": self.memory, "uses_model_proxy": self.uses_model_proxy, "replayable": self.replayable,
                "volatile": list(self.volatile), "requests": dict(zip(KINDS, self.requests, strict=True)),
                "usage": self.usage.to_record(), "systems": systems}


def read_memory_cost(path: str | Path) -> MemoryCost:
    """Read and validate a tracked memory-cost record."""
    raw = read_json_file(path, missing_fix="run the memory step that writes it first", fix=_FIX)
    return MemoryCost.from_record(raw, file=str(path))


def part_memory_costs(files: Sequence[str | Path]) -> list[tuple[Path, MemoryCost]] | None:
    """The memory-cost records of the parts of a sharded run, each validated, before anything is written: None
    when no part has one; a part without one, when others have theirs, is an error naming it (the rule of
    :func:`mnemetric.llm.usage.part_usage`)."""
    paths = [Path(f) for f in files]
    have = [f.is_file() for f in paths]
    if not any(have):
        return None
    if not all(have):
        raise InputError(str(paths[have.index(False)]), "<file>", "memory cost", "missing, while other parts have "
                         "theirs", fix="merge the parts with their memory-cost records (rerun the shard that lost it)")
    return [(f, read_memory_cost(f)) for f in paths]


def write_memory_cost_record(path: str | Path, cost: MemoryCost) -> None:
    """Write a typed record atomically (the layout :func:`memory_cost_record` builds)."""
    write_json_atomic(path, cost.to_record())


def sum_memory_costs(parts: Sequence[tuple[str | Path, MemoryCost]], once: frozenset[str] = frozenset()) -> MemoryCost:
    """The record of the parts of one sharded run (module docstring). ``parts``: (file, record) pairs. A phase in
    ``once`` is work every part did alike (the setup of each process; the build of a memory shared by all the
    questions): it must be the same in every part and counts once, as in the unsharded run; every other phase is
    the parts' disjoint work and is summed. Parts of different memories, some through the model proxy and some
    not, or a ``once`` phase that differs, are an error naming the file."""
    if not parts:
        raise InputError("<parts>", "<file>", "memory cost", "no part given", fix=_FIX)
    first_file, first = parts[0]
    other = "merge the shards of one run (rerun the shard that differs)"
    for file, cost in parts[1:]:
        for name in ("memory", "uses_model_proxy"):
            if getattr(cost, name) != getattr(first, name):
                raise InputError(str(file), "<file>", name, f"{getattr(cost, name)!r}, but {first_file} has "
                                 f"{getattr(first, name)!r}: not parts of one run", fix=other)
    phases: dict[tuple[str, str], list[tuple[str | Path, PhaseWork]]] = {}
    for file, cost in parts:
        for w in cost.systems:
            phases.setdefault((w.system, w.phase), []).append((file, w))
    systems = []
    for s, ph in sorted(phases, key=lambda sp: (sp[0], PHASES.index(sp[1]))):
        got = phases[s, ph]
        if ph in once:
            holders = {str(f) for f, _ in got}
            lacking = next((f for f, _ in parts if str(f) not in holders), None)
            base = got[0][1].to_record()
            odd = lacking if lacking is not None else next((f for f, w in got if w.to_record() != base), None)
            if odd is not None:
                raise InputError(str(odd), "<file>", f"systems.{s}.{ph}",
                                 ("missing" if lacking is not None else "differs") + f" (see {got[0][0]}): work every "
                                 "shard does alike must be the same in each",
                                 fix="run the memory step unsharded (its requests are not the same in every shard)")
            systems.append(got[0][1])
            continue
        works = [w for _, w in got]
        systems.append(PhaseWork(s, ph, tuple(sum(w.requests[i] for w in works) for i in range(len(KINDS))),
                                 sum_usage([w.usage for w in works])))
    costs = [c for _, c in parts]
    # the totals from the phases as merged (a phase counted once is in them once)
    total_usage = sum_usage([w.usage for w in systems]) if systems else sum_usage([c.usage for c in costs])
    return MemoryCost(first.memory, first.uses_model_proxy, all(c.replayable for c in costs),
                      tuple(sorted({v for c in costs for v in c.volatile})),
                      tuple(sum(w.requests[i] for w in systems) for i in range(len(KINDS))), total_usage,
                      tuple(systems))


def write_memory_cost(path: str | Path, memory: str, proxy: ModelProxy | None) -> dict[str, Any]:
    """Write the tracked record atomically; returns it."""
    record = memory_cost_record(memory, proxy)
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
