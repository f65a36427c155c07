"""A temporary git + DVC repository holding this project's pipeline, driven by the real `dvc` CLI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

COPY = ["conf", "dvc.yaml", "params.yaml", ".dvc/config", ".dvc/plots", ".dvcignore", ".gitignore", "data/sample", "src",
        "data/inventory/base.json", "data/sample-v2", "data/errata", "plugins"]


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
    repo = tmp_path / "repo"
    repo.mkdir()
    for rel in COPY:
        src, dst = ROOT / rel, repo / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():  # conf -> src/mnemetric/conf: keep the link, as a clone has it
            os.symlink(os.readlink(src), dst)
        elif src.is_dir():
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, dst)
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "DVC_NO_ANALYTICS": "1",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    r = DvcRepo(repo, env)
    r.run("git", "init", "-q", "-b", "main")
    (repo / ".dvc" / ".gitignore").write_text("/config.local\n/tmp\n/cache\n")
    r.run("git", "add", "-A")
    r.run("git", "commit", "-qm", "init")
    return r
