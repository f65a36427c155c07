"""harness.context_items / _fit / retrieve_all: the reader's context under the token budget (worked examples).

Expected items are written as contexts-file records by hand and compared with the typed items' records.

Token counts by hand (wordpunct-v1: words and single punctuation marks):
"My cat is Miso." = My|cat|is|Miso|. = 5; "Nice name!" = Nice|name|! = 3; "I play cello now." = 5.
"""

from __future__ import annotations

from mnemetric.longmemeval.adapted import (
    AdaptedRecord,
    EvalSession,
    EvalView,
    MemorySession,
    MemoryView,
    Message,
    Query,
)
from mnemetric.longmemeval.contexts import Context, ContextItem
from mnemetric.longmemeval.harness import context_items as typed_context_items
from mnemetric.longmemeval.harness import retrieve_all
from mnemetric.longmemeval.memory import Retrieved

S1 = (Message("user", "My cat is Miso."), Message("assistant", "Nice name!"))
S2 = (Message("user", "I play cello now."),)
REC = AdaptedRecord(
    MemoryView("mnemetric.longmemeval-session/v3", Query("q-1", "cat?", "2023/06/01", "[Current date: 2023/06/01]"),
               (MemorySession("s001", "2023/05/01", "", S1, 0), MemorySession("s002", None, "", S2, 1))),
    EvalView("q1", "single-session-user", "cat?", "Miso", "2023/06/01", False, ("up1",),
             (EvalSession("s001", "up1", "2023/05/01", (True, None)), EvalSession("s002", "up2", "2023/05/02", (None,)))),
)
SESSIONS = [Retrieved("s002"), Retrieved("s001")]


def context_items(rec: AdaptedRecord, ranked: list[Retrieved], k: int, budget: int) -> tuple[list[dict], int]:
    """harness.context_items with its typed items as records (the hand-written form below)."""
    items, used = typed_context_items(rec, ranked, k, budget)
    assert all(isinstance(i, ContextItem) for i in items)
    return [i.to_record() for i in items], used


def s1(*messages: dict, truncated: bool = False) -> dict:
    return {"session_id": "s001", "upstream_session_id": "up1", "turn_index": None, "date": "2023/05/01",
            "messages": list(messages), "truncated": truncated}


S2_ITEM = {"session_id": "s002", "upstream_session_id": "up2", "turn_index": None, "date": None,
           "messages": [{"role": "user", "content": "I play cello now."}], "truncated": False}
CAT = {"role": "user", "content": "My cat is Miso."}
NICE = {"role": "assistant", "content": "Nice name!"}


def test_everything_fits_in_retrieved_order():
    assert context_items(REC, SESSIONS, 2, 13) == ([S2_ITEM, s1(CAT, NICE)], 13)


def test_the_first_item_that_does_not_fit_is_cut_at_a_token_and_ends_the_context():
    # 5 used by s002; 3 left: "My cat is" (3 tokens) of the first message, the second dropped
    items, used = context_items(REC, SESSIONS + [Retrieved("s002")], 3, 8)
    assert (items, used) == ([S2_ITEM, s1({"role": "user", "content": "My cat is"}, truncated=True)], 8)
    # 12 = 5 + 5 + 2 of "Nice name!": the second message cut to "Nice name"
    assert context_items(REC, SESSIONS, 2, 12) == ([S2_ITEM, s1(CAT, {"role": "assistant", "content": "Nice name"},
                                                                truncated=True)], 12)


def test_no_room_left_ends_the_context_without_an_empty_item():
    assert context_items(REC, SESSIONS, 2, 5) == ([S2_ITEM], 5)
    assert context_items(REC, SESSIONS, 2, 0) == ([], 0)


def test_k_bounds_the_items_and_a_turn_item_carries_its_round():
    assert context_items(REC, SESSIONS, 1, 100) == ([S2_ITEM], 5)
    items, used = context_items(REC, [Retrieved("s001", 0), Retrieved("s001", 1)], 5, 100)
    assert used == 8 + 3 and [i["turn_index"] for i in items] == [0, 1]
    assert items[0]["messages"] == [CAT, NICE] and items[1]["messages"] == [NICE]


def test_every_item_is_a_contexts_file_record():
    items, _ = context_items(REC, SESSIONS, 2, 12)
    assert [ContextItem.from_record(i, file="x", line=1).to_record() for i in items] == items


class _Fixed:
    """A memory system that ranks s002 then s001 whatever the query."""

    name = "fixed"

    def reset(self) -> None:
        pass

    def ingest(self, session) -> None:
        pass

    def retrieve(self, query, granularity: str) -> list[Retrieved]:
        return list(SESSIONS)


def test_retrieve_all_yields_the_typed_context_of_each_question():
    _, context = next(retrieve_all(_Fixed(), [REC], "session", 2, 12))
    assert isinstance(context, Context)
    assert context.to_record() == {"question_id": "q1", "memory": "fixed", "granularity": "session", "k": 2,
                                   "budget_tokens": 12, "tokenizer": "wordpunct-v1", "tokens": 12,
                                   "items": [S2_ITEM, s1(CAT, {"role": "assistant", "content": "Nice name"},
                                                         truncated=True)]}
