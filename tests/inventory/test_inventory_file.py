"""The inventory file typed once (mnemetric.custody.inventory_file): the committed seed and inventory read
and written back byte for byte; every refusal names file, record and field; review flags are set where the
seed has the block, never invented."""

from __future__ import annotations

import pytest

from mnemetric.custody.inventory_file import Inventory, Review, read_inventory, write_inventory
from mnemetric.errors import InputError

from tests.conftest import ROOT
from tests.inventory import helpers
from tests.support.edits import set_at


@pytest.mark.parametrize("rel", ["data/inventory/base.json", "data/inventory/upstream-task-inventory.json"])
def test_the_committed_files_are_written_back_byte_for_byte(rel, tmp_path):
    write_inventory(tmp_path / "out.json", read_inventory(ROOT / rel))
    assert (tmp_path / "out.json").read_bytes() == (ROOT / rel).read_bytes()


def test_the_record_is_the_layout_with_sorted_keys():
    record = Inventory.from_record(helpers.seed()).to_record()
    assert record == helpers.seed()
    assert list(record) == sorted(record)
    assert all(list(f) == sorted(f) for f in record["families"])
    assert all(list(t) == sorted(t) for f in record["families"] for t in f["tasks"])


def _seed(path: list, value) -> dict:
    return set_at(helpers.seed(), path, value)


@pytest.mark.parametrize("path, value, record, field", [
    (["schema"], "other/v1", "<file>", "schema"),
    (["families"], [], "<file>", "families"),
    (["reviewed_date"], KeyError, "<file>", "reviewed_date"),
    (["extra"], 1, "<file>", "extra"),
    (["qa_aggregation_review"], [], "<file>", "qa_aggregation_review"),
    (["families", 1], "LongMemEval-V2", "families[1]", "families"),
    (["families", 0, "repository"], KeyError, "families[0]", "repository"),
    (["families", 0, "implementation"], "x", "families[0]", "implementation"),
    (["families", 0, "reviewed_sources", 0, "sha256"], 5, "families[0]", "reviewed_sources[0].sha256"),
    (["families", 0, "tasks", 2, "coverage_status"], "covered", "families[0]", "tasks[2].coverage_status"),
    (["families", 0, "tasks", 0, "note"], "kept?", "families[0]", "tasks[0].note"),
    (["families", 1, "tasks", 0, "test_refs"], "tests/a.py::t", "families[1]", "tasks[0].test_refs"),
])
def test_a_malformed_inventory_names_file_record_and_field(path, value, record, field):
    with pytest.raises(InputError) as err:
        Inventory.from_record(_seed(path, value), file="seed.json")
    assert (err.value.problem.file, err.value.problem.record, err.value.problem.field) == ("seed.json", record, field)


def test_flags_are_set_in_place_and_no_block_is_invented():
    seed = helpers.seed()
    del seed["date_transport_review"]
    inv = Inventory.from_record(seed)
    assert inv.with_review("date_transport_review", official_equivalence=False) == inv
    done = inv.with_review("qa_aggregation_review", judge_executed=False, new_flag=True)
    assert list(done.reviews["qa_aggregation_review"].fields.items()) == [
        ("judge_executed", False), ("judge_prompt_parity_verified", True), ("rules", []), ("new_flag", True)]
    assert inv.with_implementation("longmemeval-v2", full_protocol_equivalence=False) == inv  # V2 has none
    v1 = inv.with_implementation("longmemeval", full_protocol_equivalence=False).family("longmemeval")
    assert v1.implementation == Review({"full_held_out_run_completed": True, "full_protocol_equivalence": False,
                                        "adapter": "x"})


def test_a_review_that_returns_no_inventory_is_the_family_s_error():
    from dataclasses import replace

    from mnemetric.custody.inventory import derive
    from mnemetric.errors import PluginError
    from mnemetric.longmemeval.family import FAMILY

    old_style = replace(FAMILY, inventory_review=lambda inv, manifests, crosscheck: None)  # wrote into a dict
    with pytest.raises(PluginError, match="inventory_review"):
        derive(Inventory.from_record(helpers.seed()), run_manifests=[], crosscheck=None, markers={}, metrics={},
               families=[old_style])
