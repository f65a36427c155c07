"""The V2 harness: what is timed (query + validation; not inserts, not the hook, not the budget cut) and
what the memory sees. A fake clock (time.perf_counter of the harness module replaced by a counter the
test memories advance) makes the durations exact — no real sleeping, no timing assertions."""

from __future__ import annotations

import pytest

from mnemetric.errors import PluginError
from mnemetric.longmemeval_v2 import harness
from mnemetric.longmemeval_v2.harness import MemoryQuestion, run_memory
from tests.longmemeval_v2.test_memory import TRAJ


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture()
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setattr(harness.time, "perf_counter", c)
    return c


class CountingCounter:
    """1 token per character of text; 'sleeps' 7 s per count (the cut must not be timed)."""

    name, official = "chars", False

    def __init__(self, clock):
        self.clock = clock

    def count(self, items):
        self.clock.sleep(7)
        return sum(len(i["value"]) for i in items)


def make(clock, *, insert=0.0, query=0.0, hook=None, items=None):
    seen = []

    class Sleepy:
        name = "sleepy"

        def insert(self, trajectory):
            clock.sleep(insert)

        def query(self, *args, **kwargs):
            seen.append((args, kwargs))
            clock.sleep(query)
            return list(items or [{"type": "text", "value": "abc"}])

    if hook is not None:
        def post_query_hook(self, *, query, query_image, memory_context):
            clock.sleep(hook)
            return {"n": len(memory_context), "q": query}
        Sleepy.post_query_hook = post_query_hook
    return Sleepy, seen


QS = [MemoryQuestion("q1", "where?", None, ("t1", "t2")), MemoryQuestion("q2", "what?", "/img.png", ("t1", "t2"))]


def run(factory, clock, max_tokens=100):
    return list(run_memory(factory, QS, TRAJ, system="sleepy", counter=CountingCounter(clock), max_tokens=max_tokens))


def test_sleep_in_insert_is_not_timed(clock):
    factory, _ = make(clock, insert=50.0)
    out = run(factory, clock)
    assert [o.memory_query_duration_seconds for o in out] == [0.0, 0.0]
    assert clock.now > 1000.0 + 100  # the inserts did take (fake) time


def test_sleep_in_query_is_timed_and_the_hook_apart(clock):
    factory, _ = make(clock, query=2.5, hook=0.75)
    out = run(factory, clock)
    assert [o.memory_query_duration_seconds for o in out] == [2.5, 2.5]
    assert [o.memory_post_query_duration_seconds for o in out] == [0.75, 0.75]
    assert out[1].memory_post_query_metadata == {"n": 1, "q": "what?"}


def test_no_hook_gives_none_metadata_and_zero_duration(clock):
    factory, _ = make(clock, query=1.0)
    out = run(factory, clock)
    assert out[0].memory_post_query_metadata is None and out[0].memory_post_query_duration_seconds == 0.0


def test_the_memory_sees_question_text_and_image_only(clock):
    factory, seen = make(clock)
    run(factory, clock)
    assert seen == [(("where?", None), {}), (("what?", "/img.png"), {})]


def test_budget_cut_fields(clock):
    items = [{"type": "text", "value": "aaaa"}, {"type": "text", "value": "bbb"}, {"type": "text", "value": "cc"}]
    factory, _ = make(clock, items=items)
    o = run(factory, clock, max_tokens=8)[0]
    # prefixes: 4, 7, 9 characters -> the longest prefix within 8 is two items
    assert o.memory_context == items[:2] and o.memory_context_original_token_count == 9
    assert o.memory_context_token_count == 7 and o.memory_context_was_truncated
    rec = o.to_record()
    assert list(rec) == ["memory_context", "memory_query_duration_seconds", "memory_post_query_duration_seconds",
                         "memory_post_query_metadata", "memory_context_original_token_count",
                         "memory_context_token_count", "memory_context_was_truncated"]


def test_invalid_items_abort_with_plugin_error(clock):
    factory, _ = make(clock, items=[{"type": "text", "value": ""}])
    with pytest.raises(PluginError, match="sleepy: query \\(question q1\\)"):
        run(factory, clock)


def test_item_validation_is_inside_the_timed_window(clock):
    class SlowList(list):
        def __iter__(self):  # validation walks the items: 1.5 s of fake time
            clock.sleep(1.5)
            return super().__iter__()

    class M:
        name = "m"

        def insert(self, trajectory):
            pass

        def query(self, text, image=None):
            clock.sleep(1.0)
            return SlowList([{"type": "text", "value": "x"}])

    assert run(M, clock)[0].memory_query_duration_seconds == 2.5
