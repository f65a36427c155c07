"""Failure attribution shown: the report page's table and the `mnemetric compare` lines.

Pure functions over :class:`~mnemetric.longmemeval.attribution_file.AttributionFile` and the moves of
:func:`~mnemetric.longmemeval.attribution.cause_moves`; :func:`read_optional` is the I/O edge (a run
made before the attribution stage has no file: nothing is shown, never zeros).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mnemetric.longmemeval.attribution import CAUSE_TEXT, CAUSES
from mnemetric.longmemeval.attribution_file import AttributionFile, read_attribution
from mnemetric.report.model import Section, Table

SHOW_IDS = 8
"""Question ids listed per cause on the page (the rest counted)."""
NOTE = ("One cause per question judged wrong: the first that applies, in the order of the rows (gold disputed, "
        "judge disputed, evidence never ingested, not retrieved, retrieved but answered wrong). Abstention "
        "questions and questions without evidence sessions have no evidence to find: answered wrong. "
        "Per question: metrics/detail/attribution.json.")


def read_optional(path: str | Path) -> AttributionFile | None:
    """The attribution file, or None when the run has none."""
    return read_attribution(path) if Path(path).is_file() else None


def _ids(ids: list[str]) -> str:
    more = len(ids) - SHOW_IDS
    return ", ".join(ids[:SHOW_IDS]) + (f" (+{more} more)" if more > 0 else "")


def report_section(att: AttributionFile) -> Section:
    """The page's "Failure attribution" section: per cause its questions, share of the wrong ones, ids."""
    counts, wrong = att.counts, att.counts["wrong"]
    rows = []
    for c in CAUSES:
        ids = [r.question_id for r in att.questions if r.cause == c]
        rows.append((CAUSE_TEXT[c], str(counts[c]), f"{counts[c] / wrong:.0%}" if wrong else "—", _ids(ids)))
    title = (f"Failure attribution ({wrong} wrong of {len(att.questions)}; {counts['correct']} correct, "
             f"{counts['not_judged']} without a verdict)")
    table = Table(("cause", "questions", "share of wrong", "question ids"), tuple(rows), numeric=(1, 2))
    return Section("attribution", title, (NOTE,), (table,))


def compare_lines(moves: Mapping[str, Any] | None, bullet: str = "  ") -> list[str]:
    """`mnemetric compare`: causes for A and B, then the paired moves between causes / outcomes."""
    if not moves:
        return ["failure attribution: not recorded in both runs (metrics/detail/attribution.json)"]
    a, b = moves["a"], moves["b"]
    width = max(len(c) for c in (*CAUSES, "wrong"))
    lines = ["failure attribution (questions per cause; A, B, B − A):"]
    for c in (*CAUSES, "wrong"):
        lines.append(f"{bullet}{c.ljust(width)}  {a[c]:>4}  {b[c]:>4}  {b[c] - a[c]:>+5}")
    lines.append(f"moves between causes ({moves['n_paired']} questions in both, {moves['unchanged']} unchanged):")
    lines += [f"{bullet}{m['from']} -> {m['to']}: {m['n']}" for m in moves["moves"]] or [f"{bullet}none"]
    return lines
