"""`mnemetric judge`, `mnemetric score-qa` and `mnemetric cache` as a user runs them (subprocesses)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support.openai_server import FakeOpenAIServer
from tests.support.standin_evaluate_qa import write_standin

from .conftest import ROOT

SAMPLE = ROOT / "data" / "sample" / "longmemeval_sample.json"


def cli(*args, env=None, cwd=ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mnemetric.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, **(env or {})}, timeout=300)


@pytest.fixture()
def files(tmp_path):
    """A trimmed reference (4 fields, as upstream needs) and upstream-format hypotheses."""
    ref = [{k: i[k] for k in ("question_id", "question_type", "question", "answer")} for i in json.loads(SAMPLE.read_text())]
    (tmp_path / "ref.json").write_text(json.dumps(ref))
    hyps = [{"question_id": r["question_id"], "hypothesis": f"I think it is {r['answer']}."} for r in ref]
    (tmp_path / "hyp.jsonl").write_text("".join(json.dumps(h) + "\n" for h in hyps))
    return tmp_path, ref


def test_lexical_judge_writes_next_to_the_hypotheses(files):
    tmp, ref = files
    out = cli("judge", tmp / "hyp.jsonl", tmp / "ref.json", "--judge", "lexical")
    assert out.returncode == 0, out.stderr
    lines = [json.loads(x) for x in (tmp / "hyp.jsonl.eval-results-lexical").read_text().splitlines()]
    assert len(lines) == len(ref) and all(set(x["autoeval_label"]) == {"model", "label"} for x in lines)


def reply(messages):
    return "yes" if "I think" in messages[-1]["content"] else "no"


def test_upstream_judge_dry_run_then_real_then_free_rerun(files):
    tmp, ref = files
    sha = write_standin(tmp / "LongMemEval")
    with FakeOpenAIServer(reply=reply, model_map={"gpt-4o-2024-08-06": "gpt-4o-2024-08-06"}) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test"}
        args = ["judge", tmp / "hyp.jsonl", tmp / "ref.json", "--longmemeval-dir", tmp / "LongMemEval",
                "--evaluate-qa-sha256", sha]
        dry = cli(*args, "--dry-run", env=env)
        assert dry.returncode == 0, dry.stderr
        plan = json.loads(dry.stdout)
        assert (plan["requests_total"], plan["cached"], plan["to_send"]) == (len(ref), 0, len(ref))
        assert plan["estimated_usd"] > 0 and server.count == 0
        first = cli(*args, env=env)
        assert first.returncode == 0, first.stderr
        assert server.count == len(ref) and f"requests sent {len(ref)}" in first.stderr
        judged = [json.loads(x) for x in (tmp / "hyp.jsonl.eval-results-gpt-4o").read_text().splitlines()]
        assert all(j["autoeval_label"] == {"model": "gpt-4o-2024-08-06", "label": True} for j in judged)
        assert len({j["mnemetric_judge"]["prompt_set_sha256"] for j in judged}) == 1
        again = cli(*args, env=env)
        assert again.returncode == 0 and server.count == len(ref) and "requests sent 0" in again.stderr
        assert json.loads(cli(*args, "--dry-run", env=env).stdout)["to_send"] == 0


def test_upstream_judge_refuses_a_file_with_the_wrong_hash(files):
    tmp, _ = files
    write_standin(tmp / "LongMemEval")
    out = cli("judge", tmp / "hyp.jsonl", tmp / "ref.json", "--longmemeval-dir", tmp / "LongMemEval")
    assert out.returncode != 0 and "ecce9c4c79dc89d99534ac17b383a5cbb5b9f0c69ee98adaf0684742e3d95251" in out.stderr


def test_score_qa_aggregates_like_upstream_and_records_provenance(files):
    tmp, ref = files
    judged = [{"question_id": r["question_id"], "hypothesis": "x",
               "autoeval_label": {"model": "gpt-4o-2024-08-06", "label": i % 2 == 0}} for i, r in enumerate(ref)]
    (tmp / "judged").write_text("".join(json.dumps(j) + "\n" for j in judged))
    out = cli("score-qa", tmp / "judged", tmp / "ref.json", "--out", tmp / "qa.json")
    assert out.returncode == 0, out.stderr
    m = json.loads((tmp / "qa.json").read_text())
    assert m["overall"] == sum(i % 2 == 0 for i in range(len(ref))) / len(ref)
    assert m["n"] == len(ref) and m["abstention"]["n"] == sum("_abs" in r["question_id"] for r in ref)
    per_type = [m["per_type"][t]["accuracy"] for t in m["per_type"]]
    assert m["task_averaged"] == pytest.approx(sum(per_type) / 6, abs=1e-15)
    assert m["official_equivalence"] is False and m["official_equivalence_reasons"]  # prompt set unknown
    assert "task-averaged" in out.stdout


def test_score_qa_id_mismatch_is_an_error_unless_partial(files):
    tmp, ref = files
    judged = [{"question_id": r["question_id"], "autoeval_label": {"model": "m", "label": True}} for r in ref[:-3]]
    (tmp / "judged").write_text("".join(json.dumps(j) + "\n" for j in judged))
    out = cli("score-qa", tmp / "judged", tmp / "ref.json", "--out", tmp / "qa.json")
    assert out.returncode != 0 and ref[-1]["question_id"] in out.stderr and not (tmp / "qa.json").exists()
    out = cli("score-qa", tmp / "judged", tmp / "ref.json", "--out", tmp / "qa.json", "--allow-partial")
    assert out.returncode == 0, out.stderr
    assert json.loads((tmp / "qa.json").read_text())["coverage"]["n_judged"] == len(ref) - 3


def test_bad_hypothesis_line_names_file_line_and_field(files):
    tmp, _ = files
    (tmp / "bad.jsonl").write_text('{"question_id": "a", "hypothesis": "x"}\n{"question_id": "b"}\n')
    out = cli("judge", tmp / "bad.jsonl", tmp / "ref.json", "--judge", "lexical")
    assert out.returncode != 0 and "bad.jsonl" in out.stderr and "line 2" in out.stderr and "hypothesis" in out.stderr


def test_cache_command(tmp_path):
    out = cli("cache", "path", env={"MNEMETRIC_CACHE_DIR": str(tmp_path)})
    assert out.returncode == 0 and out.stdout.strip() == str(tmp_path)
    assert cli("cache", "stats", env={"MNEMETRIC_CACHE_DIR": str(tmp_path)}).returncode == 0
