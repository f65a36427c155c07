"""The tracked memory-side cost record, typed once: :class:`MemoryCost` (reader :func:`read_memory_cost`, writer
:func:`write_memory_cost_record`), and the sums of a sharded run's parts (generic).

The layout and its builder are :mod:`mnemetric.llm.memory_cost`'s (``memory_cost_record``).
:func:`sum_memory_costs` adds up the records of the disjoint parts of one sharded run (`mnemetric merge`): counts
and tokens exactly, dollars summed as :func:`mnemetric.llm.usage.sum_usage` sums them (the unsharded run's up to
float rounding), ``replayable`` only when every part is, ``volatile`` united. :func:`part_memory_costs` reads the
records beside a V2 run's parts; :func:`parts_memory_costs` matches V1 shard records to their parts by ``part``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from mnemetric.errors import InputError
from mnemetric.io import write_json_atomic
from mnemetric.llm.proxy_ledger import KINDS, PHASES
from mnemetric.llm.usage import UsageRecord, sum_usage
from mnemetric.records import Fields, read_json_file

_FIX: Final = "regenerate it by rerunning the memory step (stage retrieve / v2_memory, or `mnemetric v2 run`)"
_FIELDS: Final = ("memory", "uses_model_proxy", "replayable", "volatile", "requests", "usage", "systems", "part")


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
class PartRef:
    """The shard a record's run was (``K/N``) and the sha256 of each output that shard wrote (``part``)."""

    shard: str
    outputs_sha256: tuple[str, ...]

    @classmethod
    def from_record(cls, f: Fields) -> PartRef:
        f = f.only(("shard", "outputs_sha256"))
        shas = f.strings("outputs_sha256")
        if not shas or not all(len(sha) == 64 for sha in shas):
            raise f.error("outputs_sha256", "expected one or more sha256 hex digests")
        return cls(f.string("shard"), shas)

    def to_record(self) -> dict[str, Any]:
        return {"shard": self.shard, "outputs_sha256": list(self.outputs_sha256)}


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
    part: PartRef | None = None
    """A shard's record: which shard, beside which outputs (module docstring); None for a whole run's."""

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
        part = PartRef.from_record(f.at("part")) if "part" in f.raw else None
        return cls(f.string("memory"), f.boolean("uses_model_proxy"), f.boolean("replayable"), f.strings("volatile"),
                   requests, usage, tuple(systems), part)

    def to_record(self) -> dict[str, Any]:
        systems: dict[str, dict[str, Any]] = {}
        for w in self.systems:
            systems.setdefault(w.system, {})[w.phase] = w.to_record()
        record = {"memory": self.memory, "uses_model_proxy": self.uses_model_proxy, "replayable": self.replayable,
                  "volatile": list(self.volatile), "requests": dict(zip(KINDS, self.requests, strict=True)),
                  "usage": self.usage.to_record(), "systems": systems}
        return record if self.part is None else {**record, "part": self.part.to_record()}


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


def part_ref(shard: object | None, outputs: Sequence[str | Path | None]) -> PartRef | None:
    """The ``part`` of a shard's record: the shard (``K/N``; None: an unsharded run, no ``part``) and the sha256 of
    each output it wrote (None entries: outputs it did not write). The one builder (`retrieve --shard`, stage
    retrieve with ``executor.shard``)."""
    from mnemetric.io import sha256_file

    if shard is None:
        return None
    return PartRef(str(shard), tuple(sha256_file(out) for out in outputs if out is not None))


def parts_memory_costs(records: Sequence[str | Path],
                       parts: Sequence[tuple[str | Path, str]]) -> list[tuple[Path, MemoryCost]]:
    """The shard records ``records`` (`merge --memory-cost`), each matched to one of ``parts`` ((file, its shard
    ``K/N`` from its manifest)) by that part's shard and the sha256 of its file (the record's ``part``), in the
    parts' order: two shards of equal bytes (empty ones) are told apart by their shard. A part that cannot be
    read, a record without ``part`` (a whole run's), one of no part given (a stale record, or another run's), two
    records of one part, or a part without a record are errors naming the file."""
    from mnemetric.io import sha256_file

    by_key: dict[tuple[str, str], Path] = {}
    for p, shard in parts:
        try:
            by_key[sha256_file(p), shard] = Path(p)
        except OSError as exc:
            raise InputError(str(p), "<file>", "PART", f"cannot be read: {exc.strerror or exc}",
                             fix="give the shards' output files as PARTs") from None
    owner: dict[Path, tuple[Path, MemoryCost]] = {}
    for file in map(Path, records):
        cost = read_memory_cost(file)
        if cost.part is None:
            raise InputError(str(file), "<file>", "part", "missing: not a shard's record (an unsharded run wrote it)",
                             fix="give the records each `retrieve --shard K/N --memory-cost` wrote beside its PART")
        part = next((by_key[sha, cost.part.shard] for sha in cost.part.outputs_sha256
                     if (sha, cost.part.shard) in by_key), None)
        if part is None:
            raise InputError(str(file), "<file>", "part", f"shard {cost.part.shard}'s record belongs to none of the "
                             "PARTs given (no part of that shard has those bytes: an earlier run's record, or another "
                             "run's)", fix="give the record written beside each PART (rerun the shard to renew both)")
        if part in owner:
            raise InputError(str(file), "<file>", "part", f"a second record of the part {part} (the first is "
                             f"{owner[part][0]})", fix="give one record per PART")
        owner[part] = (file, cost)
    lacking = next((Path(p) for p, _ in parts if Path(p) not in owner), None)
    if lacking is not None:
        raise InputError(str(lacking), "<file>", "memory cost", "no record given for this part",
                         fix="give each PART's record with --memory-cost (the file its `retrieve --memory-cost` wrote)")
    return [owner[Path(p)] for p, _ in parts]
