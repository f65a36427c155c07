"""Token budget: upstream's binary-search prefix cut against a naive prefix search written here, the
counters, and the official counter's absence message."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemetric.errors import ConfigError
from mnemetric.longmemeval_v2.tokens import O200kCounter, fit_to_budget, load_official_counter


def naive_cut(items, budget, count):
    """Longest prefix whose count fits, by trying every length from the longest down."""
    for n in range(len(items), -1, -1):
        if count(items[:n]) <= budget:
            return items[:n]
    return []


def additive(items):  # template overhead 5 for a non-empty list, 1 token per character
    return 0 if not items else 5 + sum(len(i["value"]) for i in items)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 40), max_size=25), st.integers(1, 400))
def test_cut_equals_naive_prefix_search(sizes, budget):
    items = [{"type": "text", "value": "x" * s} for s in sizes]
    kept, original, final = fit_to_budget(items, budget, additive)
    assert kept == naive_cut(items, budget, additive)
    assert original == additive(items) and final == additive(kept)
    assert (original > final) == (len(kept) < len(items))


def test_worked_example_and_memoised_counts():
    calls = []

    def count(items):
        calls.append(len(items))
        return additive(items)

    items = [{"type": "text", "value": v} for v in ("aaaa", "bb", "cccccc", "d")]
    # counts by prefix length: 0, 9, 11, 17, 18; budget 12 -> 2 items (11 tokens)
    kept, original, final = fit_to_budget(items, 12, count)
    assert [i["value"] for i in kept] == ["aaaa", "bb"] and (original, final) == (18, 11)
    assert calls == [4, 2, 3]  # full list, then mid=(0+4+1)//2=2 fits, mid=(2+4+1)//2=3 does not; 2 memoised
    assert fit_to_budget(items, 18, additive) == (items, 18, 18)
    assert fit_to_budget(items, 3, additive) == ([], 18, 0)
    assert fit_to_budget([], 1, additive) == ([], 0, 0)


@pytest.mark.parametrize("bad", [0, -5, True, 2.5])
def test_budget_must_be_a_positive_int(bad):
    with pytest.raises(ConfigError, match="memory_context_max_tokens"):
        fit_to_budget([], bad, additive)


def test_o200k_counter():
    c = O200kCounter()
    assert c.count([]) == 0 and not c.official
    # "hello world" is 2 o200k tokens; + 4 message tokens; an image is 256
    assert c.count([{"type": "text", "value": "hello world"}]) == 6
    assert c.count([{"type": "text", "value": "hello world"}, {"type": "image", "value": "x.png"}]) == 262


def test_official_counter_absent_says_how_to_get_it(tmp_path):
    with pytest.raises(ConfigError) as err:
        load_official_counter(tmp_path / "no-processor-here")
    text = str(err.value)
    assert "token_counter" in text and "Qwen/Qwen3.5-9B" in text and "not official" in text


def test_auto_counter_falls_back_with_a_note(tmp_path):
    from mnemetric.longmemeval_v2.tokens import auto_counter

    counter = auto_counter(tmp_path / "no-processor-here")
    assert counter.name == "o200k-standin" and not counter.official
    assert counter.note.startswith("official token counter unavailable") and "hf download Qwen/Qwen3.5-9B" in counter.note
    assert O200kCounter().note is None
