"""Reading and scoring upstream-format retrieval logs (docs/upstream-protocol.md 2.3 + 2.5)."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest

from mnemetric.longmemeval.retrieval_log import read_retrieval_log
from mnemetric.longmemeval.scoring.score_retrieval import score_retrieval_log
from mnemetric.errors import ConfigError, InputError

UPSTREAM = "longmemeval-session-upstream-v1"
SAMPLE = Path("/work/shared/data/upstream/longmemeval_oracle_2q_sample.json")
TOL = 1e-12


def session(sid, *turns):
    out = []
    for role, has_answer in turns:
        t = {"role": role, "content": f"{sid} {role}"}
        if has_answer is not None:
            t["has_answer"] = has_answer
        out.append(t)
    return sid, out


def line(qid, sessions, ranked, qtype="multi-session", **extra):
    rec = {
        "question_id": qid,
        "question_type": qtype,
        "question": "q?",
        "answer": "a",
        "haystack_session_ids": [s for s, _ in sessions],
        "haystack_sessions": copy.deepcopy([t for _, t in sessions]),
        "retrieval_results": {
            "query": "q?",
            "ranked_items": [{"corpus_id": c, "text": "", "timestamp": ""} for c in ranked],
            "metrics": {"session": {"recall_any@1": 0.123}, "turn": {}},
        },
    }
    rec.update(extra)
    return rec


def write_log(tmp_path, records, name="log_retrievallog"):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


FILLER = session("sharegpt_1", ("user", None), ("assistant", None))
GOOD = session("answer_aa_1", ("user", False), ("assistant", False), ("user", True), ("assistant", False))
ASSIST_ONLY = session("answer_bb", ("user", False), ("assistant", True))


def three_questions():
    return [
        line("q1", [FILLER, GOOD], ["sharegpt_1", "answer_aa_1"]),
        line("q2_abs", [GOOD, FILLER], ["answer_aa_1", "sharegpt_1"]),
        line("q3", [ASSIST_ONLY, FILLER], ["noans_bb", "sharegpt_1"], qtype="single-session-assistant"),
    ]


def test_session_scoring_and_both_averages(tmp_path):
    out = score_retrieval_log(write_log(tmp_path, three_questions()), "session", UPSTREAM)
    assert out.profile == UPSTREAM and out.official_equivalence.value is True
    assert out.granularity == "session"
    q1 = out.per_question["q1"]
    assert set(q1) == {"session"}
    assert q1["session"]["recall_any@1"] == 0.0  # metrics stored in the log are ignored
    assert q1["session"]["ndcg_any@1"] == 0.0
    assert q1["session"]["ndcg_any@3"] == 1.0  # target at rank 2 weighs 1 upstream
    q3 = out.per_question["q3"]["session"]
    assert (q3["recall_any@5"], q3["recall_all@5"], q3["ndcg_any@5"]) == (0.0, 1.0, 0.0)
    a = out.exclude_abs.to_record()
    assert (a["n"], a["excluded"]) == (2, 1)
    assert a["session"]["recall_all@1"] == pytest.approx(0.5, abs=TOL)  # q1 0, q3 1 (vacuous)
    assert a["session"]["ndcg_any@5"] == pytest.approx(0.5, abs=TOL)
    b = out.exclude_abs_and_no_user_target.to_record()
    assert (b["n"], b["excluded"]) == (1, 2)
    assert b["session"]["recall_all@1"] == 0.0 and b["session"]["ndcg_any@5"] == 1.0


def test_turn_scoring_and_auto_detection(tmp_path):
    recs = [line("q1", [FILLER, GOOD], ["sharegpt_1_1", "noans_aa_1_1", "answer_aa_1_3"])]
    path = write_log(tmp_path, recs)
    out = score_retrieval_log(path, "turn", UPSTREAM)
    q1 = out.per_question["q1"]
    assert set(q1) == {"session", "turn"}
    assert q1["turn"]["ndcg_any@3"] == pytest.approx(1 / math.log2(3), abs=TOL)
    # session view: sharegpt_1, noans_aa_1, answer_aa_1 -> effective_k(1) = 1, (3) = 3
    assert q1["session"]["recall_any@1"] == 0.0 and q1["session"]["recall_all@3"] == 1.0
    auto = score_retrieval_log(path, "auto", UPSTREAM)
    assert auto.granularity == "turn" and auto.per_question == out.per_question
    assert set(out.exclude_abs.to_record()) == {"n", "excluded", "session", "turn"}


def test_historical_profile(tmp_path):
    out = score_retrieval_log(write_log(tmp_path, three_questions()), "session", "mnemetric-historical")
    assert out.official_equivalence.value is False
    assert "mnemetric-historical" in out.official_equivalence.reasons[0]
    assert out.per_question["q1"]["session"]["recall@1"] == 0.0
    assert out.per_question["q1"]["session"]["ndcg@3"] == pytest.approx(1 / math.log2(3), abs=TOL)
    assert out.per_question["q3"]["session"]["recall@1"] is None
    assert out.exclude_abs.to_record()["session"]["recall@5"] == 1.0  # q3's None is left out
    with pytest.raises(ConfigError, match="known profiles"):
        score_retrieval_log(write_log(tmp_path, three_questions()), "session", "bogus")


def test_typed_records(tmp_path):
    recs = list(read_retrieval_log(write_log(tmp_path, three_questions())))
    assert [r.line for r in recs] == [1, 2, 3]
    assert recs[0].ranked_ids == ("sharegpt_1", "answer_aa_1")
    assert recs[0].haystack_sessions[0][0].has_answer is None
    assert recs[2].haystack_sessions[0][1].has_answer is True


def expect_error(path, granularity, *fragments, reference=None):
    with pytest.raises(InputError) as info:
        score_retrieval_log(path, granularity, UPSTREAM, reference_path=reference)
    text = str(info.value)
    for frag in fragments:
        assert frag in text, text
    return text


def test_missing_ranked_items(tmp_path):
    recs = three_questions()
    del recs[1]["retrieval_results"]["ranked_items"]
    expect_error(write_log(tmp_path, recs), "session", "line 2", "field 'retrieval_results.ranked_items'", "missing")


def test_missing_retrieval_results(tmp_path):
    recs = three_questions()
    del recs[2]["retrieval_results"]
    expect_error(write_log(tmp_path, recs), "session", "line 3", "field 'retrieval_results'")


def test_duplicate_corpus_ids(tmp_path):
    recs = [line("q1", [FILLER, GOOD], ["answer_aa_1", "answer_aa_1", "sharegpt_1"])]
    expect_error(write_log(tmp_path, recs), "session", "line 1", "ranked_items[1].corpus_id", "duplicate")


def test_unknown_granularity_argument(tmp_path):
    expect_error(write_log(tmp_path, three_questions()), "round", "field 'granularity'", "unknown granularity")


def test_unknown_granularity_of_a_line(tmp_path):
    recs = three_questions()
    recs[1]["retrieval_results"]["ranked_items"][0]["corpus_id"] = "something_else"
    expect_error(write_log(tmp_path, recs), "auto", "line 2", "field 'retrieval_results.ranked_items'",
                 "unknown granularity")


def test_mixed_granularities(tmp_path):
    recs = three_questions()
    recs.append(line("q4", [FILLER], ["sharegpt_1_1"]))
    expect_error(write_log(tmp_path, recs), "auto", "line 4", "retrieval_results.ranked_items")


def test_ranked_id_not_in_corpus(tmp_path):
    # a session-granularity ranking scored as turn granularity
    expect_error(write_log(tmp_path, three_questions()), "turn", "line 1",
                 "field 'retrieval_results.ranked_items[0].corpus_id'", "not in the turn corpus")


def _ref_row(qid: str) -> dict:
    """A reference item as longmemeval/reference.py reads it (the instance file's four fields)."""
    return {"question_id": qid, "question_type": "multi-session", "question": "q?", "answer": "a"}


def test_question_missing_from_reference(tmp_path):
    ref = tmp_path / "ref.json"
    ref.write_text(json.dumps([_ref_row("q1"), _ref_row("q3")]), encoding="utf-8")
    expect_error(write_log(tmp_path, three_questions()), "session", "line 2", "q2_abs", "field 'question_id'",
                 "reference", reference=ref)
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps([_ref_row(q) for q in ("q1", "q2_abs", "q3")]), encoding="utf-8")
    assert score_retrieval_log(write_log(tmp_path, three_questions()), "session", UPSTREAM, ok).per_question


def test_missing_log_or_reference_file_is_an_input_error(tmp_path):
    gone = tmp_path / "gone_retrievallog"
    for call in (lambda: list(read_retrieval_log(gone)),
                 lambda: score_retrieval_log(gone, "session", UPSTREAM),
                 lambda: score_retrieval_log(write_log(tmp_path, three_questions()), "session", UPSTREAM,
                                             reference_path=tmp_path / "gone_ref.json")):
        with pytest.raises(InputError) as info:
            call()
        problem = info.value.problem
        assert problem.file.startswith(str(tmp_path / "gone"))
        assert (problem.record, problem.field, problem.message) == ("<file>", "<file>", "does not exist")
        assert info.value.fix


def test_duplicate_question_id(tmp_path):
    recs = three_questions()
    recs[2]["question_id"] = "q1"
    expect_error(write_log(tmp_path, recs), "session", "line 3", "field 'question_id'", "duplicate")


def test_bad_turn_fields(tmp_path):
    recs = three_questions()
    recs[0]["haystack_sessions"][1][2]["has_answer"] = "yes"
    expect_error(write_log(tmp_path, recs), "session", "line 1", "haystack_sessions[1][2].has_answer")
    recs = three_questions()
    del recs[0]["haystack_sessions"][0][0]["role"]
    expect_error(write_log(tmp_path, recs), "session", "line 1", "haystack_sessions[0][0].role")


def test_real_sample_as_log(tmp_path):
    if not SAMPLE.exists():
        pytest.skip(f"{SAMPLE} not present")
    data = json.loads(SAMPLE.read_text(encoding="utf-8"))
    recs = []
    for inst in reversed(data):  # line order is not input order upstream
        sessions = list(zip(inst["haystack_session_ids"], inst["haystack_sessions"]))
        ids = [f"{sid}_{i + 1}".replace("answer", "answer" if t.get("has_answer") else "noans")
               for sid, turns in sessions for i, t in enumerate(turns) if t["role"] == "user"]
        ranked = sorted(ids, key=lambda c: "answer" not in c)  # oracle retriever: targets first
        recs.append(line(inst["question_id"], sessions, ranked, qtype=inst["question_type"]))
    out = score_retrieval_log(write_log(tmp_path, recs), "turn", UPSTREAM, reference_path=SAMPLE)
    for q in ("6a1eabeb", "gpt4_70e84552_abs"):
        assert out.per_question[q]["turn"]["ndcg_any@1"] == 1.0
        assert out.per_question[q]["turn"]["recall_all@50"] == 1.0
    agg = out.exclude_abs.to_record()
    assert (agg["n"], agg["excluded"]) == (1, 1)
    assert out.exclude_abs_and_no_user_target.to_record()["n"] == 1
    assert agg["session"]["recall_all@1"] == 0.0  # 2 target sessions cannot fit in a cutoff of 1 session
    assert agg["session"]["recall_all@3"] == 1.0
