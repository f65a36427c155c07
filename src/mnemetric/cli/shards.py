"""``--shard K/N`` and ``--workers N`` for the per-question commands, and `mnemetric merge`.

A per-question command (retrieve, answer, judge) given ``--shard K/N`` runs shard K of the
questions (:mod:`mnemetric.shard`: deterministic, stratified by question type) and writes beside each
output a ``.shard.json`` manifest; `mnemetric merge --out OUT PART...` joins the N parts into the bytes of
the unsharded run (the V2 stages' step files too, with ``executor.shard``:
:mod:`mnemetric.longmemeval_v2.step_shards`). ``--workers`` sets ``executor.workers`` (per-question work on
that many processes; the same bytes as one).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from mnemetric.cli.registry import Handler, command
from mnemetric.cli.types import positive_int


def shard_spec(text: str):
    """argparse type: ``K/N`` (1 <= K <= N) → :class:`mnemetric.shard.Shard`; else a usage error (exit 2)."""
    from mnemetric.errors import ConfigError
    from mnemetric.shard import parse_shard

    try:
        return parse_shard(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(f"{exc.problem} (give K/N with 1 <= K <= N, e.g. 1/4)") from None


def add_run_options(p: argparse.ArgumentParser, *, shard: bool = True) -> None:
    """``--shard`` (unless ``shard`` is False) and ``--workers`` (after
    :func:`mnemetric.cli.executor.add_executor_option`)."""
    if shard:
        p.add_argument("--shard", type=shard_spec, default=None, metavar="K/N",
                       help="run shard K of N of the questions (deterministic, stratified by question type) and "
                            "write OUT.shard.json beside each output; join the N outputs with `mnemetric merge`. "
                            "An input that is itself a shard sets it (SLURM: --shard $SLURM_ARRAY_TASK_ID/N; "
                            "Kubernetes Indexed Job: --shard $((JOB_COMPLETION_INDEX + 1))/N)")
    p.add_argument("--workers", type=positive_int, default=None, metavar="N",
                   help="per-question work (a memory system's retrieval; V2: a fresh memory's build and query) on N worker processes (executor.workers; "
                        "default: the executor option's, null = one per core); the output bytes are those of one "
                        "worker. Model calls are not spread: they run llm.max_concurrency at once")


def executor_overrides(a: argparse.Namespace) -> dict:
    """The ``executor`` section keys the command's options set (``workers``)."""
    return {"workers": a.workers} if getattr(a, "workers", None) is not None else {}


def run_shard(a: argparse.Namespace, executor, inputs=()):
    """The command's shard: ``--shard``, else the executor option's ``shard``, else that of an input that is a
    shard (one with a ``.shard.json`` manifest); None: an unsharded run."""
    from mnemetric.shard import Manifest

    shard = getattr(a, "shard", None) or getattr(executor, "shard", None)
    for path in inputs if shard is None else ():
        if (m := Manifest.read_if_present(path)) is not None:
            return m.shard
    return shard


def light_executor(a: argparse.Namespace, llm: dict | None = None):
    """The executor option with the command's overrides and no ``llm:`` composition: for work that sends no
    model call (its pool and run settings only), or a command whose ``llm:`` settings are its own options
    (``llm``; `v2 run`)."""
    from mnemetric.cli.registry import load_option, option_path
    from mnemetric.execute import build_executor

    name = getattr(a, "executor", "immediate")
    section = {**load_option("executor", name, a.conf), **executor_overrides(a)}
    return build_executor(section, llm or {}, where=str(option_path("executor", name, a.conf) or f"executor={name}"))


@command("merge", "join the outputs of a --shard run (PART... of shards 1..N) into the unsharded run's bytes",
         "Read each PART (an output of retrieve, answer or judge given --shard K/N, or a V2 stage's step file "
         "given executor.shard) and its PART.shard.json "
         "manifest, check that they are the N shards of one run — the same command, shard count, settings "
         "(config_sha256), data (data_sha256) and inputs (lineage_sha256), each shard exactly once, no question in "
         "two parts, each file as its manifest says — and write OUT (plus OUT.failures.jsonl when the parts have "
         "failures sidecars, and OUT.usage.json — the parts' PART.usage.json added up — when they have usage "
         "sidecars) atomically, the lines in the unsharded run's order: the same bytes as the run without "
         "--shard. A mismatch, an overlap or a gap is an error naming the parts, and so is an OUT that is one of "
         "the PARTs or a part whose manifest lists no failures sidecar while another's does; nothing is written. "
         "Merge the retrieval log and the contexts of a retrieve run separately (each manifest names its output; "
         "mixing them is refused). A PART that is an "
         "output folder (`v2 run --shard K/N`: PART/shard.json) is joined by its family into the folder OUT, every "
         "file as the unsharded run writes it but the measured query seconds and run_args.json's start time, "
         "usage.json summed. A PART that is a V2 stage's step file (data/v2-runs/memory.jsonl, read.jsonl or "
         "check.jsonl of a stage run with executor.shard=K/N) is joined with the files beside it: STEP.json (the "
         "same in every part), STEP-usage.json (summed), memory-cost.json (summed; a shared memory's build, done "
         "by every shard, counted once), the unsharded stage's bytes (dollars up to float rounding); merge each "
         "step separately, and give the memory parts' latency sidecars with --latency to keep their measured "
         "latency. Retrieve parts of a memory that calls models through the model proxy: give each shard's "
         "--memory-cost record with --memory-cost to add them up. Example: "
         "mnemetric merge --out runs/hypotheses.jsonl runs/hyp.1.jsonl runs/hyp.2.jsonl runs/hyp.3.jsonl")
def _merge(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("parts", type=Path, nargs="+", metavar="PART",
                   help="the shard outputs (any order; a PART's .failures.jsonl sidecar given too, as a glob such "
                        "as runs/judged.*.jsonl names it, is read with its part)")
    p.add_argument("--out", type=Path, required=True, default=argparse.SUPPRESS, metavar="OUT",
                   help="the merged file to write")
    p.add_argument("--latency", type=Path, nargs="+", default=[], metavar="LATENCY.json",
                   help="(after the PARTs) with V2 memory.jsonl parts: each shard's measured latency sidecar "
                        "(<paths.v2_runs>/latency.json of the machine it ran on; any order, matched to its part by "
                        "the rows' sha256), joined so the merged run keeps the shards' query latencies and LAFS")
    p.add_argument("--memory-cost", type=Path, nargs="+", default=[], metavar="COST.json",
                   help="(after the PARTs) with retrieve parts: each shard's --memory-cost record (one per PART, "
                        "any order, matched to its part by the sha256 of the outputs it was written beside), added "
                        "up into --memory-cost-out: what a memory that calls models through the model proxy asked, "
                        "the queries summed, a setup every shard did alike counted once")
    p.add_argument("--memory-cost-out", type=Path, default=None, metavar="FILE",
                   help="where the merged memory-cost record goes (default OUT.memory-cost.json)")
    p.add_argument("--latency-out", type=Path, default=None, metavar="FILE",
                   help="where the joined latency sidecar goes (default .mnemetric/v2-run/latency.json, where stage "
                        "v2_metrics reads it with the shipped paths.v2_runs)")

    def run(a: argparse.Namespace) -> int:
        from mnemetric.errors import ConfigError
        from mnemetric.family import shard_merger
        from mnemetric.llm.usage import part_usage, sum_usage, write_usage
        from mnemetric.shard import Manifest, prepare_merge, without_sidecars

        a.parts = without_sidecars(a.parts)  # a glob over the parts also names their .failures.jsonl sidecars
        command = Manifest.read(a.parts[0]).command
        merger = shard_merger(command)
        timed = {"latency": a.latency, "latency_out": a.latency_out} if a.latency else {}
        if (a.latency_out is not None) and not a.latency:
            raise ConfigError("--latency-out", "given without --latency", fix="give the parts' latency sidecars with "
                              "--latency LATENCY.json ...")
        records = _cost_records(a, command)
        if merger is not None:  # a command whose output is a folder: its family joins the parts
            done = merger(a.out, a.parts, **timed)
            extra = f" (+ latency → {done['latency']})" if done.get("latency") else ""
            print(f"merge: {done['shards']} {done['command']} shard(s), {done['lines']} question(s) → {a.out}{extra}")
            return 0
        if timed:
            raise ConfigError("--latency", "these parts are line files of a V1 command: only V2 memory.jsonl parts "
                              "take it", fix="leave --latency out")
        usage = part_usage(a.parts, lambda part: Path(f"{part}.usage.json"))
        prepared = prepare_merge(a.out, a.parts)  # every check, and the records read, before anything is written
        cost = None if records is None else _merged_cost(records, prepared)
        done = prepared.write(a.out)
        fails = done["failures"]
        extra = "" if fails is None else f" (+ {fails} failure line(s) → {a.out}.failures.jsonl)"
        if usage is not None:
            write_usage(f"{a.out}.usage.json", sum_usage(usage))
            extra += f" (+ usage of the {len(usage)} part(s) → {a.out}.usage.json)"
        if cost is not None:
            from mnemetric.llm.memory_cost_file import write_memory_cost_record

            target = a.memory_cost_out or Path(f"{a.out}.memory-cost.json")
            write_memory_cost_record(target, cost)
            extra += f" (+ memory cost of the {len(a.memory_cost)} part(s) → {target})"
        print(f"merge: {done['shards']} {done['command']} shard(s), {done['lines']} line(s) → {a.out}{extra}")
        return 0
    return run


def _cost_records(a: argparse.Namespace, command: str) -> list[Path] | None:
    """`merge --memory-cost`: the records given (None: none), refused for parts that are not retrieve's, or a count
    that is not one per part."""
    from mnemetric.errors import ConfigError

    if not a.memory_cost:
        if a.memory_cost_out is not None:
            raise ConfigError("--memory-cost-out", "given without --memory-cost",
                              fix="give each retrieve part's record with --memory-cost COST.json ...")
        return None
    if command != "retrieve":
        raise ConfigError("--memory-cost", f"given for {command} parts: only retrieve writes a memory-cost record",
                          fix="leave --memory-cost out (a V2 memory step's memory-cost.json is merged with its part)")
    if len(a.memory_cost) != len(a.parts):
        raise ConfigError("--memory-cost", f"{len(a.memory_cost)} record(s) for {len(a.parts)} part(s)",
                          fix="give one record per PART: the file each shard's `retrieve --memory-cost` wrote")
    return a.memory_cost


def _merged_cost(records: list[Path], prepared: Any):
    """The shards' records, each matched to its part (by its shard, from the part's manifest, and its bytes),
    added up (a setup every shard did alike counted once)."""
    from mnemetric.llm.memory_cost_file import parts_memory_costs, sum_memory_costs

    parts = [(path, str(shard)) for path, shard in prepared.parts]
    return sum_memory_costs(parts_memory_costs(records, parts), frozenset({"setup"}))
