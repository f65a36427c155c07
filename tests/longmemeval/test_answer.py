"""The answer job's library function (mnemetric.longmemeval.answer) on hand-written inputs.

Expected hypotheses are worked out by hand from the extractive rule: the sentence (split after
. ! ?) sharing the most non-stopword words with the question, earliest on ties; below
``min_overlap`` shared words the fixed "don't know" answer.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mnemetric.errors import ConfigError, InputError
from mnemetric.longmemeval.answer import Queries, answer_file, plan_answers, write_answered
from mnemetric.longmemeval.components import OfflineExtractiveReader, llm_factory
from mnemetric.llm.budget import UsageStats
from tests.longmemeval.answer_fixtures import context_record, write_inputs

UNKNOWN = "I don't know: the conversation history does not mention this."


def _no_llm(base_url, role):  # the extractive reader never asks for a client
    raise AssertionError("the extractive reader opened an LLM client")


def test_extractive_answers_worked_by_hand(tmp_path: Path):
    contexts, adapted = write_inputs(tmp_path)
    answered = answer_file(OfflineExtractiveReader(min_overlap=1), contexts, Queries.of_adapted(adapted), _no_llm)
    # q-bike: {color, new, bike}; "Your new bike color sounds great!" shares 3, "I bought a bike last week." 1
    # q-car: {park, car}; "I like the park near the car wash." shares 2, "The car is parked at home." 1
    # q-dog: {dog, s, name}; "Hello there." shares none
    assert answered.hypotheses == [
        {"question_id": "q-bike", "hypothesis": "Your new bike color sounds great!", "reader": "extractive"},
        {"question_id": "q-car", "hypothesis": "I like the park near the car wash.", "reader": "extractive"},
        {"question_id": "q-dog", "hypothesis": UNKNOWN, "reader": "extractive"},
    ]
    assert answered.failures == []


def test_min_overlap_three_leaves_only_the_bike_answered(tmp_path: Path):
    contexts, adapted = write_inputs(tmp_path)
    answered = answer_file(OfflineExtractiveReader(min_overlap=3), contexts, Queries.of_adapted(adapted), _no_llm)
    assert [h["hypothesis"] for h in answered.hypotheses] == ["Your new bike color sounds great!", UNKNOWN, UNKNOWN]


def test_write_answered_writes_the_three_files(tmp_path: Path):
    contexts, adapted = write_inputs(tmp_path)
    answered = answer_file(OfflineExtractiveReader(), contexts, Queries.of_adapted(adapted), _no_llm)
    stats = UsageStats()
    write_answered(tmp_path / "h.jsonl", tmp_path / "u.json", answered, stats.work)
    assert (tmp_path / "h.jsonl").read_text(encoding="utf-8").splitlines()[0] == (
        '{"question_id": "q-bike", "hypothesis": "Your new bike color sounds great!", "reader": "extractive"}')
    assert (tmp_path / "h.jsonl.failures.jsonl").read_bytes() == b""
    assert json.loads((tmp_path / "u.json").read_text()) == {
        "responses": 0, "prompt_tokens": 0, "completion_tokens": 0, "usd": 0.0, "unpriced_models": [],
        "per_model": {}}


def test_a_context_for_a_question_not_in_the_adapted_file_names_file_line_field(tmp_path: Path):
    contexts, adapted = write_inputs(tmp_path)
    with open(contexts, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(context_record("q-ghost", [("user", "boo")])) + "\n")
    with pytest.raises(InputError) as exc:
        answer_file(OfflineExtractiveReader(), contexts, Queries.of_adapted(adapted), _no_llm)
    assert f"{contexts}: line 4 (q-ghost): field 'question_id'" in str(exc.value)


def test_a_missing_contexts_file_is_an_input_error(tmp_path: Path):
    _, adapted = write_inputs(tmp_path)
    with pytest.raises(InputError) as exc:
        answer_file(OfflineExtractiveReader(), tmp_path / "nope.jsonl", Queries.of_adapted(adapted), _no_llm)
    assert "nope.jsonl" in str(exc.value)


def test_dry_run_of_the_extractive_reader_plans_nothing_and_an_unknown_reader_is_refused(tmp_path: Path):
    contexts, adapted = write_inputs(tmp_path)
    plan = plan_answers(OfflineExtractiveReader(), contexts, Queries.of_adapted(adapted), llm_factory({}, UsageStats()))
    assert (plan["requests_total"], plan["to_send"]) == (0, 0)

    class Other:
        name = "other"

    with pytest.raises(ConfigError) as exc:
        plan_answers(Other(), contexts, Queries.of_adapted(adapted), _no_llm)
    assert "'other'" in str(exc.value)


def test_dry_run_asks_a_plugged_in_reader_for_its_own_plan(tmp_path: Path):
    """No class check: any reader with plan(queries, contexts, llm) is asked, with the inputs the answer
    job would give it (every context's question, in file order)."""
    contexts, adapted = write_inputs(tmp_path)
    seen = {}

    class Counting:
        name = "counting"

        def plan(self, queries, contexts, llm):
            seen["ids"] = [q.query_id for q in queries]
            seen["contexts"] = len(contexts)
            return {"requests_total": len(queries), "cached": 0, "to_send": len(queries), "estimated_usd": None}

    plan = plan_answers(Counting(), contexts, Queries.of_adapted(adapted), _no_llm)
    assert plan["to_send"] == seen["contexts"] == len(seen["ids"]) == len(Path(contexts).read_text().splitlines())


def test_the_questions_file_gives_the_queries_the_adapted_file_gives(tmp_path: Path):
    from mnemetric.longmemeval.adapted import read_adapted
    from mnemetric.longmemeval.questions import Question, write_questions

    _, adapted = write_inputs(tmp_path)
    questions = tmp_path / "questions.jsonl"
    write_questions(questions, (Question.of_adapted(r) for r in read_adapted(adapted)))
    from_questions, from_adapted = Queries.of_questions(questions), Queries.of_adapted(adapted)
    assert from_questions.by_id == from_adapted.by_id and len(from_questions.by_id) == 3
    assert from_questions.file == str(questions)
