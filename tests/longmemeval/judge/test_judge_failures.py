"""The judge STAGE never turns a non-answer into a verdict (real subprocess, real local server).

Measured before this change: a judge reply with ``content: null`` became the label "no", was
cached for good, and qa_metrics still said ``official_equivalence: true``. Here two of 30 questions
get non-answers (null content, a refusal); the stage must write 28 judged lines (none for the failed
two) and a failures sidecar naming them, then exit 3 naming the failed count, both question ids with
their reasons, both accuracies and the one command that re-asks only them; it caches nothing for them
(a rerun asks again, only them). With ``llm.allow_partial`` it exits 0 keeping the partial result, and
qa_metrics must count them, leave them out of every number (and give the failed-counted-wrong numbers
beside) and say the run is not official. When every question fails the stage exits
non-zero with a clear message and writes nothing.
"""

from __future__ import annotations

import json
import subprocess

import yaml
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.longmemeval.judge.test_judge_kill import HYP, QUESTIONS, STAGE, make_workspace, reply, stage_env  # noqa: E402
from tests.support.openai_server import FakeOpenAIServer  # noqa: E402

from mnemetric.llm import WorkUsage  # noqa: E402
from mnemetric.llm.usage import write_usage  # noqa: E402

QA_STAGE = [sys.executable, "-m", "mnemetric.stages.qa_metrics"]


def qid(body: dict) -> str:
    return HYP.search(body["messages"][-1]["content"]).group(1)


def run(cmd: list[str], ws: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=ws, env=env, capture_output=True, text=True, timeout=120)


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def prepare_qa_inputs(ws: Path, params: dict) -> list[str]:
    """Empty usage sidecars of retrieve and answer (the workspace's questions file holds the 30 judged
    questions: the suite qa_metrics scores); returns the judged ids."""
    ids = [h["question_id"] for h in lines(ws / params["paths"]["hypotheses"])]
    for key in ("retrieve_usage", "answer_usage"):
        write_usage(ws / params["paths"][key], WorkUsage())
    return ids


def test_non_answers_are_reported_failed_not_labelled_and_not_official(tmp_path):
    ws, params = make_workspace(tmp_path)
    ids = prepare_qa_inputs(ws, params)
    null_q, refused_q = ids[4], ids[11]
    kinds = {null_q: "null_content", refused_q: "refusal"}
    judged_path = ws / params["paths"]["judged"]
    sidecar = Path(f"{judged_path}.failures.jsonl")
    with FakeOpenAIServer(reply=reply, non_answer_for=lambda body: kinds.get(qid(body))) as srv:
        env = stage_env(srv.base_url, tmp_path / "cache")
        done = run(STAGE, ws, env)
        assert done.returncode == 3, done.stderr  # some failed: loud, not a pass
        assert "judge: 2 of 30 question(s) FAILED" in done.stderr and "Traceback" not in done.stderr
        assert "re-ask only the 2 failed (the 28 answered come from the cache): dvc repro" in done.stderr
        assert "failed excluded" in done.stderr and "with the 2 failed counted wrong" in done.stderr
        assert "llm.allow_partial=true" in done.stderr
        assert srv.count == QUESTIONS + 2  # each failed question asked twice (one bounded retry)
        assert f"{null_q} (judge, gpt-4o-2024-08-06): content is null" in done.stderr
        assert f"{refused_q} (judge, gpt-4o-2024-08-06): refusal: I can't help with that." in done.stderr
        judged = lines(judged_path)
        assert [j["question_id"] for j in judged] == [q for q in ids if q not in kinds]
        assert all(set(j["autoeval_label"]) == {"model", "label"} for j in judged)  # print_qa_metrics.py reads these
        sent = [{k: r.body[k] for k in ("temperature", "max_tokens", "n")} for r in srv.requests]
        assert all(s == {"temperature": 0, "max_tokens": 10, "n": 1} for s in sent)
        assert all(j["mnemetric_judge"]["params_sent"] == sent[0] for j in judged)  # evidence: what went out
        failures = lines(sidecar)
        assert [(f["question_id"], f["stage"], f["reason"], f["attempts"]) for f in failures] == [
            (null_q, "judge", "content is null", 2), (refused_q, "judge", "refusal: I can't help with that.", 2)]
        assert all(len(f["request_sha256"]) == 64 and f["model"] == "gpt-4o-2024-08-06" for f in failures)

        params["llm"]["allow_partial"] = True  # keep the partial result: exit 0, with the forced re-ask named
        (ws / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
        again = run(STAGE, ws, env)  # nothing was cached for them: asked again, the rest from the cache
        assert again.returncode == 0, again.stderr
        assert "PARTIAL result kept" in again.stderr and "dvc repro -f -s judge && dvc repro" in again.stderr
        assert srv.count == QUESTIONS + 2 + 4
        assert lines(sidecar) == failures and lines(judged_path) == judged

        metrics_run = run(QA_STAGE, ws, env)
    assert metrics_run.returncode == 0, metrics_run.stderr
    assert null_q in metrics_run.stderr and refused_q in metrics_run.stderr
    qa_file = ws / params["paths"]["metrics_qa"]
    m = json.loads((qa_file.parent / "detail" / qa_file.name).read_text())  # counts and failures: the detail view
    assert m["n"] == QUESTIONS - 2 and m["coverage"]["n_failed"] == 2 and m["coverage"]["n_judged"] == QUESTIONS - 2
    assert m["failures"]["question_ids"] == [null_q, refused_q]
    assert m["official_equivalence"]["value"] is False
    assert any(r.startswith("2 question(s) failed") and null_q in r for r in m["official_equivalence"]["reasons"])
    expected = sum("YES]" in h["hypothesis"] for h in lines(ws / params["paths"]["hypotheses"])
                   if h["question_id"] not in kinds) / (QUESTIONS - 2)
    assert m["overall"] == expected
    assert m["failed_as_wrong"]["overall"] == expected * (QUESTIONS - 2) / QUESTIONS  # both, side by side
    headline = json.loads(qa_file.read_text())
    assert headline["n_failed"] == 2 and headline["failed_as_wrong"]["n"] == QUESTIONS


def test_when_every_question_fails_the_stage_exits_non_zero_and_writes_nothing(tmp_path):
    ws, params = make_workspace(tmp_path)
    with FakeOpenAIServer(reply=reply, non_answer_for=lambda body: "content_filter") as srv:
        done = run(STAGE, ws, stage_env(srv.base_url, tmp_path / "cache"))
    assert done.returncode == 2, done.stderr
    assert "every question failed (30 of 30)" in done.stderr and "finish_reason 'content_filter'" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (ws / params["paths"]["judged"]).exists()
    assert not Path(f"{ws / params['paths']['judged']}.failures.jsonl").exists()
    log = [json.loads(x) for x in (ws / ".mnemetric" / "run-log.jsonl").read_text().splitlines()]
    assert log[-1]["stage"] == "judge" and log[-1]["failed"] == QUESTIONS and log[-1]["sent"] == 2 * QUESTIONS
