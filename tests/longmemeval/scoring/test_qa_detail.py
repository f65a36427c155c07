"""metrics/detail/qa.json typed (scoring.qa_detail.QADetail): the committed file's exact bytes, what
score_judged_file gives for the committed run, a bad field named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mnemetric.errors import InputError
from mnemetric.longmemeval.scoring.qa_detail import QADetail, read_qa_detail, write_qa_detail

from tests.conftest import ROOT

COMMITTED = ROOT / "metrics" / "detail" / "qa.json"


def test_the_committed_detail_reads_and_writes_back_to_its_bytes(tmp_path: Path):
    d = read_qa_detail(COMMITTED)
    assert (d.names["reader"], d.judge.name, d.n, d.coverage.n_reference) == ("extractive", "lexical", 43, 43)
    assert d.per_type["multi-session"].n == 8 and d.official_equivalence is False
    write_qa_detail(tmp_path / "qa.json", d)
    assert (tmp_path / "qa.json").read_bytes() == COMMITTED.read_bytes()


def test_errata_sensitivity_is_kept_last_and_only_when_present():
    raw = json.loads(COMMITTED.read_text())
    assert "errata_sensitivity" not in QADetail.from_record(raw, file="qa.json").to_record()
    with_errata = QADetail.from_record(raw | {"errata_sensitivity": {"excluded": []}}, file="qa.json").to_record()
    assert list(with_errata)[-1] == "errata_sensitivity" and with_errata["errata_sensitivity"] == {"excluded": []}


def _set(raw: dict, dotted: str, value) -> dict:
    node = raw
    *head, last = dotted.split(".")
    for part in head:
        node = node[part]
    node[last] = value
    return raw


@pytest.mark.parametrize("dotted, value, field", [
    ("official_equivalence", "no", "official_equivalence"),
    ("per_type.multi-session.n", -1, "per_type.multi-session.n"),
    ("per_type.multi-session.ci95", [], "per_type.multi-session.ci95"),
    ("judge.models", "lexical", "judge.models"),
    ("coverage.scope", None, "coverage.scope"),
    ("failures.n", 2, "failures.n"),
    ("abstention.accuracy", "0.1", "abstention.accuracy"),
    ("reader", 3, "reader"),
    ("bootstrap.resamples", 1.5, "bootstrap.resamples"),
])
def test_a_bad_field_is_named(dotted, value, field):
    raw = _set(json.loads(COMMITTED.read_text()), dotted, value)
    with pytest.raises(InputError) as err:
        QADetail.from_record(raw, file="qa.json")
    assert (err.value.problem.file, err.value.problem.field) == ("qa.json", field)


def test_the_six_types_in_upstream_print_order():
    raw = json.loads(COMMITTED.read_text())
    raw["per_type"] = dict(sorted(raw["per_type"].items()))
    with pytest.raises(InputError) as err:
        QADetail.from_record(raw, file="qa.json")
    assert err.value.problem.field == "per_type.<keys>"
