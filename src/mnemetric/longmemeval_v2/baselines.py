"""Mnemetric's own LongMemEval-V2 baseline memories (named apart from upstream's backends).

* ``none``: no memory; every query returns no items (the reader sees upstream's empty-context marker).
* ``full-context``: every inserted trajectory as one text item (:func:`render_trajectory`), NEWEST FIRST
  (reverse insertion order), optionally each state's screenshot after its trajectory's text. The harness's
  budget cut keeps the longest whole-item prefix, so the oldest trajectories are dropped first.
* ``bm25`` / ``dense``: every state of every inserted trajectory is one document (:func:`render_state`);
  the query text is ranked against them by the generic text rankers of :mod:`mnemetric.ranking` —
  ``BM25Ranker`` (bm25s, lowercased word tokens, English stopwords) and ``DenseRanker`` (cached
  embeddings, cosine) — the same kernels LongMemEval's ``bm25`` / ``dense`` memories use, so the
  rankings are theirs. States are ranked in insertion order (trajectory, then step), which decides
  ties. The top ``top_k`` states are returned best first as text items.

Rendering is ours (not upstream's): a state is ``"[<goal>] step <n> <url>"`` then the thought, the action
and the page text on their own lines when present. Image items are absolute paths under the data root.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mnemetric.errors import ConfigError
from mnemetric.longmemeval_v2.trajectories import State, Trajectory

BASELINES = ("none", "full-context", "bm25", "dense")


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
    root: Path
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


def make_memory(name: str, root: str | Path, options: dict[str, Any] | None = None):
    """A fresh baseline memory by name (:data:`BASELINES`); ``options`` are the baseline's settings."""
    opts = dict(options or {})
    if name == "none":
        return NoMemory()
    if name == "full-context":
        return FullContext(Path(root), images=bool(opts.get("images", False)))
    if name == "bm25":
        from mnemetric.ranking import BM25Ranker

        return StateRetrieval(BM25Ranker(key="v2.memory"), "bm25", top_k=int(opts.get("top_k", 10)))
    if name == "dense":
        from mnemetric.ranking import DenseRanker

        ranker = DenseRanker(backend=opts.get("backend", "minilm"), model=opts.get("model"),
                             base_url=opts.get("base_url"), key="v2.memory")
        return StateRetrieval(ranker, "dense", top_k=int(opts.get("top_k", 10)))
    raise ConfigError("memory", f"unknown LongMemEval-V2 baseline {name!r}", fix=f"one of: {', '.join(BASELINES)}")
