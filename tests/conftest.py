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


SAMPLE_RUN_OUTPUTS = ("data/adapted/sample.jsonl", "data/suites/sample-full.json",
                      "data/suites/sample-full.questions.jsonl", "data/runs/contexts.jsonl",
                      "data/runs/hypotheses.jsonl", "data/runs/hypotheses.jsonl.eval-results-lexical")
"""Outputs of the pipeline on the bundled sample that DVC tracks by content (not in git): a fresh clone has
them only after `dvc repro` (what `make repro` runs)."""


@pytest.fixture(scope="session")
def sample_run_outputs() -> Path:
    """The repository with the sample run's DVC outputs present: when a fresh clone lacks any of them, the
    pipeline is reproduced once (offline, no key; the tracked files it rewrites come out byte-identical,
    tests/e2e/test_reproducible_e2e.py checks that)."""
    import subprocess
    import sys

    if any(not (ROOT / rel).exists() for rel in SAMPLE_RUN_OUTPUTS):
        bin_dir = str(Path(sys.executable).parent)
        env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "DVC_NO_ANALYTICS": "1"}
        env.pop("OPENAI_API_KEY", None)
        proc = subprocess.run([str(Path(bin_dir) / "dvc"), "repro"], cwd=ROOT, env=env, capture_output=True, text=True)
        assert proc.returncode == 0, f"dvc repro failed:\n{proc.stdout}\n{proc.stderr}"
    missing = [rel for rel in SAMPLE_RUN_OUTPUTS if not (ROOT / rel).exists()]
    assert not missing, missing
    return ROOT
