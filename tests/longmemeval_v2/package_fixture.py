"""An official-shaped LongMemEval-V2 tier and official-shaped run folders, in tmp_path, for the package tests.

The tier is fake (6 questions, 3 per domain) but shaped as the real one: questions.jsonl, trajectories.jsonl and
haystacks/lme_v2_small.json; the pins the tests pass are the real DATA_PINS with these two files' sha256 swapped
in (so "verified against the pins" is exercised, not skipped). A run folder holds what `mnemetric v2 run` writes:
<run>/<domain>/ per_question.jsonl (rows written key by key, tests/longmemeval_v2/rows.py), aggregated_metrics.json,
run_args.json + runtime_inputs/ (token_counter.json included; by the code under test, from the run's settings), and
v2.json (a whole V2Summary, built by the run's own summary code and written by summary_file.write_summary).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mnemetric.io import sha256_file
from mnemetric.longmemeval_v2.aggregate import aggregate, write_upstream_json
from mnemetric.longmemeval_v2.aggregated import read_aggregated
from mnemetric.longmemeval_v2.combine import combine_metrics
from mnemetric.longmemeval_v2.memory import QUESTION_ONLY
from mnemetric.longmemeval_v2.per_question import read_per_question
from mnemetric.longmemeval_v2.pins import DATA_PINS, DataPins
from mnemetric.longmemeval_v2.run import summary
from mnemetric.longmemeval_v2.run_folder import write_upstream_run
from mnemetric.longmemeval_v2.summary_file import write_summary
from tests.longmemeval_v2.rows import row, write_rows

TYPES = ("static-environment", "errors-gotchas", "procedure-abs")
IDS = {"web": ["w1", "w2", "w3"], "enterprise": ["e1", "e2", "e3"]}
SENT = {"max_tokens": 20000, "temperature": 0.6, "top_p": 0.95, "extra_body": {"top_k": 20}}
CHECKER = {"name": "llm", "kind": "llm", "model": "gpt-5.2", "reasoning_effort": "medium",
           "max_completion_tokens": 4096}
COUNTER = {"name": "qwen3.5-9b-processor", "official": True, "note": None}


def official_tier(tmp: Path, *, extra_question: bool = False) -> tuple[Path, DataPins]:
    root = tmp / "lme-v2"
    (root / "haystacks").mkdir(parents=True)
    questions = []
    for domain, ids in IDS.items():
        for qid, qtype in zip(ids, TYPES):
            spec = "llm_abstention_checker" if qtype.endswith("-abs") else "norm_phrase_set_match|separators=,"
            questions.append({"id": qid, "domain": domain, "question_type": qtype, "question": f"question {qid}?",
                              "image": None, "answer": "gold answer", "eval_function": spec})
    if extra_question:
        questions.append({**questions[0], "id": "w4"})
    (root / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions))
    (root / "trajectories.jsonl").write_text(json.dumps({"id": "t1", "domain": "web"}) + "\n")
    (root / "haystacks" / "lme_v2_small.json").write_text(json.dumps({q["id"]: ["t1", "t2"] for q in questions}))
    pins = DATA_PINS.with_sha256("questions.jsonl", sha256_file(root / "questions.jsonl"), "test tier")
    pins = pins.with_sha256("haystacks/lme_v2_small.json", sha256_file(root / "haystacks" / "lme_v2_small.json"))
    return root, pins


def settings(data_root: Path, **over: Any) -> dict[str, Any]:
    return {"data_root": str(data_root), "haystack": "small", "max_tokens": 200000,
            "memory": {"_target_": "x.y", "name": "mymem", "top_k": 5},
            "reader": {"name": "openai", "model": "Qwen/Qwen3.5-9B", "base_url": "http://reader.test/v1"}, **over}


def official_run(tmp: Path, data_root: Path, name: str = "run", *, latency: float = 2.0, correct: int = 1,
                 ids: dict[str, list[str]] | None = None, sent: dict | None = None, memory: str = "mymem",
                 official: bool = True, tier: str = "small", counter: dict | None = COUNTER) -> Path:
    """A run folder over the fake tier (``correct`` questions right per domain, each query ``latency`` s)."""
    run = tmp / name
    s = settings(data_root)
    s["memory"] = {**s["memory"], "name": memory}
    typed, aggregated = {}, {}
    for domain, qids in (ids or IDS).items():
        folder = run / domain
        folder.mkdir(parents=True)
        rows = [row(q, TYPES[i % 3], correct=i < correct, query=latency, index=i,
                    reader_params_sent=dict(sent or SENT)) for i, q in enumerate(qids)]
        write_rows(folder / "per_question.jsonl", rows)
        typed[domain] = list(read_per_question(folder / "per_question.jsonl"))
        write_upstream_json(folder / "aggregated_metrics.json", aggregate(typed[domain]))
        aggregated[domain] = read_aggregated(folder / "aggregated_metrics.json")
        write_upstream_run(folder, domain, typed[domain], settings=s, checker=CHECKER, counter=counter,
                           started_at_utc="2026-12-01T10:00:00+00:00")
    reasons = [] if official else ["reader 'offline' is not the official Qwen/Qwen3.5-9B reader with pinned texts"]
    combined = combine_metrics(aggregated["web"], aggregated["enterprise"]).to_record()
    v2 = {"haystack": "lme_v2_small.json", "tier": tier, "domains": list(typed), "memory": memory,
          "memory_query_context": QUESTION_ONLY, "reader": s["reader"]["name"], "checker": CHECKER["name"],
          "token_counter": COUNTER["name"], "memory_context_max_tokens": s["max_tokens"]}
    write_summary(run / "v2.json", summary(v2, typed, aggregated, combined, reasons))
    return run


def filled_description(tmp: Path) -> Path:
    path = tmp / "SYSTEM_DESCRIPTION.md"
    path.write_text("# System description\n\nmymem: a test memory.\n")
    return path


def code_file(tmp: Path) -> Path:
    path = tmp / "mymem.py"
    path.write_text("def query(q):\n    return []\n")
    return path
