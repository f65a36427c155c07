"""Mnemetric's own LongMemEval-V2 baseline memories (named apart from upstream's backends).

* ``none``: no memory; every query returns no items (the reader sees upstream's empty-context marker).
* ``full-context``: every inserted trajectory as one text item (:func:`render_trajectory`), NEWEST FIRST
  (reverse insertion order), optionally each state's screenshot after its trajectory's text. The harness's
  budget cut keeps the longest whole-item prefix, so the oldest trajectories are dropped first.
* ``bm25`` / ``dense`` (:func:`bm25_states`, :func:`dense_states`): every state of every inserted trajectory is one document (:func:`render_state`);
  the query text is ranked against them by the generic text rankers of :mod:`mnemetric.ranking` —
  ``BM25Ranker`` (bm25s, lowercased word tokens, English stopwords) and ``DenseRanker`` (cached
  embeddings, cosine) — the same kernels LongMemEval's ``bm25`` / ``dense`` memories use, so the
  rankings are theirs. States are ranked in insertion order (trajectory, then step), which decides
  ties. The top ``top_k`` states are returned best first as text items. ``dense`` declares the CallsModels
  capability (:mod:`mnemetric.execute.access`): the harness hands it the run's executor, which its ranker's
  embedding backend sends the ``openai`` backend's calls through (the run's one budget and usage ledger), and
  builds and queries it in the run's process (never on a worker pool), as LongMemEval's ``dense`` is.

Each is a conf option under conf/v2/memory/ built by ``_target_`` (no dispatch by name); a fresh memory is
built from its option whenever the shared-haystack rule asks for one (:mod:`.memory`).

Rendering is ours (not upstream's): a state is ``"[<goal>] step <n> <url>"`` then the thought, the action
and the page text on their own lines when present. Image items are absolute paths under the data root.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mnemetric.longmemeval_v2.trajectories import State, Trajectory



def render_state(trajectory: Trajectory, state: State) -> str:
    lines = [f"[{trajectory.goal}] step {state.step} {state.url}"]
    if state.thought:
        lines.append(f"thought: {state.thought}")
    if state.action:
        lines.append(f"action: {state.action}")
    lines.append(state.accessibility_tree)
    return "\n".join(lines)


def render_trajectory(trajectory: Trajectory) -> str:
    head = f"Trajectory: {trajectory.goal}\nstart: {trajectory.start_url}"
    if trajectory.outcome:
        head += f"\noutcome: {trajectory.outcome}"
    return "\n\n".join([head, *(render_state(trajectory, s) for s in trajectory.states)])


@dataclass
class NoMemory:
    name: str = "none"

    def insert(self, trajectory: Trajectory) -> None:
        return None

    def query(self, text: str, image: str | None = None) -> list[dict[str, str]]:
        return []


@dataclass
class FullContext:
    root: str | Path
    """The data root (screenshot paths are relative to it); conf: ``${v2.data_root}``."""
    images: bool = False
    name: str = "full-context"
    _trajectories: list[Trajectory] = field(default_factory=list, init=False, repr=False)

    def insert(self, trajectory: Trajectory) -> None:
        self._trajectories.append(trajectory)

    def query(self, text: str, image: str | None = None) -> list[dict[str, str]]:
        out: list[dict[str, str]] = []
        for t in reversed(self._trajectories):
            out.append({"type": "text", "value": render_trajectory(t)})
            if self.images:
                out.extend({"type": "image", "value": str(Path(self.root) / s.screenshot)} for s in t.states)
        return out


@dataclass
class StateRetrieval:
    """States ranked by a generic text ranker (``ranker``: :class:`mnemetric.ranking.BM25Ranker` or
    :class:`mnemetric.ranking.DenseRanker`, anything with ``rank(texts, query) -> [(index, score)]``)."""

    ranker: Any
    name: str
    top_k: int = 10
    _texts: list[str] = field(default_factory=list, init=False, repr=False)

    def insert(self, trajectory: Trajectory) -> None:
        self._texts.extend(render_state(trajectory, s) for s in trajectory.states)

    def query(self, text: str, image: str | None = None) -> list[dict[str, str]]:
        if not self._texts:
            return []
        ranked = self.ranker.rank(self._texts, text)[: self.top_k]
        return [{"type": "text", "value": self._texts[i]} for i, _ in ranked]


@dataclass
class ModelStateRetrieval(StateRetrieval):
    """:class:`StateRetrieval` whose ranker calls a model (``ranker.use_executor``): declares CallsModels, and
    hands the run's executor to the ranker."""

    def use_executor(self, executor: Any) -> None:
        self.ranker.use_executor(executor)


def bm25_states(top_k: int = 10, name: str = "bm25") -> StateRetrieval:
    """conf/v2/memory/bm25.yaml: states ranked by the bm25 text ranker (module docstring)."""
    from mnemetric.ranking import BM25Ranker

    return StateRetrieval(BM25Ranker(key="v2.memory"), name, top_k=top_k)


def dense_states(top_k: int = 10, backend: str = "minilm", model: str | None = None, base_url: str | None = None,
                 name: str = "dense") -> StateRetrieval:
    """conf/v2/memory/dense.yaml: states ranked by the dense text ranker (module docstring)."""
    from mnemetric.ranking import DenseRanker

    return ModelStateRetrieval(DenseRanker(backend=backend, model=model, base_url=base_url, key="v2.memory"), name,
                               top_k=top_k)
