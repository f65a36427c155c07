from __future__ import annotations

import os
import shutil
import subprocess
import sys
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


PROJECT_FILES = ["conf", "dvc.yaml", "params.yaml", ".dvc/config", ".dvc/plots", ".dvcignore", ".gitignore",
                 "data/sample", "src", "data/inventory/base.json", "data/inventory/task-markers.json", "data/sample-v2",
                 "data/errata", "plugins"]
"""What a fresh clone needs to run the pipeline (tests/e2e/conftest.py's repositories hold these; stage inventory
reads the tests' markers from their committed index, so tests/ itself is not copied)."""

SAMPLE_RUN_OUTPUTS = ("data/adapted/sample.jsonl", "data/suites/sample-full.json",
                      "data/suites/sample-full.questions.jsonl", "data/runs/contexts.jsonl",
                      "data/runs/hypotheses.jsonl", "data/runs/hypotheses.jsonl.eval-results-lexical")
"""Outputs of the pipeline on the bundled sample that DVC tracks by content (not in git): a clone has them only
after `dvc repro` (what `make repro` runs)."""


def copy_project(dst: Path) -> None:
    """PROJECT_FILES of this checkout into ``dst`` (the conf link kept as a link, as a clone has it)."""
    for rel in PROJECT_FILES:
        src, target = ROOT / rel, dst / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            os.symlink(os.readlink(src), target)
        elif src.is_dir():
            shutil.copytree(src, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, target)


def tool_env(**extra: str) -> dict[str, str]:
    """The environment of a `dvc`/`git` subprocess: this interpreter's bin/ first, no analytics, a git identity."""
    bin_dir = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "DVC_NO_ANALYTICS": "1",
            "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
            **extra}


def init_repo(path: Path, env: dict[str, str]) -> None:
    """``path`` (holding copy_project's files) as a git + DVC repository with one commit, as a clone is."""
    for args in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"], ["git", "commit", "-qm", "init"]):
        if args[1] == "add":
            (path / ".dvc" / ".gitignore").write_text("/config.local\n/tmp\n/cache\n")
        proc = subprocess.run(args, cwd=path, env=env, capture_output=True, text=True)
        assert proc.returncode == 0, f"{' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"


def _shared_tmp(tmp_path_factory) -> Path:
    """The temporary folder every test process of this run shares (pytest-xdist workers each have their own
    basetemp below it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def built_once(tmp_path_factory, name: str, build) -> Path:
    """``build(folder)`` run once per test run for every test process (pytest-xdist workers included): the first
    process to ask builds ``<shared tmp>/<name>`` under a file lock, the others wait for it and reuse it. Returns
    the folder. A failed build is retried by the next process that asks (and fails it the same way)."""
    import fcntl

    shared = _shared_tmp(tmp_path_factory)
    folder, done = shared / name, shared / f"{name}.done"
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            build(folder)
            done.write_text("ok\n")
    return folder


def copy_repo(src: Path, dst: Path) -> None:
    """A DVC repository copied as it is (git, DVC cache, workspace), without its .dvc/tmp (locks and state of the
    original's runs)."""
    def skip_dvc_tmp(folder: str, names: list[str]) -> list[str]:
        return ["tmp"] if Path(folder) == src / ".dvc" else []

    shutil.copytree(src, dst, symlinks=True, ignore=skip_dvc_tmp)


@pytest.fixture(scope="session")
def reproduced_sample(tmp_path_factory) -> Path:
    """A temporary clone of this project (copy_project + one commit) after `dvc repro` on the bundled sample,
    offline and without a key: built once per test run (one process builds it, the others wait for it), never
    in the checkout under test. Read it; never write to it (tests/e2e/conftest.py ``reproduced_repo`` gives
    a test its own copy)."""
    def build(repo: Path) -> None:
        copy_project(repo)
        env = tool_env(MNEMETRIC_CACHE_DIR=str(repo.parent / "reproduced-sample-cache"))
        env.pop("OPENAI_API_KEY", None)
        init_repo(repo, env)
        proc = subprocess.run(["dvc", "repro"], cwd=repo, env=env, capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, f"dvc repro failed:\n{proc.stdout}\n{proc.stderr}"
        (repo.parent / "reproduced-sample.stdout").write_text(proc.stdout)

    repo = built_once(tmp_path_factory, "reproduced-sample", build)
    missing = [rel for rel in SAMPLE_RUN_OUTPUTS if not (repo / rel).exists()]
    assert not missing, missing
    return repo


@pytest.fixture(scope="session")
def reproduced_sample_stdout(reproduced_sample: Path) -> str:
    """What the first `dvc repro` of reproduced_sample's fresh clone printed (its stdout)."""
    return (reproduced_sample.parent / "reproduced-sample.stdout").read_text()


@pytest.fixture(scope="session")
def sample_run_outputs(reproduced_sample: Path) -> Path:
    """The folder holding the sample run's DVC outputs (SAMPLE_RUN_OUTPUTS, ...): reproduced_sample's clone."""
    return reproduced_sample


@pytest.fixture(scope="session")
def adapted_sample(tmp_path_factory) -> Path:
    """data/adapted/sample.jsonl as stage adapt writes it from the bundled sample and this checkout's params.yaml
    (built once per test process in a temporary workspace, never in the checkout)."""
    import yaml

    ws = tmp_path_factory.mktemp("adapted-sample")
    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    (ws / "data" / "raw").mkdir(parents=True)
    shutil.copy(ROOT / "params.yaml", ws / "params.yaml")
    shutil.copy(ROOT / "data" / "sample" / "longmemeval_sample.json", ws / "data" / "raw" / params["variant"]["file"])
    proc = subprocess.run([sys.executable, "-m", "mnemetric.stages.adapt"], cwd=ws, capture_output=True, text=True,
                          env=os.environ.copy(), timeout=300)
    assert proc.returncode == 0, f"stage adapt failed:\n{proc.stdout}\n{proc.stderr}"
    return ws / params["paths"]["adapted"]
