"""question_type → category and the category orders (upstream-v2-protocol.md §1, harness.py CATEGORY_MAP)."""

from __future__ import annotations

import pytest

from mnemetric.errors import InputError
from mnemetric.longmemeval_v2 import categories as cat


@pytest.mark.task("longmemeval-v2", "Static state recall")
@pytest.mark.task("longmemeval-v2", "Dynamic state tracking")
@pytest.mark.task("longmemeval-v2", "Workflow knowledge")
@pytest.mark.task("longmemeval-v2", "Environment gotchas")
@pytest.mark.task("longmemeval-v2", "Premise awareness")
def test_category_map_facts():
    assert dict(cat.CATEGORY_MAP) == {
        "static-environment": "static", "dynamic-environment": "dynamic", "procedure": "procedure",
        "errors-gotchas": "gotchas", "static-environment-abs": "static-abs",
        "dynamic-environment-abs": "dynamic-abs", "procedure-abs": "procedure-abs"}
    assert cat.NON_ABSTENTION_CATEGORIES == ("static", "dynamic", "procedure", "gotchas")
    assert cat.ABSTENTION_CATEGORIES == ("static-abs", "dynamic-abs", "procedure-abs")
    assert dict(cat.COMBINED_ABSTENTION_CATEGORY_PAIRS) == {
        "static": ("static", "static-abs"), "dynamic": ("dynamic", "dynamic-abs"),
        "procedure": ("procedure", "procedure-abs")}


def test_category_of():
    assert cat.category_of("errors-gotchas") == "gotchas"
    with pytest.raises(InputError) as err:
        cat.category_of("single-session-user", file="q.jsonl", record="q1")
    assert "q.jsonl: q1: field 'question_type'" in str(err.value) and "errors-gotchas" in str(err.value)
    with pytest.raises(InputError):
        cat.category_of(None)
