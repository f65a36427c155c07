"""metrics/data.json typed (longmemeval.data_stats.DataMetrics): the committed file's exact bytes, a record
built by hand, a bad field named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mnemetric.errors import InputError
from mnemetric.longmemeval.data_stats import (
    DataMetrics,
    Spread,
    TypeCounts,
    haystack_spreads,
    read_data_metrics,
    write_data_metrics,
)

from tests.conftest import ROOT

COMMITTED = ROOT / "metrics" / "data.json"


def test_the_committed_file_reads_and_writes_back_to_its_bytes(tmp_path: Path):
    m = read_data_metrics(COMMITTED)
    assert (m.variant, m.questions.total, m.suite_size) == ("sample", 43, 43)
    write_data_metrics(tmp_path / "data.json", m)
    assert (tmp_path / "data.json").read_bytes() == COMMITTED.read_bytes()


def test_a_record_built_by_hand():
    counts = TypeCounts.of([("multi-session", True), ("temporal-reasoning", False), ("multi-session", False)])
    assert (counts.total, counts.abstention, counts.per_type["multi-session"], counts.per_type["knowledge-update"]) == \
        (3, 1, 2, 0)
    sessions, turns = haystack_spreads([(2, 10), (4, 11)])
    assert (sessions, turns) == (Spread(3.0, 4), Spread(10.5, 11))
    assert haystack_spreads([]) == (Spread(None, None), Spread(None, None))
    m = DataMetrics("v", "bundled", "a" * 64, True, "ad", "schema/v3", counts, sessions, turns, "full", 3, "b" * 64,
                    counts)
    assert DataMetrics.from_record(json.loads(json.dumps(m.to_record())), file="d.json") == m


@pytest.mark.parametrize("change, field", [
    (lambda r: r["variant"].update(sha256_verified="yes"), "variant.sha256_verified"),
    (lambda r: r["suite"]["questions"]["per_type"].update({"multi-session": -1}), "suite.questions.per_type.multi-session"),
    (lambda r: r["haystack"]["turns"].update(max=1.5), "haystack.turns.max"),
    (lambda r: r.update(extra={}), "extra"),
    (lambda r: r["suite"].pop("ids_sha256"), "suite.ids_sha256"),
])
def test_a_bad_field_is_named(change, field):
    raw = json.loads(COMMITTED.read_text())
    change(raw)
    with pytest.raises(InputError) as err:
        DataMetrics.from_record(raw, file="d.json")
    assert (err.value.problem.file, err.value.problem.field) == ("d.json", field)
