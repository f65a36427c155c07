"""Moving a run between machines (issue 16 item 6): a local-directory DVC remote and a bare git remote.

Machine 1 (the reproduced sample, committed) runs an experiment whose reader calls a model (the loopback
server), exports its LLM cache (`mnemetric cache export`), and pushes: `dvc exp push` + `dvc push --run-cache`.
Machine 2 is a fresh `git clone` with an empty cache: `dvc exp pull`, `dvc exp apply` + `dvc pull --run-cache`,
`mnemetric verify`; then `dvc repro` runs no stage and the model sees 0 requests; after `mnemetric cache import`
(twice: 0 rows the second time) re-running the reader stage sends 0 requests, writes the same bytes, and
`dvc status` stays clean. One test: every step is a `dvc`/`mnemetric` process (slow on a loaded machine).
"""

from __future__ import annotations

import re

from tests.e2e.conftest import DvcRepo
from tests.support.openai_server import FakeOpenAIServer


def reply(messages):
    return "The answer is Miso."


def test_a_run_moves_to_a_second_clone_with_no_request_and_no_stage_rerun(committed_repro, tmp_path):
    one = committed_repro
    origin, store, export = tmp_path / "origin.git", tmp_path / "dvc-store", tmp_path / "llm-cache.jsonl"
    one.run("git", "init", "-q", "--bare", "-b", "main", str(origin))
    one.run("git", "remote", "add", "origin", str(origin))
    one.dvc("remote", "add", "-d", "store", str(store))
    one.run("git", "commit", "-qam", "a DVC remote")
    one.run("git", "push", "-q", "origin", "main")
    with FakeOpenAIServer(reply=reply) as server:
        llm = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test-remote",
               "MNEMETRIC_CACHE_DIR": str(tmp_path / "cache-1")}
        one.dvc("exp", "run", "-n", "llm", "-S", "reader=openai", env=llm)
        paid = server.count
        assert paid > 0
        moved = one.run("mnemetric", "cache", "export", str(export), env=llm).stdout
        assert f"exported {paid} response(s)" in moved
        one.dvc("exp", "push", "origin", "llm")
        one.dvc("push", "--run-cache")

        two = DvcRepo(tmp_path / "two", one.env)
        one.run("git", "clone", "-q", "-b", "main", str(origin), str(two.path))
        llm2 = {**llm, "MNEMETRIC_CACHE_DIR": str(tmp_path / "cache-2")}
        two.dvc("exp", "pull", "origin", "llm", env=llm2)
        two.dvc("exp", "apply", "llm", env=llm2)
        two.dvc("pull", "--run-cache", env=llm2)
        verified = two.run("mnemetric", "verify", env=llm2).stdout
        assert "ok       data/runs/hypotheses.jsonl\n" in verified and "DRIFT" not in verified and "MISSING" not in verified
        assert two.json("metrics/qa.json") == one.json("metrics/qa.json")
        repro = two.dvc("repro", env=llm2).stdout
        assert re.findall(r"Running stage '([^']+)'", repro) == [], repro
        assert server.count == paid  # nothing asked on machine 2

        first = two.run("mnemetric", "cache", "import", str(export), env=llm2).stdout
        again = two.run("mnemetric", "cache", "import", str(export), env=llm2).stdout
        assert f"{paid} of {paid} response(s)" in first and f"0 of {paid} response(s)" in again
        before = (two.path / "data/runs/hypotheses.jsonl").read_bytes()
        two.dvc("repro", "--force", "--single-item", "answer", env=llm2)  # the reader again, from the imported cache
        assert server.count == paid
        assert (two.path / "data/runs/hypotheses.jsonl").read_bytes() == before
        assert "up to date" in two.dvc("status", env=llm2).stdout
