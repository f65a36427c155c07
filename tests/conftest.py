from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
UPSTREAM_SAMPLE = ROOT.parent / "shared" / "data" / "upstream" / "longmemeval_oracle_2q_sample.json"

os.environ.setdefault("DVC_NO_ANALYTICS", "1")

pytest_plugins = ["tests.inventory_markers"]  # registers @pytest.mark.task(family, task)


def pytest_collection_modifyitems(items):
    """Tests that read the real upstream sample from ../shared carry the ``upstream_sample`` marker
    (``-m "not upstream_sample"`` leaves them out; without ../shared they skip, named, with the reason)."""
    for item in items:
        if "upstream_sample" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.upstream_sample)


@pytest.fixture()
def upstream_sample() -> Path:
    """The 2-question real LongMemEval sample from ../shared, when present (never copied here)."""
    if not UPSTREAM_SAMPLE.exists():
        pytest.skip(f"upstream_sample: the real 2-question LongMemEval sample is not present at {UPSTREAM_SAMPLE} "
                    "(it lives in ../shared, never in this repository)")
    return UPSTREAM_SAMPLE


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Every test gets its own Mnemetric cache folder (never the user's)."""
    monkeypatch.setenv("MNEMETRIC_CACHE_DIR", str(tmp_path_factory.mktemp("mnemetric-cache")))
