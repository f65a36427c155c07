"""Sessions and ids of one haystack: has_answer placement, upstream id shapes, uniqueness."""

from __future__ import annotations

import random
import re

import pytest

from mnemetric.longmemeval.sample.banks import Exchange, load_banks
from mnemetric.longmemeval.sample.bundled import SAMPLE_PROFILE
from mnemetric.longmemeval.sample.haystack import (
    Profile,
    Spec,
    answer_ids,
    answer_session,
    filler_id,
    filler_session,
    question_id,
    topic_exchanges,
    unique_id,
)
from mnemetric.longmemeval.sample.questions import Evidence, default_scenarios

FILLER_ID_RE = re.compile(r"^(?:[0-9a-f]{8}(?:_[123])?|sharegpt_[A-Za-z0-9]{7}_[012]|ultrachat_[1-5]\d{5})$")


def spec(qtype: str = "multi-session", abstain: bool = False, gpt4: bool = False) -> Spec:
    return Spec(qtype, default_scenarios()[qtype][0], abstain, gpt4, False)


def test_unique_id_skips_used_tokens_and_tokens_containing_answer():
    tokens = iter(["x", "has_answer_1", "x", "y"])
    used: set[str] = set()
    assert unique_id(random.Random(0), used, lambda _: next(tokens)) == "x"
    assert unique_id(random.Random(0), used, lambda _: next(tokens)) == "y"
    assert used == {"x", "y"}


@pytest.mark.parametrize("seed", range(50))
def test_filler_ids_have_upstream_shapes(seed):
    assert FILLER_ID_RE.match(filler_id(random.Random(seed)))


def test_filler_id_kinds_all_occur():
    ids = [filler_id(random.Random(s)) for s in range(200)]
    assert any(i.startswith("sharegpt_") for i in ids) and any(i.startswith("ultrachat_") for i in ids)
    assert any(re.fullmatch(r"[0-9a-f]{8}", i) for i in ids) and any(re.fullmatch(r"[0-9a-f]{8}_[123]", i) for i in ids)


def test_question_id_prefix_and_suffix():
    assert re.fullmatch(r"[0-9a-f]{8}", question_id(random.Random(1), spec(), set()))
    assert re.fullmatch(r"gpt4_[0-9a-f]{8}_abs", question_id(random.Random(1), spec(abstain=True, gpt4=True), set()))


def test_answer_ids_by_count_and_abstention():
    base = answer_ids(random.Random(2), spec(), 1, set())[0]
    assert re.fullmatch(r"answer_[0-9a-f]{8}", base)
    assert answer_ids(random.Random(2), spec(), 3, set()) == [f"{base}_1", f"{base}_2", f"{base}_3"]
    assert answer_ids(random.Random(2), spec(abstain=True), 2, set()) == [f"{base}_abs_1", f"{base}_abs_2"]


def test_some_single_session_assistant_answer_ids_are_ultrachat():
    ids = [answer_ids(random.Random(s), spec("single-session-assistant"), 1, set())[0] for s in range(40)]
    assert any(re.fullmatch(r"answer_ultrachat_\d{6}", i) for i in ids)
    assert any(re.fullmatch(r"answer_[0-9a-f]{8}", i) for i in ids)


@pytest.mark.parametrize("mark", ["user", "assistant", ""])
def test_answer_session_marks_only_the_evidence_turn(mark):
    ev = Evidence("recipes", Exchange("EVIDENCE QUESTION", "EVIDENCE REPLY"), mark)
    turns = answer_session(random.Random(4), load_banks(), ev, SAMPLE_PROFILE)
    assert len(turns) >= 6 and [t.role for t in turns] == ["user", "assistant"] * (len(turns) // 2)
    assert all(t.has_answer in (True, False) for t in turns)
    flagged = [t.content for t in turns if t.has_answer]
    assert flagged == {"user": ["EVIDENCE QUESTION"], "assistant": ["EVIDENCE REPLY"], "": []}[mark]
    assert sum(t.content == "EVIDENCE QUESTION" for t in turns) == 1


def test_filler_sessions_carry_no_has_answer_and_greet_only_when_short_enough():
    banks = load_banks()
    greeted = [filler_session(random.Random(s), banks, "travel", SAMPLE_PROFILE) for s in range(100)]
    assert all(t.has_answer is None for s in greeted for t in s)
    assert any(s[0].role == "assistant" and s[0].content in banks.greetings for s in greeted)
    never = Profile(sessions=(4, 4), exchanges=(6,), span_days=(24, 24), max_turns=12)  # 2*6+1 > 12
    assert all(filler_session(random.Random(s), banks, "travel", never)[0].role == "user" for s in range(100))


def test_topic_exchanges_are_distinct_and_honour_fixed_slots():
    banks = load_banks()
    pairs = topic_exchanges(random.Random(7), banks, "music", 5, {"instrument": "cello"})
    assert len(pairs) == 5 and len(set(pairs)) == 5
    assert all("{" not in u + a for u, a in pairs)
    mentioned = [u for u, _ in pairs if "cello" in u or "piano" in u or "guitar" in u or "violin" in u]
    assert mentioned and all("cello" in u for u in mentioned)
