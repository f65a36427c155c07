"""Real-signal crash tests of the judge STAGE (``python -m mnemetric.stages.judge``).

A workspace in tmp_path holds a composed params.yaml (judge=upstream-gpt-4o pointed at the stand-in
evaluate_qa.py, llm.max_concurrency=2), the adapted bundled sample and 30 hypotheses. The stage
talks to an in-test FakeOpenAIServer (0.2 s per reply). It is killed (SIGINT or SIGKILL) once the
server has answered 8 requests, then rerun to completion, then run a third time.

What this proves:
* a killed stage exits non-zero and leaves no judged file (outputs are written atomically only at
  the end); the workspace holds exactly the files it held before, apart from hidden
  ``.<name>.*.tmp`` siblings that :func:`mnemetric.io.atomic_open` may leave in data/runs/ if SIGKILL
  lands during the final rename-into-place write (SIGINT removes them; here none are expected);
* every response committed to the SQLite cache before the kill is served from the cache on the
  rerun (the run log, .mnemetric/run-log.jsonl, counts them as hits) and never sent again; only
  requests that were on the wire at the kill (<= max_concurrency) may reach the server twice;
* the rerun's judged file has one line per hypothesis, in order, with upstream's
  ``autoeval_label`` {model, label}; a third run sends zero requests and writes the judged file,
  its (empty) failures sidecar and the usage sidecar byte for byte as the second run did;
* the API key is written to no file under tmp_path (the response cache lives there too);
* SIGINT makes the stage print ``interrupted`` and exit 130 without a traceback (SIGKILL: -9).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:  # the repository root, so ``tests.support`` imports
    sys.path.insert(0, str(ROOT))

from tests.support.openai_server import FakeOpenAIServer, canonical_sha256  # noqa: E402
from tests.support.standin_evaluate_qa import write_standin  # noqa: E402

from mnemetric.llm.cache import CACHE_FILENAME  # noqa: E402

SECRET = "sk-test-KILL"
MODEL = "gpt-4o-2024-08-06"
QUESTIONS = 30
CONCURRENCY = 2
KILL_AFTER = 8
HYP = re.compile(r"\[hyp (\S+) (YES|NO)\]")


def reply(messages: list[dict]) -> str:
    """'Yes.' for hypotheses marked YES, 'no' otherwise (the label is 'yes' in the reply)."""
    match = HYP.search(messages[-1]["content"])
    return "Yes." if match and match.group(2) == "YES" else "no"


def qid_of(content: str) -> str:
    match = HYP.search(content)
    assert match, content
    return match.group(1)


def make_workspace(tmp_path: Path) -> tuple[Path, dict]:
    """params.yaml + data/adapted/<variant>.jsonl + the questions file of the judged questions (what stage
    suite writes for them) + data/runs/hypotheses.jsonl; returns (ws, params)."""
    from hydra.utils import instantiate

    from mnemetric.longmemeval.adapted import read_adapted
    from mnemetric.config import compose_to
    from mnemetric.io import write_jsonl_atomic
    from mnemetric.longmemeval.questions import Question, write_questions
    from mnemetric.stages.adapt import adapt_file

    ws, checkout = tmp_path / "ws", tmp_path / "LongMemEval"
    ws.mkdir()
    sha = write_standin(checkout)
    compose_to(ws / "params.yaml", ROOT / "conf", ["judge=upstream-gpt-4o", f"judge.longmemeval_dir={checkout}",
                                                   f"judge.evaluate_qa_sha256={sha}",
                                                   f"llm.max_concurrency={CONCURRENCY}"])
    params = yaml.safe_load((ws / "params.yaml").read_text(encoding="utf-8"))
    adapted = ws / params["paths"]["adapted"]
    adapt_file(instantiate(params["adapter"]), ROOT / params["variant"]["path"], adapted)
    records = list(read_adapted(adapted))[:QUESTIONS]
    qids = [r.eval.question_id for r in records]
    write_questions(ws / params["paths"]["questions"], map(Question.of_adapted, records))
    hyps = [{"question_id": q, "hypothesis": f"[hyp {q} {'YES' if i % 3 else 'NO'}] my answer"}
            for i, q in enumerate(qids)]
    write_jsonl_atomic(ws / params["paths"]["hypotheses"], hyps)
    return ws, params


def stage_env(base_url: str, cache_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MNEMETRIC_"))}
    env |= {"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": SECRET, "MNEMETRIC_CACHE_DIR": str(cache_dir),
            "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])}
    return env


STAGE = [sys.executable, "-m", "mnemetric.stages.judge"]


def wait_for(predicate, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.01)


def kill_stage(ws: Path, env: dict, srv: FakeOpenAIServer, sig: int, after: int) -> subprocess.CompletedProcess:
    """Start the stage, wait until the server answered ``after`` requests, send ``sig``, reap it."""
    proc = subprocess.Popen(STAGE, cwd=ws, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: srv.answered >= after or proc.poll() is not None)
        assert proc.poll() is None, "the stage finished before it could be killed"
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    wait_for(lambda: srv.in_flight == 0)
    return subprocess.CompletedProcess(STAGE, proc.returncode, out, err)


def run_stage(ws: Path, env: dict) -> subprocess.CompletedProcess:
    done = subprocess.run(STAGE, cwd=ws, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done


def files_under(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def committed_qids(cache_dir: Path) -> dict[str, str]:
    """Server-side body sha256 -> question_id, for every chat response in the cache file."""
    with contextlib.closing(sqlite3.connect(cache_dir / CACHE_FILENAME)) as conn:
        rows = conn.execute("SELECT request_json FROM responses WHERE kind='chat'").fetchall()
    out = {}
    for (text,) in rows:
        req = json.loads(text)
        out[canonical_sha256({"model": req["model"], "messages": req["messages"], **req["params"]})] = \
            qid_of(req["messages"][-1]["content"])
    return out


def assert_no_partial_output(ws: Path, params: dict, before: set[str]) -> None:
    """No judged/usage file; nothing new in the workspace except hidden atomic_open temp files."""
    assert not (ws / params["paths"]["judged"]).exists()
    assert not (ws / params["paths"]["judge_usage"]).exists()
    new = files_under(ws) - before
    stray = [f for f in new if not re.fullmatch(r"data/runs/\.[^/]+\.tmp", f)]
    assert not stray, stray


def assert_judged(ws: Path, params: dict) -> None:
    """One line per hypothesis, in order, upstream autoeval_label; nothing that depends on the run."""
    hyps = [json.loads(x) for x in (ws / params["paths"]["hypotheses"]).read_text().splitlines()]
    judged = [json.loads(x) for x in (ws / params["paths"]["judged"]).read_text().splitlines()]
    assert [j["question_id"] for j in judged] == [h["question_id"] for h in hyps]
    for h, j in zip(hyps, judged):
        assert j["hypothesis"] == h["hypothesis"]
        assert j["autoeval_label"] == {"model": MODEL, "label": "YES]" in h["hypothesis"]}
        assert j["mnemetric_judge"]["judge"] == "upstream-gpt-4o"
        assert "cached" not in j["mnemetric_judge"], h["question_id"]  # a per-run fact: run log only


def assert_secret_nowhere(root: Path) -> None:
    files = [p for p in root.rglob("*") if p.is_file()]
    assert any(p.name == CACHE_FILENAME for p in files)
    for path in files:
        assert SECRET.encode() not in path.read_bytes(), path


def assert_exit(killed: subprocess.CompletedProcess, sig: int) -> None:
    """SIGINT: mnemetric.stages.run prints 'interrupted' and exits 130, no traceback; SIGKILL: -9."""
    if sig == signal.SIGINT:
        assert killed.returncode == 130, killed.stderr
        assert "interrupted" in killed.stderr and "Traceback" not in killed.stderr, killed.stderr
    else:
        assert killed.returncode == -signal.SIGKILL, killed.stderr


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL"])
def test_killed_judge_stage_resumes_without_paying_twice(tmp_path, sig):
    ws, params = make_workspace(tmp_path)
    before, cache_dir = files_under(ws), tmp_path / "cache"
    with FakeOpenAIServer(latency=0.2, reply=reply) as srv:
        env = stage_env(srv.base_url, cache_dir)
        killed = kill_stage(ws, env, srv, sig, KILL_AFTER)
        assert_exit(killed, sig)
        assert_no_partial_output(ws, params, before)
        first = srv.keys()
        answered = {r.body_sha256 for r in srv.requests if r.answered}  # server side, before the kill
        saved = committed_qids(cache_dir)
        assert len(first) == len(set(first)) < QUESTIONS  # no retries; killed part-way
        assert set(saved) <= set(first) and len(saved) >= KILL_AFTER - CONCURRENCY
        assert len(first) - len(saved) <= CONCURRENCY  # lost = on the wire at the kill

        run_stage(ws, env)
        second = srv.keys()[len(first):]
        assert not set(second) & set(saved), "a response committed before the kill was requested again"
        assert len(set(second) & answered) <= CONCURRENCY  # answered but cut off before the commit
        counts = Counter(first + second)
        assert len(counts) == QUESTIONS and sum(n - 1 for n in counts.values()) <= CONCURRENCY
        assert_judged(ws, params)
        log = run_log(ws)
        assert [e["stage"] for e in log] == ["judge"]  # the killed run never finished: no line
        assert (log[0]["sent"], log[0]["hits"], log[0]["failed"]) == (QUESTIONS - len(saved), len(saved), 0)
        tracked = tracked_bytes(ws, params)
        all_qids = {h["question_id"] for h in hyp_lines(ws, params)}
        resent = {qid_of(r.body["messages"][-1]["content"]) for r in srv.requests[len(first):]}
        assert resent == all_qids - set(saved.values())  # exactly the uncommitted ones were sent

        sent = srv.count
        run_stage(ws, env)
        assert srv.count == sent, "the third run sent requests"
        third = run_log(ws)[-1]
        assert (third["sent"], third["hits"]) == (0, QUESTIONS)
        assert tracked_bytes(ws, params) == tracked  # a warm run writes what the resumed cold one wrote
        usage = json.loads((ws / params["paths"]["judge_usage"]).read_text())
        assert usage["responses"] == QUESTIONS and "requests_sent" not in usage and "seconds" not in usage
        assert_judged(ws, params)
    assert_secret_nowhere(tmp_path)


def run_log(ws: Path) -> list[dict]:
    return [json.loads(x) for x in (ws / ".mnemetric" / "run-log.jsonl").read_text().splitlines()]


def tracked_bytes(ws: Path, params: dict) -> dict[str, bytes]:
    """The judge stage's DVC outputs (and the failures sidecar), byte for byte."""
    paths = [params["paths"]["judged"], params["paths"]["judged"] + ".failures.jsonl", params["paths"]["judge_usage"]]
    return {p: (ws / p).read_bytes() for p in paths}


def hyp_lines(ws: Path, params: dict) -> list[dict]:
    return [json.loads(x) for x in (ws / params["paths"]["hypotheses"]).read_text().splitlines()]

