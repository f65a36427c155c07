"""Differential parity against upstream's own code, read at run time from a local checkout.

Opt in with MNEMETRIC_LONGMEMEVAL_DIR=<a checkout of xiaowu0162/LongMemEval at 9e0b455f>; no
upstream code is in this repository. Each upstream file is verified against the sha256 pinned in
data/inventory/upstream-task-inventory.json (evaluate_qa.py: the judge's own pin) before it is used.
Comparisons are exact (==): retrieval metrics against eval_utils.py, judge prompts against
get_anscheck_prompt, QA aggregation against print_qa_metrics.py run as a script, and our
retrieval logs read by print_retrieval_metrics.py.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mnemetric.longmemeval.judge.upstream_file import SHA256 as EVALUATE_QA_SHA256
from mnemetric.longmemeval.judge.upstream_prompts import load_prompt_set
from mnemetric.longmemeval.scoring.qa import QUESTION_TYPES, check_items, point_estimates
from mnemetric.longmemeval.scoring.retrieval import evaluate_question

from tests.conftest import ROOT

KS = (1, 3, 5, 10, 30, 50)


def pins() -> dict[str, str]:
    inv = json.loads((ROOT / "data/inventory/upstream-task-inventory.json").read_text())
    pinned = {s["path"]: s["sha256"] for s in inv["families"][0]["reviewed_sources"]}
    return pinned | {"src/evaluation/evaluate_qa.py": EVALUATE_QA_SHA256}


@pytest.fixture(scope="module")
def checkout() -> Path:
    root = os.environ.get("MNEMETRIC_LONGMEMEVAL_DIR")
    if not root:
        pytest.skip("set MNEMETRIC_LONGMEMEVAL_DIR to a LongMemEval checkout at 9e0b455f to run parity checks")
    return Path(root)


def upstream_file(checkout: Path, rel: str) -> str:
    path = checkout / rel
    data = path.read_bytes()
    assert hashlib.sha256(data).hexdigest() == pins()[rel], f"{path} is not the pinned revision"
    return data.decode("utf-8")


def random_case(rng: random.Random, granularity: str) -> tuple[list[str], list[int]]:
    ids: list[str] = []
    for s in range(rng.randint(1, 25)):
        base = rng.choice(["answer_", "noans_", "sharegpt_", ""]) + f"{s:04x}"
        ids += [base] if granularity == "session" else [f"{base}_{2 * t + 1}" for t in range(rng.randint(1, 6))]
    rankings = list(range(len(ids)))
    rng.shuffle(rankings)
    return ids, rankings


def test_retrieval_metrics_equal_eval_utils(checkout, monkeypatch):
    ns: dict = {}
    if not hasattr(np, "asfarray"):  # removed in NumPy 2; upstream pins numpy 1.26 where it exists
        monkeypatch.setattr(np, "asfarray", lambda x: np.asarray(x, dtype=np.float64), raising=False)
    exec(compile(upstream_file(checkout, "src/retrieval/eval_utils.py"), "eval_utils.py", "exec"), ns)  # noqa: S102
    rng = random.Random(7)
    for _ in range(1000):
        granularity = rng.choice(["session", "turn"])
        ids, rankings = random_case(rng, granularity)
        correct = [i for i in ids if "answer" in i]
        ours = evaluate_question([ids[i] for i in rankings], ids, set(correct), KS, granularity)
        for k in KS:
            names = [f"{m}@{k}" for m in ("recall_any", "recall_all", "ndcg_any")]
            level = "turn" if granularity == "turn" else "session"
            assert [ours[level][n] for n in names] == [float(x) for x in ns["evaluate_retrieval"](rankings, correct, ids, k=k)]
            if granularity == "turn":
                session = ns["evaluate_retrieval_turn2session"](rankings, correct, ids, k=k)
                assert [ours["session"][n] for n in names] == [float(x) for x in session]


@pytest.mark.task("longmemeval", "single-session-user")
@pytest.mark.task("longmemeval", "single-session-assistant")
@pytest.mark.task("longmemeval", "single-session-preference")
@pytest.mark.task("longmemeval", "temporal-reasoning")
@pytest.mark.task("longmemeval", "knowledge-update")
@pytest.mark.task("longmemeval", "multi-session")
def test_judge_prompts_equal_get_anscheck_prompt(checkout, tmp_path):
    tree = ast.parse(upstream_file(checkout, "src/evaluation/evaluate_qa.py"))
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "get_anscheck_prompt")
    ns: dict = {}
    exec(compile(ast.Module([fn], []), "evaluate_qa.py", "exec"), ns)  # the one pure function only  # noqa: S102
    prompts = load_prompt_set(str(checkout), tmp_path, download=False)
    assert prompts.is_pinned
    for qtype in QUESTION_TYPES:
        for qid in ("abc", "abc_abs"):
            for answer in ("Miso", 15, 2.5):
                expected = ns["get_anscheck_prompt"](qtype, "Q {x}?", answer, "resp {}", abstention="_abs" in qid)
                assert prompts.render(qid, qtype, "Q {x}?", answer, "resp {}") == expected


@pytest.mark.task("longmemeval", "single-session-user")
@pytest.mark.task("longmemeval", "single-session-assistant")
@pytest.mark.task("longmemeval", "single-session-preference")
@pytest.mark.task("longmemeval", "temporal-reasoning")
@pytest.mark.task("longmemeval", "knowledge-update")
@pytest.mark.task("longmemeval", "multi-session")
def test_qa_aggregation_equals_print_qa_metrics(checkout, tmp_path):
    script = checkout / "src/evaluation/print_qa_metrics.py"
    upstream_file(checkout, "src/evaluation/print_qa_metrics.py")
    rng = random.Random(3)
    for trial in range(20):
        items = [(f"q{i}" + ("_abs" if rng.random() < 0.1 else ""), QUESTION_TYPES[i % 6] if i < 6 else
                  rng.choice(QUESTION_TYPES), rng.random() < 0.6) for i in range(rng.randint(6, 120))]
        (tmp_path / "ref.json").write_text(json.dumps([{"question_id": q, "question_type": t} for q, t, _ in items]))
        (tmp_path / "judged").write_text("".join(json.dumps(
            {"question_id": q, "autoeval_label": {"model": "gpt-4o-2024-08-06", "label": lab}}) + "\n" for q, _, lab in items))
        out = subprocess.run([sys.executable, str(script), str(tmp_path / "judged"), str(tmp_path / "ref.json")],
                             capture_output=True, text=True, check=True).stdout
        ours = point_estimates(check_items(items))
        printed = dict(re.findall(r"^\t?([\w-]+(?: Accuracy)?): ([\d.na]+)", out.replace("Task-averaged", "Task_averaged"), re.M))
        assert float(printed["Task_averaged Accuracy"]) == round(ours["task_averaged"], 4), trial
        assert float(printed["Overall Accuracy"]) == round(ours["overall"], 4)
        for t in QUESTION_TYPES:
            assert float(printed[t]) == round(ours["per_type"][t]["accuracy"], 4)
        if ours["abstention"]["n"]:
            assert float(printed["Abstention Accuracy"]) == round(ours["abstention"]["accuracy"], 4)


@pytest.mark.parametrize("granularity", ["session", "turn"])
@pytest.mark.task("longmemeval", "abstention")
def test_our_retrieval_logs_read_by_print_retrieval_metrics(checkout, tmp_path, granularity):
    from mnemetric.longmemeval.adapted import SessionAdapter
    from mnemetric.longmemeval.instance import load_instances
    from mnemetric.longmemeval.scoring.score_retrieval import score_retrieval_log
    from mnemetric.longmemeval.memory.bm25 import UpstreamBM25
    from mnemetric.longmemeval.harness import retrieve_all

    script = checkout / "src/evaluation/print_retrieval_metrics.py"
    upstream_file(checkout, "src/evaluation/print_retrieval_metrics.py")
    adapter = SessionAdapter("session-v3", "mnemetric.longmemeval-session/v3")
    records = [adapter.adapt(i, n) for n, i in enumerate(load_instances(ROOT / "data/sample/longmemeval_sample.json"))]
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line, _ in retrieve_all(UpstreamBM25(), records, granularity, 10, 6000)))
    out = subprocess.run([sys.executable, str(script), str(log)], capture_output=True, text=True, check=True).stdout
    ours = score_retrieval_log(log, granularity, "longmemeval-session-upstream-v1").to_record()["aggregate"]["exclude_abs"]
    sections = dict(zip(("session", "turn"), out.split("Turn-level metrics:")))
    for level, text in sections.items():
        printed = {k: float(v) for k, v in re.findall(r"([\w@]+) = ([\d.]+)", text)}
        if level == "turn" and granularity == "session":
            assert printed == {}  # upstream prints an empty turn line for session logs
            continue
        assert printed and all(round(ours[level][k], 4) == v for k, v in printed.items()), (level, printed)
