"""Mnemetric's own LongMemEval-V2 baseline memories (named apart from upstream's backends).

* ``none``: no memory; every query returns no items (the reader sees upstream's empty-context marker).
* ``full-context``: every inserted trajectory as one text item (:func:`render_trajectory`), NEWEST FIRST
  (reverse insertion order), optionally each state's screenshot after its trajectory's text. The harness's
  budget cut keeps the longest whole-item prefix, so the oldest trajectories are dropped first.
* ``bm25`` / ``dense``: every state of every inserted trajectory is one document (:func:`render_state`);
  the query text is ranked against them by the V1 text rankers — ``mnemetric.longmemeval.memory.bm25.BM25``
  (bm25s, lowercased word tokens, English stopwords) and ``mnemetric.longmemeval.memory.dense.Dense`` —
  called through their own ``ingest`` / ``retrieve`` (one trajectory = one session, one state = one
  turn), not copied. The top ``top_k`` states are returned best first as text items.

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
STATE_ROLE = "state"


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
    """States ranked by a V1 text ranker (``ranker``: a ``TextMemory`` with ingest / retrieve)."""

    ranker: Any
    name: str
    top_k: int = 10
    _states: list[str] = field(default_factory=list, init=False, repr=False)
    _texts: dict[str, list[str]] = field(default_factory=dict, init=False, repr=False)

    def insert(self, trajectory: Trajectory) -> None:
        from mnemetric.longmemeval.adapted import MemorySession, Message

        sid = f"t{len(self._states):05d}"  # opaque: the ranker never sees a trajectory id
        texts = [render_state(trajectory, s) for s in trajectory.states]
        self._states.append(sid)
        self._texts[sid] = texts
        self.ranker.ingest(MemorySession(sid, None, "", tuple(Message(STATE_ROLE, t) for t in texts),
                                         position=len(self._states) - 1))

    def query(self, text: str, image: str | None = None) -> list[dict[str, str]]:
        from mnemetric.longmemeval.adapted import Query

        if not self._states:
            return []
        ranked = self.ranker.retrieve(Query("query", text, None, ""), "turn")[: self.top_k]
        return [{"type": "text", "value": self._texts[r.session_id][r.turn_index]} for r in ranked]


def make_memory(name: str, root: str | Path, options: dict[str, Any] | None = None):
    """A fresh baseline memory by name (:data:`BASELINES`); ``options`` are the baseline's settings."""
    opts = dict(options or {})
    if name == "none":
        return NoMemory()
    if name == "full-context":
        return FullContext(Path(root), images=bool(opts.get("images", False)))
    if name == "bm25":
        from mnemetric.longmemeval.memory.bm25 import BM25

        return StateRetrieval(BM25(roles=(STATE_ROLE,)), "bm25", top_k=int(opts.get("top_k", 10)))
    if name == "dense":
        from mnemetric.longmemeval.memory.dense import Dense

        ranker = Dense(roles=(STATE_ROLE,), backend=opts.get("backend", "minilm"), model=opts.get("model"),
                       base_url=opts.get("base_url"))
        return StateRetrieval(ranker, "dense", top_k=int(opts.get("top_k", 10)))
    raise ConfigError("memory", f"unknown LongMemEval-V2 baseline {name!r}", fix=f"one of: {', '.join(BASELINES)}")
