"""A temporary git + DVC repository holding this project's pipeline, driven by the real `dvc` CLI."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import copy_project, init_repo, tool_env


class DvcRepo:
    def __init__(self, path: Path, env: dict[str, str]):
        self.path, self.env = path, env

    def run(self, *args: str, check: bool = True, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        proc = subprocess.run(list(args), cwd=self.path, env={**self.env, **(env or {})},
                              capture_output=True, text=True, timeout=600)
        if check and proc.returncode != 0:
            raise AssertionError(f"{' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        return proc

    def dvc(self, *args: str, **kw) -> subprocess.CompletedProcess:
        return self.run("dvc", *args, **kw)

    def json(self, rel: str) -> dict:
        return json.loads((self.path / rel).read_text())


@pytest.fixture()
def dvc_repo(tmp_path) -> DvcRepo:
    """A fresh clone: the project's files and one commit, nothing reproduced."""
    repo = tmp_path / "repo"
    repo.mkdir()
    copy_project(repo)
    env = tool_env()
    init_repo(repo, env)
    return DvcRepo(repo, env)


@pytest.fixture()
def reproduced_repo(tmp_path, reproduced_sample) -> DvcRepo:
    """A fresh clone after `dvc repro` (outputs in the workspace and in .dvc/cache, dvc.lock written, not
    committed): this test's own copy of the session's reproduced clone (tests/conftest.py reproduced_sample),
    so a test that starts from the reproduced sample does not reproduce it again."""
    repo = tmp_path / "repo"

    def skip_dvc_tmp(folder: str, names: list[str]) -> list[str]:  # locks and state of the original's runs
        return ["tmp"] if Path(folder) == reproduced_sample / ".dvc" else []

    shutil.copytree(reproduced_sample, repo, symlinks=True, ignore=skip_dvc_tmp)
    return DvcRepo(repo, tool_env())


@pytest.fixture()
def committed_repro(reproduced_repo) -> DvcRepo:
    """reproduced_repo with the sample run committed (the baseline an experiment starts from)."""
    reproduced_repo.run("git", "add", "-A")
    reproduced_repo.run("git", "commit", "-qm", "sample run")
    return reproduced_repo
