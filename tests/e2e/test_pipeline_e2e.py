"""The real pipeline, end to end, with the real `dvc` CLI in a temporary git repository."""

from __future__ import annotations

import hashlib
import json
import socket

import pytest
import yaml

from tests.support.file_server import FileServer

pytestmark = pytest.mark.e2e

ORACLE_PATH = "/datasets/xiaowu0162/longmemeval-cleaned/resolve/98d7416c24c778c2fee6e6f3006e7a073259d48f/longmemeval_oracle.json"


def test_repro_runs_every_stage_on_the_sample(reproduced_repo, reproduced_sample_stdout):
    """The session's fresh clone (tests/conftest.py reproduced_sample: copy_project, one commit, `dvc repro`),
    read from this test's own copy of it: the first repro ran the stages, the second runs none."""
    dvc_repo = reproduced_repo
    for stage in ("prepare", "adapt", "suite", "data_metrics"):
        assert f"Running stage '{stage}'" in reproduced_sample_stdout
    m = dvc_repo.json("metrics/data.json")
    pinned = yaml.safe_load((dvc_repo.path / "conf/variant/sample.yaml").read_text())["sha256"]
    bundled = hashlib.sha256((dvc_repo.path / "data/sample/longmemeval_sample.json").read_bytes()).hexdigest()
    assert pinned == bundled
    assert m["variant"] == {"name": "sample", "revision": "bundled", "sha256": pinned, "sha256_verified": True}
    assert m["questions"]["total"] >= 36 and m["questions"]["abstention"] >= 6
    assert all(n >= 6 for n in m["questions"]["per_type"].values())
    assert m["haystack"]["sessions"]["max"] >= 12
    assert m["suite"]["name"] == "full" and m["suite"]["size"] == m["questions"]["total"]
    lock = (dvc_repo.path / "dvc.lock").read_text()
    assert "data/raw/longmemeval_sample.json" in lock and "md5:" in lock
    custody = dvc_repo.json("data/custody/sample.json")
    assert custody["verified"] is True and custody["sha256"] == m["variant"]["sha256"]
    second = dvc_repo.dvc("repro").stdout  # nothing changed: no stage reruns (none always runs)
    assert [line for line in second.splitlines() if line.startswith("Running stage")] == [], second
    assert json.loads(dvc_repo.dvc("status", "--json").stdout) == {}


def test_exp_run_switches_adapter_and_suite_and_metrics_diff_shows_it(legacy_repo):
    # the committed sample run, then `dvc exp run -n legacy -S variant=sample -S adapter=legacy-v2`, its results in
    # the workspace (tests/e2e/conftest.py legacy_experiment: the compare test reads the same experiment)
    reproduced_repo = legacy_repo
    assert reproduced_repo.json("metrics/data.json")["adapter"]["schema"] == "mnemetric.longmemeval-session/v2"
    diff = json.loads(reproduced_repo.dvc("metrics", "diff", "main", "--json").stdout)["metrics/data.json"]
    assert diff["adapter.schema"]["new"] == "mnemetric.longmemeval-session/v2"
    reproduced_repo.dvc("exp", "run", "-n", "dev", "-S", "suite=development", "data_metrics")  # up to what it reads
    m = reproduced_repo.json("metrics/data.json")
    assert m["adapter"]["name"] == "session-v3"  # composition restarts from conf/ defaults
    assert m["suite"]["name"] == "development" and 0 < m["suite"]["size"] < m["questions"]["total"]
    assert m["suite"]["questions"]["abstention"] == 2
    diff = json.loads(reproduced_repo.dvc("metrics", "diff", "main", "--json").stdout)["metrics/data.json"]
    assert diff["suite.size"]["new"] == m["suite"]["size"] and diff["suite.size"]["diff"] < 0


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_oracle_without_network_fails_fast_and_verifies_nothing(dvc_repo):
    proc = dvc_repo.dvc("exp", "run", "-S", "variant=oracle", check=False,
                        env={"HF_ENDPOINT": f"http://127.0.0.1:{closed_port()}"})
    assert proc.returncode != 0
    assert "could not download" in proc.stderr and "place it at data/downloads/longmemeval_oracle.json" in proc.stderr
    assert not (dvc_repo.path / "data/raw/longmemeval_oracle.json").exists()
    custody = dvc_repo.path / "data/custody/oracle.json"
    assert not custody.exists() or json.loads(custody.read_text())["verified"] is False


def test_a_failed_experiment_ends_with_the_one_command_that_restores_the_workspace(reproduced_repo):
    repo = reproduced_repo
    repo.run("git", "add", "-A")
    repo.run("git", "commit", "-qm", "sample run")
    proc = repo.dvc("exp", "run", "-S", "variant=oracle", check=False,
                    env={"HF_ENDPOINT": f"http://127.0.0.1:{closed_port()}"})
    assert proc.returncode != 0 and "could not download" in proc.stderr
    # measured before: params.yaml left composed for oracle (the next `dvc repro` tried oracle again), a failure
    # record left behind, and (in some runs) the sample's DVC outputs deleted
    assert repo.run("git", "status", "--porcelain").stdout != ""
    lines = proc.stderr.splitlines()
    at = next(i for i, line in enumerate(lines) if line.endswith("To put the workspace back as committed, run:"))
    command = lines[at + 1].strip()
    assert command == "git checkout HEAD -- params.yaml && rm -f -- data/custody/oracle.json && dvc checkout"
    repo.run("sh", "-c", command)
    assert repo.run("git", "status", "--porcelain").stdout == ""
    assert json.loads(repo.dvc("status", "--json").stdout) == {}
    assert (repo.path / "data/adapted/sample.jsonl").exists()


def test_oracle_with_wrong_hash_is_refused(dvc_repo):
    wrong = b'[{"question_id": "not-the-official-file"}]'
    with FileServer() as server:
        server.files[ORACLE_PATH] = wrong
        proc = dvc_repo.dvc("exp", "run", "-S", "variant=oracle", check=False, env={"HF_ENDPOINT": server.url})
    assert proc.returncode != 0
    assert "expected sha256: 821a2034d219ab45846873dd14c14f12cfe7776e73527a483f9dac095d38620c" in proc.stderr
    assert f"actual sha256:   {hashlib.sha256(wrong).hexdigest()}" in proc.stderr
    raw = dvc_repo.path / "data/raw"
    assert not raw.exists() or not any(raw.iterdir())
    assert not (dvc_repo.path / "data/downloads/longmemeval_oracle.json").exists()
