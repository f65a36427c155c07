"""metrics/detail/v2.json on the bundled sample (offline reader and checker): one cause per question answered
wrong, the checker's reason kept, tokens by item type; step rows carry the new fields through their files."""

from __future__ import annotations

from dataclasses import replace

from mnemetric.longmemeval_v2.detail import CAUSES, detail_record
from mnemetric.longmemeval_v2.judge_label import reply_reason
from mnemetric.longmemeval_v2.llm_checkers import OfflineChecker
from mnemetric.longmemeval_v2.reader import OfflineReader
from mnemetric.longmemeval_v2.report_sections import detail_section, sections
from mnemetric.longmemeval_v2.step_rows import CheckRow, MemoryRow, read_rows, write_rows
from mnemetric.longmemeval_v2.steps import assemble, check_step, memory_step, read_step
from mnemetric.longmemeval_v2.tokens import O200kCounter
from mnemetric.longmemeval_v2.validate import haystack_path
from tests.longmemeval_v2.test_run import SAMPLE, make_memory


def _run(memory="bm25", max_tokens=200_000):
    mem, _ = memory_step(SAMPLE, haystack_path(SAMPLE, "small"), ("web", "enterprise"),
                         lambda: make_memory(memory, SAMPLE), counter=O200kCounter(), max_tokens=max_tokens,
                         system=memory)
    read = read_step(mem, OfflineReader(), None, None)
    check = check_step(SAMPLE, mem, read, OfflineChecker(), None)
    return mem, check, assemble(SAMPLE, mem, read, check)


def _by_id(doc):
    return {q["question_id"]: q for q in doc["questions"]}


def test_causes_on_the_sample_and_the_counts_add_up(tmp_path):
    mem, check, rows = _run()
    doc = detail_record("sample", "bm25", mem, check, rows)
    c = doc["counts"]
    assert (c["correct"], c["wrong"], c["failed"]) == (3, 11, 0)  # the sample's numbers (metrics/v2.json: 3 of 14)
    assert sum(c[k] for k in CAUSES) == c["wrong"] and doc["precedence"] == list(CAUSES)
    q = _by_id(doc)
    # a gotcha whose gold phrase is nowhere in the ten states bm25 kept: the memory returned nothing relevant
    assert q["mnv2-web-04"]["cause"] == "memory_nothing_relevant" and q["mnv2-web-04"]["gold_in_context"] is False
    assert q["mnv2-web-02"]["cause"] == "reader_wrong" and q["mnv2-web-02"]["gold_in_context"] is True
    assert q["mnv2-web-03"]["gold_in_context"] is None  # a multiple-choice letter cannot be looked up
    assert all(q[i]["cause"] == "reader_wrong" for i in q if "-abs" in q[i]["question_type"] and q[i]["cause"])
    t = doc["tokens_by_type"]["combined"]
    assert t["text"]["items"] == 140 and t["image"] == {"items": 0, "tokens": 0} and t["questions"] == 14
    assert t["text"]["tokens"] == t["context_tokens"]  # text only: the per-type count is the context's
    assert doc["tokens_by_type"]["web"]["text"]["items"] + doc["tokens_by_type"]["enterprise"]["text"]["items"] == 140


def test_a_tiny_budget_is_a_cut_and_no_memory_is_nothing_relevant():
    doc = detail_record("sample", "bm25", *_run(max_tokens=60))
    cut = [q for q in doc["questions"] if q["cause"] == "over_budget_cut"]
    assert cut and all(q["truncated"] and q["gold_in_context"] is not True for q in cut)
    none = detail_record("sample", "none", *_run("none"))
    assert none["counts"]["correct"] == 0 and none["counts"]["memory_nothing_relevant"] > 0
    assert all(q["context_items"] == 0 for q in none["questions"])


def test_a_wrong_llm_verdict_on_an_answer_holding_the_gold_is_disputed_and_its_reason_is_kept(tmp_path):
    mem, check, rows = _run()
    gold = next(r for r in rows["web"] if r.question_id == "mnv2-web-04").answer_gold
    rows["web"] = [replace(r, response_parsed_boxed=gold) if r.question_id == "mnv2-web-04" else r
                   for r in rows["web"]]
    check = [replace(c, checker_reason="the answer misses the point") if c.question_id == "mnv2-web-04" else c
             for c in check]
    doc = detail_record("sample", "bm25", mem, check, rows)
    q = _by_id(doc)["mnv2-web-04"]
    assert q["cause"] == "checker_disputed" and q["applies"] == ["checker_disputed", "memory_nothing_relevant"]
    assert q["checker_reason"] == "the answer misses the point"
    page = detail_section(doc)
    assert "the answer misses the point" in str(page.tables) and "checker disputed" in str(page.tables[0].rows)
    # step rows keep the new fields through their files
    write_rows(tmp_path / "check.jsonl", check)
    write_rows(tmp_path / "memory.jsonl", mem)
    assert read_rows(tmp_path / "check.jsonl", CheckRow) == check
    assert read_rows(tmp_path / "memory.jsonl", MemoryRow) == mem


def test_reply_reason_and_absent_files():
    assert reply_reason('```json\n{"label": 0, "reason": "  too vague "}\n```') == "too vague"
    assert reply_reason('{"label": 1}') is None and reply_reason("label: 1") is None
    assert reply_reason('{"label": 1, "reason": 3}') is None
    assert sections("no/such/latency.json", "no/such/detail.json") == ()  # nothing shown, never zeros
