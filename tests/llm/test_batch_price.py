"""The batch price: ``batch_discount`` in the price table, work usage priced per response by how it came, and
the usage sidecar's ``batch_responses`` (absent for live-only runs: their bytes do not change)."""

from __future__ import annotations

import pytest

from mnemetric.errors import ConfigError, InputError
from mnemetric.llm.budget import PriceTable, WorkUsage
from mnemetric.llm.usage import UsageRecord

TABLE = PriceTable.from_dict({"m": {"input": 2.0, "output": 8.0, "batch_discount": 0.5}, "x": {"input": 1, "output": 1}})


@pytest.mark.parametrize("bad", [-0.1, 1.5, "half", True])
def test_a_batch_discount_is_a_fraction(bad):
    with pytest.raises(ConfigError, match="batch_discount"):
        PriceTable.from_dict({"m": {"input": 1, "output": 1, "batch_discount": bad}})


def test_work_is_priced_by_how_each_response_came():
    work = WorkUsage()
    work.add("m", "m", 1000, 100, TABLE.get("m"))
    work.add("m", "m", 1000, 100, TABLE.get("m"), batch=True)
    work.add("x", "x", 1000, 0, TABLE.get("x"), batch=True)  # no discount known: the live price
    d = work.to_dict()
    live = (1000 * 2.0 + 100 * 8.0) / 1e6
    assert d["per_model"]["m"]["usd"] == pytest.approx(live * 1.5)
    assert d["per_model"]["x"]["usd"] == pytest.approx(1000 / 1e6)
    assert (d["batch_responses"], d["per_model"]["m"]["batch_responses"]) == (2, 1)
    assert list(d) == ["responses", "batch_responses", "prompt_tokens", "completion_tokens", "usd",
                       "unpriced_models", "per_model"]
    assert UsageRecord.from_record(d, file="u.json").to_record() == d


def test_a_live_only_record_has_no_batch_counts_and_a_wrong_sum_is_named():
    work = WorkUsage()
    work.add("m", "m", 10, 1, TABLE.get("m"))
    assert "batch_responses" not in work.to_dict() and "batch_responses" not in work.to_dict()["per_model"]["m"]
    bad = WorkUsage()
    bad.add("m", "m", 10, 1, TABLE.get("m"), batch=True)
    record = bad.to_dict() | {"batch_responses": 5}
    with pytest.raises(InputError, match="batch_responses"):
        UsageRecord.from_record(record, file="u.json")
