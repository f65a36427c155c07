"""The upstream task inventory: same schema and tasks as the user's audit, every reference real."""

from __future__ import annotations

import json

import pytest

from tests.conftest import ROOT

INVENTORY = ROOT / "data" / "inventory" / "upstream-task-inventory.json"
SEED = ROOT.parent / "shared" / "seed" / "upstream-task-inventory.json"


def load() -> dict:
    return json.loads(INVENTORY.read_text())


def test_schema_and_status_values():
    inv = load()
    assert inv["schema"] == "mnemetric.upstream-task-inventory/v1"
    for fam in inv["families"]:
        for task in fam["tasks"]:
            assert task["coverage_status"] in {"covered", "partial", "unmapped"}
            if task["coverage_status"] == "covered":
                assert task["evidence_refs"] and task["test_refs"], task["task"]


def test_every_reference_exists():
    inv = load()
    refs = [r for fam in inv["families"] for t in fam["tasks"] for r in t["evidence_refs"] + t["test_refs"]]
    refs += [inv["date_transport_review"]["adapter"], inv["date_transport_review"]["tests"],
             inv["qa_aggregation_review"]["tests"], inv["official_qa_setup_review"]["entrypoint"]]
    refs += [v for k, v in inv["families"][0]["implementation"].items() if isinstance(v, str) and "/" in v]
    missing = [r for r in refs if not (ROOT / r.split(":")[0]).exists()]
    assert not missing


def test_same_families_and_tasks_as_the_users_audit():
    if not SEED.exists():
        pytest.skip("the user's seed inventory is not present")
    seed, inv = json.loads(SEED.read_text()), load()
    assert set(seed) == set(inv)
    for s, i in zip(seed["families"], inv["families"], strict=True):
        assert (s["benchmark"], s["revision"]) == (i["benchmark"], i["revision"])
        assert [t["task"] for t in s["tasks"]] == [t["task"] for t in i["tasks"]]
        assert s["reviewed_sources"] == i["reviewed_sources"]
