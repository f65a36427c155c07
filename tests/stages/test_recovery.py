"""A stage that fails inside a workspace `dvc exp run` names the one command that restores the commit: what the
experiment wrote since it composed params.yaml, and nothing the user had changed before it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from mnemetric.stages import experiment_restore_hint, restore_command
from tests.conftest import tool_env


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, env=tool_env(), check=True, capture_output=True)


def _at(path: Path, text: str, when: float) -> None:
    path.write_text(text)
    os.utime(path, (when, when))


@pytest.fixture()
def repo(tmp_path: Path, monkeypatch) -> Path:
    for name in ("params.yaml", "dvc.lock", "edited-before.py"):
        (tmp_path / name).write_text(f"{name} as committed\n")
    _git(tmp_path, "init", "-q", "-b", "main")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "baseline")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_command_restores_what_the_experiment_wrote_and_keeps_older_edits(repo: Path):
    _at(repo / "edited-before.py", "the user's own edit\n", 1_000_000)  # before the experiment started
    _at(repo / "scratch-before.txt", "the user's own file\n", 1_000_000)
    _at(repo / "params.yaml", "variant: oracle\n", 2_000_000)  # the experiment composes its settings
    _at(repo / "dvc.lock", "a stage that succeeded\n", 2_000_001)
    _at(repo / "failure record.json", "{}\n", 2_000_002)  # written by the failing stage
    assert restore_command() == ("git checkout HEAD -- dvc.lock params.yaml && rm -f -- 'failure record.json'"
                                 " && dvc checkout")
    subprocess.run(["sh", "-c", restore_command().replace(" && dvc checkout", "")], check=True)
    assert (repo / "params.yaml").read_text() == "params.yaml as committed\n"
    assert (repo / "edited-before.py").read_text() == "the user's own edit\n" and (repo / "scratch-before.txt").exists()
    assert not (repo / "failure record.json").exists()


def test_nothing_to_restore_and_outside_an_experiment_say_nothing(repo: Path, monkeypatch):
    assert restore_command() is None  # the workspace is as committed
    _at(repo / "params.yaml", "variant: oracle\n", 2_000_000)
    monkeypatch.delenv("DVC_EXP_BASELINE_REV", raising=False)
    assert experiment_restore_hint() is None  # a plain `dvc repro` changes params.yaml only if the user did
    monkeypatch.setenv("DVC_EXP_BASELINE_REV", "0" * 40)
    monkeypatch.setenv("DVC_EXP_NAME", "inert-seal")
    monkeypatch.setenv("DVC_ROOT", str(repo))
    hint = experiment_restore_hint()
    assert hint.startswith("the experiment inert-seal failed; params.yaml still holds its settings")
    assert hint.endswith("run:\n  git checkout HEAD -- params.yaml && dvc checkout")
    monkeypatch.setenv("DVC_ROOT", str(repo.parent))  # a --temp or queued run: the workspace is untouched
    assert experiment_restore_hint() is None
