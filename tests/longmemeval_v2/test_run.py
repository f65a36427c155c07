"""A whole V2 evaluation on the bundled sample (data/sample-v2, both domains, every eval function): offline,
and with the reader and judge on the local OpenAI-compatible server. Checks are against hand-derived facts
of the sample and against the upstream formats read back from disk."""

from __future__ import annotations

import json

import pytest

from mnemetric.longmemeval_v2.aggregate import aggregate_file
from mnemetric.config import build
from mnemetric.longmemeval_v2.llm_checkers import LLMCheckers, OfflineChecker
from mnemetric.longmemeval_v2.pipeline import option
from mnemetric.longmemeval_v2.per_question import UPSTREAM_KEYS, read_per_question
from mnemetric.longmemeval_v2.reader import OfflineReader, OpenAIReader
from mnemetric.longmemeval_v2.run import run_v2, tier_of, write_run
from mnemetric.longmemeval_v2.tokens import O200kCounter
from mnemetric.longmemeval_v2.upstream_text import checker_texts, reader_texts
from tests.conftest import ROOT
from tests.longmemeval_v2.executing import executor
from tests.support.openai_server import FakeOpenAIServer
from tests.support.standin_v2 import HARNESS_STAND_IN, QA_STAND_IN

SAMPLE = ROOT / "data" / "sample-v2"
EVAL_FUNCTIONS = {"norm_phrase_set_match", "norm_phrase_set_match_ordered", "mc_choice_match",
                  "mc_choice_set_match", "llm_abstention_checker", "llm_gotchas_checker"}


def make_memory(name, root):
    return build(option("memory", name, root), f"conf/v2/memory/{name}.yaml")


def offline(memory="bm25", haystack="small", **kw):
    return run_v2(SAMPLE, haystack, factory=lambda: make_memory(memory, SAMPLE), memory_name=memory,
                  reader=OfflineReader(), checker=OfflineChecker(), counter=O200kCounter(), **kw)


@pytest.mark.parametrize("haystack, shared", [("small", True), ("medium", False)])
def test_offline_run_on_the_sample(tmp_path, haystack, shared):
    run = offline(haystack=haystack)
    assert set(run.rows) == {"web", "enterprise"}
    names = {r.eval_function.split("|")[0] for rows in run.rows.values() for r in rows}
    assert names == EVAL_FUNCTIONS
    written = write_run(tmp_path, run)
    assert [p.relative_to(tmp_path).as_posix() for p in written] == [
        "web/per_question.jsonl", "web/aggregated_metrics.json", "enterprise/per_question.jsonl",
        "enterprise/aggregated_metrics.json", "combined_aggregated_metrics.json", "v2.json"]
    for domain in ("web", "enterprise"):
        lines = (tmp_path / domain / "per_question.jsonl").read_text().splitlines()
        assert list(json.loads(lines[0]))[: len(UPSTREAM_KEYS)] == list(UPSTREAM_KEYS)
        rows = list(read_per_question(tmp_path / domain / "per_question.jsonl"))
        assert [r.index for r in rows] == list(range(len(rows))) and all(r.timestamp_utc == "" for r in rows)
        assert all(r.question_id.startswith(f"mnv2-{domain[:3]}") for r in rows)
        on_disk = json.loads((tmp_path / domain / "aggregated_metrics.json").read_text())
        assert on_disk == aggregate_file(tmp_path / domain / "per_question.jsonl").to_record()
        assert on_disk["shared_haystack"] is shared and "completed_at_utc" not in on_disk
    summary = json.loads((tmp_path / "v2.json").read_text())
    assert summary == json.loads(json.dumps(run.summary.to_record()))
    assert list(summary) == ["schema", "settings", "domains", "combined", "lafs", "official_equivalence"]
    assert summary["settings"]["tier"] == haystack and summary["combined"]["questions"] == 14
    acc = summary["combined"]["accuracy"]["overall_full_set"]
    assert acc["n"] == 14 and acc["value"] == acc["correct"] / 14 and acc["ci95_low"] <= acc["value"] <= acc["ci95_high"]
    assert not summary["lafs"]["computed"] and summary["lafs"]["tier"] == haystack  # the sample is not official data
    assert "verified official tier" in summary["lafs"]["reason"]
    eq = summary["official_equivalence"]
    assert eq["value"] is False and any("token counter" in r for r in eq["reasons"])
    assert any("reader 'offline'" in r for r in eq["reasons"]) and any("checker 'offline'" in r for r in eq["reasons"])


def test_none_memory_answers_unknown_and_scores_zero():
    run = offline("none")
    rows = [r for rs in run.rows.values() for r in rs]
    assert all(r.is_unknown and r.score == 0.0 and r.memory_context == () for r in rows)
    acc = run.summary.to_record()["combined"]["accuracy"]["overall_full_set"]
    assert acc["value"] == 0.0
    # a Clopper-Pearson 95 % interval for 0/14 is [0, 1 - 0.025 ** (1/14)]
    assert acc["ci95_high"] == pytest.approx(1 - 0.025 ** (1 / 14))


def test_one_domain_has_no_combination_and_says_why():
    run = offline(domains=("web",))
    assert run.combined is None and run.summary.combined is None and not run.summary.lafs.computed
    assert any("only web run" in r for r in run.summary.to_record()["official_equivalence"]["reasons"])


def test_tier_of():
    assert tier_of("small") == "small" and tier_of(SAMPLE / "haystacks" / "lme_v2_medium.json") == "medium"
    assert tier_of("mine.json") is None


def test_llm_run_on_the_local_server_marks_failures(tmp_path):
    def reply(messages):
        if messages[0]["content"].startswith("Stand-in rubric"):  # the judge
            return '{"label": 1}'
        return "\\boxed{Meadow Post}"

    def null_for_one(body):  # the reader gets no answer for one question
        user = body["messages"][-1]["content"]
        return "null_content" if isinstance(user, list) and "order 1042 go through" in user[-1].get("text", "") else None

    with FakeOpenAIServer(reply=reply, non_answer_for=null_for_one) as server:
        texts = reader_texts(HARNESS_STAND_IN)

        def once():
            ex = executor(tmp_path, server.base_url, non_answer_attempts=1)
            done = run_v2(SAMPLE, "small", ("web",), factory=lambda: make_memory("bm25", SAMPLE), memory_name="bm25",
                          reader=OpenAIReader(texts, base_url=server.base_url),
                          checker=LLMCheckers(checker_texts(QA_STAND_IN), base_url=server.base_url),
                          counter=O200kCounter(), texts=texts, executor=ex)
            return done, ex.usage
        (run, usage), sent = once(), None
        sent = server.count
        assert usage.requests_sent == sent  # ONE ledger: the reader's and the checker's requests together
        rerun, _ = once()
        # a rerun is served from the cache, except the non-answer, which was never cached: asked again
        assert server.count == sent + 1
        assert [r.score for r in rerun.rows["web"]] == [r.score for r in run.rows["web"]]
    rows = {r.question_id: r for r in run.rows["web"]}
    assert rows["mnv2-web-02"].failed and "content is null" in rows["mnv2-web-02"].failed
    assert rows["mnv2-web-02"].score is None and rows["mnv2-web-02"].memory_context is not None
    assert rows["mnv2-web-01"].score == 1.0  # gold "Meadow Post"
    assert rows["mnv2-web-04"].score == 1.0 and rows["mnv2-web-05"].score == 1.0  # judge says 1
    assert rows["mnv2-web-03"].score == 0.0  # mc gold B
    assert rows["mnv2-web-01"].prompt_messages[1]["content"][0]["type"] == "text"
    agg = run.aggregated["web"].to_record()
    assert agg["overall"]["count_all_questions"] == 6 and agg["mnemetric"]["failed_question_ids"] == ["mnv2-web-02"]
    assert run.summary.to_record()["domains"]["web"]["failed"] == 1
    web = run.summary.to_record()["domains"]["web"]  # where a call failed: both accuracies, failed counted wrong
    kept, wrong = web["accuracy"]["overall_full_set"], web["accuracy_failed_as_wrong"]["overall_full_set"]
    assert (kept["n"], wrong["n"], kept["correct"], wrong["correct"]) == (6, 7, 4, 4)
    assert (kept["value"], wrong["value"]) == (4 / 6, 4 / 7)
    assert any("1 question(s) failed" in r for r in run.summary.to_record()["official_equivalence"]["reasons"])
    assert sent == 7 + 3  # 7 reader requests (the null one once) + 3 judge calls (2 abstention, 1 gotchas)
    # the evidence travels with the verdicts: every row names its reader request; LLM-checked rows their judge request
    asked = {b["messages"][0]["content"][:20]: b for b in (r.body for r in server.requests)}
    for row in run.rows["web"]:
        assert len(row.extra["reader_request_sha256"]) == 64
        assert row.extra["reader_params_sent"] == {"temperature": 0.6, "top_p": 0.95, "max_tokens": 20000,
                                                   "extra_body": {"top_k": 20}}
        judged = row.eval_function.startswith("llm_") and not row.failed
        assert ("checker_request_sha256" in row.extra) is judged
        if judged:
            assert row.extra["checker_params_sent"] == {"reasoning_effort": "medium", "max_completion_tokens": 4096}
    assert asked  # the server saw the requests the rows name


def test_reader_and_checker_share_one_budget(tmp_path):
    """max_requests 8: the reader's 7 requests fit, the checker's 3 more do not — the run stops, because the reader and
    the LLM checkers draw on ONE budget (one executor per run)."""
    from mnemetric.errors import MnemetricError

    reply = lambda messages: '{"label": 1}' if messages[0]["content"].startswith("Stand-in rubric") else "\\boxed{x}"
    texts = reader_texts(HARNESS_STAND_IN)
    with FakeOpenAIServer(reply=reply) as server:
        ex = executor(tmp_path, llm={"budget": {"max_requests": 8}})
        with pytest.raises(MnemetricError, match="budget|max_requests"):
            run_v2(SAMPLE, "small", ("web",), factory=lambda: make_memory("bm25", SAMPLE), memory_name="bm25",
                   reader=OpenAIReader(texts, base_url=server.base_url),
                   checker=LLMCheckers(checker_texts(QA_STAND_IN), base_url=server.base_url),
                   counter=O200kCounter(), texts=texts, executor=ex)
        assert server.count == 8 and ex.usage.requests_sent == 8


def test_images_off_leaves_a_missing_question_image_out(tmp_path):
    import shutil

    from mnemetric.errors import MnemetricError

    root = tmp_path / "root"
    shutil.copytree(SAMPLE, root)
    image_questions = {q["id"]: q["image"] for q in map(json.loads, (root / "questions.jsonl").read_text().splitlines())
                       if q["image"]}
    assert set(image_questions) == {"mnv2-web-07", "mnv2-ent-07"}  # the sample's two image questions
    for rel in image_questions.values():
        (root / rel).unlink()

    def go(images):
        return run_v2(root, "small", factory=lambda: make_memory("bm25", root), memory_name="bm25",
                      reader=OfflineReader(), checker=OfflineChecker(), counter=O200kCounter(), check_images=images)

    with pytest.raises(MnemetricError):
        go(True)  # with images on, a missing question image is a validation problem
    rows = {r.question_id: r for rs in go(False).rows.values() for r in rs}
    assert all(rows[q].question_image is None for q in image_questions)
    kept = {q: r.question_image for q, r in rows.items() if r.question_image is not None}
    assert kept == {}  # no other question of the sample has an image


def test_the_offline_readers_tracked_outputs_do_not_depend_on_the_pinned_texts_being_at_hand():
    """metrics/v2.json is tracked: an offline run must give the same summary whether or not a checkout or the
    cache holds the pinned reader texts (the offline reader sends no prompt; only the prompt log differs)."""
    from mnemetric.longmemeval_v2.metrics_file import tracked_summary

    with_texts = offline(texts=reader_texts(HARNESS_STAND_IN))
    without = offline(texts=None)
    assert tracked_summary(with_texts.summary) == tracked_summary(without.summary)
    assert not any("reader texts" in r for r in without.summary.to_record()["official_equivalence"]["reasons"])


def test_a_reader_that_sends_the_texts_is_not_official_without_pinned_ones(tmp_path):
    from mnemetric.longmemeval_v2.run import official_reasons

    from mnemetric.longmemeval_v2.facts import checker_facts, counter_facts, reader_facts

    run = offline()
    stand_in = reader_texts(HARNESS_STAND_IN)  # parsed from a stand-in file: not the pinned bytes
    facts = {"reader": reader_facts(OpenAIReader(stand_in), stand_in), "checker": checker_facts(OfflineChecker()),
             "token_counter": counter_facts(O200kCounter())}
    reasons = official_reasons(run.summary.to_record()["settings"], run.rows, facts, data=None)
    assert "reader texts not read from the pinned upstream harness.py" in reasons
