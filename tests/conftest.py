from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
UPSTREAM_SAMPLE = ROOT.parent / "shared" / "data" / "upstream" / "longmemeval_oracle_2q_sample.json"

os.environ.setdefault("DVC_NO_ANALYTICS", "1")

pytest_plugins = ["tests.inventory_markers"]  # registers @pytest.mark.task(family, task)


@pytest.fixture()
def upstream_sample() -> Path:
    """The 2-question real LongMemEval sample from ../shared, when present (never copied here)."""
    if not UPSTREAM_SAMPLE.exists():
        pytest.skip(f"real upstream sample not present at {UPSTREAM_SAMPLE}")
    return UPSTREAM_SAMPLE


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Every test gets its own Mnemetric cache folder (never the user's)."""
    monkeypatch.setenv("MNEMETRIC_CACHE_DIR", str(tmp_path_factory.mktemp("mnemetric-cache")))
