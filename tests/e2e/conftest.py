"""A temporary git + DVC repository holding this project's pipeline, driven by the real `dvc` CLI."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import built_once, copy_project, copy_repo, init_repo, tool_env


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
    copy_repo(reproduced_sample, repo)
    return DvcRepo(repo, tool_env())


@pytest.fixture()
def committed_repro(reproduced_repo) -> DvcRepo:
    """reproduced_repo with the sample run committed (the baseline an experiment starts from)."""
    reproduced_repo.run("git", "add", "-A")
    reproduced_repo.run("git", "commit", "-qm", "sample run")
    return reproduced_repo


@pytest.fixture(scope="session")
def oracle_experiment(tmp_path_factory, reproduced_sample) -> Path:
    """The reproduced sample committed on main ("sample run"), then `dvc exp run -n oracle -S memory=oracle`:
    built once per test run (tests/conftest.py built_once), with the experiment's results left in the workspace
    as `dvc exp run` leaves them. Read it; never write to it (``oracle_repo`` gives a test its own copy)."""
    def build(folder: Path) -> None:
        repo = DvcRepo(folder / "repo", tool_env(MNEMETRIC_CACHE_DIR=str(folder / "llm-cache")))
        copy_repo(reproduced_sample, repo.path)
        repo.run("git", "add", "-A")
        repo.run("git", "commit", "-qm", "sample run")
        repo.dvc("exp", "run", "-n", "oracle", "-S", "memory=oracle")

    return built_once(tmp_path_factory, "oracle-experiment", build) / "repo"


@pytest.fixture()
def oracle_repo(tmp_path, oracle_experiment) -> DvcRepo:
    """committed_repro after `dvc exp run -n oracle -S memory=oracle` (the oracle run in the workspace, as the
    experiment left it): this test's own copy of the session's oracle_experiment, so the tests that need that
    experiment do not each run it."""
    repo = tmp_path / "repo"
    copy_repo(oracle_experiment, repo)
    return DvcRepo(repo, tool_env())


@pytest.fixture(scope="session")
def legacy_experiment(tmp_path_factory, oracle_experiment) -> Path:
    """oracle_experiment's repository put back to main's committed run (`git reset --hard`, `dvc checkout`), then
    `dvc exp run -n legacy -S variant=sample -S adapter=legacy-v2`: built once per test run (tests/conftest.py
    built_once), the legacy run's results left in the workspace as `dvc exp run` leaves them, experiment `oracle`
    still under refs/exps. Read it; never write to it (``legacy_repo`` gives a test its own copy)."""
    def build(folder: Path) -> None:
        repo = DvcRepo(folder / "repo", tool_env(MNEMETRIC_CACHE_DIR=str(folder / "llm-cache")))
        copy_repo(oracle_experiment, repo.path)
        repo.run("git", "reset", "-q", "--hard")
        repo.dvc("checkout", "-q")
        repo.dvc("exp", "run", "-n", "legacy", "-S", "variant=sample", "-S", "adapter=legacy-v2")

    return built_once(tmp_path_factory, "legacy-experiment", build) / "repo"


@pytest.fixture()
def legacy_repo(tmp_path, legacy_experiment) -> DvcRepo:
    """The committed sample run with experiments `oracle` and then `legacy` (-S adapter=legacy-v2) run on it, the
    legacy run in the workspace: this test's own copy of the session's legacy_experiment (the compare and the
    pipeline tests need that experiment; it runs once)."""
    repo = tmp_path / "repo"
    copy_repo(legacy_experiment, repo)
    return DvcRepo(repo, tool_env())


def exp_ref(repo: DvcRepo, name: str) -> str:
    """The one ref under refs/exps of experiment ``name``."""
    refs = repo.run("git", "for-each-ref", "--format=%(refname)", "refs/exps").stdout.split()
    match = [r for r in refs if r.endswith(f"/{name}")]
    assert len(match) == 1, refs
    return match[0]
