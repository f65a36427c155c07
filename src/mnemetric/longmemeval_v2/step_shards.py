"""``executor.shard`` (``K/N``) for the V2 stages, and `mnemetric merge` of their step files.

Stage v2_memory given a shard queries only its questions: the universe is the run's chosen questions (every
domain, after ``v2.subset``), each typed ``<domain>/<question_type>``, dealt by :func:`mnemetric.shard.assign`
exactly as `mnemetric v2 run --shard` deals them (:func:`mnemetric.longmemeval_v2.shards.universe`), and each
question keeps the index and shared-haystack decision of the whole run. It writes ``memory.jsonl`` with the
generic manifest beside it (``memory.jsonl.shard.json``, command ``v2_memory``: each row's question id and its
key, the row's position in the unsharded memory.jsonl). memory.json records the whole run's settings (a subset
reason counts the whole run's questions), so it is the unsharded run's file.

Stages v2_read and v2_check answer / check the rows present (the shard's) and carry the shard: their rows' keys
come from their inputs' manifests (memory.jsonl; and read.jsonl for v2_check, which must be the same shard),
their lineage names the inputs' (``read.jsonl.shard.json``, ``check.jsonl.shard.json``). ``executor.shard``
set on an unsharded input is refused: shard the memory step.

`mnemetric merge --out DIR/STEP.jsonl PART...` (PART: a sharded STEP.jsonl of each shard) joins the rows in
key order (:func:`mnemetric.shard.merge`: overlaps, gaps, config / data / input mismatches refused by name)
and the files beside them: ``STEP.json`` (the step's facts: the same in every part, copied), ``STEP-usage.json``
(summed, :func:`mnemetric.llm.usage.sum_usage`) and, for the memory step, ``memory-cost.json`` (the parts'
records added up, :func:`mnemetric.llm.memory_cost_file.sum_memory_costs`: requests and tokens exactly, dollars up to
float rounding). The merged files are the unsharded stage's bytes (the dollars of a priced model up to float
rounding). A phase every shard did alike — the setup, and the ingest when every domain's questions share one
haystack (each shard built that memory) — counts once, as in the unsharded run. The measured query latencies
(``<paths.v2_runs>/latency.json``, untracked: each shard's own timings) are joined when given (``--latency``: each
memory part's sidecar, matched to its part by the rows' sha256) into ``--latency-out`` (default
``.mnemetric/v2-run/latency.json``, where stage v2_metrics reads it), keyed by the merged memory.jsonl, so the
merged run's metrics/v2-latency.json and LAFS come from the shards' measurements; without them the merged run has
no measured latency. Stage v2_metrics on a sharded step file scores the rows present and marks the
run not official with the reason ``shard K/N ...``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mnemetric.errors import ConfigError, InputError
from mnemetric.io import atomic_open, write_json_atomic
from mnemetric.shard import (FileLines, Manifest, Shard, ShardRun, check_parts, config_sha256, lineage_sha256,
                             manifest_path, prepare_merge, refuse_out_among_parts)

COMMANDS = {"memory": "v2_memory", "read": "v2_read", "check": "v2_check"}
"""step → the stage whose shard manifests name it (their ``command``)."""
_STEP = {c: s for s, c in COMMANDS.items()}
DEFAULT_LATENCY_OUT = Path(".mnemetric/v2-run/latency.json")
"""Where stage v2_metrics reads the latency sidecar with the shipped ``paths.v2_runs``."""
_RERUN = "rerun the shard's V2 stages (v2_memory, v2_read, v2_check) with the same executor.shard"


def memory_shard_run(shard: Shard | None, root: str | Path, domains: Sequence[str], select: Any, *,
                     data_files: Sequence[str | Path], config: Any) -> ShardRun | None:
    """The shard of stage v2_memory (None: an unsharded run)."""
    if shard is None:
        return None
    from mnemetric.longmemeval_v2.shards import universe

    return ShardRun.start(COMMANDS["memory"], shard, universe(root, domains, select), data_file=list(data_files),
                          config=config)


def memory_lines(run: ShardRun, rows: Sequence[Any]) -> FileLines:
    """The manifest lines of the shard's memory rows: each one's position in the unsharded memory.jsonl."""
    position = {qid: i for i, (qid, _) in enumerate(run.universe)}
    return FileLines([r.question_id for r in rows], [[position[r.question_id]] for r in rows])


def write_memory_manifest(run: ShardRun | None, out: str | Path, rows: Sequence[Any]) -> None:
    """memory.jsonl.shard.json (an unsharded run: a stale one removed). Before the rows are written."""
    if run is None:
        manifest_path(out).unlink(missing_ok=True)
    else:
        run.write_manifest(out, memory_lines(run, rows))


class CarriedShard:
    """The shard a later step (v2_read, v2_check) inherits from its inputs' manifests."""

    def __init__(self, command: str, config: Any, inputs: Sequence[tuple[Path, Manifest]]):
        self.command, self.config, self.inputs = command, config, list(inputs)

    def write(self, out: str | Path, rows: Sequence[Any]) -> Path:
        """OUT.shard.json for the step's rows (keys from the first input's manifest). Before the rows are written."""
        src, m = self.inputs[0]
        keys = dict(zip(m.lines.question_ids, m.lines.keys, strict=True))
        lines = FileLines()
        for r in rows:
            if r.question_id not in keys:
                raise InputError(str(src), r.question_id, "shard manifest", "lists no row of this question",
                                 fix=_RERUN)
            lines.question_ids.append(r.question_id)
            lines.keys.append(keys[r.question_id])
        lineage = lineage_sha256(self.command, self.config, m.data_sha256, [i.lineage_sha256 for _, i in self.inputs])
        record = Manifest(self.command, m.shard, config_sha256(self.config), m.data_sha256, lineage, m.universe,
                          lines).to_record()
        path = manifest_path(out)
        write_json_atomic(path, record)
        return path


def carried_shard(command: str, asked: Shard | None, inputs: Sequence[str | Path], config: Any) -> CarriedShard | None:
    """The shard of stage ``command`` from its step-file ``inputs`` (None: they are not shards). ``asked``: the
    executor's ``shard``, which must be theirs; a shard asked of unsharded inputs, or inputs of different
    shards or runs, is refused naming the files."""
    paths = [Path(p) for p in inputs]
    read = [(p, Manifest.read_if_present(p)) for p in paths]
    have = [p for p, m in read if m is not None]
    if not have:
        if asked is not None:
            raise ConfigError("executor.shard", f"{asked} asked, but {paths[0]} is not a shard (no "
                              f"{manifest_path(paths[0]).name} beside it)",
                              fix=f"run stage v2_memory with executor.shard={asked} first (the later V2 stages "
                                  "answer the rows their inputs hold), or leave executor.shard null")
        return None
    if len(have) != len(paths):
        lone = next(p for p in paths if p not in have)
        raise InputError(str(lone), "<file>", "shard manifest", f"missing, while {have[0]} is a shard", fix=_RERUN)
    got = [(p, m) for p, m in read if m is not None]
    first_path, first = got[0]
    for path, m in got[1:]:
        for what, mine, theirs in (("shard", str(m.shard), str(first.shard)), ("universe", m.universe, first.universe),
                                   ("data mismatch", m.data_sha256, first.data_sha256)):
            if mine != theirs:
                raise InputError(str(path), "shard manifest", what, f"{mine!r}, but {first_path} has {theirs!r}",
                                 fix=_RERUN)
    if asked is not None and asked != first.shard:
        raise ConfigError("executor.shard", f"{asked} asked, but the input {first_path} is shard {first.shard}",
                          fix=f"run with executor.shard={first.shard} (or null) on that input")
    return CarriedShard(command, config, got)


def write_carried_manifest(carried: CarriedShard | None, out: str | Path, rows: Sequence[Any]) -> None:
    if carried is None:
        manifest_path(out).unlink(missing_ok=True)
    else:
        carried.write(out, rows)


def shard_reason(rows_file: str | Path) -> str | None:
    """The not-official reason of scoring a sharded step file (None: not a shard)."""
    m = Manifest.read_if_present(rows_file)
    if m is None:
        return None
    return (f"shard {m.shard} of the questions ({len(m.lines.question_ids)} of {m.universe}): join the "
            f"{m.shard.count} parts of each step file with `mnemetric merge --out DIR/STEP.jsonl PART...` "
            f"for the whole run")


# -- merging ---------------------------------------------------------------------------------------


def _facts(part: Path) -> Path:
    return part.with_suffix(".json")


def _usage(part: Path) -> Path:
    return part.parent / f"{part.stem}-usage.json"


def _cost(part: Path) -> Path:
    return part.parent / f"{part.stem}-cost.json"


def _same_bytes(files: Sequence[Path], what: str, fix: str) -> bytes:
    """The one content of ``files`` (a file missing or different from the first is an error naming both)."""
    content: bytes | None = None
    for f in files:
        try:
            data = f.read_bytes()
        except FileNotFoundError:
            raise InputError(str(f), "<file>", what, "missing beside its part", fix=fix) from None
        if content is None:
            content = data
        elif data != content:
            raise InputError(str(f), "<file>", f"{what} mismatch", f"differs from {files[0]}", fix=fix)
    if content is None:
        raise InputError("<parts>", "<file>", what, "no part given", fix=fix)
    return content


def _part_costs(paths: Sequence[Path]) -> list[tuple[Path, Any]]:
    """Each memory part's memory-cost.json (stage v2_memory always writes one), validated before anything is
    written."""
    from mnemetric.llm.memory_cost_file import part_memory_costs

    costs = part_memory_costs([_cost(p) for p in paths])
    if costs is None:
        raise InputError(str(_cost(paths[0])), "<file>", "memory cost", "missing beside its part", fix=_RERUN)
    return costs


def _rows(paths: Sequence[Path]) -> list[tuple[int, Any]]:
    """(part index, row) of every part's memory rows."""
    from mnemetric.longmemeval_v2.step_rows import MemoryRow, read_rows

    return [(i, r) for i, p in enumerate(paths) for r in read_rows(p, MemoryRow)]


def _haystacks(rows: Sequence[tuple[int, Any]]) -> dict[str, list[tuple[int, Any]]]:
    lists: dict[str, list[tuple[int, Any]]] = {}
    for i, r in rows:
        lists.setdefault(r.domain, []).append((i, r.identity["haystack_ids"]))
    return lists


def _once(rows: Sequence[tuple[int, Any]], costs: Sequence[tuple[Path, Any]]) -> frozenset[str]:
    """The memory-cost phases every shard did alike (:func:`mnemetric.longmemeval_v2.shards.once_phases`)."""
    from mnemetric.longmemeval_v2.shards import once_phases

    return once_phases(_haystacks(rows), costs)


def _counts(u: Any) -> tuple[int, int, int]:
    return u.responses, u.prompt_tokens, u.completion_tokens


def _memory_usage(paths: Sequence[Path], usage: list[Any], parts: Sequence[tuple[Path, Any]], merged: Any) -> Any:
    """The memory step's merged usage sidecar. A memory served the model proxy: its calls are the cost record's,
    whose phases tell the shared build (once) from the queries (summed), so the sidecar is the merged record's
    total. Any other memory that called models while every shard built a memory shared by all of a domain's
    questions: the sidecars cannot tell the build from the queries (the sum would pay the build once per shard),
    so it is refused; else the parts' sum."""
    if merged.uses_model_proxy and all(_counts(u) == _counts(c.usage) for u, (_, c) in zip(usage, parts)):
        return merged.usage  # every call of each part went through the proxy
    if any(u.responses for u in usage):
        from mnemetric.longmemeval_v2.shards import built_by_every_part

        shared = sorted(built_by_every_part(_haystacks(_rows(paths)), len(paths)))
        if shared:
            raise InputError(str(_usage(paths[0])), "<file>", "responses", f"the memory called models and the "
                             f"{', '.join(shared)} questions share one haystack, so each shard paid for building "
                             "that memory: the parts' usage cannot be added up to the unsharded run's",
                             fix="run this memory step unsharded (a memory built from a shared haystack calls its "
                                 "models for the build in every shard)")
    return usage


def _part_latencies(got: Sequence[tuple[Path, Manifest]], files: Sequence[Path]) -> list[Any]:
    """Each memory part's latency sidecar among ``files`` (matched by the part's sha256), before anything is
    written: a part without one, or a file that belongs to no part, is an error naming it."""
    from mnemetric.longmemeval_v2.steps import Latencies, memory_file_sha256

    by_sha: dict[str, tuple[Path, Any]] = {}
    for f in files:
        sha, lat = Latencies.read_sidecar(f)
        by_sha[sha] = (Path(f), lat)
    out = []
    for p, manifest in got:
        found = by_sha.pop(memory_file_sha256(p), None)
        if found is None:
            raise InputError(str(p), "<file>", "latency", f"none of the --latency files ({', '.join(map(str, files))}) "
                             "was measured with this part's rows", fix="give each memory part's own latency.json "
                             "(stage v2_memory writes it to <paths.v2_runs>/latency.json on the machine it ran on)")
        want = set(manifest.lines.question_ids)
        have = {q for _, q in found[1].seconds}
        if have != want:
            odd = sorted(have ^ want)[0]
            raise InputError(str(found[0]), "<file>", "seconds", f"measures {len(have)} question(s), its part {p} "
                             f"holds {len(want)} (first difference: {odd!r})", fix="give the latency.json the shard "
                             "wrote with these rows (rerun its v2_memory if it was edited)")
        out.append(found[1])
    if by_sha:
        stray = next(iter(by_sha.values()))[0]
        raise InputError(str(stray), "<file>", "memory_sha256", "belongs to none of the parts (a stale sidecar, or "
                         "one of another run)", fix="give one latency.json per memory part")
    return out


def _joined_latency(got: Sequence[tuple[Path, Manifest]], files: Sequence[Path]) -> Any:
    """The parts' latency sidecars joined (:meth:`~.steps.Latencies.join`) in the merged rows' order (the
    manifests' keys), before anything is written."""
    from mnemetric.longmemeval_v2.steps import Latencies

    parts = _part_latencies(got, files)
    domain = {q: d for p in parts for d, q in p.seconds}
    keyed = sorted((key, qid) for _, m in got for qid, key in zip(m.lines.question_ids, m.lines.keys, strict=True))
    return Latencies.join(parts, [(domain[q], q) for _, q in keyed])


def merge_step(out: str | Path, parts: Sequence[str | Path], *, latency: Sequence[str | Path] = (),
               latency_out: str | Path | None = None) -> dict[str, Any]:
    """`mnemetric merge` of sharded V2 step files (module docstring); returns ``{command, shards, lines,
    failures}`` as :func:`mnemetric.shard.merge`. Every check runs before anything is written
    (:func:`mnemetric.shard.prepare_merge` for the rows). ``latency``: the
    memory parts' latency sidecars, joined into ``latency_out`` (keyed by the merged memory.jsonl)."""
    from mnemetric.llm.memory_cost_file import sum_memory_costs, write_memory_cost_record
    from mnemetric.llm.usage import part_usage, sum_usage, write_usage

    out, paths = Path(out), [Path(p) for p in parts]
    refuse_out_among_parts(out, paths)
    got = check_parts(paths)
    command = got[0][1].command
    step = _STEP.get(command)
    if step is None:
        raise InputError(str(paths[0]), "shard manifest", "command", f"{command!r}, not a V2 stage's",
                         fix="merge the step files of stages v2_memory, v2_read or v2_check")
    for p in [out, *paths]:
        if p.suffix != ".jsonl":
            raise ConfigError("--out" if p == out else "PART", f"{p}: a V2 step file ends in .jsonl "
                              f"(its facts are {p.stem}.json beside it)", fix=f"e.g. --out data/v2-runs/{step}.jsonl")
    if latency and step != "memory":
        raise ConfigError("--latency", f"given for {step}.jsonl parts: only the memory step is timed",
                          fix="give --latency with the memory.jsonl parts")
    facts = _same_bytes([_facts(p) for p in paths], "step facts", _RERUN)
    cost = _part_costs(paths) if step == "memory" else None
    rows = _rows(paths) if cost is not None and cost[0][1].uses_model_proxy else []
    once = _once(rows, cost) if cost is not None else frozenset()
    merged_cost = sum_memory_costs(cost, once) if cost is not None else None
    timed = _joined_latency(got, [Path(f) for f in latency]) if latency else None
    usage = part_usage(paths, _usage)
    if cost is not None and usage is not None:
        usage = _memory_usage(paths, usage, cost, merged_cost)
    rows_merge = prepare_merge(out, paths)  # the rows' own checks too, before anything is written
    # the sidecars first and the rows last, so an interrupted merge never leaves merged rows beside stale facts
    manifest_path(out).unlink(missing_ok=True)  # the merged file is the whole run's
    with atomic_open(_facts(out), "wb") as fh:
        fh.write(facts)
    if merged_cost is not None:
        write_memory_cost_record(_cost(out), merged_cost)
    if usage is not None:
        write_usage(_usage(out), usage if not isinstance(usage, list) else sum_usage(usage))
    else:
        _usage(out).unlink(missing_ok=True)  # no part had one: an older one beside OUT is not this merge's
    done = {**rows_merge.write(out), "command": command}
    if timed is not None:  # untracked: keyed by the merged rows, so written after them
        from mnemetric.longmemeval_v2.steps import memory_file_sha256

        target = Path(latency_out) if latency_out is not None else DEFAULT_LATENCY_OUT
        timed.write(target, memory_file_sha256(out))
        done["latency"] = str(target)
    return done

