"""Stage adapt and `mnemetric adapt` are one path (longmemeval.adapt.adapt_file): on the same file and
adapter option they write the same bytes, for both adapters."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT

SAMPLE = ROOT / "data" / "sample" / "longmemeval_sample.json"


def _run(args: list, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          env=os.environ.copy(), timeout=300)


@pytest.mark.parametrize("adapter", ["session-v3", "legacy-v2"])
def test_stage_and_cli_adapt_write_the_same_bytes(tmp_path: Path, adapter: str):
    ws = tmp_path / "ws"
    (ws / "data" / "raw").mkdir(parents=True)
    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    params["adapter"] = yaml.safe_load((ROOT / "conf" / "adapter" / f"{adapter}.yaml").read_text(encoding="utf-8"))
    (ws / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    shutil.copy(SAMPLE, ws / "data" / "raw" / params["variant"]["file"])
    stage = _run(["-m", "mnemetric.stages.adapt"], ws)
    assert stage.returncode == 0, stage.stderr
    out = tmp_path / "cli.jsonl"
    res = _run(["-m", "mnemetric.cli", "adapt", SAMPLE, "--adapter", adapter, "--out", out], tmp_path)
    assert res.returncode == 0, res.stderr
    staged = (ws / params["paths"]["adapted"]).read_bytes()
    assert staged == out.read_bytes()
    assert staged.count(b"\n") == 43 and f'"schema": "{params["adapter"]["schema"]}"'.encode() in staged


def test_the_reproduced_adapted_sample_is_what_the_command_writes(tmp_path: Path, sample_run_outputs: Path):
    out = tmp_path / "a.jsonl"
    res = _run(["-m", "mnemetric.cli", "adapt", SAMPLE, "--adapter", "session-v3", "--out", out], tmp_path)
    assert res.returncode == 0, res.stderr
    assert out.read_bytes() == (sample_run_outputs / "data" / "adapted" / "sample.jsonl").read_bytes()
