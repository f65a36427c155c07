"""Stages given bad params or bad input stop with one clear message (no traceback), exit non-zero."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from mnemetric.config import compose_to

from .conftest import ROOT


@pytest.fixture()
def workspace(tmp_path):
    params = tmp_path / "params.yaml"
    compose_to(params, ROOT / "conf")
    return tmp_path


def edit(ws, **changes):
    params = yaml.safe_load((ws / "params.yaml").read_text())
    for dotted, value in changes.items():
        node = params
        *head, last = dotted.split("__")
        for part in head:
            node = node[part]
        node[last] = value
    (ws / "params.yaml").write_text(yaml.safe_dump(params))


def stage(ws, name):
    return subprocess.run([sys.executable, "-m", f"mnemetric.stages.{name}"], cwd=ws, capture_output=True,
                          text=True, env=os.environ.copy(), timeout=120)


def assert_clean_error(proc, *needles):
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    for n in needles:
        assert n in proc.stderr, proc.stderr


def test_unknown_memory_target(workspace):
    edit(workspace, memory___target_="nowhere.Memory")
    (workspace / "data" / "suites").mkdir(parents=True)
    assert_clean_error(stage(workspace, "retrieve"), "params.yaml memory", "nowhere.Memory")


def test_unknown_suite_key(workspace):
    edit(workspace, suite__per_typ=3)
    assert_clean_error(stage(workspace, "suite"), "unknown key(s) ['per_typ']")


def test_bad_ks(workspace):
    edit(workspace, scoring__ks=[0, 5])
    assert_clean_error(stage(workspace, "retrieval_metrics"), "scoring.ks")


def test_missing_input_file(workspace):
    assert_clean_error(stage(workspace, "suite"), "data/adapted/sample.jsonl", "does not exist")


def test_bad_hypothesis_line_stops_the_judge_before_any_request(workspace):
    runs = workspace / "data" / "runs"
    runs.mkdir(parents=True)
    (runs / "hypotheses.jsonl").write_text(json.dumps({"question_id": "a"}) + "\n")
    assert_clean_error(stage(workspace, "judge"), "hypotheses.jsonl", "line 1", "hypothesis")
