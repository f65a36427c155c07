"""`mnemetric answer` and stage answer are one path: on the same inputs they write the same bytes
(hypotheses, failures sidecar, usage sidecar); the command's answers on hand-written contexts are
worked out by hand; bad input is one message naming file, line and field, never a traceback."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT
from tests.longmemeval.answer_fixtures import write_inputs
from tests.support.openai_server import FakeOpenAIServer

ADAPTED = Path("data") / "adapted" / "sample.jsonl"  # DVC outputs of the sample run, in sample_run_outputs
QUESTIONS = Path("data") / "suites" / "sample-full.questions.jsonl"
CONTEXTS = Path("data") / "runs" / "contexts.jsonl"
UNKNOWN = "I don't know: the conversation history does not mention this."


def _run(args: list, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=300)


def cli(*args, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return _run(["-m", "mnemetric.cli", *args], cwd, env)


def _workspace(root: Path, run: Path, reader: str, n: int) -> Path:
    """A stage workspace: params.yaml (reader option ``reader``), the sample's adapted file (the command's
    input) and questions file (the stage's) and its first ``n`` contexts, from the reproduced sample run ``run``."""
    root.mkdir()
    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    params["reader"] = yaml.safe_load((ROOT / "conf" / "reader" / f"{reader}.yaml").read_text(encoding="utf-8"))
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    (root / "data" / "adapted").mkdir(parents=True)
    shutil.copy(run / ADAPTED, root / ADAPTED)
    (root / "data" / "suites").mkdir()
    shutil.copy(run / QUESTIONS, root / QUESTIONS)
    (root / "data" / "runs").mkdir()
    lines = (run / CONTEXTS).read_text(encoding="utf-8").splitlines(keepends=True)[:n]
    (root / "data" / "runs" / "contexts.jsonl").write_text("".join(lines), encoding="utf-8")
    return root


def _stage_and_cli(tmp_path: Path, run: Path, reader: str, n: int, env: dict | None = None, cache=lambda name: {},
                   failed: int = 0):
    ws = _workspace(tmp_path / "ws", run, reader, n)
    stage = _run(["-m", "mnemetric.stages.answer"], ws, {**(env or {}), **cache("stage")})
    assert stage.returncode == (3 if failed else 0), stage.stderr  # a failed question: files written, exit 3
    if failed:
        assert f"answer: {failed} of {n} question(s) FAILED" in stage.stderr and ": dvc repro" in stage.stderr
    out = tmp_path / "cli" / "hyp.jsonl"
    out.parent.mkdir()
    res = cli("answer", ws / "data/runs/contexts.jsonl", "--adapted", ws / "data/adapted/sample.jsonl",
              "--reader", reader, "--out", out, "--usage", tmp_path / "cli" / "usage.json", cwd=tmp_path / "cli",
              env={**(env or {}), **cache("cli")})
    assert res.returncode == (3 if failed else 0), res.stderr
    if failed:
        assert ": mnemetric answer " in res.stderr and "--allow-partial" in res.stderr
    pairs = {"hypotheses": (ws / "data/runs/hypotheses.jsonl", out),
             "failures": (ws / "data/runs/hypotheses.jsonl.failures.jsonl", Path(f"{out}.failures.jsonl")),
             "usage": (ws / "data/runs/answer-usage.json", tmp_path / "cli" / "usage.json")}
    return {k: (a.read_bytes(), b.read_bytes()) for k, (a, b) in pairs.items()}


def test_stage_and_cli_write_the_same_bytes_with_the_extractive_reader(tmp_path: Path, sample_run_outputs: Path):
    files = _stage_and_cli(tmp_path, sample_run_outputs, "extractive", n=43)
    for name, (stage, command) in files.items():
        assert stage == command, name
    assert files["hypotheses"][0].count(b"\n") == 43 and files["failures"][0] == b""


def test_stage_and_cli_write_the_same_bytes_with_a_chat_reader_and_a_failed_question(tmp_path: Path,
                                                                                      sample_run_outputs: Path):
    run = sample_run_outputs
    bad = json.loads((run / CONTEXTS).read_text(encoding="utf-8").splitlines()[1])["question_id"]
    question = next(json.loads(x)["eval"]["question"] for x in (run / ADAPTED).read_text(encoding="utf-8").splitlines()
                    if json.loads(x)["eval"]["question_id"] == bad)
    with FakeOpenAIServer(reply=lambda messages: "The answer is 42.",
                          non_answer_for=lambda b: "refusal" if question in b["messages"][-1]["content"] else None,
                          model_map={"gpt-4o-2024-08-06": "gpt-4o-2024-08-06"}) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test"}
        files = _stage_and_cli(tmp_path, run, "openai", n=4, env=env, failed=1,
                               cache=lambda name: {"MNEMETRIC_CACHE_DIR": str(tmp_path / f"cache-{name}")})
    for name, (stage, command) in files.items():
        assert stage == command, name
    hyps = [json.loads(x) for x in files["hypotheses"][0].decode().splitlines()]
    assert len(hyps) == 3 and bad not in {h["question_id"] for h in hyps}
    assert {h["hypothesis"] for h in hyps} == {"The answer is 42."}
    (failure,) = [json.loads(x) for x in files["failures"][0].decode().splitlines()]
    assert failure["question_id"] == bad and failure["stage"] == "answer"
    assert json.loads(files["usage"][0])["responses"] == 3  # the refused question's reply is not work done


def test_cli_extractive_answers_on_hand_written_contexts(tmp_path: Path):
    contexts, adapted = write_inputs(tmp_path)
    res = cli("answer", contexts, "--adapted", adapted, "--reader", "extractive", "--out", tmp_path / "h.jsonl",
              cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "h.jsonl").read_text(encoding="utf-8") == (
        '{"question_id": "q-bike", "hypothesis": "Your new bike color sounds great!", "reader": "extractive"}\n'
        '{"question_id": "q-car", "hypothesis": "I like the park near the car wash.", "reader": "extractive"}\n'
        f'{{"question_id": "q-dog", "hypothesis": "{UNKNOWN}", "reader": "extractive"}}\n')
    assert (tmp_path / "h.jsonl.failures.jsonl").read_text() == ""
    assert json.loads((tmp_path / "h.jsonl.usage.json").read_text())["responses"] == 0


def test_cli_dry_run_of_a_chat_reader_sends_nothing(tmp_path: Path):
    contexts, adapted = write_inputs(tmp_path)
    with FakeOpenAIServer() as server:
        res = cli("answer", contexts, "--adapted", adapted, "--reader", "openai", "--out", tmp_path / "h.jsonl",
                  "--dry-run", cwd=tmp_path, env={"OPENAI_BASE_URL": server.base_url,
                                                   "MNEMETRIC_CACHE_DIR": str(tmp_path / "cache")})
        assert server.count == 0
    assert res.returncode == 0, res.stderr
    plan = json.loads(res.stdout)
    assert (plan["requests_total"], plan["cached"], plan["to_send"]) == (3, 0, 3)
    assert not (tmp_path / "h.jsonl").exists()


def test_cli_executor_option_takes_a_yaml_file_with_a_target(tmp_path: Path):
    contexts, adapted = write_inputs(tmp_path)
    mine = tmp_path / "mine.yaml"
    mine.write_text("_target_: mnemetric.execute.immediate.ImmediateExecutor\n_partial_: true\nname: mine\n")
    with FakeOpenAIServer() as server:
        res = cli("answer", contexts, "--adapted", adapted, "--reader", "openai", "--out", tmp_path / "h.jsonl",
                  "--executor", mine, "--dry-run", cwd=tmp_path,
                  env={"OPENAI_BASE_URL": server.base_url, "MNEMETRIC_CACHE_DIR": str(tmp_path / "cache")})
        assert server.count == 0
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["to_send"] == 3


@pytest.mark.parametrize("case", ["missing", "bad-line", "unknown-reader", "unknown-executor", "not-an-executor"])
def test_cli_errors_name_the_problem_without_a_traceback(tmp_path: Path, case: str):
    contexts, adapted = write_inputs(tmp_path)
    reader, expected, extra = "extractive", "", []
    if case == "missing":
        contexts, expected = tmp_path / "absent.jsonl", "absent.jsonl"
    elif case == "bad-line":
        lines = contexts.read_text(encoding="utf-8").splitlines()
        bad = json.loads(lines[1])
        del bad["items"][0]["messages"][0]["role"]
        contexts.write_text("\n".join([lines[0], json.dumps(bad), lines[2]]) + "\n", encoding="utf-8")
        expected = f"{contexts}: line 2 (q-car): field 'items[0].messages[0].role': missing"
    elif case == "unknown-executor":
        extra, expected = ["--executor", "no-such-executor"], "executor/no-such-executor"
    elif case == "not-an-executor":
        bad = tmp_path / "bad.yaml"
        bad.write_text("_target_: collections.OrderedDict\nname: bad\n")
        extra, expected = ["--executor", bad], f"{bad}._target_: OrderedDict is not an executor"
    else:
        reader, expected = "no-such-reader", "reader/no-such-reader"
    res = cli("answer", contexts, "--adapted", adapted, "--reader", reader, "--out", tmp_path / "h.jsonl", *extra,
              cwd=tmp_path)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert expected in res.stderr
    assert not (tmp_path / "h.jsonl").exists()
