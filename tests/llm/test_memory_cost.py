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


def _ledger(adds):
    from mnemetric.llm.budget import ModelPrice
    from mnemetric.llm.proxy_ledger import ProxyLedger

    ledger = ProxyLedger()
    for phase, kind, prompt in adds:
        cost = ledger.phase("toy", phase)
        cost.requests[kind] += 1
        cost.work.add("m", "m-2024", prompt, 3, ModelPrice(0.15, 0.6))
    return ledger


def _of(adds):
    from types import SimpleNamespace

    from mnemetric.llm.memory_cost_file import MemoryCost

    return MemoryCost.from_record(memory_cost_record("toy", SimpleNamespace(ledger=_ledger(adds))), file="<test>")


def test_the_totals_are_the_phases_sums_when_a_model_answers_several_times_in_a_phase():
    record = _of([("query", "embeddings", 7), ("query", "chat", 5), ("query", "chat", 9)]).to_record()
    assert record["usage"]["responses"] == 3 and record["usage"]["prompt_tokens"] == 21  # not 21 x 3
    assert record["usage"] == record["systems"]["toy"]["query"]["usage"]


def test_shards_add_up_to_the_whole_runs_record_and_work_done_alike_counts_once():
    import pytest

    from mnemetric.llm.memory_cost_file import sum_memory_costs

    build = [("ingest", "chat", 10), ("ingest", "embeddings", 4)]
    a, b = [("query", "embeddings", 7)], [("query", "embeddings", 9), ("query", "chat", 5)]
    whole = _of(build + a + b).to_record()
    got = sum_memory_costs([("a", _of(build + a)), ("b", _of(build + b))], frozenset({"setup", "ingest"}))
    from tests.longmemeval_v2.test_stage_shards import _usd, _without_usd

    assert _without_usd(got.to_record()) == _without_usd(whole)  # counts and tokens exactly
    assert _usd(got.to_record()) == pytest.approx(_usd(whole), rel=1e-12)  # dollars up to float rounding
    summed = sum_memory_costs([("a", _of(build + a)), ("b", _of(build + b))]).to_record()
    assert summed["systems"]["toy"]["ingest"]["requests"] == {"chat": 2, "embeddings": 2}  # disjoint: summed


def test_a_phase_counted_once_that_differs_or_parts_of_other_memories_are_refused_by_file_and_field():
    import pytest

    from mnemetric.errors import InputError
    from mnemetric.llm.memory_cost_file import MemoryCost, sum_memory_costs

    a, b = _of([("ingest", "chat", 10)]), _of([("ingest", "chat", 11)])
    with pytest.raises(InputError, match=r"(?s)b\.json.*systems\.toy\.ingest.*differs"):
        sum_memory_costs([("a.json", a), ("b.json", b)], frozenset({"ingest"}))
    other = MemoryCost.from_record({**a.to_record(), "memory": "mem0"}, file="c.json")
    with pytest.raises(InputError, match=r"(?s)c\.json.*memory.*not parts of one run"):
        sum_memory_costs([("a.json", a), ("c.json", other)])


def test_a_record_whose_totals_are_not_its_phases_sums_or_that_has_an_unknown_phase_is_named():
    import pytest

    from mnemetric.errors import InputError
    from mnemetric.llm.memory_cost_file import MemoryCost

    record = _of([("ingest", "chat", 10)]).to_record()
    bad = {**record, "requests": {"chat": 2, "embeddings": 0}}
    with pytest.raises(InputError, match=r"(?s)x\.json.*requests\.chat.*phases' sum 1"):
        MemoryCost.from_record(bad, file="x.json")
    bad = {**record, "systems": {"toy": {"warmup": record["systems"]["toy"]["ingest"]}}}
    with pytest.raises(InputError, match=r"(?s)x\.json.*systems\.toy\.warmup.*not a phase"):
        MemoryCost.from_record(bad, file="x.json")


def test_a_shards_record_carries_its_part_and_reads_back_byte_for_byte_and_a_bad_part_is_named():
    import pytest

    from mnemetric.errors import InputError
    from mnemetric.llm.memory_cost_file import MemoryCost, PartRef

    whole = _of([("query", "chat", 10)])
    assert "part" not in whole.to_record()  # a whole run's record keeps its layout (and the stage's bytes)
    record = {**whole.to_record(), "part": PartRef("1/2", ("a" * 64,)).to_record()}
    assert MemoryCost.from_record(record, file="c.json").to_record() == record
    for part, named in (({"shard": "1/2", "outputs_sha256": []}, "part.outputs_sha256"),
                        ({"shard": "1/2", "outputs_sha256": ["abc"]}, "part.outputs_sha256"),
                        ({"shard": "1/2"}, "part.outputs_sha256.*missing"),
                        ({"shard": "1/2", "outputs_sha256": ["a" * 64], "when": 1}, "part.when.*unexpected"),
                        ("1/2", "part.*JSON object")):
        with pytest.raises(InputError, match=rf"(?s)c\.json.*{named}"):
            MemoryCost.from_record({**record, "part": part}, file="c.json")


def test_shard_records_are_matched_to_their_parts_by_shard_and_outputs_sha256(tmp_path):
    import pytest

    from mnemetric.errors import InputError
    from mnemetric.llm.memory_cost_file import parts_memory_costs, part_ref, write_memory_cost_record

    files = [tmp_path / f"p{k}.jsonl" for k in (1, 2, 3, 4)]
    for k, part in enumerate(files[:2], 1):
        part.write_text(f"rows of shard {k}\n", encoding="utf-8")
    for part in files[2:]:
        part.write_bytes(b"")  # shards with no question: equal bytes, told apart by their shard
    parts = [(f, f"{k}/4") for k, f in enumerate(files, 1)]
    costs = {}
    for k, (part, shard) in enumerate(parts, 1):
        cost = _of([("query", "chat", 10 * k)])
        costs[k] = type(cost)(**{**cost.__dict__, "part": part_ref(shard, (part, None))})
        write_memory_cost_record(tmp_path / f"c{k}.json", costs[k])
    got = parts_memory_costs([tmp_path / f"c{k}.json" for k in (4, 2, 3, 1)], parts)  # any order: the parts' back
    assert [(f.name, c) for f, c in got] == [(f"c{k}.json", costs[k]) for k in (1, 2, 3, 4)]
    assert part_ref(None, (files[0],)) is None  # an unsharded run's record has no part
    write_memory_cost_record(tmp_path / "whole.json", _of([("query", "chat", 10)]))
    (tmp_path / "stale.json").write_bytes((tmp_path / "c1.json").read_bytes())
    files[0].write_text("rows of shard 1, rerun\n", encoding="utf-8")  # c1 is now an earlier run's record
    rest = ["c2.json", "c3.json", "c4.json"]
    for given, named in ((["whole.json", *rest], r"whole\.json.*part.*not a shard's record"),
                         (["stale.json", *rest], r"stale\.json.*part.*none of the PARTs"),
                         (["c2.json", *rest], r"c2\.json.*a second record of the part")):
        with pytest.raises(InputError, match=rf"(?s){named}"):
            parts_memory_costs([tmp_path / g for g in given], parts)
    with pytest.raises(InputError, match=r"(?s)nowhere\.jsonl.*PART.*cannot be read"):
        parts_memory_costs([tmp_path / "c1.json"], [(tmp_path / "nowhere.jsonl", "1/1")])
