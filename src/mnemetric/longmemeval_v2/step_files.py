"""Where the V2 steps keep their files (``paths.v2_steps``, default data/v2-runs/: DVC outputs, cached, not in
git) and the small facts file each step writes beside its rows, typed: reader beside writer.

* ``memory.jsonl`` + ``memory.json`` + ``memory-usage.json`` (stage v2_memory): rows (:class:`~.step_rows.MemoryRow`)
  and :class:`MemoryFacts` — the run settings the step decided, the data check against the custody record
  (:class:`~.data_custody.DataCheck`), the token counter and the memory option — and the usage sidecar of the
  memory's model calls through the run's executor (:func:`mnemetric.llm.usage.write_usage`: the cost of the work,
  the same cold or warm; zeros for a memory that calls none); ``memory-cost.json``: what a UsesModelProxy memory
  (upstream's rag, agentrunbook_r) asked through the model proxy per phase (:mod:`mnemetric.llm.memory_cost`'s
  tracked record; ``uses_model_proxy: false`` and zeros for any other memory).
* ``read.jsonl`` + ``read.json`` + ``read-usage.json`` (stage v2_read): rows, the reader's facts, the usage
  sidecar.
* ``check.jsonl`` + ``check.json`` + ``check-usage.json`` (stage v2_check): the same for the checker.

The measured query latencies go to ``<paths.v2_runs>/latency.json`` (untracked; :class:`~.steps.Latencies`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mnemetric.errors import InputError
from mnemetric.io import write_json_atomic
from mnemetric.longmemeval_v2.data_custody import DataCheck

FACTS_SCHEMA = "mnemetric.longmemeval-v2.step-facts/1"


@dataclass(frozen=True)
class StepFiles:
    folder: Path

    @classmethod
    def at(cls, folder: str | Path) -> StepFiles:
        return cls(Path(folder))

    def rows(self, step: str) -> Path:
        return self.folder / f"{step}.jsonl"

    def facts(self, step: str) -> Path:
        return self.folder / f"{step}.json"

    def usage(self, step: str) -> Path:
        return self.folder / f"{step}-usage.json"

    def memory_cost(self) -> Path:
        """A UsesModelProxy memory's requests per system and phase (stage v2_memory)."""
        return self.folder / "memory-cost.json"


def latency_file(runs_dir: str | Path) -> Path:
    return Path(runs_dir) / "latency.json"


@dataclass(frozen=True)
class MemoryFacts:
    settings: Mapping[str, Any]
    """haystack (file name), tier, domains, memory, token_counter, memory_context_max_tokens; ``subset``: the
    not-official reason when only a subset of the questions was asked (absent: every question)."""
    images: bool
    data: DataCheck
    token_counter: Mapping[str, Any]
    memory: Mapping[str, Any]
    """:func:`mnemetric.longmemeval_v2.manifest.memory_facts`."""

    def to_record(self) -> dict[str, Any]:
        return {"schema": FACTS_SCHEMA, "step": "memory", "settings": dict(self.settings), "images": self.images,
                "data": self.data.to_record(), "token_counter": dict(self.token_counter), "memory": dict(self.memory)}

    @classmethod
    def from_record(cls, raw: Any, *, file: str) -> MemoryFacts:
        f = _checked(raw, file, "memory", ("settings", "images", "data", "token_counter", "memory"))
        return cls(f["settings"], bool(f["images"]), DataCheck.from_record(f["data"], file=file), f["token_counter"],
                   f["memory"])


@dataclass(frozen=True)
class ComponentFacts:
    """read.json (``reader``) or check.json (``checker``): the component's :mod:`.facts` block."""

    step: str
    component: Mapping[str, Any]

    def to_record(self) -> dict[str, Any]:
        return {"schema": FACTS_SCHEMA, "step": self.step, _COMPONENT[self.step]: dict(self.component)}

    @classmethod
    def from_record(cls, raw: Any, *, file: str, step: str) -> ComponentFacts:
        f = _checked(raw, file, step, (_COMPONENT[step],))
        return cls(step, f[_COMPONENT[step]])


_COMPONENT = {"read": "reader", "check": "checker"}


def _checked(raw: Any, file: str, step: str, keys: tuple[str, ...]) -> Mapping[str, Any]:
    fix = f"rerun stage v2_{step}"
    if not isinstance(raw, dict) or raw.get("schema") != FACTS_SCHEMA or raw.get("step") != step:
        raise InputError(file, "<file>", "schema", f"not the {step} step's facts ({FACTS_SCHEMA})", fix=fix)
    for key in keys:
        if key not in raw:
            raise InputError(file, "<file>", key, "missing", fix=fix)
    return raw


def write_facts(path: str | Path, facts: MemoryFacts | ComponentFacts) -> None:
    write_json_atomic(path, facts.to_record())


def read_memory_facts(path: str | Path) -> MemoryFacts:
    from mnemetric.records import read_json_file

    return MemoryFacts.from_record(read_json_file(path, missing_fix="run stage v2_memory first"), file=str(path))


def read_component_facts(path: str | Path, step: str) -> ComponentFacts:
    from mnemetric.records import read_json_file

    raw = read_json_file(path, missing_fix=f"run stage v2_{step} first")
    return ComponentFacts.from_record(raw, file=str(path), step=step)
