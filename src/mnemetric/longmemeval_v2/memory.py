"""The LongMemEval-V2 memory protocol for trajectories, its item validation and the shared-haystack rule.

Facts from github.com/xiaowu0162/LongMemEval-V2 at be15ea6e995462f3391c1a610892df3f67dfa7bd (code ours;
shared/docs/upstream-v2-protocol.md §3):

* A memory system has ``insert(trajectory)``, called once per trajectory of the question's haystack, in
  haystack order, with the whole trajectory, and ``query(text, image)`` returning a list of items
  ``{"type": "text" | "image", "value": str}``. An optional ``post_query_hook(query=, query_image=,
  memory_context=)`` returns metadata (upstream's default returns None); it is timed apart.
* Items are validated as evaluation/harness.py validate_memory_context_items (lines 304-329): the reply
  is a list; each item a dict; ``type`` in {text, image}; ``value`` a string that is non-empty after
  strip; an image value an existing path (``Path(value).exists()``, relative to the working directory as
  upstream). Extra keys are dropped: each validated item is exactly ``{"type", "value"}``. Upstream
  aborts the run on any violation; we raise :class:`~mnemetric.errors.PluginError` naming the memory
  system and the question.
* Shared haystack (harness.py all_haystacks_shared, main ~1139-1182): when every question of the run has
  the identical ordered haystack, ONE memory is built once (inserting that haystack) and queried for every
  question; otherwise a FRESH memory per question. No questions → not shared.
* Optional hooks our harness calls when a memory has them (upstream's own baselines, :mod:`.upstream_memory`):
  ``inserts_done()`` after the last insert of a build; ``before_query(question_id)`` before the timed query
  and ``after_query()`` after the post-query hook (upstream's set_query_context / clear_query_context).
* Model access: a memory that calls models declares the CallsModels capability (``use_executor(executor)``,
  :mod:`mnemetric.execute.access`, the convention LongMemEval's memory systems follow); each memory is handed the
  run's executor when it is built, before its first insert (:func:`build_memory`), so its calls spend under the
  run's one budget and are counted in its one usage ledger.
* What the memory sees: ours passes the question text and the question image path only — never the gold
  answer, the question type, the eval function or any id (upstream at be15ea6 also exposes the whole
  question row through set_query_context; we do not — only upstream's own baselines run through
  :mod:`.upstream_memory` get it, and their runs say so).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from mnemetric.errors import PluginError
from mnemetric.execute.access import give_executor
from mnemetric.longmemeval_v2.trajectories import Trajectory

ITEM_TYPES = frozenset({"text", "image"})
QUESTION_ONLY = "question"
"""settings.memory_query_context of a run whose memory saw the question text and image only (ours)."""
UPSTREAM_ROW = "upstream-question-row"
"""settings.memory_query_context of a run whose memory got upstream's query context: the whole question row,
gold answer included (:mod:`.upstream_memory`); such a run is never official."""


@runtime_checkable
class TrajectoryMemory(Protocol):
    """What a LongMemEval-V2 memory system implements (plus an optional ``post_query_hook``)."""

    name: str

    def insert(self, trajectory: Trajectory) -> None:
        """Store one trajectory; called in haystack order."""

    def query(self, text: str, image: str | None = None) -> list[dict[str, str]]:
        """Memory items for the question text (and its image path, if any), in the order the reader sees them."""


MemoryFactory = Callable[[], TrajectoryMemory]


def validate_items(items: Any, *, system: str, question_id: str) -> list[dict[str, str]]:
    """Upstream's item validation (module docstring); a violation is a PluginError naming system and question."""
    call = f"query (question {question_id})"
    if not isinstance(items, list):
        raise PluginError(system, call, f"must return a list of items, got {type(items).__name__}")
    out: list[dict[str, str]] = []
    for idx, item in enumerate(items):
        if not isinstance(item, dict):
            raise PluginError(system, call, f"item {idx} must be an object, got {type(item).__name__}")
        kind, value = item.get("type"), item.get("value")
        if kind not in ITEM_TYPES:
            raise PluginError(system, call, f"item {idx} has invalid type {kind!r}; expected 'text' or 'image'")
        if not (isinstance(value, str) and value.strip()):
            raise PluginError(system, call, f"item {idx} has an invalid value {value!r}: expected a non-blank string")
        if kind == "image" and not Path(value).exists():
            raise PluginError(system, call, f"item {idx}: image path does not exist: {value}")
        out.append({"type": kind, "value": value})
    return out


def build_memory(factory: MemoryFactory, haystack_ids: Sequence[str], trajectories: Mapping[str, Trajectory],
                 executor: Any = None) -> TrajectoryMemory:
    """A fresh memory from ``factory``, given ``executor`` (the run's, if it declares CallsModels), with every
    trajectory of ``haystack_ids`` inserted, in that order."""
    memory = factory()
    give_executor(memory, executor)
    for tid in haystack_ids:
        memory.insert(trajectories[tid])
    done = getattr(memory, "inserts_done", None)
    if done is not None:  # after the last insert (an upstream memory saves its state here)
        done()
    return memory


def is_shared(haystack_lists: Sequence[Sequence[str]]) -> bool:
    """True iff there is at least one question and every question's ordered haystack is identical."""
    return bool(haystack_lists) and all(list(h) == list(haystack_lists[0]) for h in haystack_lists[1:])


def memories(factory: MemoryFactory, haystack_lists: Sequence[Sequence[str]],
             trajectories: Mapping[str, Trajectory], executor: Any = None) -> Iterator[TrajectoryMemory]:
    """One memory per question, in question order, by the shared-haystack rule: the same object for every
    question when shared (built once, before the first question), else a fresh one built per question."""
    if is_shared(haystack_lists):
        shared = build_memory(factory, haystack_lists[0], trajectories, executor)
        for _ in haystack_lists:
            yield shared
        return
    for ids in haystack_lists:
        yield build_memory(factory, ids, trajectories, executor)
