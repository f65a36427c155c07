"""The memory-side cost records (mnemetric.llm.memory_cost, proxy_ledger): the replay scan, `mnemetric compare`'s
lines and the report section, from real records."""

from __future__ import annotations

import time
import uuid
from datetime import datetime, timezone

from mnemetric.llm.memory_cost import cost_comparison, cost_lines, memory_cost_record, report_section
from mnemetric.llm.proxy_ledger import CLOCK_DATE, CLOCK_TIME, RANDOM_ID, volatile_kinds
from mnemetric.report.html import section as render_section

NOW = time.time()


def test_the_scan_finds_the_clock_and_random_ids_and_nothing_in_fixed_text():
    today = datetime.fromtimestamp(NOW, timezone.utc)
    assert volatile_kinds(f"Today's date is {today:%Y-%m-%d}.", NOW) == {CLOCK_DATE}
    assert volatile_kinds(f"written {today:%B %d, %Y}", NOW) == {CLOCK_DATE}
    assert volatile_kinds(f'{{"created_at": {NOW:.3f}}}', NOW) == {CLOCK_TIME}
    assert volatile_kinds(f"memory {uuid.uuid4()}", NOW) == {RANDOM_ID}
    fixed = "session 2023/05/20 (Sat) 02:21, id 0f19e68a, uuid5 " + str(uuid.uuid5(uuid.NAMESPACE_URL, "x"))
    assert volatile_kinds(fixed + " count 1234567890123", NOW) == set()


def _record(memory: str, chat: int, usd: float, *, replayable: bool = True) -> dict:
    usage = {"responses": chat, "prompt_tokens": 10 * chat, "completion_tokens": chat, "usd": usd,
             "unpriced_models": [], "per_model": {}}
    half = {"responses": chat // 2, "prompt_tokens": 5 * chat, "completion_tokens": chat // 2, "usd": usd / 2,
            "unpriced_models": [], "per_model": {}}
    return {"memory": memory, "uses_model_proxy": True, "replayable": replayable,
            "volatile": [] if replayable else [CLOCK_DATE], "requests": {"chat": chat, "embeddings": 0}, "usage": usage,
            "systems": {memory: {"ingest": {"requests": {"chat": chat - 1, "embeddings": 0}, "usage": half},
                                 "query": {"requests": {"chat": 1, "embeddings": 0}, "usage": half}}}}


def test_compare_puts_the_cost_beside_the_accuracy_difference():
    baseline = memory_cost_record("bm25", None)
    assert baseline["uses_model_proxy"] is False and baseline["requests"] == {"chat": 0, "embeddings": 0}
    cmp = cost_comparison(baseline, _record("mem0", 8, 0.25, replayable=False))
    assert cmp["diff"]["requests"] == 8 and cmp["diff"]["usd"] == 0.25
    assert cmp["b"]["ingest_requests"] == 7 and cmp["b"]["query_requests"] == 1
    text = "\n".join(cost_lines(cmp))
    assert "A bm25: no model proxy (0 requests)" in text
    assert "B mem0: 8 requests (ingest 7, query 1), 88 tokens, $0.2500 — NOT reproducible by replay" in text
    assert "B − A: +8 requests, +88 tokens, $+0.2500" in text
    assert cost_comparison(None, None) is None and cost_lines(None) == []
    assert "no memory_cost record" in "\n".join(cost_lines(cost_comparison(None, baseline)))


def test_compare_runs_carries_the_cost_block():
    from mnemetric.cli.compare import RunData, compare_runs, render_markdown, render_table
    from mnemetric.longmemeval.compare import keys_from

    keys = keys_from({}, {}, [])
    types = {"q1": "single-session-user", "q2": "multi-session"}
    a = RunData("A", "A", keys, {"q1": True, "q2": False}, {}, types, memory_cost=memory_cost_record("bm25", None))
    b = RunData("B", "B", keys, {"q1": True, "q2": True}, {}, types, memory_cost=_record("toy", 4, 0.01))
    result = compare_runs(a, b, force=True, resamples=10, seed=0)
    assert result["memory_cost"]["diff"]["requests"] == 4
    assert "memory-side cost" in render_table(result) and "- B toy: 4 requests" in render_markdown(result)


def test_the_report_section_shows_each_phase_and_the_replay_verdict():
    assert report_section(memory_cost_record("bm25", None)) is None  # a baseline's page is unchanged
    html = render_section(report_section(_record("toy", 4, 0.01, replayable=False)))
    assert "Memory-side cost" in html and "NOT reproducible by replay" in html
    assert html.count("<tr>") >= 3 and "ingest" in html and "query" in html
