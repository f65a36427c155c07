"""The one parser of ``<stem>@<k>`` metric names, and the two places that read k back from a name."""

from __future__ import annotations

import pytest

from mnemetric.longmemeval.scoring.retrieval_averaging import split_at_k
from mnemetric.longmemeval.scoring.retrieval_report import recall_curve


@pytest.mark.parametrize("name, parsed", [("recall_all@5", ("recall_all", 5)), ("ndcg_any@50", ("ndcg_any", 50)),
                                          ("recall@10", ("recall", 10)), ("a@b@3", ("a@b", 3))])
def test_names_with_a_k(name, parsed):
    assert split_at_k(name) == parsed


@pytest.mark.parametrize("name", ["recall_all", "@5", "recall@", "recall@x", "recall@-1", "recall@1.5", "recall@５", "n"])
def test_other_names_are_none(name):
    assert split_at_k(name) is None


def test_recall_curve_takes_only_the_stem_asked_for_in_k_order():
    block = {"session": {"recall_all@10": 0.5, "recall_all@5": 0.25, "recall_any@5": 1.0, "recall_all": 9.0,
                         "recall_all@30": None},
             "turn": {"recall_all@1": 0.0}}
    assert recall_curve(block) == [{"granularity": "session", "k": 5, "recall": 0.25},
                                   {"granularity": "session", "k": 10, "recall": 0.5},
                                   {"granularity": "turn", "k": 1, "recall": 0.0}]
