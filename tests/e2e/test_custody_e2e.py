"""Custody end to end in a temp repo driven by real dvc: run manifest, gate, inventory, verify, card."""

from __future__ import annotations

import json

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.e2e

JUDGED = "data/runs/hypotheses.jsonl.eval-results-lexical"
V1_TASKS = ["single-session-user", "single-session-assistant", "single-session-preference", "temporal-reasoning",
            "knowledge-update", "multi-session", "abstention"]


def mnemetric(dvc_repo, *args, check=True):
    return dvc_repo.run("mnemetric", *args, check=check)


def test_sample_run_manifest_inventory_verify_and_card(reproduced_repo):
    repo = reproduced_repo  # a clone (with the tests' markers index the inventory reads) after `dvc repro`
    run = repo.json("metrics/run.json")
    assert run["variant"]["name"] == "sample" and run["variant"]["sha256_verified"] is True
    assert run["counts"] == {"questions": 43, "judged": 43, "failed": 0}
    gate = run["official_equivalence"]
    assert gate["value"] is False
    assert any("'sample' is not an official pinned file" in r for r in gate["reasons"])
    assert any("not the official API" in r for r in gate["reasons"])
    assert run["retrieval"]["delivered"]["questions"] == 43
    assert run["retrieval"]["delivered"]["items"]["max"] <= run["retrieval"]["requested"]["context_k"]
    assert run["retrieval"]["delivered"]["tokens"]["max"] <= run["retrieval"]["requested"]["context_tokens"]

    inv = repo.json("data/inventory/upstream-task-inventory.json")
    v1, v2 = inv["families"]
    assert [t["task"] for t in v1["tasks"]] == V1_TASKS
    for task in v1["tasks"]:
        assert task["coverage_status"] == "measured", task["task"]
        assert "metrics/run.json" in task["evidence_refs"] and task["test_refs"], task["task"]
        for ref in task["evidence_refs"]:
            assert (repo.path / ref.split("#")[0]).is_file(), ref
        for ref in task["test_refs"]:  # from the markers index: the tests of this checkout (not copied to the clone)
            assert (ROOT / ref.split("::")[0]).is_file(), ref
    # V2: the V2 stages run the bundled V2 sample and writes its manifest (metrics/run-v2.json): measured there
    assert {t["coverage_status"] for t in v2["tasks"]} == {"measured"}
    for task in v2["tasks"]:
        assert task["evidence_refs"][1:] == ["metrics/run-v2.json"] and task["test_refs"], task["task"]
    assert inv["complete"] is True  # every task measured, on the samples: the review fields say it is not official
    assert inv["families"][0]["implementation"]["full_held_out_run_completed"] is False
    assert inv["qa_aggregation_review"]["judge_executed"] is False  # the lexical judge is not upstream's

    assert mnemetric(repo, "verify").returncode == 0
    repo.run("git", "add", "-A")
    repo.run("git", "commit", "-qm", "run")
    path = repo.path / JUDGED
    data = bytearray(path.read_bytes())
    data[0] ^= 0x01  # one byte
    path.write_bytes(bytes(data))
    bad = mnemetric(repo, "verify", check=False)
    assert bad.returncode == 1
    drifted = [line for line in bad.stdout.splitlines() if not line.startswith("ok")]
    assert len(drifted) == 1 and drifted[0].startswith(f"DRIFT    {JUDGED} ")
    assert mnemetric(repo, "verify", "--rev", "HEAD").returncode == 0  # the committed revision still matches

    card = mnemetric(repo, "card").stdout
    assert "- official_equivalence: **false**" in card
    assert run["variant"]["sha256"] in card and f"`{JUDGED}`, sha256 `" in card

    # cross-check evidence where the inventory reads it (mnemetric crosscheck --out data/custody/crosscheck.json)
    evidence = {"schema": "mnemetric.crosscheck/v1", "upstream": {"pinned": True, "files": {
        "src/evaluation/evaluate_qa.py": "ecce9c4c79dc89d99534ac17b383a5cbb5b9f0c69ee98adaf0684742e3d95251"}},
        "checks": [{"script": "evaluate_qa.py", "agree": True}]}
    (repo.path / "data/custody/crosscheck.json").write_text(json.dumps(evidence))
    assert "Running stage 'inventory'" in repo.dvc("repro").stdout  # data/custody/ is a dep of the inventory
    inv = repo.json("data/inventory/upstream-task-inventory.json")
    assert inv["qa_aggregation_review"]["judge_prompt_parity_verified"] is True
    assert inv["families"][0]["implementation"]["full_protocol_equivalence"] is False  # the gate still says no


# The LLM judge's params are read from the judged lines, not the cache (run_manifest rebuilt with no LLM cache
# writes the same bytes): proved on the cold LLM experiment of
# tests/e2e/test_qa_e2e.py::test_llm_path_runs_for_real_and_a_second_run_sends_nothing (one cold experiment for
# the three tests that each ran it).
