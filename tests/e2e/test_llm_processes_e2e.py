"""Two judge STAGES at once over the same 43 questions, one cache, one local server: 43 requests.

Measured before cross-process single flight: 86 requests (each process sent all 43). Here two
workspaces (as two experiments would be) run ``python -m mnemetric.stages.judge`` at the same
moment against one MNEMETRIC_CACHE_DIR; the server must see each of the 43 requests exactly once,
both judged files must be byte-identical, and the two run logs must add up to 43 sent.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from tests.support.openai_server import FakeOpenAIServer
from tests.support.standin_evaluate_qa import write_standin

from tests.conftest import ROOT

pytestmark = pytest.mark.e2e
STAGE = [sys.executable, "-m", "mnemetric.stages.judge"]


def reply(messages: list[dict]) -> str:
    return "Yes." if "Miso" in messages[-1]["content"] else "no"


def workspace(root: Path, checkout: Path, sha: str) -> tuple[Path, dict, int]:
    """params.yaml (upstream judge on the stand-in, 4 in flight), the adapted sample, 43 hypotheses."""
    from hydra.utils import instantiate

    from mnemetric.longmemeval.adapted import read_adapted
    from mnemetric.config import compose_to
    from mnemetric.io import write_jsonl_atomic
    from mnemetric.longmemeval.questions import Question, write_questions
    from mnemetric.stages.adapt import adapt_file

    root.mkdir()
    compose_to(root / "params.yaml", ROOT / "conf", ["judge=upstream-gpt-4o", f"judge.longmemeval_dir={checkout}",
                                                     f"judge.evaluate_qa_sha256={sha}", "llm.max_concurrency=4"])
    params = yaml.safe_load((root / "params.yaml").read_text())
    adapted = root / params["paths"]["adapted"]
    adapt_file(instantiate(params["adapter"]), ROOT / params["variant"]["path"], adapted)
    records = list(read_adapted(adapted))
    qids = [r.eval.question_id for r in records]
    write_questions(root / params["paths"]["questions"], map(Question.of_adapted, records))
    write_jsonl_atomic(root / params["paths"]["hypotheses"],
                       [{"question_id": q, "hypothesis": "Miso" if i % 2 else "no idea"} for i, q in enumerate(qids)])
    return root, params, len(qids)


def test_two_judge_stages_at_once_send_each_request_once(tmp_path):
    checkout = tmp_path / "LongMemEval"
    sha = write_standin(checkout)
    (a, params, n), (b, _, _) = workspace(tmp_path / "a", checkout, sha), workspace(tmp_path / "b", checkout, sha)
    assert n == 43
    with FakeOpenAIServer(latency=0.05, reply=reply) as srv:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MNEMETRIC_"))}
        env |= {"OPENAI_BASE_URL": srv.base_url, "OPENAI_API_KEY": "sk-test-TWO",
                "MNEMETRIC_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT / "src")}
        procs = [subprocess.Popen(STAGE, cwd=ws, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for ws in (a, b)]
        outcomes = [p.communicate(timeout=300) for p in procs]
        sent = srv.keys()
    for proc, (_, err) in zip(procs, outcomes):
        assert proc.returncode == 0, err
    assert len(sent) == n and set(Counter(sent).values()) == {1}
    judged = params["paths"]["judged"]
    assert (a / judged).read_bytes() == (b / judged).read_bytes()
    assert (a / params["paths"]["judge_usage"]).read_bytes() == (b / params["paths"]["judge_usage"]).read_bytes()
    logs = [json.loads((ws / ".mnemetric" / "run-log.jsonl").read_text().splitlines()[-1]) for ws in (a, b)]
    assert sum(e["sent"] for e in logs) == n and all(e["sent"] + e["hits"] == n for e in logs)
