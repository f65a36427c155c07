"""Stage qa_metrics reads its inputs typed: the suite's questions file (read_questions), the judged lines'
traces (JudgedHypothesis.judge_trace) and the three usage sidecars (read_usage). The cost block is the
sidecars' sums (by hand below); a bad questions file or a bad sidecar is one message naming file and
field (no traceback), with nothing written."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.stages.conftest import QUESTIONS, run_stage, sample_ids, write_suite

RUNS = Path("data") / "runs"


def _usage(responses: int, prompt: int, completion: int, usd: float, model: str | None) -> dict:
    block = {"responses": responses, "prompt_tokens": prompt, "completion_tokens": completion, "usd": usd}
    per = {} if model is None else {model: block | {"resolved_models": [model]}}
    return block | {"unpriced_models": [], "per_model": per}


@pytest.fixture()
def workspace(stage_workspace: Path) -> Path:
    tmp_path = stage_workspace
    (tmp_path / RUNS).mkdir(parents=True)
    ids = sample_ids(2)
    write_suite(tmp_path, ids)
    trace = {"judge": "lexical", "official_equivalence": False}
    judged = [{"question_id": q, "hypothesis": "x", "autoeval_label": {"model": "lexical", "label": i == 0},
               "mnemetric_judge": trace} for i, q in enumerate(ids)]
    (tmp_path / RUNS / "hypotheses.jsonl.eval-results-lexical").write_text(
        "".join(json.dumps(j) + "\n" for j in judged), encoding="utf-8")
    sidecars = {"retrieve": _usage(0, 0, 0, 0.0, None), "answer": _usage(2, 100, 10, 0.25, "m-a"),
                "judge": _usage(2, 300, 2, 0.5, "m-j")}
    for stage, usage in sidecars.items():
        (tmp_path / RUNS / f"{stage}-usage.json").write_text(json.dumps(usage, indent=2), encoding="utf-8")
    return tmp_path


def _run(ws: Path) -> subprocess.CompletedProcess:
    return run_stage(ws, "qa_metrics")


def test_cost_is_the_sum_of_the_typed_sidecars_and_the_judge_is_the_traces(workspace: Path):
    done = _run(workspace)
    assert done.returncode == 0, done.stderr
    detail = json.loads((workspace / "metrics" / "detail" / "qa.json").read_text())
    total = detail["cost"]["total"]
    assert {k: total[k] for k in ("responses", "prompt_tokens", "completion_tokens", "usd")} == \
        {"responses": 4, "prompt_tokens": 400, "completion_tokens": 12, "usd": 0.75}
    assert total["per_model"] == {"m-a": {"responses": 2, "prompt_tokens": 100, "completion_tokens": 10, "usd": 0.25},
                                  "m-j": {"responses": 2, "prompt_tokens": 300, "completion_tokens": 2, "usd": 0.5}}
    assert detail["overall"] == 0.5  # one of the two judged questions labelled correct


def test_a_bad_usage_sidecar_names_its_file_and_field(workspace: Path):
    path = workspace / RUNS / "judge-usage.json"
    path.write_text(json.dumps(_usage(2, 300, 2, 0.5, "m-j") | {"responses": 3}), encoding="utf-8")
    done = _run(workspace)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert str(RUNS / "judge-usage.json") in done.stderr and "'responses'" in done.stderr, done.stderr
    assert not (workspace / "metrics").exists()


def test_a_bad_questions_file_names_its_file_line_and_field(workspace: Path):
    path = workspace / QUESTIONS
    first, *rest = path.read_text(encoding="utf-8").splitlines()
    bad = json.loads(first) | {"question_type": 6}
    path.write_text("\n".join([first, json.dumps(bad), *rest]) + "\n", encoding="utf-8")
    done = _run(workspace)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"{QUESTIONS}: line 2 ({bad['question_id']}): field 'question_type'" in done.stderr, done.stderr
    assert not (workspace / "metrics").exists()


def test_only_the_suite_questions_count(workspace: Path):
    """The questions file is the suite: its two questions are the reference, whatever the adapted file holds."""
    done = _run(workspace)
    assert done.returncode == 0, done.stderr
    assert json.loads((workspace / "metrics" / "detail" / "qa.json").read_text())["coverage"]["n_reference"] == 2
