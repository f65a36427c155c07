"""What ``mnemetric cache list|evict|stats`` show: rows of the response cache, as plain text.

Every function takes an open :class:`~mnemetric.llm.cache.ResponseCache` (or its rows) and
returns text lines; the CLI prints them. Times are UTC.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timezone

from mnemetric.llm.cache import CacheRow, ResponseCache
from mnemetric.llm.claims import abandoned

HEADER = f"{'key':64s}  {'kind':10s}  {'stage':10s}  {'model':28s}  {'resolved':28s}  {'created (UTC)':19s}  bytes"


def _utc(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def row_line(row: CacheRow) -> str:
    """One row: full key, kind, stage, requested and resolved model, creation time, size."""
    return (f"{row.key:64s}  {row.kind:10s}  {row.stage:10s}  {row.model:28s}  {row.resolved_model or '-':28s}  "
            f"{_utc(row.created_at):19s}  {row.size}")


def list_lines(rows: Sequence[CacheRow]) -> list[str]:
    """A header, one line per row, and the count."""
    return [HEADER, *map(row_line, rows), f"{len(rows)} entr{'y' if len(rows) == 1 else 'ies'}"]


def stats_lines(cache: ResponseCache, claim_timeout: float) -> list[str]:
    """Counts per kind, per stage and per (requested) model; total; claims in flight / abandoned."""
    rows = cache.rows()
    lines = [f"responses: {len(rows)}"]
    for title, counts in (("kind", Counter(r.kind for r in rows)), ("stage", Counter(r.stage for r in rows)),
                          ("model", Counter(r.model for r in rows))):
        lines += [f"  {title:5s} {name:32s} {n}" for name, n in sorted(counts.items())]
    by_all = Counter((r.kind, r.stage, r.model) for r in rows)
    lines += [f"  {kind:10s} {stage:10s} {model:32s} {n}" for (kind, stage, model), n in sorted(by_all.items())]
    claims = cache.claims()
    stale = sum(abandoned(c, claim_timeout) for c in claims)
    lines.append(f"claims: {len(claims)} ({len(claims) - stale} in flight, {stale} abandoned)")
    return lines
