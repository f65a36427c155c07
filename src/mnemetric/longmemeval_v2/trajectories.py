"""trajectories.jsonl rows of LongMemEval-V2: typed trajectories and states, the checks, a stream.

Rules from upstream ``memory_modules/trajectory_store.py`` prepare_trajectory_insert (what every
indexing backend runs on each inserted trajectory) and ``data/public_data.py`` /
``evaluation/harness.py`` load_trajectories, xiaowu0162/LongMemEval-V2 at
be15ea6e995462f3391c1a610892df3f67dfa7bd:

- id: a non-empty string, unique in the file. domain: compared with the question's domain.
- The public layout is chosen when ``states`` is a non-empty list: goal must be a string, start_url
  a non-empty string, outcome a string or null. Each state: url a non-empty string; action a string
  or null; thought = ``state.get("thought", state.get("thoughts"))`` (preference by key presence:
  a null ``thought`` hides ``thoughts``), a string or null; text =
  ``state.get("accessibility_tree", state.get("text"))``, a string; screenshot a non-empty string;
  step = ``step`` if it is an int (not a bool), else ``state_index`` if an int, else the position —
  and it must end up >= 0 (the trajectory fingerprint refuses a negative step).
- Otherwise the legacy layout: ``content`` a non-empty list, ``metadata`` an object; each state has
  url, action, thoughts (that key only) and an ``observation`` object with text (a string) and
  screenshot (a non-empty string); start_url = the first state's url; goal =
  ``metadata.original_goal``, a string (stripped) or a list of strings (non-empty ones stripped and
  joined with one space); step = ``step`` if an int, else the position. Upstream accepts this
  layout, so we read it too; to_record() always writes the public layout.

Stricter than upstream: domain must be web or enterprise; a present step / state_index that is not
a non-negative int (null counts as absent) is a problem, not a silent fallback; the legacy goal must
give non-empty text (upstream substitutes a placeholder); screenshot paths must stay inside the
data root. Screenshot existence is checked by validate.py (I/O), not here.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mnemetric.errors import InputError, Problem
from mnemetric.longmemeval_v2.jsonfiles import data_path_problem, iter_rows
from mnemetric.longmemeval_v2.questions import DOMAINS

_STATE_OUT = frozenset({"url", "action", "thought", "accessibility_tree", "screenshot", "step"})
"""The keys State.to_record() writes (an extra key never shadows one of them)."""
_LEGACY_STATE_KEYS = _STATE_OUT | {"thoughts", "observation"}
_TOP_KEYS = frozenset({"id", "domain", "goal", "start_url", "outcome", "states"})
_LEGACY_TOP_KEYS = _TOP_KEYS | {"content"}


@dataclass(frozen=True)
class State:
    """One state (one step) of a trajectory."""

    url: str
    action: str | None
    thought: str | None
    accessibility_tree: str
    """The page text (upstream key accessibility_tree, or text)."""
    screenshot: str
    """Path relative to the data root (e.g. screenshots/<trajectory>/<step>.png)."""
    step: int
    """The step number by upstream's rule (step, else state_index, else position)."""
    extra: tuple[tuple[str, Any], ...] = field(default=(), hash=False)
    """Other keys of the state, kept for to_record()."""

    def to_record(self) -> dict[str, Any]:
        return {"url": self.url, "action": self.action, "thought": self.thought,
                "accessibility_tree": self.accessibility_tree, "screenshot": self.screenshot,
                "step": self.step} | dict(self.extra)


@dataclass(frozen=True)
class Trajectory:
    """One trajectories.jsonl row (public layout, or the legacy one converted)."""

    id: str
    domain: str
    goal: str
    start_url: str
    outcome: str | None
    states: tuple[State, ...]
    layout: str = "states"
    """"states" (public) or "legacy" (content + metadata.original_goal) — how the row was written."""
    extra: tuple[tuple[str, Any], ...] = field(default=(), hash=False)

    @classmethod
    def from_record(cls, raw: Any, *, file: str, line: int) -> "Trajectory":
        """Validate and type one row; the first problem raises InputError (file, id or line, field)."""
        problems = check_trajectory(raw, file=file, line=line)
        if problems:
            first = problems[0]
            more = f" (and {len(problems) - 1} more problem(s) in this row)" if len(problems) > 1 else ""
            raise InputError(first.file, first.record, first.field, first.message + more)
        return _legacy(raw) if is_legacy(raw) else _public(raw)

    def to_record(self) -> dict[str, Any]:
        """The public layout (a legacy row comes back in the public layout, same meaning upstream)."""
        return {"id": self.id, "domain": self.domain, "goal": self.goal, "start_url": self.start_url,
                "outcome": self.outcome, "states": [s.to_record() for s in self.states]} | dict(self.extra)


def is_legacy(raw: dict) -> bool:
    """Upstream picks the public layout iff ``states`` is a non-empty list."""
    states = raw.get("states")
    return not (isinstance(states, list) and states) and "content" in raw


def record_name(raw: Any, line: int) -> str:
    tid = raw.get("id") if isinstance(raw, dict) else None
    return tid if isinstance(tid, str) and tid else f"line {line}"


def _uint_problem(raw: dict, key: str) -> str | None:
    value = raw.get(key)
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
        return None
    return f"must be an integer >= 0 when present, got {value!r}"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def public_step(state: dict, position: int) -> int:
    """Upstream's step rule for the public layout."""
    for key in ("step", "state_index"):
        if _is_int(state.get(key)):
            return state[key]
    return position


def legacy_goal(metadata: dict) -> str:
    goal = metadata.get("original_goal")
    if isinstance(goal, str):
        return goal.strip()
    if isinstance(goal, list):
        return " ".join(part.strip() for part in goal if isinstance(part, str) and part.strip())
    return ""


def check_trajectory(raw: Any, *, file: str, line: int) -> list[Problem]:
    """Every problem of one raw row (empty list = valid)."""
    record = record_name(raw, line)
    p = lambda fld, msg: Problem(file, record, fld, msg)  # noqa: E731
    if not isinstance(raw, dict):
        return [p("<row>", f"must be a JSON object, got {type(raw).__name__}")]
    problems = []
    if not (isinstance(raw.get("id"), str) and raw["id"]):
        problems.append(p("id", "missing" if "id" not in raw else f"must be a non-empty string, got {raw['id']!r}"))
    if raw.get("domain") not in DOMAINS:
        problems.append(p("domain", f"must be one of {', '.join(DOMAINS)}, got {raw.get('domain')!r}"))
    if raw.get("outcome") is not None and not isinstance(raw["outcome"], str):
        problems.append(p("outcome", f"must be a string or null, got {type(raw['outcome']).__name__}"))
    if is_legacy(raw):
        return problems + _check_legacy(raw, p)
    if not isinstance(raw.get("goal"), str):
        problems.append(p("goal", "missing" if "goal" not in raw else f"must be a string, got {type(raw['goal']).__name__} "
                          "(a list of strings is accepted only in the legacy content + metadata.original_goal layout)"))
    if not (isinstance(raw.get("start_url"), str) and raw["start_url"].strip()):
        problems.append(p("start_url", "missing" if "start_url" not in raw else "must be a non-empty string"))
    states = raw.get("states")
    if not (isinstance(states, list) and states):
        return problems + [p("states", "missing" if "states" not in raw else "must be a non-empty list of state objects")]
    for i, state in enumerate(states):
        problems += _check_state(state, i, p)
    return problems


def _text_problem(value: Any, *, nullable: bool, non_empty: bool = False) -> str | None:
    if value is None and nullable:
        return None
    if not isinstance(value, str):
        return f"must be a string{' or null' if nullable else ''}, got {type(value).__name__}"
    if non_empty and not value.strip():
        return "must not be empty"
    return None


def _check_state(state: Any, i: int, p) -> list[Problem]:
    where = f"states[{i}]"
    if not isinstance(state, dict):
        return [p(where, f"must be an object, got {type(state).__name__}")]
    text_key = "text" if "text" in state and "accessibility_tree" not in state else "accessibility_tree"
    thought_key = "thoughts" if "thoughts" in state and "thought" not in state else "thought"
    required = {"url", text_key, "screenshot"}
    checks = [("url", _text_problem(state.get("url"), nullable=False, non_empty=True)),
              ("action", _text_problem(state.get("action"), nullable=True)),
              (thought_key, _text_problem(state.get(thought_key), nullable=True)),
              (text_key, _text_problem(state.get(text_key), nullable=False)),
              ("screenshot", _screenshot_problem(state.get("screenshot"))),
              ("step", _uint_problem(state, "step")),
              ("state_index", _uint_problem(state, "state_index"))]
    return [p(f"{where}.{key}", "missing" if key in required and key not in state else msg)
            for key, msg in checks if msg]


def _screenshot_problem(value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return f"must be a non-empty path, got {value!r}"
    return data_path_problem(value)


def _check_legacy(raw: dict, p) -> list[Problem]:
    problems = []
    if not isinstance(raw.get("metadata"), dict):
        problems.append(p("metadata", "must be an object (legacy layout: content + metadata.original_goal)"))
    elif not legacy_goal(raw["metadata"]):
        problems.append(p("metadata.original_goal", "must be a non-empty string or a list of strings"))
    content = raw.get("content")
    if not (isinstance(content, list) and content):
        return problems + [p("content", "must be a non-empty list of state objects")]
    for i, state in enumerate(content):
        where = f"content[{i}]"
        if not isinstance(state, dict):
            problems.append(p(where, f"must be an object, got {type(state).__name__}"))
            continue
        obs = state.get("observation")
        checks = [("url", _text_problem(state.get("url"), nullable=False, non_empty=True)),
                  ("action", _text_problem(state.get("action"), nullable=True)),
                  ("thoughts", _text_problem(state.get("thoughts"), nullable=True)),
                  ("step", _uint_problem(state, "step"))]
        if isinstance(obs, dict):
            checks += [("observation.text", _text_problem(obs.get("text"), nullable=False)),
                       ("observation.screenshot", _screenshot_problem(obs.get("screenshot")))]
        else:
            checks.append(("observation", f"must be an object, got {type(obs).__name__}"))
        problems += [p(f"{where}.{key}", msg) for key, msg in checks if msg]
    return problems


def _extra(raw: dict, known: frozenset[str]) -> tuple[tuple[str, Any], ...]:
    return tuple((k, v) for k, v in raw.items() if k not in known)


def _public(raw: dict) -> Trajectory:
    states = []
    for i, s in enumerate(raw["states"]):
        thought = s.get("thought", s.get("thoughts"))
        text = s.get("accessibility_tree", s.get("text"))
        used = _STATE_OUT | {"thought" if "thought" in s else "thoughts",
                             "accessibility_tree" if "accessibility_tree" in s else "text"}
        states.append(State(s["url"], s.get("action"), thought, text, s["screenshot"], public_step(s, i),
                            extra=_extra(s, used)))
    return Trajectory(raw["id"], raw["domain"], raw["goal"], raw["start_url"], raw.get("outcome"), tuple(states),
                      "states", _extra(raw, _TOP_KEYS))


def _legacy(raw: dict) -> Trajectory:
    states = []
    for i, s in enumerate(raw["content"]):
        step = s["step"] if _is_int(s.get("step")) else i
        states.append(State(s["url"], s.get("action"), s.get("thoughts"), s["observation"]["text"],
                            s["observation"]["screenshot"], step, extra=_extra(s, _LEGACY_STATE_KEYS)))
    return Trajectory(raw["id"], raw["domain"], legacy_goal(raw["metadata"]), states[0].url, raw.get("outcome"),
                      tuple(states), "legacy", _extra(raw, _LEGACY_TOP_KEYS))


def iter_trajectories(path: str | Path) -> Iterator[Trajectory]:
    """Stream typed trajectories line by line (never the whole file); the first bad row or duplicate
    id raises InputError."""
    file, seen = str(path), set()
    for row in iter_rows(path):
        trajectory = Trajectory.from_record(row.value, file=file, line=row.line)
        if trajectory.id in seen:
            raise InputError(file, trajectory.id, "id", f"duplicate trajectory id (line {row.line})")
        seen.add(trajectory.id)
        yield trajectory
