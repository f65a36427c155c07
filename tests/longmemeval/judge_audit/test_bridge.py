"""The successor bridge: per-type agreement and flip lists against the verdicts of record; "bridged" only
at or above the threshold; never official. The command runs a candidate over HTTP (openai SDK, loopback server)."""

from __future__ import annotations

import json

import pytest

from mnemetric.cli import main
from mnemetric.longmemeval.hypotheses import read_judged
from mnemetric.longmemeval.judge_audit.bridge import (
    DEFAULT_MIN_KAPPA,
    bridge_equivalence,
    compare_verdicts,
    is_bridged,
)
from mnemetric.official import OfficialEquivalence
from mnemetric.stats.agreement import agreement
from tests.conftest import ROOT
from tests.longmemeval.judge_audit.toy_judges import JUDGED, SAMPLE, rule_reply, sample_slice
from tests.support.openai_server import FakeOpenAIServer

TYPES = {"a": "multi-session", "b": "multi-session", "c": "multi-session", "d": "temporal-reasoning",
         "e": "temporal-reasoning", "f": "temporal-reasoning"}
OFFICIAL = {"a": True, "b": True, "c": False, "d": True, "e": False, "f": False}


def test_flips_and_per_type_agreement():
    cand = {"a": True, "b": False, "c": False, "d": True, "e": True, "f": None}
    cmp = compare_verdicts(OFFICIAL, cand, TYPES)
    assert cmp.yes_to_no == ("b",) and cmp.no_to_yes == ("e",) and cmp.missing == ("f",)
    assert list(cmp.per_type) == ["multi-session", "temporal-reasoning"]  # upstream's type order
    assert cmp.per_type["multi-session"] == agreement([True, True, False], [True, False, False])
    assert cmp.per_type["temporal-reasoning"].n == 2 and cmp.overall.n == 5
    assert cmp.overall.agreement == pytest.approx(3 / 5)
    rec = cmp.to_record()
    assert rec["flips"] == {"yes_to_no": ["b"], "no_to_yes": ["e"]} and rec["missing"] == ["f"]


def test_bridged_only_at_or_above_the_threshold_and_never_official():
    same = compare_verdicts(OFFICIAL, dict(OFFICIAL), TYPES)
    assert same.overall.kappa == 1.0 and is_bridged(same) and DEFAULT_MIN_KAPPA == 0.8
    one_off = compare_verdicts(OFFICIAL, OFFICIAL | {"f": True}, TYPES)  # kappa = 2/3
    assert one_off.overall.kappa == pytest.approx(2 / 3)
    assert not is_bridged(one_off) and is_bridged(one_off, min_kappa=0.6)
    assert not is_bridged(compare_verdicts(OFFICIAL, OFFICIAL | {"f": None}, TYPES))  # a question without verdict
    for cmp in (same, one_off):
        gate = bridge_equivalence("cand", cmp, 0.8, "x.jsonl")
        assert isinstance(gate, OfficialEquivalence) and gate.value is False and len(gate.reasons) == 1
    assert "bridged candidate judge cand" in bridge_equivalence("cand", same, 0.8, "x").reasons[0]
    assert "NOT bridged" in bridge_equivalence("cand", one_off, 0.8, "x").reasons[0]


@pytest.fixture()
def server(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-BRIDGE")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with FakeOpenAIServer(reply=rule_reply, model_map={"gpt-4o-mini-2024-07-18": "gpt-4o-mini-2024-07-18"}) as s:
        yield s


def test_the_command_bridges_a_loopback_candidate_on_the_sample_run(sample_run_outputs, tmp_path, server, capsys):
    judged = sample_slice(sample_run_outputs, tmp_path)
    before = judged.read_bytes()
    out, lines = tmp_path / "bridge.json", tmp_path / "cand.jsonl"
    option = tmp_path / "candidate.yaml"  # a YAML path (no composition needed for the judge)
    option.write_text((ROOT / "conf/judge/strict.yaml").read_text())
    args = ["judge-audit", "bridge", str(judged), str(SAMPLE), "--judge", str(option), "--model", "gpt-4o-mini-2024-07-18",
            "--base-url", server.base_url, "--out", str(out), "--judged-out", str(lines)]
    assert main(args) == 0
    rec = json.loads(out.read_text())
    official = {j.question_id: j.label for j in read_judged(judged)}
    cand = {j.question_id: j.label for j in read_judged(lines)}
    assert server.count == len(official) == len(cand) == rec["overall"]["n"]
    assert {j.model for j in read_judged(lines)} == {"gpt-4o-mini-2024-07-18"}
    assert rec["flips"]["yes_to_no"] == sorted(q for q in official if official[q] and not cand[q])
    assert rec["flips"]["no_to_yes"] == sorted(q for q in official if cand[q] and not official[q])
    assert rec["overall"]["kappa"] == pytest.approx(agreement(*zip(*[(official[q], cand[q]) for q in sorted(official)])).kappa)
    assert sum(b["n"] for b in rec["per_type"].values()) == len(official)
    assert rec["official_equivalence"]["value"] is False and rec["candidate"]["model"] == "gpt-4o-mini-2024-07-18"
    assert rec["bridged"] is (rec["overall"]["kappa"] >= 0.8) and rec["min_kappa"] == 0.8
    assert "never official" in capsys.readouterr().out
    # a threshold the candidate meets: bridged, and the record says so — still not official; nothing new is sent
    assert main([*args, "--min-kappa", "-1"]) == 0
    rec = json.loads(out.read_text())
    assert rec["bridged"] is True and rec["official_equivalence"]["value"] is False
    assert "bridged candidate judge strict (gpt-4o-mini-2024-07-18)" in rec["official_equivalence"]["reasons"][0]
    assert server.count == len(official) and judged.read_bytes() == before


def test_a_threshold_outside_minus_one_to_one_is_refused(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["judge-audit", "bridge", "j", "r", "--judge", "strict", "--out", "o", "--min-kappa", "1.5"])
    assert exc.value.code == 2 and "expected a number in [-1, 1]" in capsys.readouterr().err
