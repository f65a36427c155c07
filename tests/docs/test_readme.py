"""The README's example memory system runs, follows the protocol, and is scored by the harness."""

from __future__ import annotations

import re

from mnemetric.longmemeval.adapted import SessionAdapter
from mnemetric.longmemeval.instance import load_instances
from mnemetric.longmemeval.memory import MemorySystem
from mnemetric.longmemeval.harness import retrieve_all

from tests.conftest import ROOT


def readme_example() -> str:
    text = (ROOT / "README.md").read_text()
    match = re.search(r"<!-- example: memory-system -->\n```python\n(.*?)```", text, re.S)
    assert match, "README lost its example memory system"
    return match.group(1)


def test_readme_example_memory_system_is_short_and_works():
    code = readme_example()
    assert len([line for line in code.splitlines() if line.strip()]) <= 26
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102 - our own documentation
    memory = namespace["KeywordMemory"]()
    assert isinstance(memory, MemorySystem)
    adapter = SessionAdapter("session-v3", "mnemetric.longmemeval-session/v3")
    records = [adapter.adapt(i, n) for n, i in enumerate(load_instances(ROOT / "data/sample/longmemeval_sample.json"))]
    for granularity in ("session", "turn"):
        lines = [line for line, _ in retrieve_all(memory, records, granularity, 5, 2000)]
        assert len(lines) == len(records)
        hits = [line["retrieval_results"]["metrics"]["session"]["recall_any@10"] for line in lines]
        assert sum(hits) > len(hits) / 2  # keyword overlap finds most evidence on the sample
