"""`mnemetric v2 run --shard K/N` and the merge of its parts: one deterministic, stratified share of a V2 run's
questions per part, joined by `mnemetric merge` into the files of the run without ``--shard``.

The universe (:func:`universe`) is the run's chosen questions (every domain, after ``--question-ids`` /
``--per-type`` / ``--limit``), in run order, each typed ``<domain>/<question_type>``: the generic deal
(:func:`mnemetric.shard.assign`) splits every question type of every domain evenly over the shards. A shard asks
its questions only, each with the index and the shared-haystack decision of the whole run
(:func:`mnemetric.longmemeval_v2.steps.memory_step` ``keep``), so each of its per_question rows is the unsharded
run's row — as long as a row depends on its own question only (a memory that learns from earlier queries of a
shared haystack is not that; do not shard such a run).

A part is an ordinary run folder (its own aggregates over its questions, official_equivalence false with the
reason "shard K/N") plus ``OUT/shard.json`` (:class:`mnemetric.shard.Manifest`, command ``v2 run``): K/N, the
config (the ``v2`` settings, the selection, the custody check), the data (sha256 of questions.jsonl, the haystack
and trajectories.jsonl, and the universe), each row's question id and its key ``[domain, index]``, and in
``extra`` what :func:`merge_parts` needs to finish the whole run: the settings and facts blocks, the images
switch and the whole run's subset reason.

:func:`merge_parts` checks the parts (:func:`mnemetric.shard.check_parts`: one command, one N, each shard once,
the same config, data and lineage, no question twice), that each part's rows are those its manifest lists and
that the data files still hash as recorded, then orders the rows by key and writes the run folder as `v2 run`
does (:func:`mnemetric.longmemeval_v2.run.finish` + :func:`~mnemetric.longmemeval_v2.run.write_run`) and
OUT/usage.json = the parts' usage.json summed, and OUT/memory_cost.json (a UsesModelProxy memory) the parts' records
summed (:func:`once_phases`: a build every part did alike, of a memory shared by a domain's questions, counts once, in
both files). Byte-identical to the unsharded run except what is measured or
dated: the memory query / post-query seconds (and everything computed from them: the aggregates' memory_query
and memory_post_query blocks, memory_query_avg_seconds, the LAFS latency) are each shard's own timings, and
run_args.json's started_at_utc is the earliest part's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mnemetric.errors import InputError
from mnemetric.io import sha256_file
from mnemetric.longmemeval_v2.data_custody import DataCheck
from mnemetric.longmemeval_v2.per_question import read_per_question
from mnemetric.longmemeval_v2.run import V2Run, finish, subset_reason, write_run
from mnemetric.longmemeval_v2.selection import Selection
from mnemetric.longmemeval_v2.steps import chosen_questions
from mnemetric.longmemeval_v2.validate import QUESTIONS_FILE, TRAJECTORIES_FILE, haystack_path
from mnemetric.shard import FileLines, Shard, ShardRun, check_parts, manifest_path, refuse_out_among_parts

COMMAND = "v2 run"
PER_QUESTION = "per_question.jsonl"
_FIX = "rerun the shard (its folder was changed after it was written)"


def _plain(obj: Any) -> Any:
    """JSON-safe (paths as strings)."""
    return json.loads(json.dumps(obj, default=str))


def _domains(settings: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(settings["domains"]))


def universe(root: str | Path, domains: Sequence[str], select: Selection | None = None) -> list[tuple[str, str]]:
    """``[(question_id, "<domain>/<question_type>")]`` of the run's chosen questions, in run order."""
    per = chosen_questions(Path(root), domains, select)
    return [(q.id, f"{d}/{q.question_type}") for d in domains for q in per[d]]


def data_files(settings: Mapping[str, Any]) -> list[Path]:
    root = Path(settings["data_root"])
    return [root / QUESTIONS_FILE, haystack_path(root, settings["haystack"]), root / TRAJECTORIES_FILE]


def _select_record(select: Selection | None) -> dict[str, Any] | None:
    if select is None:
        return None
    return {"question_ids": list(select.question_ids) if select.question_ids is not None else None,
            "per_type": select.per_type, "limit": select.limit}


def shard_run(shard: Shard | None, settings: Mapping[str, Any], select: Selection | None,
              data: DataCheck | None) -> ShardRun | None:
    """The shard of a `v2 run` (None: an unsharded run)."""
    if shard is None:
        return None
    config = {"v2": _plain(settings), "select": _select_record(select),
              "custody": data.to_record() if data is not None else None}
    return ShardRun.start(COMMAND, shard, universe(settings["data_root"], _domains(settings), select),
                          data_file=data_files(settings), config=config)


def shard_reason(run: ShardRun | None) -> str | None:
    if run is None:
        return None
    return (f"shard {run.shard} of the questions ({len(run.ids or ())} of {len(run.universe)}): join the "
            f"{run.shard.count} parts with `mnemetric merge` for the whole run")


def whole_subset(settings: Mapping[str, Any], select: Selection | None, run: ShardRun) -> str | None:
    """The not-official reason the whole run (all shards) gets for its selection, as `v2 run` gives it."""
    return subset_reason(settings["data_root"], _domains(settings), select, len(run.universe))


def record_part(out: str | Path, result: V2Run, settings: Mapping[str, Any], run: ShardRun | None, *,
                select: Selection | None, data: DataCheck | None) -> Path | None:
    """OUT/shard.json of a part (module docstring); an unsharded run removes a stale one."""
    out = Path(out)
    if run is None:
        (out / "shard.json").unlink(missing_ok=True)
        return None
    order = list(_domains(settings))
    ids, keys = [], []
    for domain, rows in result.rows.items():
        for r in rows:
            ids.append(r.question_id)
            keys.append([order.index(domain), r.index])
    extra = {"domains": order, "settings": _plain(result.summary.to_record()["settings"]),
             "facts": _plain(result.facts),
             "images": bool(settings["images"]), "subset": whole_subset(settings, select, run), "v2": _plain(settings),
             "custody": data.to_record() if data is not None else None,
             "data_files": {str(p): sha256_file(p) for p in data_files(settings)}}
    return run.write_manifest(out, FileLines(ids, keys), None, extra)


def _started(part: Path, domains: Sequence[str]) -> list[str]:
    """The parts' run_args.json start times (:func:`~.run_folder.read_started_at`; a domain without the file: none)."""
    from mnemetric.longmemeval_v2.run_folder import read_started_at

    out = []
    for d in domains:
        f = part / d / "run_args.json"
        if f.is_file() and (value := read_started_at(f)) is not None:
            out.append(value)
    return out


MEMORY_COST = "memory_cost.json"
"""A UsesModelProxy memory's requests per phase (`v2 run` writes it: :mod:`mnemetric.llm.memory_cost`)."""


def built_by_every_part(haystacks: Mapping[str, Sequence[tuple[int, Sequence[str]]]], parts: int) -> list[str]:
    """The domains whose memory every part built (``haystacks``: domain → (part index, each question's haystack ids)
    over all parts): more than one question, all sharing one haystack, and every part holding some of them."""
    from mnemetric.longmemeval_v2.memory import is_shared

    return [d for d, rows in haystacks.items()
            if len(rows) > 1 and is_shared([ids for _, ids in rows]) and {i for i, _ in rows} == set(range(parts))]


def once_phases(haystacks: Mapping[str, Sequence[tuple[int, Sequence[str]]]], costs: Sequence[tuple[Path, Any]]
                ) -> frozenset[str]:
    """The phases of a memory-cost record every part did alike (counted once by
    :func:`mnemetric.llm.memory_cost_file.sum_memory_costs`): the setup, and the ingest when every domain's memory was
    built by every part (:func:`built_by_every_part`): the unsharded run built it once. Some domains built by every
    part and some not, with ingest requests in the parts: the record does not split phases by domain, so it is
    refused, naming the first such part."""
    everywhere = built_by_every_part(haystacks, len(costs))
    if haystacks and len(everywhere) == len(haystacks):
        return frozenset({"setup", "ingest"})
    if everywhere:
        for f, cost in costs:
            if any(w.phase == "ingest" and sum(w.requests) for w in cost.systems):
                raise InputError(str(f), "<file>", "systems.*.ingest", "some domains share one haystack (each shard "
                                 "built its memory) and some do not, and the record does not say which ingest "
                                 "requests were whose", fix="run this memory unsharded")
    return frozenset({"setup"})


def merge_parts(out: str | Path, parts: Sequence[str | Path]) -> dict[str, Any]:
    """Join `v2 run --shard` parts into the run folder ``out`` (module docstring); returns
    ``{command, shards, lines, failures}`` as :func:`mnemetric.shard.merge`."""
    from mnemetric.llm.usage import negated_usage, part_usage, sum_usage, write_usage

    refuse_out_among_parts(out, parts)
    got = check_parts(parts)
    first_path, first = got[0]
    extra = first.extra or {}
    try:
        domains = list(extra["domains"])
        settings, facts, v2 = extra["settings"], extra["facts"], extra["v2"]
    except (KeyError, TypeError):
        raise InputError(str(manifest_path(first_path)), "extra", "domains/settings/facts/v2",
                         "missing: not a `v2 run --shard` part", fix=_FIX) from None
    for path, recorded in extra.get("data_files", {}).items():
        now = sha256_file(path) if Path(path).is_file() else "(missing)"
        if now != recorded:
            raise InputError(path, "<file>", "data mismatch", f"sha256 {now[:12]}… now, the shards ran on "
                             f"{recorded[:12]}…", fix="merge with the data the shards ran on (or rerun them)")
    keyed: dict[str, list[tuple[int, Any]]] = {d: [] for d in domains}
    part_haystacks: dict[str, list[tuple[int, Sequence[str]]]] = {}
    for part_no, (path, m) in enumerate(got):
        if m.command != COMMAND:
            raise InputError(str(path), "shard manifest", "command", f"{m.command!r}, not {COMMAND!r}", fix=_FIX)
        want = list(zip(m.lines.question_ids, m.lines.keys, strict=True))
        have = []
        for di, d in enumerate(domains):
            if not any(k[0] == di for _, k in want):
                continue
            f = path / d / PER_QUESTION
            if not f.is_file():
                raise InputError(str(f), "<file>", "file", "missing, its shard manifest lists rows of it", fix=_FIX)
            for row in read_per_question(f):
                have.append((row.question_id, [di, row.index]))
                keyed[d].append((row.index, row))
                part_haystacks.setdefault(d, []).append((part_no, row.haystack_ids))
        if have != want:
            diff = next((h for h, w in zip(have, want) if h != w), (have or want)[min(len(have), len(want)) - 1])
            raise InputError(str(path), str(diff[0]), "rows", f"{len(have)} row(s), its shard manifest lists "
                             f"{len(want)} (first difference at {diff[0]!r})", fix=_FIX)
    rows = {d: [r for _, r in sorted(keyed[d], key=lambda e: e[0])] for d in domains if keyed[d]}
    total = sum(len(r) for r in rows.values())
    if total != first.universe:
        raise InputError(", ".join(str(p) for p, _ in got), "shards", "gap",
                         f"{total} row(s) in the parts, the run has {first.universe} question(s)", fix=_FIX)
    usage = part_usage([p for p, _ in got], lambda part: Path(part) / "usage.json")
    from mnemetric.llm.memory_cost_file import part_memory_costs, sum_memory_costs

    costs = part_memory_costs([Path(p) / MEMORY_COST for p, _ in got])
    merged_cost = None
    if costs is not None:

        once = once_phases(part_haystacks, costs)
        merged_cost = sum_memory_costs(costs, once)
        if usage is not None:  # each part paid the work done alike (setup, a shared build): usage.json counts it once
            usage = [*usage, *(negated_usage(w.usage) for _, c in costs[1:] for w in c.systems if w.phase in once)]
    custody = extra.get("custody")
    data = DataCheck.from_record(custody, file=str(manifest_path(first_path))) if custody is not None else None
    result = finish(settings, rows, facts, data=data, images=bool(extra.get("images", True)),
                    subset=extra.get("subset"))
    started = [s for p, _ in got for s in _started(p, domains)]
    out = Path(out)
    write_run(out, result, v2, started_at_utc=min(started) if started else None)
    if merged_cost is not None:
        from mnemetric.llm.memory_cost_file import write_memory_cost_record

        write_memory_cost_record(out / MEMORY_COST, merged_cost)
    else:
        (out / MEMORY_COST).unlink(missing_ok=True)
    if usage is not None:
        write_usage(out / "usage.json", sum_usage(usage))
    (out / "shard.json").unlink(missing_ok=True)
    return {"command": COMMAND, "shards": first.shard.count, "lines": total, "failures": None}

