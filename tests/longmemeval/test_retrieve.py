"""longmemeval/retrieve.py: the one retrieve write loop, and the CallsModels capability."""

from __future__ import annotations

import json

import pytest

from mnemetric.errors import ConfigError, PluginError
from mnemetric.execute import ImmediateExecutor
from mnemetric.longmemeval.adapted import SessionAdapter
from mnemetric.longmemeval.instance import load_instances
from mnemetric.longmemeval.memory.simple import FullContext
from mnemetric.longmemeval.retrieve import check_retrieval_settings, write_retrieval

from tests.longmemeval.test_harness import INSTANCE


@pytest.fixture()
def record(tmp_path):
    """test_harness's hand-written instance (three sessions, answer_x the oldest), adapted."""
    path = tmp_path / "one.json"
    path.write_text(json.dumps([INSTANCE]))
    return SessionAdapter("session-v3", "mnemetric.longmemeval-session/v3").adapt(load_instances(path)[0], 0)


class Recording(FullContext):
    """A plugged-in system that calls a model: it declares CallsModels by defining use_executor."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.calls: list = []

    def use_executor(self, executor) -> None:
        self.calls.append(("use_executor", executor))

    def reset(self) -> None:
        self.calls.append(("reset",))
        super().reset()


def test_a_system_that_calls_models_is_given_the_run_s_executor_once_before_its_first_question(record, tmp_path):
    memory, executor = Recording(name="rec"), ImmediateExecutor({"max_concurrency": 2}, progress=False)
    n = write_retrieval(memory, [record, record], granularity="session", k=2, budget=100, log=tmp_path / "log.jsonl",
                        executor=executor)
    assert n == 2
    assert memory.calls == [("use_executor", executor), ("reset",), ("reset",)]


def test_without_an_executor_nothing_is_configured(record, tmp_path):
    memory = Recording(name="rec")
    write_retrieval(memory, [record], granularity="session", k=2, budget=100, log=tmp_path / "log.jsonl")
    assert memory.calls == [("reset",)]


def test_log_and_contexts_are_one_json_line_per_question(record, tmp_path):
    log, ctx = tmp_path / "log.jsonl", tmp_path / "ctx.jsonl"
    write_retrieval(FullContext(), [record], granularity="session", k=1, budget=5, log=log, contexts=ctx)
    line = json.loads(log.read_text(encoding="utf-8"))
    # full-context ranks newest first: ultrachat_b (05/25), sharegpt_a (05/20), answer_x (05/01)
    assert [i["corpus_id"] for i in line["retrieval_results"]["ranked_items"]] == ["ultrachat_b", "sharegpt_a",
                                                                                  "answer_x"]
    context = json.loads(ctx.read_text(encoding="utf-8"))
    assert (context["question_id"], context["k"], context["budget_tokens"], context["tokens"]) == ("q1", 1, 5, 3)
    assert [m["content"] for m in context["items"][0]["messages"]] == ["weather?", "sunny"]  # 2 + 1 tokens
    assert log.read_text(encoding="utf-8").count("\n") == 1


def test_a_failing_system_leaves_earlier_outputs_untouched(record, tmp_path):
    class Broken(FullContext):
        def retrieve(self, query, granularity):
            raise RuntimeError("boom")

    log, ctx = tmp_path / "log.jsonl", tmp_path / "ctx.jsonl"
    log.write_text("old log\n")
    with pytest.raises(PluginError, match="boom"):
        write_retrieval(Broken(name="broken"), [record], granularity="turn", k=1, budget=5, log=log, contexts=ctx)
    assert log.read_text() == "old log\n" and not ctx.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log.jsonl", "one.json"]  # no temporary file left


@pytest.mark.parametrize(("args", "needle"), [
    (("sentence", 1, 1), "--granularity: unknown granularity 'sentence'"),
    (("turn", -1, 1), "--context-k: must be an integer >= 0, got -1"),
    (("turn", 1, True), "--context-tokens: must be an integer >= 0, got True"),
])
def test_bad_settings_name_their_key(args, needle):
    with pytest.raises(ConfigError) as err:
        check_retrieval_settings(*args, keys=("--granularity", "--context-k", "--context-tokens"))
    assert needle in str(err.value)
