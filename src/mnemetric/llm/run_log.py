"""The untracked run log: what one stage run sent, reused, retried and how long it took.

Tracked files (DVC outputs, metrics) hold only the cost of the work
(:class:`~mnemetric.llm.budget.WorkUsage`), which is the same on a cold and a warm run. What
changes from run to run -- wall-clock seconds, requests sent *this run*, cache hits, retries,
non-answers, dollars paid -- is printed and appended here, one JSON line per stage run:

    {"time": "2026-12-01T10:00:00Z", "stage": "judge", "sent": 43, "hits": 0, "retries": 0,
     "non_answers": 0, "waited": 0, "taken_over": 0, "failed": 0, "usd_paid": 0.05, "seconds": 4.2}

Location: ``$MNEMETRIC_RUN_LOG`` if set, else ``.mnemetric/run-log.jsonl`` under the working
directory (a stage runs in the repository root). That folder ignores itself: it holds a
``.gitignore`` of ``*`` (as .pytest_cache does), so the log is never tracked even without a line
in the project's .gitignore. Each line is
written with one ``write`` on a file opened for appending and then fsynced, so concurrent stages
never interleave within a line and a crash loses at most the line being written.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from mnemetric.llm.budget import UsageStats
from mnemetric.llm.failures import AllQuestionsFailed, QuestionFailure, describe

ENV_RUN_LOG = "MNEMETRIC_RUN_LOG"
DEFAULT_RUN_LOG = Path(".mnemetric") / "run-log.jsonl"


def run_log_path() -> Path:
    """``$MNEMETRIC_RUN_LOG`` or ``.mnemetric/run-log.jsonl`` (relative to the working directory)."""
    return Path(os.environ.get(ENV_RUN_LOG) or DEFAULT_RUN_LOG)


def run_entry(stage: str, stats: UsageStats, seconds: float, failed: int = 0, **extra: Any) -> dict[str, Any]:
    """The log line of one stage run."""
    return {"time": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "stage": stage,
            "sent": stats.requests_sent, "hits": stats.cache_hits, "retries": stats.retries,
            "non_answers": stats.non_answers, "waited": stats.waited, "taken_over": stats.taken_over,
            "failed": failed, "prompt_tokens_sent": stats.prompt_tokens,
            "completion_tokens_sent": stats.completion_tokens, "usd_paid": stats.usd,
            "seconds": round(seconds, 3), **extra}


def append_run_log(entry: dict[str, Any], path: Path | None = None) -> Path:
    """Append ``entry`` as one JSON line (one write + fsync); returns the log path."""
    target = path or run_log_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    ignore = target.parent / ".gitignore"
    if target.parent.name == DEFAULT_RUN_LOG.parent.name and not ignore.exists():
        ignore.write_text("# written by mnemetric: the run log is never tracked\n*\n", encoding="utf-8")
    data = (json.dumps(entry, ensure_ascii=False, sort_keys=False) + "\n").encode("utf-8")
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    return target


def summary(stage: str, entry: dict[str, Any]) -> str:
    """One terminal line: ``judge: sent 43, cache hits 0, retries 0, non-answers 0, $0.0500 paid, 4.2 s``."""
    return (f"{stage}: sent {entry['sent']}, cache hits {entry['hits']}, retries {entry['retries']}, "
            f"non-answers {entry['non_answers']}, waited for other processes {entry['waited']}, "
            f"${entry['usd_paid']:.4f} paid, {entry['seconds']:.1f} s")


def read_run_log(path: Path | None = None) -> list[dict[str, Any]]:
    """Every entry of the log (for tests and reports); [] if it does not exist."""
    target = path or run_log_path()
    if not target.exists():
        return []
    return [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines() if line.strip()]


def finish_stage_run(stage: str, stats: UsageStats, started: float, failures: list[QuestionFailure] = (),
                     total: int = 0) -> dict[str, Any]:
    """End of a stage run: print the failed questions and the run's counters, append the run log.

    Raises :class:`AllQuestionsFailed` when every one of ``total`` (> 0) questions failed (after
    logging), so the stage exits non-zero with the reasons; otherwise returns the log entry.
    ``started`` is a :func:`time.monotonic` reading."""
    import sys
    import time

    entry = run_entry(stage, stats, time.monotonic() - started, failed=len(failures), questions=total)
    if failures:
        print(f"{stage}: {len(failures)} of {total} question(s) FAILED (no usable model answer; not cached, "
              f"in no metric; a rerun asks again):\n{describe(list(failures))}", file=sys.stderr)
    print(summary(stage, entry), file=sys.stderr)
    path = append_run_log(entry)
    print(f"{stage}: run log → {path}", file=sys.stderr)
    if total and len(failures) >= total:
        raise AllQuestionsFailed(stage, list(failures))
    return entry
