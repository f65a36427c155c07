"""Readers: the chat prompt (formats, modes, dates, budget) and the extractive floor."""

from __future__ import annotations

import json

import bpe_openai
import pytest

from mnemetric.errors import ConfigError
from mnemetric.longmemeval.reader import ExtractiveReader, build_prompt, render_history
from mnemetric.longmemeval.reader.extractive import UNKNOWN
from mnemetric.longmemeval.reader.prompt import render_session
from mnemetric.longmemeval.reader.run import chat_calls, prompt_budget

from dataclasses import replace

from mnemetric.longmemeval.contexts import Context, ContextItem, ContextMessage


def _item(sid: str, date: str | None, *turns: tuple[str, str]) -> ContextItem:
    return ContextItem(sid, f"up_{sid}", None, date, tuple(ContextMessage(r, c) for r, c in turns), False)


ITEMS = [
    _item("s001", "2023/05/20 (Sat) 02:21", ("user", "My cat is called Miso."), ("assistant", "What a lovely name!")),
    _item("s002", "2023/05/22 (Mon) 10:00", ("user", "I started learning the cello.")),
]


def test_json_history_keeps_order_and_dates():
    text, used = render_history(ITEMS, "json", 10_000)
    assert text.index("Miso") < text.index("cello")
    assert "### Session 1 (date: 2023/05/20 (Sat) 02:21)" in text
    assert json.loads(text.split("\n")[1]) == [{"role": "user", "content": "My cat is called Miso."},
                                              {"role": "assistant", "content": "What a lovely name!"}]
    enc = bpe_openai.get_encoding("o200k_base")
    assert used == sum(len(enc.encode(render_session(i, item, "json"))) for i, item in enumerate(ITEMS, 1))


def test_nl_history_and_undated_sessions():
    undated = [replace(i, date=None) for i in ITEMS]
    text, _ = render_history(undated, "nl", 10_000)
    assert "user: My cat is called Miso." in text and "date:" not in text


def test_history_is_cut_to_the_budget_keeping_the_first_items():
    enc = bpe_openai.get_encoding("o200k_base")
    full, full_tokens = render_history(ITEMS, "json", 10_000)
    cut, used = render_history(ITEMS, "json", full_tokens - 5)
    assert used == full_tokens - 5 and len(enc.encode(cut)) <= full_tokens - 5 + 2
    assert "Miso" in cut and full.startswith(cut[:50])


def test_prompt_modes_and_current_date():
    direct = build_prompt("What is my cat called?", "2023/06/01 (Thu) 09:00", ITEMS, mode="direct")
    con = build_prompt("What is my cat called?", "2023/06/01 (Thu) 09:00", ITEMS, mode="con")
    assert "Current date: 2023/06/01 (Thu) 09:00\nQuestion: What is my cat called?" in direct
    assert direct.endswith("Answer:") and con.endswith("Notes and answer:")
    assert "Current date" not in build_prompt("q", None, ITEMS)
    with pytest.raises(ConfigError):
        build_prompt("q", None, ITEMS, mode="cot")


def test_budget_and_requests_follow_the_spec():
    spec = {"name": "openai", "model": "m", "temperature": 0, "max_tokens": 800, "context_window": 128000,
            "margin_tokens": 1000, "history_format": "json", "mode": "con"}
    assert prompt_budget(spec) == 126200
    from mnemetric.longmemeval.adapted import Query
    (call,) = chat_calls([Query("q0", "What is my cat called?", None, "")], [Context("x", "bm25", "session", 10, 6000, "wordpunct-v1", 20, tuple(ITEMS))], spec)
    assert call.params == {"temperature": 0, "max_tokens": 800, "n": 1} and len(call.messages) == 1
    assert (call.role, call.tag, call.model, call.endpoint) == ("reader", "x", "m", "chat")
    with pytest.raises(ConfigError):
        prompt_budget(spec | {"context_window": 1000})


def test_extractive_reader_picks_the_matching_sentence():
    reader = ExtractiveReader(min_overlap=1)
    assert reader.answer("What is my cat called?", ITEMS) == "My cat is called Miso."
    assert reader.answer("Where did I travel in June?", ITEMS) == UNKNOWN
    assert reader.answer("anything", []) == UNKNOWN


def test_history_is_chosen_by_rank_and_shown_by_date():
    newest_first = ITEMS[::-1]
    text, _ = render_history(newest_first, "nl", 10_000)
    assert text.index("Miso") < text.index("cello")  # shown oldest first
    enc = bpe_openai.get_encoding("o200k_base")
    only_first = len(enc.encode(render_session(1, newest_first[0], "nl")))
    text, used = render_history(newest_first, "nl", only_first)
    assert "cello" in text and "Miso" not in text and used == only_first  # the best-ranked one was kept
