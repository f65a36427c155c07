"""The V2 report page's own sections, from metrics/v2-latency.json (:mod:`.latency`) and metrics/detail/v2.json
(:mod:`.detail`): latency and LAFS, the memory system's cost (build time, its own model calls), the context's
tokens by item type, and the failure attribution with the LLM checker's reasons.

A run made before these files existed has none: its page shows nothing for them, never zeros.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mnemetric.longmemeval_v2.detail import CAUSE_TEXT, CAUSES, DETAIL_PATH
from mnemetric.longmemeval_v2.latency import PATH as LATENCY_PATH
from mnemetric.report.model import Section, Table

SHOW_IDS = 8
REASONS_SHOWN = 12


def read_optional(path: str | Path) -> dict[str, Any] | None:
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return raw if isinstance(raw, dict) else None


def _s(x: Any) -> str:
    return "—" if not isinstance(x, (int, float)) or isinstance(x, bool) else f"{x:.4g}"


def latency_section(doc: Mapping[str, Any]) -> Section:
    paras = []
    if not doc.get("measured"):
        paras.append(f"Not measured: {doc.get('not_measured_reason')}")
    else:
        m, cache = doc.get("machine") or {}, doc.get("cache") or {}
        paras.append(f"Measured on {m.get('cpu_model') or 'an unknown CPU'} ({m.get('cpu_count')} CPUs, "
                     f"{m.get('implementation')} {m.get('python')}, {m.get('system')} {m.get('machine')})"
                     + ("; carried from the previous measurement of the same memory rows" if
                        (doc.get("source") or {}).get("carried") else "") + ". "
                     + (f"WARM: a cache served {cache.get('timed_cache_served')} answer(s) to timed calls, so the "
                        "latency is not representative and the run is never official." if cache.get("warm") else
                        "No timed call was served from a cache."))
    lafs = doc.get("lafs") or {}
    paras.append(f"LAFS gain {_s(lafs.get('lafs_gain'))} (tier {lafs.get('tier')}, submission LAFS "
                 f"{_s(lafs.get('submission_lafs'))}, reference {_s(lafs.get('reference_lafs'))})" if lafs.get("computed")
                 else f"No LAFS: {lafs.get('reason')}.")
    paras.append(f"File: {LATENCY_PATH} (committed; rewritten when stage v2_metrics runs).")
    tables = []
    query = doc.get("query_seconds") or {}
    if query:
        rows = tuple((scope, str(b.get("n")), _s(b.get("avg_seconds")), _s(b.get("p50_seconds")),
                      _s(b.get("p95_seconds")), _s(b.get("max_seconds")))
                     for scope, b in query.items() if isinstance(b, Mapping))
        tables.append(Table(("scope", "questions", "avg s", "p50 s", "p95 s", "max s"), rows,
                            "memory query latency (perf_counter around query + item validation)",
                            numeric=(1, 2, 3, 4, 5)))
    build, side = doc.get("memory_build") or {}, doc.get("memory_side") or {}
    if build or side:
        rows = tuple((d, str((build.get(d) or {}).get("builds", "—")), _s((build.get(d) or {}).get("total_seconds")),
                      *(str((side.get(d) or {}).get(k, "—")) for k in ("requests_sent", "cache_served", "work_responses",
                                                                         "prompt_tokens", "completion_tokens")),
                      _s((side.get(d) or {}).get("usd")))
                     for d in dict.fromkeys([*build, *side]))
        tables.append(Table(("domain", "builds", "build s", "requests sent", "cache served", "responses (work)",
                             "prompt tokens", "completion tokens", "usd"), rows,
                            f"memory system {doc.get('memory')}: build time and its own model calls",
                            numeric=tuple(range(1, 9))))
    return Section("v2-latency", "Latency, LAFS and the memory system's cost", tuple(paras), tuple(tables))


def _ids(ids: list[str]) -> str:
    more = len(ids) - SHOW_IDS
    return ", ".join(ids[:SHOW_IDS]) + (f" (+{more} more)" if more > 0 else "")


def detail_section(doc: Mapping[str, Any]) -> Section:
    counts = doc.get("counts") or {}
    questions = [q for q in doc.get("questions") or [] if isinstance(q, Mapping)]
    wrong = counts.get("wrong") or 0
    rows = tuple((CAUSE_TEXT[c], str(counts.get(c, 0)), f"{counts.get(c, 0) / wrong:.0%}" if wrong else "—",
                  _ids([q["question_id"] for q in questions if q.get("cause") == c])) for c in CAUSES)
    tables = [Table(("cause", "questions", "share of wrong", "question ids"), rows, numeric=(1, 2))]
    by_type = doc.get("tokens_by_type") or {}
    type_rows = tuple((scope, *(str((b.get(t) or {}).get(k, "—")) for t in ("text", "image") for k in ("items", "tokens")),
                       str(b.get("context_tokens", "—")))
                      for scope, b in by_type.items() if isinstance(b, Mapping))
    if type_rows:
        tables.append(Table(("scope", "text items", "text tokens", "image items", "image tokens", "context tokens"),
                            type_rows, "kept context by item type (each type counted alone by the run's token "
                            "counter; the context count includes the message template)", numeric=(1, 2, 3, 4, 5)))
    reasons = [(q["question_id"], str(q.get("outcome")), str(q.get("checker")), str(q["checker_reason"]))
               for q in questions if q.get("checker_reason")]
    if reasons:
        tables.append(Table(("question", "outcome", "checker", "the LLM checker's reason"),
                            tuple(reasons[:REASONS_SHOWN]), f"{len(reasons)} checker reason(s) kept"))
    note = ("One cause per question answered wrong, the first that applies in the order of the rows. V2 data labels "
            "no evidence: 'relevant' means a gold phrase occurs in the kept context (lexical; multiple-choice and "
            f"abstention questions cannot be looked up). Per question: {DETAIL_PATH}.")
    title = (f"Failure attribution ({wrong} wrong of {len(questions)}; {counts.get('correct', 0)} correct, "
             f"{counts.get('failed', 0)} failed)")
    return Section("v2-attribution", title, (note,), tuple(tables))


def sections(latency_path: str | Path = LATENCY_PATH, detail_path: str | Path = DETAIL_PATH) -> tuple[Section, ...]:
    """The sections whose files exist (module docstring)."""
    out = []
    if (lat := read_optional(latency_path)) is not None:
        out.append(latency_section(lat))
    if (det := read_optional(detail_path)) is not None:
        out.append(detail_section(det))
    return tuple(out)
