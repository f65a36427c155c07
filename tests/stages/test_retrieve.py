"""Stage retrieve: the suite read typed (read_suite), the contexts written from typed Context objects,
the usage sidecar through write_usage (its bytes by hand); a bad suite is one message naming file and
field (no traceback), with nothing written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from mnemetric.io import sha256_file

from mnemetric.longmemeval.contexts import Context

from tests.stages.conftest import ADAPTED, run_stage, sample_ids, write_suite

RUNS = Path("data") / "runs"
EMPTY_USAGE = ('{\n  "responses": 0,\n  "prompt_tokens": 0,\n  "completion_tokens": 0,\n  "usd": 0.0,\n'
               '  "unpriced_models": [],\n  "per_model": {}\n}\n')
CONTEXT_KEYS = ["question_id", "memory", "granularity", "k", "budget_tokens", "tokenizer", "tokens", "items"]
ITEM_KEYS = ["session_id", "upstream_session_id", "turn_index", "date", "messages", "truncated"]


def _run(ws: Path) -> subprocess.CompletedProcess:
    return run_stage(ws, "retrieve", timeout=300)


def test_contexts_of_the_suite_and_the_usage_sidecar_bytes(stage_workspace: Path):
    ws = stage_workspace
    ids = sample_ids(ws)
    chosen = [ids[-1], ids[0]]  # suite order differs from file order: the adapted file's order is kept
    write_suite(ws, chosen)
    done = _run(ws)
    assert done.returncode == 0, done.stderr
    assert (ws / RUNS / "retrieve-usage.json").read_text(encoding="utf-8") == EMPTY_USAGE
    lines = (ws / RUNS / "contexts.jsonl").read_text(encoding="utf-8").splitlines()
    raws = [json.loads(x) for x in lines]
    assert [r["question_id"] for r in raws] == [ids[0], ids[-1]]
    for i, raw in enumerate(raws, start=1):
        assert list(raw) == CONTEXT_KEYS and all(list(item) == ITEM_KEYS for item in raw["items"])
        ctx = Context.from_record(raw, file="contexts.jsonl", line=i)
        assert (ctx.memory, ctx.granularity, ctx.k, ctx.budget_tokens, ctx.tokenizer) == \
            ("bm25", "session", 10, 6000, "wordpunct-v1")
        assert 0 < len(ctx.items) <= 10 and ctx.tokens <= 6000
    log = (ws / RUNS / "retrieval.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(x)["question_id"] for x in log] == [ids[0], ids[-1]]


OPENS = r"""
import os, runpy, sys
target, log = os.path.realpath(sys.argv[1]), sys.argv[2]

def hook(event, args):  # CPython's audit event of every open(): the name of the function that opened the file
    if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)) and \
            os.path.realpath(os.fsdecode(args[0])) == target:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(sys._getframe(1).f_code.co_name + "\n")

sys.addaudithook(hook)
sys.argv = ["retrieve"]
runpy.run_module("mnemetric.stages.retrieve", run_name="__main__")
"""


@pytest.mark.parametrize("shard", [None, "2/3"])
def test_the_adapted_file_is_read_in_one_pass(stage_workspace: Path, shard: str | None):
    """GBs at M: the stage streams the adapted file once (the suite's ids and types, which a shard's assignment
    needs first, come from the question index), as the real process's opens of that file show; a shard's
    manifests (one per output, each with its lineage) name its sha256, hashed once per run."""
    ws = stage_workspace
    ids = sample_ids(ws)
    write_suite(ws, [ids[-1], ids[0], ids[3]] if shard is None else ids)
    if shard is not None:
        params = yaml.safe_load((ws / "params.yaml").read_text(encoding="utf-8"))
        params["executor"] |= {"shard": shard}
        (ws / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    log = ws / "opens.txt"
    done = subprocess.run([sys.executable, "-c", OPENS, str(ws / ADAPTED), str(log)], cwd=ws, capture_output=True,
                          text=True, env=os.environ.copy(), timeout=300)
    assert done.returncode == 0, done.stderr
    # file_problem: the 6-byte look at its head (a regular file, not compressed); read_adapted_lines: the one
    # pass (its lines are parsed where the task runs)
    assert log.read_text(encoding="utf-8").splitlines() == \
        ["file_problem", "read_adapted_lines"] + (["sha256_file"] if shard else [])
    log_lines = (ws / RUNS / "retrieval.jsonl").read_text(encoding="utf-8").splitlines()
    if shard is None:
        assert [json.loads(x)["question_id"] for x in log_lines] == [ids[0], ids[3], ids[-1]]
    else:
        manifest = json.loads((ws / RUNS / "retrieval.jsonl.shard.json").read_text(encoding="utf-8"))
        assert manifest["universe"] == len(ids) and len(log_lines) == len(manifest["lines"]["question_ids"]) > 0


def test_a_bad_suite_names_its_file_and_field(stage_workspace: Path):
    ws = stage_workspace
    write_suite(ws, sample_ids(ws)[:2], ids_sha256="0" * 64)
    done = _run(ws)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "sample-full.json" in done.stderr and "'ids_sha256'" in done.stderr, done.stderr
    assert not (ws / RUNS).exists()


def test_executor_shard_runs_one_shard_of_the_suite_with_its_manifest(stage_workspace: Path):
    ws = stage_workspace
    ids = sample_ids(ws)
    write_suite(ws, ids)
    params = yaml.safe_load((ws / "params.yaml").read_text(encoding="utf-8"))
    params["executor"] |= {"shard": "2/3", "workers": 2}
    (ws / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    done = _run(ws)
    assert done.returncode == 0, done.stderr
    log = [json.loads(x)["question_id"] for x in (ws / RUNS / "retrieval.jsonl").read_text(encoding="utf-8").splitlines()]
    manifest = json.loads((ws / RUNS / "retrieval.jsonl.shard.json").read_text(encoding="utf-8"))
    assert manifest["shard"] == "2/3" and manifest["universe"] == len(ids)
    assert manifest["lines"]["question_ids"] == log and len(ids) // 3 <= len(log) <= len(ids) // 3 + 1
    assert [k[0] for k in manifest["lines"]["keys"]] == sorted(ids.index(q) for q in log)
    cost = json.loads((ws / params["paths"]["memory_cost"]).read_text(encoding="utf-8"))  # bound to this shard's
    assert cost["part"] == {"shard": "2/3", "outputs_sha256": [sha256_file(ws / params["paths"][name]) for name in
                                                               ("retrieval_log", "contexts")]}  # `merge --memory-cost`
