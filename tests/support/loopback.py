"""One loopback OpenAI-compatible server for one test, in a clean environment (its own cache folder, a test
API key, no OPENAI_BASE_URL inherited): ``yield from serve_isolated(tmp_path, monkeypatch, "sk-test-JUDGE")``
in a fixture."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.openai_server import FakeOpenAIServer


def serve_isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, api_key: str = "sk-test",
                   **server: Any) -> Iterator[FakeOpenAIServer]:
    monkeypatch.setenv("MNEMETRIC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", api_key)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with FakeOpenAIServer(**server) as s:
        yield s
