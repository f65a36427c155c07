"""A fresh clone reproduces byte for byte: everything DVC tracks is a pure function of its inputs.

Measured before: `git clone` + `make repro` left dvc.lock, metrics/qa.json and data/custody/sample.json
modified (a `verified_at` timestamp, wall-clock `seconds`, per-run usage counters).
"""

from __future__ import annotations

import pytest

from tests.support.openai_server import FakeOpenAIServer
from tests.support.standin_evaluate_qa import write_standin

from tests.e2e.conftest import DvcRepo

pytestmark = pytest.mark.e2e


def _clone(origin: DvcRepo, dest) -> DvcRepo:
    origin.run("git", "clone", "-q", str(origin.path), str(dest))
    return DvcRepo(dest, origin.env)


def _tracked(repo: DvcRepo) -> dict[str, bytes]:
    names = repo.run("git", "ls-files").stdout.split()
    return {n: (repo.path / n).read_bytes() for n in names if not (repo.path / n).is_symlink()}


def _commit_all(repo: DvcRepo, message: str) -> None:
    repo.run("git", "add", "-A")
    repo.run("git", "commit", "-qm", message)


def test_a_fresh_clone_reproduces_the_offline_pipeline_byte_for_byte(reproduced_repo, tmp_path):
    _commit_all(reproduced_repo, "results")
    clone = _clone(reproduced_repo, tmp_path / "clone")
    clone.dvc("repro")
    assert clone.run("git", "status", "--porcelain").stdout == ""
    assert _tracked(clone) == _tracked(reproduced_repo)
    # the measured V2 latency is committed like a benchmark result: an unchanged tree does not rewrite it
    assert b'"measured": true' in _tracked(clone)["metrics/v2-latency.json"]


def reply(messages):
    text = messages[-1]["content"]
    if text.startswith("Grading job"):  # the stand-in judge templates
        return "Yes." if "Miso" in text else "no"
    return "Based on the sessions, the answer is Miso."


def test_a_second_clone_with_a_warm_llm_cache_writes_identical_tracked_files(committed_repro, tmp_path):
    dvc_repo = committed_repro  # the committed sample run: the experiment reruns what its params change; the
    # clone has no DVC cache, so its `dvc repro` runs every stage
    sha = write_standin(tmp_path / "LongMemEval")
    args = ["exp", "run", "-S", "reader=openai", "-S", "judge=upstream-gpt-4o", "-S", "suite=development",
            "-S", f"judge.longmemeval_dir={tmp_path / 'LongMemEval'}", "-S", f"judge.evaluate_qa_sha256={sha}"]
    with FakeOpenAIServer(reply=reply, model_map={"gpt-4o-2024-08-06": "gpt-4o-2024-08-06"}) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test",
               "MNEMETRIC_CACHE_DIR": str(tmp_path / "llm-cache")}
        dvc_repo.dvc(*args, env=env)  # cold cache: every request is sent
        sent = server.count
        assert sent > 0
        _commit_all(dvc_repo, "llm results")
        clone = _clone(dvc_repo, tmp_path / "clone")
        clone.dvc("repro", env=env)  # warm cache: the same work, nothing sent
        assert server.count == sent
    assert clone.run("git", "status", "--porcelain").stdout == ""
    assert _tracked(clone) == _tracked(dvc_repo)
