"""LongMemEval-V2's gate in its family: one reason per failed condition, decided from the run manifest alone."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from mnemetric.custody.gate import gate
from mnemetric.errors import InputError
from mnemetric.longmemeval_v2.family import FAMILY
from mnemetric.longmemeval_v2.gate import GateFacts, official_reasons, reasons
from mnemetric.longmemeval_v2.tokens import DEFAULT_MAX_TOKENS
from tests.conftest import ROOT

OFFICIAL = GateFacts(data_verified=True, data_reasons=(), images=True, haystack="lme_v2_small.json", tier="small",
                     domains=("web", "enterprise"), reader="qwen", reader_official=True, reader_sends_prompts=True,
                     reader_texts_pinned=True, uses_llm_checker=True, checker="gpt-5.2", checker_official=True,
                     token_counter="qwen3.5-9b-processor", token_counter_official=True, token_counter_note=None,
                     memory_context_max_tokens=DEFAULT_MAX_TOKENS, failed=0)


def test_every_condition_holding_is_official_and_each_failure_is_one_reason():
    assert reasons(OFFICIAL) == []
    bad = replace(OFFICIAL, data_verified=False, data_reasons=("data file q.jsonl does not match its pin",),
                  images=False, tier=None, domains=("web",), reader_texts_pinned=False, checker_official=False,
                  memory_context_max_tokens=1, failed=2, token_counter_note="processor missing")
    assert reasons(bad) == [
        "data root not verified against the pinned dataset revision", "data file q.jsonl does not match its pin",
        "images off: screenshots and question images are not required to exist, and a missing question image is "
        "left out (upstream's runs use them)",
        "haystack 'lme_v2_small.json' is not an official tier file",
        "only web run; official results combine both domains",
        "reader texts not read from the pinned upstream harness.py",
        "checker 'gpt-5.2' is not the official gpt-5.2 judge with pinned prompts",
        f"memory_context_max_tokens 1 != {DEFAULT_MAX_TOKENS}",
        "2 question(s) failed where upstream aborts the run", "processor missing"]
    # an offline (deterministic) checker is not a reason when no question needed an LLM checker
    assert reasons(replace(OFFICIAL, uses_llm_checker=False, checker_official=False)) == []


def test_the_facts_read_back_and_a_bad_field_is_named():
    assert GateFacts.from_record(json.loads(json.dumps(OFFICIAL.to_record())), file="run-v2.json") == OFFICIAL
    raw = {**OFFICIAL.to_record(), "failed": "none"}
    with pytest.raises(InputError, match=r"run-v2.json.*protocol\.failed"):
        GateFacts.from_record(raw, file="run-v2.json")


def test_the_committed_sample_manifest_s_verdict_is_the_family_gate_s():
    """metrics/run-v2.json keeps what the gate read; the family decides again from it alone, and agrees."""
    run = json.loads((ROOT / "metrics" / "run-v2.json").read_text())
    assert list(gate(run, FAMILY).reasons) == run["official_equivalence"]["reasons"]
    assert gate(run, FAMILY).value is False
    # editing the recorded facts changes the family's verdict: it reads the manifest, not a stored answer
    run["protocol"]["token_counter_official"] = True
    assert "token counter 'o200k-standin' is not the Qwen/Qwen3.5-9B processor" not in official_reasons(run)
    del run["protocol"]
    assert official_reasons(run) == ["the LongMemEval-V2 run manifest has no protocol section to check "
                                     "(regenerate it: dvc repro v2_metrics)"]


def test_a_subset_or_a_shard_is_a_gate_fact_the_manifest_keeps():
    """A run that asked part of the questions is never official, and the gate says so from the manifest: the
    subset and the shard are facts of the protocol section (absent for a whole run, so its layout is kept)."""
    subset = "a subset of the questions: 4 of 14 (limit=2); official results ask every question"
    part = replace(OFFICIAL, subset=subset, shard="shard 1/2 of the run")
    assert reasons(part) == [subset, "shard 1/2 of the run"]
    record = json.loads(json.dumps(part.to_record()))
    assert GateFacts.from_record(record, file="run-v2.json") == part
    assert official_reasons({"protocol": record}) == [subset, "shard 1/2 of the run"]
    assert "subset" not in OFFICIAL.to_record() and "shard" not in OFFICIAL.to_record()
    with pytest.raises(InputError, match=r"protocol\.subset"):
        GateFacts.from_record({**record, "subset": 4}, file="run-v2.json")
