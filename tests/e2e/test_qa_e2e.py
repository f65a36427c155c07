"""Question answering end to end: offline on the sample, and the real LLM path against a local server.

Tracked files (DVC outputs, metrics) hold the cost of the work only, so a cold and a warm run
write the same bytes; what a run sent, reused and how long it took goes to the untracked run log
``.mnemetric/run-log.jsonl`` (the folder ignores itself: it holds a ``.gitignore`` of ``*``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.openai_server import FakeOpenAIServer
from tests.support.standin_evaluate_qa import write_standin

pytestmark = pytest.mark.e2e


@pytest.mark.task("longmemeval", "single-session-user")
@pytest.mark.task("longmemeval", "single-session-assistant")
@pytest.mark.task("longmemeval", "single-session-preference")
@pytest.mark.task("longmemeval", "temporal-reasoning")
@pytest.mark.task("longmemeval", "knowledge-update")
@pytest.mark.task("longmemeval", "multi-session")
def test_repro_answers_and_judges_offline(reproduced_repo):
    headline = reproduced_repo.json("metrics/qa.json")  # point numbers only; the rest is in the detail
    m = reproduced_repo.json("metrics/detail/qa.json")
    assert headline["judge"] == "lexical" and headline["official_equivalence"]["value"] is False
    assert m["judge"]["name"] == "lexical" and m["official_equivalence"]["value"] is False
    assert m["reader"] == "extractive" and m["n"] == 43 and headline["n"] == 43
    types = {"single-session-user", "single-session-assistant", "single-session-preference",
             "temporal-reasoning", "knowledge-update", "multi-session"}
    assert set(m["per_type"]) == types and set(headline["per_type"]) == types
    for t, block in m["per_type"].items():
        assert set(block) == {"accuracy", "n", "ci95", "mdd80"} and headline["per_type"][t] == block["accuracy"]
        assert block["ci95"]["method"].startswith("Clopper-Pearson")
    assert 0 <= m["overall"] <= 1 and m["abstention"]["n"] == 7 and headline["overall"] == m["overall"]
    assert m["cost"]["total"]["responses"] == 0 and m["cost"]["total"]["usd"] == 0
    assert "requests_sent" not in m["cost"]["total"] and "seconds" not in m["cost"]["total"]
    assert m["failures"]["n"] == 0 and m["coverage"]["n_failed"] == 0
    # V1's stages that may call a model each log a run (the V2 step stages log their own entries too)
    assert [e["stage"] for e in run_log(reproduced_repo.path) if not e["stage"].startswith("v2")] == [
        "retrieve", "answer", "judge"]
    judged = (reproduced_repo.path / "data/runs/hypotheses.jsonl.eval-results-lexical").read_text().splitlines()
    first = json.loads(judged[0])
    assert set(first["autoeval_label"]) == {"model", "label"} and first["autoeval_label"]["model"] == "mnemetric-lexical-v1"


def reply(messages):
    text = messages[-1]["content"]
    if text.startswith("Grading job"):  # the stand-in judge templates
        return "Yes." if "Miso" in text or "unanswerable" in text else "no"
    return "Based on the sessions, the answer is Miso."


def run_log(repo: Path) -> list[dict]:
    return [json.loads(x) for x in (repo / ".mnemetric" / "run-log.jsonl").read_text().splitlines()]


def tracked_bytes(repo: Path) -> dict[str, bytes]:
    """dvc.lock, the metrics and every file the stages wrote under data/runs/, byte for byte."""
    files = [repo / "dvc.lock", *sorted((repo / "metrics").rglob("*.json")), *sorted((repo / "data/runs").iterdir())]
    return {str(f.relative_to(repo)): f.read_bytes() for f in files if f.is_file()}


def test_llm_path_runs_for_real_and_a_second_run_sends_nothing(committed_repro, tmp_path):
    """One cold LLM experiment (reader and judge against the local server), then what it proves from three sides
    (each was a test of its own that ran the same cold experiment): a forced rerun of the LLM stages answers from
    the cache and writes the same tracked bytes; the run manifest is rebuilt from the judged lines with no LLM
    cache at all (tests/e2e/test_custody_e2e.py); a second clone with the warm cache runs every stage, sends
    nothing and writes identical tracked files (tests/e2e/test_reproducible_e2e.py)."""
    from tests.e2e.test_reproducible_e2e import _clone, _tracked

    dvc_repo = committed_repro  # the committed sample run: the experiment reruns what its params change
    sha = write_standin(tmp_path / "LongMemEval")
    args = ["exp", "run", "-S", "reader=openai", "-S", "judge=upstream-gpt-4o", "-S", "suite=development",
            "-S", f"judge.longmemeval_dir={tmp_path / 'LongMemEval'}", "-S", f"judge.evaluate_qa_sha256={sha}"]
    with FakeOpenAIServer(reply=reply, model_map={"gpt-4o-2024-08-06": "gpt-4o-2024-08-06"}) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test-SECRET-e2e",
               "MNEMETRIC_CACHE_DIR": str(tmp_path / "llm-cache")}
        dvc_repo.dvc(*args, env=env)  # cold cache: every request is sent
        m = dvc_repo.json("metrics/detail/qa.json")
        n = m["n"]
        assert server.count == 2 * n  # one reader and one judge request per question
        assert m["judge"]["models"] == ["gpt-4o-2024-08-06"]
        assert m["cost"]["total"]["responses"] == 2 * n and m["cost"]["total"]["usd"] > 0
        assert m["cost"]["total"]["per_model"]["gpt-4o-2024-08-06"]["responses"] == 2 * n
        assert m["official_equivalence"]["value"] is False  # the stand-in is not the pinned upstream file
        judged = [json.loads(x) for x in (dvc_repo.path / "data/runs/hypotheses.jsonl.eval-results-gpt-4o").read_text().splitlines()]
        assert all(j["mnemetric_judge"]["prompt_set_sha256"] == judged[0]["mnemetric_judge"]["prompt_set_sha256"] for j in judged)
        cold = run_log(dvc_repo.path)
        assert {e["stage"]: (e["sent"], e["hits"]) for e in cold if e["stage"] in ("answer", "judge")} == \
            {"answer": (n, 0), "judge": (n, 0)}
        dvc_repo.run("git", "add", "-A")
        dvc_repo.run("git", "commit", "-qm", "cold run")
        assert ".mnemetric" not in dvc_repo.run("git", "ls-files").stdout  # the run log is never tracked
        before = tracked_bytes(dvc_repo.path)

        # rerun every LLM stage: answers come from the cache, and every tracked byte stays the same
        dvc_repo.dvc("repro", "--force", "--single-item", "retrieve", "answer", "judge", "qa_metrics", env=env)
        assert server.count == 2 * n
        assert tracked_bytes(dvc_repo.path) == before
        assert dvc_repo.run("git", "status", "--porcelain").stdout == ""
        warm = run_log(dvc_repo.path)[len(cold):]
        assert {e["stage"]: (e["sent"], e["hits"]) for e in warm if e["stage"] in ("answer", "judge")} == \
            {"answer": (0, n), "judge": (0, n)}
        assert all(e["time"].endswith("Z") and e["seconds"] >= 0 for e in warm)

        # the run manifest's LLM judge params are read from the judged lines, not the cache: rebuilt with no LLM
        # cache at all, the same bytes
        manifest = (dvc_repo.path / "metrics/run.json").read_bytes()
        dvc_repo.dvc("repro", "--force", "--single-item", "run_manifest",
                     env={"MNEMETRIC_CACHE_DIR": str(tmp_path / "no-cache")})
        assert (dvc_repo.path / "metrics/run.json").read_bytes() == manifest and not (tmp_path / "no-cache").exists()
        assert dvc_repo.run("git", "status", "--porcelain").stdout == ""
        run = dvc_repo.json("metrics/run.json")
        assert run["counts"]["questions"] == n and run["counts"]["judged"] == n > 0
        assert run["judge"]["params_sent"] == {"requests": n, "values": [{"temperature": 0, "max_tokens": 10, "n": 1}],
                                               "not_in_cache": 0}
        assert run["reader"]["params_sent"]["values"] == [{"temperature": 0, "max_tokens": 800, "n": 1}]
        assert run["judge"]["resolved_models"] == ["gpt-4o-2024-08-06"]
        base_url = server.base_url.rstrip("/")
        assert run["judge"]["endpoints"] == [base_url]
        reasons = run["official_equivalence"]["reasons"]
        assert run["official_equivalence"]["value"] is False
        assert any(base_url in r and "not the official API" in r for r in reasons)
        assert any("not the full suite" in r for r in reasons)
        assert any("prompt set sha256" in r for r in reasons)  # the stand-in's templates are not upstream's
        assert not any("judge parameters" in r or "not recorded" in r for r in reasons)

        # a second clone (no DVC cache, so its `dvc repro` runs every stage) with the warm LLM cache: the same
        # work, nothing sent, identical tracked files
        clone = _clone(dvc_repo, tmp_path / "clone")
        clone.dvc("repro", env=env)
        assert server.count == 2 * n
    assert clone.run("git", "status", "--porcelain").stdout == ""
    assert _tracked(clone) == _tracked(dvc_repo)
    for path in dvc_repo.path.rglob("*"):
        if path.is_file() and ".git" not in path.parts:
            assert b"sk-test-SECRET-e2e" not in path.read_bytes(), path


def test_failed_judge_calls_exit_non_zero_and_a_plain_repro_re_asks_only_them(committed_repro, tmp_path):
    """3 of 43 judge replies fail (null content): `dvc exp run` exits non-zero naming the count and `dvc repro`;
    with the server healthy, a plain `dvc repro` (no -f) sends exactly the failed requests (the 40 answered come
    from the response cache) and the metrics become full: no failure left among the official reasons."""
    repo = committed_repro
    sha = write_standin(tmp_path / "LongMemEval")
    questions = [json.loads(x) for x in (repo.path / "data/suites/sample-full.questions.jsonl").read_text().splitlines()]
    failing = {q["question"] for q in questions[5:8]}
    broken = {"on": True}

    def non_answer(body):
        text = body["messages"][-1]["content"]
        return "null_content" if broken["on"] and any(q in text for q in failing) else None

    with FakeOpenAIServer(reply=reply, non_answer_for=non_answer) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test"}
        failed = repo.dvc("exp", "run", "-S", "judge=upstream-gpt-4o", "-S", f"judge.longmemeval_dir={tmp_path / 'LongMemEval'}",
                          "-S", f"judge.evaluate_qa_sha256={sha}", env=env, check=False)
        assert failed.returncode != 0
        out = failed.stdout + failed.stderr
        assert "judge: 3 of 43 question(s) FAILED" in out and "with the 3 failed counted wrong" in out
        assert "re-ask only the 3 failed (the 40 answered come from the cache): dvc repro" in out
        assert server.count == 43 + 3  # each failed question asked twice (the bounded non-answer retry)
        failed_keys = {r.body_sha256 for r in server.requests if non_answer(r.body)}
        assert len(failed_keys) == 3

        broken["on"] = False
        before = server.count
        repo.dvc("repro", env=env)  # plain: the judge stage was not committed, so it runs again
        assert server.count - before == 3 and {r.body_sha256 for r in server.requests[before:]} == failed_keys
    detail, headline = repo.json("metrics/detail/qa.json"), repo.json("metrics/qa.json")
    assert detail["n"] == 43 and detail["failures"]["n"] == 0 and "failed_as_wrong" not in headline
    assert not any("failed" in r for r in detail["official_equivalence"]["reasons"])  # only the stand-in's reason
    assert repo.json("metrics/run.json")["counts"] == {"questions": 43, "judged": 43, "failed": 0}
