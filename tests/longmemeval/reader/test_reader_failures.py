"""A reader non-answer is a failed question, never an empty hypothesis the judge would grade.

The stages retrieve → answer (reader=openai against the local server) → judge (lexical) →
qa_metrics run as real subprocesses in a workspace (no DVC). Two questions get non-answers from
the reader (empty content, finish_reason "content_filter"): they get no hypothesis line, the
answer stage's ``<hypotheses>.failures.jsonl`` names them, the judge does not judge them and
carries them into ``<judged>.failures.jsonl``, and qa_metrics counts them as failed. Before this
change the reader wrote ``"hypothesis": ""`` for them and the judge graded that empty answer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.support.openai_server import FakeOpenAIServer  # noqa: E402

SECRET = "sk-test-READER"


def stage(name: str, ws: Path, env: dict) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", f"mnemetric.stages.{name}"], cwd=ws, env=env, capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, f"{name}: {done.stderr}"
    return done


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def workspace(tmp_path: Path) -> tuple[Path, dict, list]:
    from hydra.utils import instantiate

    from mnemetric.longmemeval.adapted import read_adapted
    from mnemetric.config import compose_to
    from mnemetric.longmemeval.adapt import adapt_file

    ws = tmp_path / "ws"
    ws.mkdir()
    # keep the partial result (without it the answer stage exits 3 after writing: tests/longmemeval/judge)
    compose_to(ws / "params.yaml", ROOT / "conf", ["reader=openai", "llm.max_concurrency=2", "llm.allow_partial=true"])
    params = yaml.safe_load((ws / "params.yaml").read_text())
    adapt_file(instantiate(params["adapter"]), ROOT / params["variant"]["path"], ws / params["paths"]["adapted"])
    return ws, params, list(read_adapted(ws / params["paths"]["adapted"]))


def test_reader_non_answers_are_failed_questions_carried_through_judge_and_metrics(tmp_path):
    ws, params, records = workspace(tmp_path)
    empty_q, filtered_q = records[2].eval.question_id, records[7].eval.question_id
    texts = {records[2].memory.query.text: "empty_content", records[7].memory.query.text: "content_filter"}

    def non_answer(body: dict) -> str | None:
        content = body["messages"][-1]["content"]
        return next((kind for text, kind in texts.items() if text in content), None)

    with FakeOpenAIServer(non_answer_for=non_answer) as srv:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MNEMETRIC_"))}
        env |= {"OPENAI_BASE_URL": srv.base_url, "OPENAI_API_KEY": SECRET,
                "MNEMETRIC_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT / "src")}
        for name in ("suite", "retrieve"):
            stage(name, ws, env)
        answered = stage("answer", ws, env)
        n = len(records)
        assert srv.count == n + 2  # the two failed ones asked twice
        assert "answer: PARTIAL result kept (allow_partial): 2 of" in answered.stderr
    assert f"{empty_q} (answer, gpt-4o-2024-08-06): content is empty" in answered.stderr
    assert f"{filtered_q} (answer, gpt-4o-2024-08-06): finish_reason 'content_filter'" in answered.stderr
    hyp_path = ws / params["paths"]["hypotheses"]
    hyps = lines(hyp_path)
    assert {h["question_id"] for h in hyps} == {r.eval.question_id for r in records} - {empty_q, filtered_q}
    assert all(h["hypothesis"] for h in hyps) and all("cached" not in h for h in hyps)
    reader_failed = lines(Path(f"{hyp_path}.failures.jsonl"))
    assert [(f["question_id"], f["stage"]) for f in reader_failed] == [(empty_q, "answer"), (filtered_q, "answer")]

    stage("judge", ws, env)  # lexical: offline
    judged_path = ws / params["paths"]["judged"]
    assert len(lines(judged_path)) == n - 2
    assert lines(Path(f"{judged_path}.failures.jsonl")) == reader_failed  # carried, not judged
    stage("qa_metrics", ws, env)
    qa_file = ws / params["paths"]["metrics_qa"]
    m = json.loads((qa_file.parent / "detail" / qa_file.name).read_text())  # counts and failures: the detail view
    assert m["n"] == n - 2 and m["failures"] == {"n": 2, "by_stage": {"answer": 2},
                                                 "by_reason": {"content is empty": 1,
                                                               "finish_reason 'content_filter'": 1},
                                                 "question_ids": [empty_q, filtered_q]}
    assert m["cost"]["answer"]["responses"] == n - 2  # only answers that were used
    run_log = lines(ws / ".mnemetric" / "run-log.jsonl")
    answer_entry = next(e for e in run_log if e["stage"] == "answer")
    assert (answer_entry["sent"], answer_entry["non_answers"], answer_entry["failed"]) == (n + 2, 4, 2)
