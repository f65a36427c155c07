"""The harness honours the memory systems' declared capabilities (memory/base.py), never a concrete class.

A hand-written instance in the upstream schema; the expected rankings are worked out by hand from
the corpus rules (run_retrieval.py): session corpus in haystack file order = sharegpt_a, answer_x,
ultrachat_b (target: answer_x); turn corpus = sharegpt_a_1, answer_x_1 (has_answer true: a
target), noans_x_3 (has_answer false in an answer session), ultrachat_b_1.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from mnemetric.longmemeval.adapted import SessionAdapter
from mnemetric.longmemeval.harness import retrieve_all, run_memory
from mnemetric.longmemeval.instance import load_instances
from mnemetric.longmemeval.memory import LabelledCeiling, Retrieved
from mnemetric.longmemeval.memory.base import is_labelled_ceiling
from mnemetric.longmemeval.memory.simple import Oracle

INSTANCE = {
    "question_id": "q1", "question_type": "single-session-user", "question": "Where did I park?",
    "answer": "Level 3", "question_date": "2023/05/30 (Tue) 10:00",
    "haystack_session_ids": ["sharegpt_a", "answer_x", "ultrachat_b"],
    # answer_x is the oldest: the chronological replay (s001, s002, s003) differs from the file order
    "haystack_dates": ["2023/05/20 (Sat) 09:00", "2023/05/01 (Mon) 09:00", "2023/05/25 (Thu) 09:00"],
    "haystack_sessions": [
        [{"role": "user", "content": "tell me a joke"}, {"role": "assistant", "content": "knock knock"}],
        [{"role": "user", "content": "I parked on level 3", "has_answer": True},
         {"role": "assistant", "content": "noted"},
         {"role": "user", "content": "thanks", "has_answer": False}],
        [{"role": "user", "content": "weather?"}, {"role": "assistant", "content": "sunny"}],
    ],
    "answer_session_ids": ["answer_x"],
}
CEILING = {"session": ["answer_x", "sharegpt_a", "ultrachat_b"],
           "turn": ["answer_x_1", "sharegpt_a_1", "noans_x_3", "ultrachat_b_1"]}


@pytest.fixture()
def record(tmp_path):
    path = tmp_path / "one.json"
    path.write_text(json.dumps([INSTANCE]))
    return SessionAdapter("session-v3", "mnemetric.longmemeval-session/v3").adapt(load_instances(path)[0], 0)


class Blank:
    """A memory system of this test alone (nothing of ours): it keeps nothing and ranks nothing."""

    def reset(self) -> None:
        pass

    def ingest(self, session) -> None:
        pass

    def retrieve(self, query, granularity):
        return []


@dataclass
class DeclaredCeiling(Blank, LabelledCeiling):
    """Not an Oracle, not a text memory: declares the capability and ranks nothing."""

    name: str = "declared-ceiling"


@dataclass
class FlaggedCeiling(DeclaredCeiling):
    name: str = "flagged-ceiling"


class AttributeCeiling(Blank):
    """Declares by the class attribute alone, without inheriting anything of ours."""

    name = "attribute-ceiling"
    labelled_ceiling = True


class NotQuite(AttributeCeiling):
    name = "not-quite"
    labelled_ceiling = "yes"  # only True declares the capability


def ranked_ids(memory, record, granularity):
    line, _ = next(retrieve_all(memory, [record], granularity, 10, 10_000))
    return [item["corpus_id"] for item in line["retrieval_results"]["ranked_items"]]


@pytest.mark.parametrize("granularity", ["session", "turn"])
@pytest.mark.parametrize("memory", [DeclaredCeiling(), AttributeCeiling(), Oracle()], ids=lambda m: m.name)
def test_any_system_declaring_the_capability_gets_the_labelled_ranking(memory, record, granularity):
    assert ranked_ids(memory, record, granularity) == CEILING[granularity]


def test_the_ceiling_ranking_is_given_as_ingested_session_ids_with_zero_scores(record):
    # replay order: answer_x (oldest) = s001, sharegpt_a = s002, ultrachat_b = s003
    assert run_memory(DeclaredCeiling(), record, "session") == [Retrieved("s001", None, 0.0),
                                                                 Retrieved("s002", None, 0.0),
                                                                 Retrieved("s003", None, 0.0)]
    assert run_memory(DeclaredCeiling(), record, "turn") == [Retrieved("s001", 0, 0.0), Retrieved("s002", 0, 0.0),
                                                             Retrieved("s001", 2, 0.0), Retrieved("s003", 0, 0.0)]


@pytest.mark.parametrize("granularity", ["session", "turn"])
def test_a_system_not_declaring_it_keeps_its_own_ranking(record, granularity):
    assert ranked_ids(NotQuite(), record, granularity) == []
    assert not is_labelled_ceiling(NotQuite()) and is_labelled_ceiling(FlaggedCeiling())
