"""Shared setup of the stage tests: a temporary workspace holding the project's params.yaml and the adapted
sample (built from the bundled sample by stage adapt, tests/conftest.py ``adapted_sample``), a suite file
written by hand (with the questions file and question index stage suite would write beside it), and a stage
run as ``python -m``."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

ADAPTED = Path("data") / "adapted" / "sample.jsonl"
SUITE = Path("data") / "suites" / "sample-full.json"
QUESTIONS = Path("data") / "suites" / "sample-full.questions.jsonl"
INDEX = Path("data") / "suites" / "sample.index.jsonl"


def sample_ids(ws: Path, n: int | None = None) -> list[str]:
    """Question ids of the adapted sample in workspace ``ws``, in file order (the first ``n``, or all)."""
    with open(ws / ADAPTED, encoding="utf-8") as fh:
        ids = [json.loads(line)["eval"]["question_id"] for line in fh if line.strip()]
    return ids if n is None else ids[:n]


def write_suite(ws: Path, ids: list[str], **changes) -> Path:
    """The suite file of ``ids`` in ``ws`` (a full suite unless ``changes`` say otherwise); its
    ids_sha256 by the rule, by hand: sha256 of the ids joined by newlines."""
    sha = hashlib.sha256("\n".join(ids).encode("utf-8")).hexdigest()
    raw = {"suite": "full", "variant": "sample", "kind": "full", "seed": 0, "size": len(ids), "ids_sha256": sha,
           "question_ids": ids} | changes
    path = ws / SUITE
    path.write_text(json.dumps(raw, indent=2), encoding="utf-8")
    write_questions_of(ws, ids if isinstance(ids, list) else [])
    return path


def write_questions_of(ws: Path, ids: list[str]) -> Path:
    """The questions file of ``ids`` (in the adapted sample's order) and the question index of the whole
    sample, as stage suite writes them (through the library's records)."""
    from mnemetric.longmemeval.adapted import read_adapted
    from mnemetric.longmemeval.questions import Question, write_questions
    from mnemetric.longmemeval.suite import QuestionMeta, write_question_index

    records = list(read_adapted(ws / ADAPTED))
    write_question_index(ws / INDEX, (QuestionMeta.of_adapted(r) for r in records))
    write_questions(ws / QUESTIONS, (Question.of_adapted(r) for r in records if r.eval.question_id in set(ids)))
    return ws / QUESTIONS


def set_executor(ws: Path, **changes) -> None:
    """params.yaml of ``ws`` with its ``executor`` section changed (``shard="2/3"``, ``workers=2``)."""
    import yaml

    params = yaml.safe_load((ws / "params.yaml").read_text(encoding="utf-8"))
    params["executor"] |= changes
    (ws / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")


def shard_of(ws: Path, shard: str) -> set[str]:
    """The question ids of ``shard`` ("K/N") over the questions file of ``ws`` (the stages' universe)."""
    from mnemetric.longmemeval.questions import read_questions
    from mnemetric.shard import parse_shard, shard_ids

    return shard_ids([(q.question_id, q.question_type) for q in read_questions(ws / QUESTIONS)], parse_shard(shard))


def lines_of(data: bytes, ids: set[str]) -> bytes:
    """The lines of the JSONL ``data`` whose question_id is in ``ids``, in their order."""
    return b"".join(x for x in data.splitlines(keepends=True) if json.loads(x)["question_id"] in ids)


def check_one_shard(out: Path, command: str, mine: set[str], ids: list[str], full: bytes) -> list[str]:
    """``out``, written by ``command`` on one shard whose questions are ``mine`` (of the universe ``ids``), holds the
    unsharded run's lines ``full`` of those questions, byte for byte, and its manifest says so (command, universe,
    each line's place in the unsharded run, an empty failures listing); the shard's question ids in line order."""
    assert 0 < len(mine) < len(ids) and out.read_bytes() == lines_of(full, mine)
    got = [json.loads(x)["question_id"] for x in out.read_bytes().splitlines()]
    manifest = json.loads(Path(f"{out}.shard.json").read_text(encoding="utf-8"))
    assert (manifest["command"], manifest["universe"]) == (command, len(ids))
    assert manifest["lines"]["question_ids"] == got and set(got) == mine
    assert manifest["lines"]["keys"] == [[ids.index(q)] for q in got]  # each line's place in the unsharded run
    assert manifest["failures"] == {"question_ids": [], "keys": []}
    assert Path(f"{out}.failures.jsonl").read_bytes() == b""
    return got


def run_stage(ws: Path, stage: str, timeout: int = 120) -> subprocess.CompletedProcess:
    """``python -m mnemetric.stages.<stage>`` in ``ws`` (output captured as text)."""
    return subprocess.run([sys.executable, "-m", f"mnemetric.stages.{stage}"], cwd=ws, capture_output=True,
                          text=True, env=os.environ.copy(), timeout=timeout)


@pytest.fixture()
def stage_workspace(tmp_path: Path, adapted_sample: Path) -> Path:
    """``tmp_path`` with params.yaml, data/adapted/sample.jsonl and an empty data/suites/."""
    shutil.copy(ROOT / "params.yaml", tmp_path / "params.yaml")
    (tmp_path / ADAPTED).parent.mkdir(parents=True)
    shutil.copy(adapted_sample, tmp_path / ADAPTED)
    (tmp_path / "data" / "suites").mkdir()
    return tmp_path
