"""The 0/1 label of an LLM-checker reply (upstream-v2-protocol.md §5, checked against upstream's parser):
hand-worked replies, then replies generated with a known label."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemetric.errors import MnemetricError
from mnemetric.longmemeval_v2.checkers import parse_judge_label as via_checkers
from mnemetric.longmemeval_v2.judge_label import UnparseableJudgeReply, clean_reply, parse_judge_label


@pytest.mark.parametrize("reply, label", [
    ('{"label": 1, "reason": "ok"}', 1),
    ('  {"label": 0, "reason": "premise followed"}\n', 0),
    ('{"label": "1"}', 1),
    ('{"label": true}', 1),                                        # True == 1 in a set
    ('{"label": 0.0}', 0),
    ('```json\n{"label": 1, "reason": "x"}\n```', 1),
    ('Sure. {"reason": "label: 1 is wrong", "label": 0} Done.', 0),  # the JSON wins over the text
    ('{"label": 10}', 1),                                          # JSON label not 0/1; regex reads the "1"
    ('{"label": 2} but label = 0', 0),                             # third regex
    ("{'label': 1}", 1),                                           # not JSON; single-quoted regex
    ("{label: 0, reason: none}", 0),                               # not JSON; bare regex
    ('x {"a": 1} y {"label": 0} z', 0),                            # greedy span is not JSON; regex
    ("LABEL=1", 1),
    ('"Label" : 0', 0),
])
def test_worked_replies(reply, label):
    assert parse_judge_label(reply) == label
    assert via_checkers(reply) == label


@pytest.mark.parametrize("reply, reason", [
    ("", "empty"),
    (None, "empty"),
    ("   \n ", "empty"),
    ("```\n\n```", "empty"),                                      # fence of 3 lines around nothing
    ("```\n```", "no JSON label"),                                # 2 lines: not a fence; no label
    ('{"label": 2, "reason": "x"}', "no JSON label"),
    ('{"label": "yes"}', "no JSON label"),
    ("labels: 1", "no JSON label"),                               # "labels" is not the word "label"
    ('{"label": [1]}', "unhashable"),                             # upstream crashes (TypeError)
    ('{"label": {"v": 1}}', "unhashable"),
])
def test_unparseable_replies_carry_the_reply(reply, reason):
    with pytest.raises(UnparseableJudgeReply) as err:
        parse_judge_label(reply)
    assert reason in err.value.reason
    assert err.value.reply == reply
    assert isinstance(err.value, MnemetricError)


def test_clean_reply():
    assert clean_reply("```\na\nb\n```") == "a\nb"
    assert clean_reply("``` one line ```") == "``` one line ```"
    assert clean_reply(12) == "12"


LABELS = st.sampled_from([0, 1, "0", "1", True, False, 0.0, 1.0])


@settings(max_examples=300, deadline=None)
@given(LABELS, st.text(max_size=40), st.sampled_from(["", "```json\n", "```\n"]),
       st.text(st.characters(blacklist_characters="{}"), max_size=20))
def test_generated_json_replies(label, reason, fence, prefix):
    body = json.dumps({"label": label, "reason": reason})
    reply = f"{prefix}{body}" if not fence else f"{fence}{body}\n```"
    expected = 1 if label in (1, "1", True) else 0
    assert parse_judge_label(reply) == expected
