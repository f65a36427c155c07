"""The committed task inventory (data/inventory/upstream-task-inventory.json, derived by the `inventory`
stage from data/inventory/base.json): valid against the schema, the seed's families and text kept,
every reference real (files exist, test functions defined)."""

from __future__ import annotations

import ast
import json

import jsonschema
import pytest

from tests.conftest import ROOT

INVENTORY = ROOT / "data" / "inventory" / "upstream-task-inventory.json"
BASE = ROOT / "data" / "inventory" / "base.json"
SCHEMA = ROOT / "schemas" / "upstream-task-inventory.schema.json"
SEED = ROOT.parent / "shared" / "seed" / "upstream-task-inventory.json"
DERIVED = {"coverage_status", "evidence_refs", "test_refs"}


def load(path=INVENTORY) -> dict:
    return json.loads(path.read_text())


def test_valid_against_the_schema():
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text()))
    assert [e.message for e in validator.iter_errors(load())] == []


def test_status_values_and_complete():
    inv = load()
    tasks = [t for fam in inv["families"] for t in fam["tasks"]]
    for task in tasks:
        assert task["coverage_status"] in {"measured", "mapped", "unmapped"}
        if task["coverage_status"] == "measured":
            assert task["evidence_refs"] and task["test_refs"], task["task"]
        if task["coverage_status"] == "mapped":
            assert task["test_refs"] and not task["evidence_refs"], task["task"]
    assert inv["complete"] == all(t["coverage_status"] == "measured" for t in tasks)


def _defined(path, name: str) -> bool:
    tree = ast.parse(path.read_text())
    return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == name
               for n in ast.walk(tree))


def test_every_reference_exists():
    inv = load()
    missing = []
    for fam in inv["families"]:
        for t in fam["tasks"]:
            for ref in t["evidence_refs"]:
                if not (ROOT / ref.split("#")[0]).is_file():
                    missing.append(ref)
            for ref in t["test_refs"]:
                file, *names = ref.split("::")
                if not (ROOT / file).is_file() or not all(_defined(ROOT / file, n) for n in names):
                    missing.append(ref)
    refs = [inv["date_transport_review"]["adapter"], inv["date_transport_review"]["tests"],
            inv["qa_aggregation_review"]["tests"], inv["official_qa_setup_review"]["entrypoint"]]
    refs += [v for k, v in inv["families"][0]["implementation"].items() if isinstance(v, str) and "/" in v]
    missing += [r for r in refs if not (ROOT / r.split(":")[0]).exists()]
    assert not missing


def test_the_base_text_is_kept():
    base, inv = load(BASE), load()
    assert {k: v for k, v in base.items() if k not in {"families", "complete"} and not k.endswith("_review")} == \
        {k: v for k, v in inv.items() if k not in {"families", "complete"} and not k.endswith("_review")}
    for b, i in zip(base["families"], inv["families"], strict=True):
        assert [{k: v for k, v in t.items() if k not in DERIVED} for t in b["tasks"]] == \
            [{k: v for k, v in t.items() if k not in DERIVED} for t in i["tasks"]]


def test_same_families_and_tasks_as_the_users_audit():
    if not SEED.exists():
        pytest.skip("the user's seed inventory is not present")
    seed = json.loads(SEED.read_text())
    for inv in (load(), load(BASE)):
        assert set(seed) == set(inv)
        for s, i in zip(seed["families"], inv["families"], strict=True):
            assert (s["benchmark"], s["revision"]) == (i["benchmark"], i["revision"])
            assert [t["task"] for t in s["tasks"]] == [t["task"] for t in i["tasks"]]
            assert s["reviewed_sources"] == i["reviewed_sources"]
            assert [t["selector"] for t in s["tasks"]] == [t["selector"] for t in i["tasks"]]
