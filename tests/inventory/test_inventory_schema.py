"""schemas/upstream-task-inventory.schema.json: the seed and the derived inventory satisfy it; drifts do not."""

from __future__ import annotations

import copy
import json

import jsonschema
import pytest

from mnemetric.custody.inventory import derive_inventory

from tests.conftest import ROOT
from tests.inventory import helpers

SCHEMA_FILE = ROOT / "schemas" / "upstream-task-inventory.schema.json"
SEED = ROOT.parent / "shared" / "seed" / "upstream-task-inventory.json"


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    return jsonschema.Draft202012Validator(schema)


def errors(validator, doc) -> list[str]:
    return [e.message for e in validator.iter_errors(doc)]


def test_the_users_seed_is_valid(validator):
    if not SEED.exists():
        pytest.skip(f"the user's seed is not present at {SEED}")
    assert errors(validator, json.loads(SEED.read_text(encoding="utf-8"))) == []


def test_the_hand_written_seed_of_these_tests_is_valid(validator):
    assert errors(validator, helpers.seed()) == []


def derived(seed: dict) -> dict:
    qa = helpers.qa_metrics({t: 3 for t in helpers.V1_TYPES})
    markers = {("longmemeval", "multi-session"): ["tests/scoring/test_x.py::test_y"],
               ("longmemeval-v2", "Static state recall"): ["tests/v2/test_a.py::TestB::test_c"]}
    return derive_inventory(seed, run_manifests=[helpers.manifest()], crosscheck=None, markers=markers,
                            metrics={"metrics/detail/qa.json": qa})


def test_a_derived_inventory_is_valid(validator):
    inv = derived(helpers.seed())
    assert errors(validator, inv) == []
    statuses = {t["coverage_status"] for f in inv["families"] for t in f["tasks"]}
    assert statuses == {"measured", "mapped", "unmapped"}  # every branch of the conditional rules is exercised


def test_the_inventory_derived_from_the_users_seed_and_this_repository_is_valid(validator):
    """The real seed, the real metrics/detail/qa.json, the real tests' markers, and a hand-written sample manifest."""
    from mnemetric.custody.inventory import collect_task_markers
    if not SEED.exists():
        pytest.skip(f"the user's seed is not present at {SEED}")
    qa_file = ROOT / "metrics" / "detail" / "qa.json"  # the file the tasks are measured in (not the headline)
    metrics = {"metrics/detail/qa.json": json.loads(qa_file.read_text(encoding="utf-8"))} if qa_file.exists() else {}
    inv = derive_inventory(json.loads(SEED.read_text(encoding="utf-8")), run_manifests=[helpers.manifest()],
                           crosscheck=None, markers=collect_task_markers(ROOT / "tests"), metrics=metrics)
    assert errors(validator, inv) == []


def mutated(path: list, value) -> dict:
    doc = helpers.seed()
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return doc


@pytest.mark.parametrize("path, value", [
    (["families", 0, "tasks", 0, "coverage_status"], "covered"),            # the old hand-typed status
    (["families", 0, "tasks", 0, "coverage_status"], "partial"),
    (["families", 0, "reviewed_sources", 0, "sha256"], helpers.SHA_ABC[:-1]),   # 63 hex digits
    (["families", 0, "reviewed_sources", 0, "sha256"], helpers.SHA_ABC.upper()),
    (["families", 0, "reviewed_sources", 0, "path"], "../outside.py"),
    (["families", 0, "reviewed_sources", 0, "path"], "/etc/passwd"),
    (["families", 0, "reviewed_sources", 0, "url"], "https://github.com/x/y/blob/main/README.md"),
    (["families", 0, "revision"], "9e0b455"),                                  # short revision
    (["families", 1, "benchmark"], "LongMemEval-V3"),
    (["schema"], "mnemetric.upstream-task-inventory/v2"),
    (["complete"], "false"),
    (["reviewed_date"], "04.10.2026"),
    (["qa_aggregation_review", "judge_prompt_parity_verified"], "yes"),
    (["date_transport_review", "temporal_reasoning_measured"], 1),
    (["families", 0, "implementation", "full_held_out_run_completed"], None),
    (["families", 0, "tasks", 0, "test_refs"], ["tests/test_sample.py"]),     # a file, not a test
    (["families", 0, "tasks", 0, "unexpected"], 1),
    (["unexpected"], 1),
])
def test_drift_is_refused(validator, path, value):
    assert errors(validator, mutated(path, value)) != []


@pytest.mark.parametrize("key", ["schema", "complete", "families", "reviewed_date", "qa_aggregation_review"])
def test_a_missing_top_level_key_is_refused(validator, key):
    doc = helpers.seed()
    del doc[key]
    assert errors(validator, doc) != []


@pytest.mark.parametrize("key", ["coverage_status", "evidence_refs", "test_refs", "task", "selector"])
def test_a_missing_task_key_is_refused(validator, key):
    doc = helpers.seed()
    del doc["families"][1]["tasks"][2][key]
    assert errors(validator, doc) != []


@pytest.mark.parametrize("status, evidence, tests, ok", [
    ("unmapped", [], [], True),
    ("unmapped", [], ["tests/a/test_b.py::test_c"], False),     # a marked test makes it mapped
    ("mapped", [], ["tests/a/test_b.py::test_c"], True),
    ("mapped", [], [], False),
    ("mapped", ["metrics/detail/qa.json#abstention.accuracy", "metrics/run.json"], ["tests/a/test_b.py::test_c"], False),
    ("measured", ["metrics/detail/qa.json#abstention.accuracy", "metrics/run.json"], [], True),
    ("measured", ["metrics/detail/qa.json#abstention.accuracy"], [], False),   # the manifest is part of the evidence
    ("measured", [], [], False),
])
def test_status_and_references_agree(validator, status, evidence, tests, ok):
    doc = helpers.seed()
    doc["families"][0]["tasks"][6].update(coverage_status=status, evidence_refs=evidence, test_refs=tests)
    assert (errors(validator, doc) == []) is ok


def test_review_blocks_accept_keys_the_seed_does_not_have(validator):
    doc = copy.deepcopy(helpers.seed())
    doc["qa_aggregation_review"]["a_new_note"] = {"anything": [1, 2]}
    doc["families"][0]["implementation"]["another_note"] = "text"
    doc["official_qa_setup_review"]["parameters"] = {"n": 1}
    assert errors(validator, doc) == []
