"""Stages given bad params or bad input stop with one clear message (no traceback), exit non-zero."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from mnemetric.config import compose_to

from tests.conftest import ROOT


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
    assert_clean_error(stage(workspace, "suite"), "suite.per_typ: unknown key")


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


# Typed params (issue "Trustworthy V1", item 6). Measured before: `-S retrieval.context_k=abc` gave a raw
# TypeError traceback; context_k=-1 was accepted silently and the reader got 11-15 items instead of at most
# 10; llm.max_concurrency=0 gave a ValueError traceback; a sha256 of all zeros in YAML became the integer 0.
@pytest.mark.parametrize(("stage_name", "changes", "needles"), [
    ("retrieve", {"retrieval__context_k": "abc"}, ["retrieval.context_k: expected an integer, got str 'abc'"]),
    ("retrieve", {"retrieval__context_k": -1}, ["retrieval.context_k: must be >= 0, got -1"]),
    ("retrieve", {"retrieval__granularity": "sentence"}, ["retrieval.granularity: 'sentence' is not one of"]),
    ("answer", {"llm__max_concurrency": 0}, ["llm.max_concurrency: must be >= 1, got 0"]),
    ("judge", {"llm__budget__max_usd": "lots"}, ["llm.budget.max_usd: expected a number"]),
    ("prepare", {"variant__sha256": 0}, ["variant.sha256: expected a string, got int 0 (quote it in YAML)"]),
    ("prepare", {"variant__sha256": "abc"}, ["variant.sha256: 'abc' is not valid", "64-character"]),
    ("retrieval_metrics", {"scoring__bootstrap__resamples": 1.5}, ["scoring.bootstrap.resamples: expected an integer"]),
])
def test_mistyped_or_out_of_range_params_name_the_key(workspace, stage_name, changes, needles):
    edit(workspace, **changes)
    assert_clean_error(stage(workspace, stage_name), *needles)


def test_an_all_zero_sha256_written_unquoted_is_refused(workspace):
    text = (workspace / "params.yaml").read_text()
    sha = yaml.safe_load(text)["variant"]["sha256"]
    (workspace / "params.yaml").write_text(text.replace(sha, "0" * 64))
    assert yaml.safe_load((workspace / "params.yaml").read_text())["variant"]["sha256"] == 0  # what YAML makes of it
    assert_clean_error(stage(workspace, "prepare"), "variant.sha256: expected a string, got int 0")


def test_a_stage_whose_params_change_while_it_runs_writes_nothing(tmp_path):
    """Measured before: two `dvc exp run` in one workspace — the second rewrote params.yaml while the
    first ran, and the first's reader requests went out at temperature 0 while dvc.lock recorded 0.7.
    Now a stage checks, before it writes each output, that params.yaml still holds what it read."""
    import shutil

    from tests.support.openai_server import FakeOpenAIServer

    ws = tmp_path
    shutil.copytree(ROOT / "data" / "sample", ws / "data" / "sample")
    compose_to(ws / "params.yaml", ROOT / "conf", ["reader=openai", "suite=development"])
    for name in ("prepare", "adapt", "suite", "retrieve"):
        assert stage(ws, name).returncode == 0, name
    params = ws / "params.yaml"

    import threading

    lock, original = threading.Lock(), params.read_text()

    def reply(messages):  # another experiment rewrites params.yaml while this stage waits for answers
        with lock:
            tmp = ws / "params.yaml.new"
            tmp.write_text(original.replace("  temperature: 0\n", "  temperature: 0.7\n", 1))
            os.replace(tmp, params)
        return "Miso."

    with FakeOpenAIServer(reply=reply) as server:
        env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test"}
        proc = subprocess.run([sys.executable, "-m", "mnemetric.stages.answer"], cwd=ws, capture_output=True,
                              text=True, env=env, timeout=300)
        assert server.count > 0
    assert "temperature: 0.7" in params.read_text()
    assert_clean_error(proc, "reader: params.yaml changed while this stage ran", "nothing was written",
                       "dvc exp run --queue")
    assert not (ws / "data" / "runs" / "hypotheses.jsonl").exists()
