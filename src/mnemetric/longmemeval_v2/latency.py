"""metrics/v2-latency.json: what the memory system's run measured — query latency, build time, its own model
calls — the machine it ran on, and the LAFS point it places, when one may be placed.

Latency is a measurement, not a function of the inputs, so it never enters metrics/v2.json (which a fresh clone
reproduces byte for byte). This file is committed like a benchmark result: declared in dvc.yaml as metrics of
stage v2_metrics (``cache: false``, ``persist: true``), so ``dvc metrics diff`` / ``dvc exp show`` show it and
``dvc exp run --temp`` / ``--queue`` bring it back with the experiment. It is rewritten only when stage v2_metrics
runs, i.e. when a V2 input changed: ``make repro`` on an unchanged tree (a fresh clone included) reruns no V2
stage whose outputs it can rebuild byte for byte, so the committed file stays as it is. To measure again:
``dvc repro --force --single-item v2_memory v2_metrics``.

Where the numbers come from (``source``): the latency sidecar stage v2_memory wrote in this workspace
(``<paths.v2_runs>/latency.json``, :class:`~.steps.Latencies`) when it belongs to the memory rows at hand; else,
when v2_metrics reruns without v2_memory (a checker change, or an experiment in a temporary workspace where the
untracked sidecar is absent), the measured blocks of the previous metrics/v2-latency.json of the SAME memory rows
(``carried``: true; LAFS recomputed with the new accuracy); else nothing is measured (``measured`` false, with
the reason, every number null).

Keys (stable, nested): schema; v2 (the option); memory; measured; not_measured_reason; source
{memory_rows_sha256, carried}; query_seconds {web, enterprise, combined: {n, avg_seconds, p50_seconds,
p95_seconds, max_seconds, total_seconds}} — per domain as upstream's aggregate (p50 = sorted[n//2], p95 =
sorted[min(n−1, int(0.95n))]); combined avg as upstream's combine ((total_web + total_enterprise) / (n_web +
n_enterprise)), p50/p95/max over both domains' questions (upstream drops them); memory_build {domain: {builds,
total_seconds}} (perf_counter around the inserts of each memory built: once for a shared haystack, else per
question); memory_side {domain: :class:`mnemetric.llm.tally.CallTally`} (the memory's own model calls, build
and queries: requests sent, answers a cache served, and the cost of the work); cache {timed_cache_served, warm}
(answers a cache served to calls made inside the TIMED queries: timed calls are not forced cold, so a warm cache
makes the latency unrepresentative — such a run is ``warm``, gets no LAFS and is never official); machine
{system, machine, cpu_model, cpu_count, python, implementation} (no host name, no clock time); official (the
run's official_equivalence and not warm); lafs {computed, reason, tier, accuracy_percentage_points,
latency_seconds, reference_lafs, submission_lafs, lafs_gain} — computed only for a cold, measured run of both
domains on the verified official tier (the bundled sample is not: its questions are ours), else null numbers and
the reason.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mnemetric.io import write_json_atomic
from mnemetric.longmemeval_v2.aggregate import _timing as timing
from mnemetric.longmemeval_v2.data_custody import DataCheck
from mnemetric.longmemeval_v2.lafs import TIERS, lafs_summary
from mnemetric.longmemeval_v2.questions import DOMAINS
from mnemetric.longmemeval_v2.steps import Latencies

PATH = "metrics/v2-latency.json"
SCHEMA = "mnemetric.longmemeval-v2.latency/1"
MEASURED_BLOCKS = ("query_seconds", "memory_build", "memory_side", "cache", "machine")
_STATS = ("n", "avg_seconds", "p50_seconds", "p95_seconds", "max_seconds", "total_seconds")
_LAFS = ("tier", "accuracy_percentage_points", "latency_seconds", "reference_lafs", "submission_lafs", "lafs_gain")


def cpu_model() -> str | None:
    """The CPU's model name (Linux /proc/cpuinfo; else what :func:`platform.processor` says; None if nothing)."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip() or None
    except OSError:
        pass
    return platform.processor() or None


def machine() -> dict[str, Any]:
    """What ran the timed queries (no host name, no clock time)."""
    return {"system": platform.system(), "machine": platform.machine(), "cpu_model": cpu_model(),
            "cpu_count": os.cpu_count(), "python": platform.python_version(),
            "implementation": platform.python_implementation()}


def _stats(values: Sequence[float]) -> dict[str, Any]:
    return {"n": len(values), **timing(values)} if values else dict.fromkeys(_STATS) | {"n": 0}


def measured_blocks(latencies: Latencies, domains: Sequence[str]) -> dict[str, Any]:
    """The measured blocks (module docstring) from v2_memory's sidecar, domains in run order."""
    query = {d: _stats([a for (dd, _), (a, _b) in latencies.seconds.items() if dd == d]) for d in domains}
    combined = None
    if set(domains) == set(DOMAINS):
        every = [a for (dd, _), (a, _b) in latencies.seconds.items() if dd in domains]
        n = sum(query[d]["n"] for d in domains)
        combined = _stats(every)
        if n:
            combined["avg_seconds"] = sum(query[d]["total_seconds"] for d in DOMAINS) / n  # upstream's combine
            combined["total_seconds"] = sum(query[d]["total_seconds"] for d in DOMAINS)
    builds = {d: {"builds": sum(1 for (dd, _), s in latencies.build.items() if dd == d and s > 0),
                  "total_seconds": sum(s for (dd, _), s in latencies.build.items() if dd == d)} for d in domains}
    served = sum(latencies.cache_served.values())
    return {"query_seconds": {**query, "combined": combined}, "memory_build": builds,
            "memory_side": {d: t.to_record() for d, t in latencies.memory_side.items()},
            "cache": {"timed_cache_served": served, "warm": served > 0}, "machine": machine()}


def _lafs(blocks: Mapping[str, Any] | None, accuracy: float | None, tier: str | None, data: DataCheck | None,
          domains: Sequence[str]) -> dict[str, Any]:
    reasons = []
    if blocks is None:
        reasons.append("latency not measured")
    elif blocks["cache"]["warm"]:
        reasons.append(f"warm: a cache served {blocks['cache']['timed_cache_served']} answer(s) to timed calls")
    if data is None or not data.sha256_verified:
        reasons.append("the data is not the verified official tier (the bundled sample never is)")
    if tier not in TIERS:
        reasons.append("no official tier (haystack lme_v2_small or lme_v2_medium)")
    if set(domains) != set(DOMAINS):
        reasons.append("needs both domains (web and enterprise)")
    latency = ((blocks or {}).get("query_seconds", {}).get("combined") or {}).get("avg_seconds")
    if not reasons and (accuracy is None or not latency or latency <= 0):
        reasons.append("no accuracy or a latency that is not > 0")
    if reasons:
        return {"computed": False, "reason": "; ".join(reasons), **dict.fromkeys(_LAFS), "tier": tier}
    s = lafs_summary(tier, [(accuracy * 100, latency, "this run")])
    return {"computed": True, "reason": None, "tier": tier, "accuracy_percentage_points": accuracy * 100,
            "latency_seconds": latency, "reference_lafs": s["reference_lafs"], "submission_lafs": s["submission_lafs"],
            "lafs_gain": s["lafs_gain"]}


def latency_record(*, option: str, memory: str, memory_sha256: str, domains: Sequence[str],
                   latencies: Latencies | None, previous: Mapping[str, Any] | None, accuracy: float | None,
                   tier: str | None, data: DataCheck | None, official: bool) -> dict[str, Any]:
    """metrics/v2-latency.json (module docstring). ``previous``: the file as it was before this run (or None);
    ``accuracy``: the combined overall_full_set (None with one domain); ``official``: v2.json's verdict."""
    carried = False
    if latencies is not None:
        blocks = measured_blocks(latencies, domains)
    elif (isinstance(previous, dict) and previous.get("schema") == SCHEMA and previous.get("measured") is True
          and (previous.get("source") or {}).get("memory_rows_sha256") == memory_sha256
          and all(isinstance(previous.get(k), dict) for k in MEASURED_BLOCKS)):
        blocks, carried = {k: previous[k] for k in MEASURED_BLOCKS}, True
    else:
        blocks = None
    reason = None if blocks is not None else (
        "latency not measured in this workspace for these memory rows (stage v2_memory's sidecar is absent or "
        "belongs to other rows): dvc repro --force --single-item v2_memory v2_metrics")
    empty = {"query_seconds": None, "memory_build": None, "memory_side": None, "cache": None, "machine": None}
    warm = bool(blocks and blocks["cache"]["warm"])
    return {"schema": SCHEMA, "v2": option, "memory": memory, "measured": blocks is not None,
            "not_measured_reason": reason, "source": {"memory_rows_sha256": memory_sha256, "carried": carried},
            **(blocks or empty), "official": bool(official and blocks is not None and not warm),
            "lafs": _lafs(blocks, accuracy, tier, data, domains)}


def read_previous(path: str | Path = PATH) -> dict[str, Any] | None:
    """The file as the last run left it (None when absent or not JSON)."""
    import json

    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return raw if isinstance(raw, dict) else None


def write_latency(path: str | Path, record: Mapping[str, Any]) -> None:
    write_json_atomic(path, dict(record))
