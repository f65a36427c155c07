"""bm25-upstream ranks exactly as upstream flat-bm25, ties included, on haystacks whose dates are not sorted.

Upstream (xiaowu0162/LongMemEval src/retrieval/run_retrieval.py @ 9e0b455f) builds each question's corpus
in haystack FILE order and ranks by ``np.argsort(scores)[::-1]``, so the order among tied scores follows
file positions. Our harness replays sessions chronologically; before the fix, bm25-upstream indexed them
in that replay order and disagreed with upstream on 4 of 80 question x granularity cases (all at turn
level, all with unsorted dates). The expected rankings below are built here, independently of
Mnemetric's corpus code, from the raw instance and the protocol facts (upstream-protocol.md §2.1-2.2).
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from mnemetric.longmemeval.adapted import SessionAdapter
from mnemetric.longmemeval.instance import parse_instance
from mnemetric.longmemeval.memory.bm25 import UpstreamBM25
from mnemetric.longmemeval.memory.simple import Oracle
from mnemetric.longmemeval.harness import retrieve_all

V3 = SessionAdapter("session-v3", "mnemetric.longmemeval-session/v3")
WORDS = ["tea", "coffee", "garden", "bike", "piano", "Paris", "paris", "dog", "the", "a", "my", "new"]


def _date(rng: random.Random) -> str:
    day = rng.randint(1, 28)
    weekday = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")[(day + 1) % 7]  # 2023/05/01 was a Monday
    return f"2023/05/{day:02d} ({weekday}) {rng.randint(0, 23):02d}:{rng.choice([0, 30]):02d}"


def random_instance(rng: random.Random, qid: str) -> dict:
    """A raw upstream-schema instance with shuffled session dates and many tied BM25 scores
    (short texts over a tiny vocabulary, repeated turns, sessions without user turns)."""
    n = rng.randint(3, 9)
    ids, dates, sessions = [], [], []
    answer_at = set(rng.sample(range(n), rng.randint(1, min(2, n))))
    for j in range(n):
        is_answer = j in answer_at
        sid = f"answer_{qid}_{j}" if is_answer else f"filler_{qid}_{j}"
        turns = []
        for t in range(rng.randint(0, 4)):
            for role in ("user", "assistant"):
                turn = {"role": role, "content": " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3)))}
                if is_answer:
                    turn["has_answer"] = role == "user" and t == 0 and rng.random() < 0.7
                turns.append(turn)
        if rng.random() < 0.3 and turns:
            turns = turns + [dict(turns[0])]  # an identical user turn: a certain tie
        ids.append(sid)
        dates.append(_date(rng))
        sessions.append(turns)
    return {"question_id": qid, "question_type": "multi-session", "answer": "x",
            "question": " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4))),
            "question_date": "2023/06/01 (Thu) 10:00", "haystack_session_ids": ids, "haystack_dates": dates,
            "haystack_sessions": sessions, "answer_session_ids": [s for s in ids if "answer" in s]}


def upstream_corpus(raw: dict, granularity: str) -> list[tuple[str, str]]:
    """(corpus id, text) in file order, by the upstream rules, written from the facts only."""
    docs = []
    for sid, turns in zip(raw["haystack_session_ids"], raw["haystack_sessions"]):
        users = [t for t in turns if t["role"] == "user"]
        if granularity == "session":
            relabel = "answer" in sid and all(not t["has_answer"] for t in users)
            docs.append((sid.replace("answer", "noans") if relabel else sid, " ".join(t["content"] for t in users)))
            continue
        for i, t in enumerate(turns):
            if t["role"] != "user":
                continue
            cid = f"{sid}_{i + 1}"
            if "answer" in sid and not t["has_answer"]:
                cid = cid.replace("answer", "noans")
            docs.append((cid, t["content"]))
    return docs


def upstream_flat_bm25(raw: dict, granularity: str) -> list[str]:
    docs = upstream_corpus(raw, granularity)
    scores = BM25Okapi([text.split(" ") for _, text in docs]).get_scores(raw["question"].split(" "))
    return [docs[i][0] for i in np.argsort(scores)[::-1]]


def upstream_oracle(raw: dict, granularity: str) -> list[str]:
    ids = [cid for cid, _ in upstream_corpus(raw, granularity)]
    return [c for c in ids if "answer" in c] + [c for c in ids if "answer" not in c]


def _ours(memory, raws: list[dict], granularity: str) -> list[list[str]]:
    records = [V3.adapt(parse_instance(raw), i) for i, raw in enumerate(raws)]
    return [[item["corpus_id"] for item in line["retrieval_results"]["ranked_items"]]
            for line, _ in retrieve_all(memory, records, granularity, 10, 10_000)]


RAWS = [random_instance(random.Random(seed), f"q{seed}") for seed in range(40)]


def test_the_generated_haystacks_are_really_unsorted():
    unsorted = sum(any(a > b for a, b in zip(r["haystack_dates"], r["haystack_dates"][1:])) for r in RAWS)
    assert unsorted >= 30


@pytest.mark.parametrize("granularity", ["session", "turn"])
def test_bm25_upstream_equals_upstream_flat_bm25_with_shuffled_dates(granularity):
    ours = _ours(UpstreamBM25(), RAWS, granularity)
    mismatches = [r["question_id"] for r, got in zip(RAWS, ours) if got != upstream_flat_bm25(r, granularity)]
    assert mismatches == []


@pytest.mark.parametrize("granularity", ["session", "turn"])
def test_oracle_puts_targets_first_in_upstream_corpus_order(granularity):
    ours = _ours(Oracle(), RAWS, granularity)
    assert [got for got in ours] == [upstream_oracle(r, granularity) for r in RAWS]
