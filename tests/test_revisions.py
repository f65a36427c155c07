"""mnemetric.revisions against real git repositories (and a real DVC output) in temporary folders."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mnemetric import revisions
from mnemetric.errors import InputError

ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
       "GIT_COMMITTER_EMAIL": "t@t", "DVC_NO_ANALYTICS": "1",
       "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


def sh(cwd: Path, *args: str) -> str:
    return subprocess.run(list(args), cwd=cwd, env=ENV, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture()
def repo(tmp_path) -> Path:
    r = tmp_path / "r"
    r.mkdir()
    sh(r, "git", "init", "-q", "-b", "main")
    (r / "metrics").mkdir()
    (r / "metrics" / "qa.json").write_text('{"overall": 0.5}\n')
    (r / "params.yaml").write_text("memory:\n  name: bm25\n")
    sh(r, "git", "add", "-A")
    sh(r, "git", "commit", "-qm", "one")
    sh(r, "git", "tag", "v1")
    sh(r, "git", "checkout", "-qb", "other")
    (r / "metrics" / "qa.json").write_text('{"overall": 0.75}\n')
    sh(r, "git", "commit", "-qam", "two")
    sh(r, "git", "checkout", "-q", "main")
    (r / "metrics" / "qa.json").write_text('{"overall": 0.1}\n')  # uncommitted: the workspace
    return r


def test_branch_tag_sha_and_workspace(repo):
    assert revisions.read_json(revisions.resolve("main", repo), "metrics/qa.json", repo) == {"overall": 0.5}
    assert revisions.read_json(revisions.resolve("other", repo), "metrics/qa.json", repo) == {"overall": 0.75}
    assert revisions.read_json(revisions.resolve("v1", repo), "metrics/qa.json", repo) == {"overall": 0.5}
    sha = sh(repo, "git", "rev-parse", "other")
    rev = revisions.resolve(sha[:10], repo)
    assert rev.commit == sha and rev.kind == "git" and rev.short == sha[:7]
    ws = revisions.resolve("workspace", repo)
    assert ws.commit is None and revisions.read_json(ws, "metrics/qa.json", repo) == {"overall": 0.1}
    assert revisions.read_yaml(revisions.resolve("other", repo), "params.yaml", repo) == {"memory": {"name": "bm25"}}
    assert sh(repo, "git", "rev-parse", "--abbrev-ref", "HEAD") == "main"  # nothing was checked out


def test_experiment_names_resolve_through_dvc_refs(repo):
    sha = sh(repo, "git", "rev-parse", "other")
    sh(repo, "git", "update-ref", "refs/exps/ab/cdef0123/oracle", sha)  # where DVC keeps experiment `oracle`
    sh(repo, "git", "update-ref", "refs/exps/exec/EXEC_HEAD", sha)       # DVC's own bookkeeping: not a name
    assert revisions.experiment_refs(repo) == {"oracle": sha}
    rev = revisions.resolve("oracle", repo)
    assert rev.kind == "experiment" and revisions.read_json(rev, "metrics/qa.json", repo) == {"overall": 0.75}


def test_unknown_revision_and_missing_files_are_clear(repo):
    with pytest.raises(InputError, match="nosuch.*neither a git revision") as exc:
        revisions.resolve("nosuch", repo)
    assert exc.value.fix and "mnemetric runs" in exc.value.fix
    main = revisions.resolve("main", repo)
    with pytest.raises(InputError, match="main:metrics/retrieval.json.*not in git at main"):
        revisions.read_text(main, "metrics/retrieval.json", repo)
    assert not revisions.exists(main, "metrics/retrieval.json", repo) and revisions.exists(main, "params.yaml", repo)
    with pytest.raises(InputError, match="metrics/none.json.*no such file in the workspace"):
        revisions.read_text(revisions.resolve("workspace", repo), "metrics/none.json", repo)
    (repo / "bad.json").write_text("{oops")
    sh(repo, "git", "add", "bad.json")
    sh(repo, "git", "commit", "-qm", "bad")
    with pytest.raises(InputError, match="main:bad.json: line 1.*not valid JSON"):
        revisions.read_json(revisions.resolve("main", repo), "bad.json", repo)


def test_not_a_git_repository(tmp_path):
    with pytest.raises(InputError, match="not inside a git repository"):
        revisions.resolve("main", tmp_path)


def test_branches_are_listed(repo):
    names = [b for b, _ in revisions.branches(repo)]
    assert names == ["main", "other"]


def test_a_dvc_output_is_read_from_the_cache_at_an_older_commit(tmp_path):
    r = tmp_path / "d"
    r.mkdir()
    sh(r, "git", "init", "-q", "-b", "main")
    sh(r, "dvc", "init", "-q")
    (r / "judged.jsonl").write_text('{"question_id": "q1"}\n')
    sh(r, "dvc", "add", "-q", "judged.jsonl")
    sh(r, "git", "add", "-A")
    sh(r, "git", "commit", "-qm", "first")
    first = sh(r, "git", "rev-parse", "HEAD")
    (r / "judged.jsonl").write_text('{"question_id": "q2"}\n')
    sh(r, "dvc", "add", "-q", "judged.jsonl")
    sh(r, "git", "commit", "-qam", "second")
    assert "judged.jsonl" not in sh(r, "git", "ls-files").split()  # DVC-tracked (judged.jsonl.dvc), not in git
    assert revisions.read_text(revisions.resolve(first, r), "judged.jsonl", r) == '{"question_id": "q1"}\n'
    assert revisions.read_text(revisions.resolve("main", r), "judged.jsonl", r) == '{"question_id": "q2"}\n'
    with pytest.raises(InputError, match="main:missing.jsonl.*not readable as a DVC output"):
        revisions.read_text(revisions.resolve("main", r), "missing.jsonl", r)
