"""Stage suite reads the adapted file once and writes the suite, the question index and the questions file;
data_metrics then gives the committed metrics/data.json, byte for byte, without the adapted file."""

from __future__ import annotations

import shutil
from pathlib import Path

from mnemetric.longmemeval.adapted import read_adapted
from mnemetric.longmemeval.questions import Question, read_questions
from mnemetric.longmemeval.suite import QuestionMeta, read_question_index, read_suite

from tests.conftest import ROOT
from tests.stages.conftest import ADAPTED, INDEX, QUESTIONS, SUITE, run_stage


def test_suite_writes_the_eval_view_and_data_metrics_needs_nothing_else(stage_workspace: Path):
    ws = stage_workspace
    done = run_stage(ws, "suite")
    assert done.returncode == 0, done.stderr
    records = list(read_adapted(ADAPTED))
    assert read_suite(ws / SUITE).question_ids == tuple(r.eval.question_id for r in records)
    assert read_questions(ws / QUESTIONS) == [Question.of_adapted(r) for r in records]
    assert read_question_index(ws / INDEX) == [QuestionMeta.of_adapted(r) for r in records]
    (ws / "data" / "adapted" / "sample.jsonl").unlink()  # data_metrics reads the index, not the adapted file
    (ws / "data" / "custody").mkdir()
    shutil.copy(ROOT / "data" / "custody" / "sample.json", ws / "data" / "custody" / "sample.json")
    done = run_stage(ws, "data_metrics")
    assert done.returncode == 0, done.stderr
    assert (ws / "metrics" / "data.json").read_bytes() == (ROOT / "metrics" / "data.json").read_bytes()
