"""The untracked run log: one JSON line per stage run, never tracked by git, and the all-failed stop."""

from __future__ import annotations

import json
import subprocess

import pytest

from mnemetric.llm import AllQuestionsFailed, QuestionFailure, UsageStats
from mnemetric.llm.run_log import ENV_RUN_LOG, append_run_log, finish_stage_run, read_run_log, run_entry


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(ENV_RUN_LOG, raising=False)
    return tmp_path


def test_entries_are_appended_one_line_each_and_git_never_sees_them(in_tmp):
    subprocess.run(["git", "init", "-q"], cwd=in_tmp, check=True)
    stats = UsageStats(requests_sent=3, cache_hits=40, retries=1)
    append_run_log(run_entry("judge", stats, 1.23456, failed=0))
    append_run_log(run_entry("answer", UsageStats(), 0.5))
    lines = (in_tmp / ".mnemetric" / "run-log.jsonl").read_text().splitlines()
    assert [json.loads(x)["stage"] for x in lines] == ["judge", "answer"]
    first = json.loads(lines[0])
    assert (first["sent"], first["hits"], first["retries"], first["seconds"]) == (3, 40, 1, 1.235)
    assert first["time"].endswith("Z") and len(first["time"]) == 20  # 2026-12-01T10:00:00Z
    assert subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=in_tmp,
                          capture_output=True, text=True).stdout == ""


def test_an_explicit_log_path_gets_no_gitignore(in_tmp, monkeypatch):
    monkeypatch.setenv(ENV_RUN_LOG, str(in_tmp / "logs" / "runs.jsonl"))
    append_run_log(run_entry("retrieve", UsageStats(), 0.0))
    assert sorted(p.name for p in (in_tmp / "logs").iterdir()) == ["runs.jsonl"]
    assert read_run_log()[0]["stage"] == "retrieve"


def test_every_question_failed_is_logged_then_raised(in_tmp, capsys):
    failures = [QuestionFailure(q, "judge", "content is null", None, "m") for q in ("a", "b")]
    with pytest.raises(AllQuestionsFailed, match=r"every question failed \(2 of 2\)"):
        finish_stage_run("judge", UsageStats(requests_sent=4), 0.0, failures, total=2)
    assert read_run_log()[-1]["failed"] == 2
    err = capsys.readouterr().err
    assert "a (judge, m): content is null" in err and "b (judge, m): content is null" in err
    entry = finish_stage_run("judge", UsageStats(), 0.0, failures[:1], total=2)  # one of two: go on
    assert entry["failed"] == 1 and len(read_run_log()) == 2
