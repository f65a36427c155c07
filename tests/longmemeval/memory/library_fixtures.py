"""Small haystacks for the memory-library tests (mem0, graphiti): the bundled sample's questions with each
haystack cut to its evidence sessions plus the first few others, so a library run costs seconds."""

from __future__ import annotations

import json
from pathlib import Path

from mnemetric.longmemeval.adapted import AdaptedRecord, SessionAdapter
from mnemetric.longmemeval.instance import load_instances

from tests.conftest import ROOT

V3 = SessionAdapter("session-v3", "mnemetric.longmemeval-session/v3")
DIMS = 8
"""Embedding size the loopback server answers with."""


def small_records(tmp: Path, questions: int = 1, others: int = 3) -> list[AdaptedRecord]:
    raw = json.loads((ROOT / "data" / "sample" / "longmemeval_sample.json").read_text())[:questions]
    for inst in raw:
        keep = [i for i, sid in enumerate(inst["haystack_session_ids"]) if sid in inst["answer_session_ids"]]
        keep = sorted(set(keep) | set(range(others)))
        for key in ("haystack_session_ids", "haystack_dates", "haystack_sessions"):
            inst[key] = [inst[key][i] for i in keep]
    path = tmp / "small.json"
    path.write_text(json.dumps(raw))
    return [V3.adapt(inst, i) for i, inst in enumerate(load_instances(path))]
