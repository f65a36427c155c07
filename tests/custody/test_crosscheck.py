"""`mnemetric crosscheck`: stand-in upstream scripts run as real processes; the real ones opt-in.

Expected numbers are hand-computed (worked examples in comments) or printed by the stand-ins
(tests/support/standin_v1_scripts.py, a second implementation in upstream's output format).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import sys
from pathlib import Path

import pytest

from mnemetric.cli import main
from mnemetric.custody.crosscheck import read_evidence
from mnemetric.custody.upstream_env import describe_env, ensure_env, read_lock
from mnemetric.errors import ConfigError, InputError
from mnemetric.longmemeval.family import CROSSCHECK

from tests.conftest import ROOT
from tests.support.openai_server import FakeOpenAIServer
from tests.support.standin_v1_scripts import EVALUATE_QA_RUNNABLE, PATHS, expected_args, write_standins

SAMPLE = ROOT / "data/sample/longmemeval_sample.json"
LOCK = ROOT / "crosscheck/upstream-v1.lock"
JUDGE = "gpt-4o-2024-08-06"


@pytest.fixture(autouse=True)
def _no_endpoint(monkeypatch):
    """No judge endpoint unless a test configures one (the developer's environment must not leak in)."""
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def log_line(qid: str, sessions: list[tuple[str, bool]], ranked: list[str], stored: dict) -> dict:
    """One upstream-format retrieval-log line (session granularity) with the given stored metrics."""
    return {
        "question_id": qid, "question_type": "multi-session",
        "haystack_session_ids": [sid for sid, _ in sessions],
        "haystack_sessions": [[{"role": "user", "content": f"user {sid}", "has_answer": has},
                               {"role": "assistant", "content": "ok"}] for sid, has in sessions],
        "retrieval_results": {"query": "q", "ranked_items": [{"corpus_id": c, "text": "", "timestamp": ""}
                                                             for c in ranked],
                              "metrics": {"session": stored, "turn": {}}},
    }


W3 = 1 / math.log2(3)  # weight of rank 3 in upstream's DCG (ranks 1 and 2 weigh 1)
W7 = 1 / math.log2(7)


def hand_log(tmp_path: Path) -> Path:
    """q1: one target at rank 3 → recall_all 1, ndcg W3 at k=5 and 10.
    q2: targets at ranks 1 and 7 of 7 → @5: recall_all 0, ndcg 1/2; @10: 1, (1 + W7)/2.
    q3: no target → recall_all 1, ndcg 0 (stays in: only "_abs" is excluded).
    q4_abs: excluded (its numbers would move every mean)."""
    q2_sessions = [("answer_b", True)] + [(f"s{i}", False) for i in range(1, 6)] + [("answer_c", True)]
    lines = [
        log_line("q1", [("answer_a", True), ("x", False), ("y", False)], ["x", "y", "answer_a"],
                 {"recall_all@5": 1.0, "ndcg_any@5": W3, "recall_all@10": 1.0, "ndcg_any@10": W3}),
        log_line("q2", q2_sessions, [s for s, _ in q2_sessions],
                 {"recall_all@5": 0.0, "ndcg_any@5": 0.5, "recall_all@10": 1.0, "ndcg_any@10": (1 + W7) / 2}),
        log_line("q3", [("x", False), ("y", False)], ["y", "x"],
                 {"recall_all@5": 1.0, "ndcg_any@5": 0.0, "recall_all@10": 1.0, "ndcg_any@10": 0.0}),
        log_line("q4_abs", [("answer_d", True), ("x", False)], ["x", "answer_d"],
                 {"recall_all@5": 1.0, "ndcg_any@5": 1.0, "recall_all@10": 1.0, "ndcg_any@10": 1.0}),
    ]
    path = tmp_path / "hand_retrievallog_session"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


# means over q1..q3: recall_all@5 2/3; ndcg@5 (0.63093 + 0.5 + 0)/3 = 0.37698; recall_all@10 1;
# ndcg@10 (0.63093 + (1 + 0.35621)/2 + 0)/3 = 0.43634
HAND_RETRIEVAL = {"session.recall_all@5": 0.6667, "session.ndcg_any@5": 0.377,
                  "session.recall_all@10": 1.0, "session.ndcg_any@10": 0.4363}


def qa_files(tmp_path: Path, items: list[tuple[str, str, bool]], model: str = JUDGE) -> tuple[Path, Path]:
    judged, ref = tmp_path / "judged.jsonl", tmp_path / "ref.json"
    judged.write_text("".join(json.dumps({"question_id": q, "hypothesis": "h",
                                          "autoeval_label": {"model": model, "label": lab}}) + "\n"
                              for q, _, lab in items))
    ref.write_text(json.dumps([{"question_id": q, "question_type": t, "question": "?", "answer": "a"}
                               for q, t, _ in items]))
    return judged, ref


# upstream-protocol.md §3.3 worked example; the second SSU question is an abstention question.
WORKED = [("u1", "single-session-user", True), ("u2_abs", "single-session-user", False),
          ("u3", "single-session-user", False), ("a1", "single-session-assistant", True),
          ("p1", "single-session-preference", False), ("m1", "multi-session", True), ("m2", "multi-session", True),
          ("t1", "temporal-reasoning", False), ("t2", "temporal-reasoning", True), ("k1", "knowledge-update", True)]
HAND_QA = {"single-session-user.accuracy": 0.3333, "single-session-user.n": 3,
           "single-session-preference.accuracy": 0.0, "single-session-preference.n": 1,
           "single-session-assistant.accuracy": 1.0, "single-session-assistant.n": 1,
           "multi-session.accuracy": 1.0, "multi-session.n": 2,
           "temporal-reasoning.accuracy": 0.5, "temporal-reasoning.n": 2,
           "knowledge-update.accuracy": 1.0, "knowledge-update.n": 1,
           "task_averaged": 0.6389, "overall": 0.6, "abstention.accuracy": 0.0, "abstention.n": 1}


def run(checkout: Path, out: Path, *args: str, hashes: dict | None = None) -> int:
    extra = expected_args(hashes) if hashes else []
    return main(["crosscheck", "--upstream-dir", str(checkout), "--python", sys.executable, "--out", str(out),
                 *extra, *args])


def test_hand_retrieval_log_agrees_and_evidence_is_complete(tmp_path, capsys):
    hashes = write_standins(tmp_path / "up")
    log = hand_log(tmp_path)
    assert run(tmp_path / "up", tmp_path / "ev.json", "--retrieval-log", str(log), hashes=hashes) == 0
    ev = json.loads((tmp_path / "ev.json").read_text())
    assert ev["schema"] == "mnemetric.crosscheck/v1" and ev["agree"] is True
    assert ev["upstream"] == {"repo": "xiaowu0162/LongMemEval", "revision": "9e0b455f4ef0e2ab8f2e582289761153549043fc",
                              "pinned": False, "files": hashes}
    assert ev["inputs"] == {str(log): sha(log)}
    assert {c["metric"]: c["ours"] for c in ev["checks"]} == HAND_RETRIEVAL  # session log: no turn numbers
    assert all(c["upstream"] == c["ours"] and c["agree"] and c["script"] == "print_retrieval_metrics.py"
               for c in ev["checks"])
    env = ev["environment"]
    assert env["python"] == platform.python_version() and env["built_from_lock"] is False
    assert env["lock_sha256"] == sha(LOCK) and set(env["packages"]) == set(read_lock(LOCK))
    assert ev["not_run"][0]["script"] == "evaluate_qa.py" and ev["notes"] == []
    assert "4 numbers compared, 0 differ" in capsys.readouterr().out


def test_a_standin_printing_another_number_fails_the_check_and_names_it(tmp_path, capsys):
    hashes = write_standins(tmp_path / "up", {"session.ndcg_any@10": 0.01})
    assert run(tmp_path / "up", tmp_path / "ev.json", "--retrieval-log", str(hand_log(tmp_path)), hashes=hashes) == 1
    ev = json.loads((tmp_path / "ev.json").read_text())
    bad = [c for c in ev["checks"] if not c["agree"]]
    assert ev["agree"] is False
    assert bad == [{"script": "print_retrieval_metrics.py", "metric": "session.ndcg_any@10", "ours": 0.4363,
                    "upstream": 0.4463, "agree": False}]
    out = capsys.readouterr().out
    assert "DISAGREE" in out and "1 differ (session.ndcg_any@10)" in out


def test_our_turn_log_from_mnemetric_retrieve_agrees_on_all_ten_numbers(tmp_path):
    log = tmp_path / "sample_retrievallog_turn"
    assert main(["retrieve", str(SAMPLE), "--memory", "bm25-upstream", "--granularity", "turn",
                 "--conf", str(ROOT / "conf"), "--out", str(log)]) == 0
    hashes = write_standins(tmp_path / "up")
    assert run(tmp_path / "up", tmp_path / "ev.json", "--retrieval-log", str(log), hashes=hashes) == 0
    checks = json.loads((tmp_path / "ev.json").read_text())["checks"]
    assert [c["metric"] for c in checks] == [f"{level}.{m}@{k}" for level, ks in (("session", (5, 10)),
                                             ("turn", (5, 10, 50))) for k in ks for m in ("recall_all", "ndcg_any")]
    assert all(c["agree"] and c["ours"] is not None for c in checks)


def test_qa_worked_example_agrees(tmp_path):
    hashes = write_standins(tmp_path / "up")
    judged, ref = qa_files(tmp_path, WORKED)
    assert run(tmp_path / "up", tmp_path / "ev.json", "--judged", str(judged), "--reference", str(ref),
               hashes=hashes) == 0
    ev = json.loads((tmp_path / "ev.json").read_text())
    assert {c["metric"]: c["ours"] for c in ev["checks"]} == HAND_QA
    assert all(c["agree"] for c in ev["checks"]) and ev["inputs"] == {str(judged): sha(judged), str(ref): sha(ref)}


def test_an_empty_type_is_nan_upstream_and_null_ours_and_they_agree(tmp_path):
    hashes = write_standins(tmp_path / "up")
    judged, ref = qa_files(tmp_path, [x for x in WORKED if x[1] != "knowledge-update"])
    assert run(tmp_path / "up", tmp_path / "ev.json", "--judged", str(judged), "--reference", str(ref),
               hashes=hashes) == 0
    checks = {c["metric"]: c for c in json.loads((tmp_path / "ev.json").read_text())["checks"]}
    assert checks["task_averaged"]["ours"] is None and checks["task_averaged"]["upstream"] is None
    assert checks["knowledge-update.n"]["upstream"] == 0 and checks["overall"]["ours"] == round(5 / 9, 4)


def test_a_shifted_qa_number_is_named(tmp_path, capsys):
    hashes = write_standins(tmp_path / "up", {"overall": 0.1})
    judged, ref = qa_files(tmp_path, WORKED)
    assert run(tmp_path / "up", tmp_path / "ev.json", "--judged", str(judged), "--reference", str(ref),
               hashes=hashes) == 1
    assert "1 differ (overall)" in capsys.readouterr().out


def test_a_label_by_another_judge_model_is_refused_before_running(tmp_path, capsys):
    hashes = write_standins(tmp_path / "up")
    judged, ref = qa_files(tmp_path, WORKED, model="mnemetric-lexical-v1")
    assert run(tmp_path / "up", tmp_path / "ev.json", "--judged", str(judged), "--reference", str(ref),
               hashes=hashes) == 2
    err = capsys.readouterr().err
    assert "u1" in err and "autoeval_label.model" in err and JUDGE in err
    assert not (tmp_path / "ev.json").exists()


def test_wrong_hash_is_refused_naming_file_and_both_hashes(tmp_path, capsys):
    hashes = write_standins(tmp_path / "up")
    assert run(tmp_path / "up", tmp_path / "ev.json", "--retrieval-log", str(hand_log(tmp_path))) == 2
    err = capsys.readouterr().err
    first = sorted(CROSSCHECK.pinned_sha256)[0]  # files are verified in path order
    assert str(tmp_path / "up" / first) in err
    assert CROSSCHECK.pinned_sha256[first] in err and hashes[first] in err
    assert not (tmp_path / "ev.json").exists()


def test_a_missing_upstream_file_is_named(tmp_path, capsys):
    hashes = write_standins(tmp_path / "up")
    (tmp_path / "up" / PATHS["eval_utils"]).unlink()
    assert run(tmp_path / "up", tmp_path / "ev.json", "--retrieval-log", str(hand_log(tmp_path)), hashes=hashes) == 2
    err = capsys.readouterr().err
    assert str(tmp_path / "up" / PATHS["eval_utils"]) in err and "does not exist" in err


def test_a_crashing_upstream_script_is_a_clean_error(tmp_path, capsys):
    hashes = write_standins(tmp_path / "up", retrieval="import sys\nsys.exit('broken stand-in')\n")
    assert run(tmp_path / "up", tmp_path / "ev.json", "--retrieval-log", str(hand_log(tmp_path)), hashes=hashes) == 2
    err = capsys.readouterr().err
    assert "print_retrieval_metrics.py" in err and "broken stand-in" in err


def test_nothing_to_check_is_a_user_error(tmp_path, capsys):
    hashes = write_standins(tmp_path / "up")
    assert run(tmp_path / "up", tmp_path / "ev.json", hashes=hashes) == 2
    assert "nothing to check" in capsys.readouterr().err


def test_evidence_is_byte_identical_across_runs_and_reads_back_typed(tmp_path):
    hashes = write_standins(tmp_path / "up")
    log = hand_log(tmp_path)
    judged, ref = qa_files(tmp_path, WORKED)
    args = ("--retrieval-log", str(log), "--judged", str(judged), "--reference", str(ref))
    assert run(tmp_path / "up", tmp_path / "a.json", *args, hashes=hashes) == 0
    assert run(tmp_path / "up", tmp_path / "b.json", *args, hashes=hashes) == 0
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    raw, checks = read_evidence(tmp_path / "a.json")
    assert len(checks) == 4 + 16 and all(c.agree for c in checks)
    raw["checks"][0]["agree"] = False  # a hand-edited verdict is caught
    (tmp_path / "c.json").write_text(json.dumps(raw))
    with pytest.raises(InputError, match="agree"):
        read_evidence(tmp_path / "c.json")


def graded_reply(messages: list[dict]) -> str:
    """The local endpoint says yes to a prompt holding the word "right"."""
    return "Yes." if "right" in messages[-1]["content"] else "No"


def write_hypotheses(tmp_path: Path, items) -> Path:
    hyp = tmp_path / "hyp.jsonl"
    hyp.write_text("".join(json.dumps({"question_id": q, "hypothesis": "right" if lab else "wrong"}) + "\n"
                           for q, _, lab in items))
    return hyp


def test_judge_labels_are_compared_question_by_question(tmp_path, monkeypatch):
    hashes = write_standins(tmp_path / "up", evaluate_qa=EVALUATE_QA_RUNNABLE)
    judged, ref = qa_files(tmp_path, WORKED)
    hyp = write_hypotheses(tmp_path, WORKED)
    with FakeOpenAIServer(reply=graded_reply) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        assert run(tmp_path / "up", tmp_path / "ev.json", "--judged", str(judged), "--reference", str(ref),
                   "--hypotheses", str(hyp), hashes=hashes) == 0
        assert server.count == len(WORKED)
    ev = json.loads((tmp_path / "ev.json").read_text())
    judge = {c["metric"]: c for c in ev["checks"] if c["script"] == "evaluate_qa.py"}
    assert set(judge) == {f"label.{q}" for q, _, _ in WORKED} | {"accuracy"}
    assert judge["label.u1"]["ours"] == judge["label.u1"]["upstream"] == 1 and judge["label.u3"]["upstream"] == 0
    assert judge["accuracy"]["upstream"] == 0.6 and ev["agree"] is True  # 6 of 10 labels are yes
    assert ev["not_run"] == [] and ev["judge_endpoint"] == server.base_url and str(hyp) in ev["inputs"]
    assert not list(tmp_path.glob("hyp.jsonl.eval-results-*"))  # upstream wrote its file in a temporary copy


def test_a_judge_label_that_differs_is_named(tmp_path, monkeypatch, capsys):
    hashes = write_standins(tmp_path / "up", evaluate_qa=EVALUATE_QA_RUNNABLE)
    hyp = write_hypotheses(tmp_path, WORKED)
    flipped = [(q, t, (not lab) if q == "u1" else lab) for q, t, lab in WORKED]  # our label for u1: no
    judged, ref = qa_files(tmp_path, flipped)
    with FakeOpenAIServer(reply=graded_reply) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        assert run(tmp_path / "up", tmp_path / "ev.json", "--judged", str(judged), "--reference", str(ref),
                   "--hypotheses", str(hyp), hashes=hashes) == 1
    bad = {c["metric"]: (c["ours"], c["upstream"]) for c in json.loads((tmp_path / "ev.json").read_text())["checks"]
           if not c["agree"]}
    assert bad == {"label.u1": (0, 1), "accuracy": (0.5, 0.6)}
    assert "label.u1" in capsys.readouterr().out


def test_without_an_endpoint_the_judge_is_not_run_and_says_why(tmp_path):
    hashes = write_standins(tmp_path / "up", evaluate_qa=EVALUATE_QA_RUNNABLE)
    judged, ref = qa_files(tmp_path, WORKED)
    assert run(tmp_path / "up", tmp_path / "ev.json", "--judged", str(judged), "--reference", str(ref),
               "--hypotheses", str(write_hypotheses(tmp_path, WORKED)), hashes=hashes) == 0
    ev = json.loads((tmp_path / "ev.json").read_text())
    assert ev["not_run"] == [{"script": "evaluate_qa.py", "reason": "no endpoint configured (OPENAI_BASE_URL and "
                                                                    "OPENAI_API_KEY)"}]
    assert ev["judge_endpoint"] is None and not any(c["script"] == "evaluate_qa.py" for c in ev["checks"])


def test_lock_pins_upstream_requirements_lite_and_httpx_below_028():
    pins = read_lock(LOCK)
    # requirements-lite.txt @ 9e0b455f (upstream-protocol.md §3.4), hand-typed:
    assert {k: pins[k] for k in ("openai", "tqdm", "backoff", "numpy", "nltk")} == {
        "openai": "1.35.1", "tqdm": "4.66.4", "backoff": "2.2.1", "numpy": "1.26.3", "nltk": "3.9.1"}
    assert "packaging" in pins
    assert tuple(int(x) for x in pins["httpx"].split(".")[:2]) < (0, 28)


def test_an_unpinned_lock_line_is_named(tmp_path):
    lock = tmp_path / "bad.lock"
    lock.write_text("# pins\nopenai==1.35.1\nhttpx<0.28\n")
    with pytest.raises(InputError, match="line 3"):
        read_lock(lock)


def test_a_built_environment_is_reused_without_building(tmp_path):
    env_dir = tmp_path / "env"
    (env_dir / "bin").mkdir(parents=True)
    (env_dir / "bin" / "python").symlink_to(sys.executable)
    (env_dir / "mnemetric-lock.sha256").write_text(sha(LOCK) + "\n")
    assert ensure_env(LOCK, env_dir) == env_dir / "bin" / "python"
    info = describe_env(env_dir / "bin" / "python", LOCK)
    assert info["python"] == platform.python_version() and info["lock_sha256"] == sha(LOCK)


def test_an_existing_folder_that_is_not_a_venv_is_never_removed(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "precious.txt").write_text("keep")
    with pytest.raises(ConfigError, match="not a virtual environment"):
        ensure_env(LOCK, tmp_path / "mine")
    assert (tmp_path / "mine" / "precious.txt").read_text() == "keep"


# ------------------------------------------------------------------ opt-in: the real scripts


@pytest.fixture()
def real_env(tmp_path) -> tuple[Path, list[str]]:
    root = os.environ.get("MNEMETRIC_LONGMEMEVAL_DIR")
    if not root:
        pytest.skip("set MNEMETRIC_LONGMEMEVAL_DIR to a LongMemEval checkout at 9e0b455f to run the real scripts")
    if os.environ.get("MNEMETRIC_CROSSCHECK_BUILD_ENV") == "1":
        env_dir = os.environ.get("MNEMETRIC_CROSSCHECK_ENV_DIR") or str(tmp_path / "env")
        return Path(root), ["--env-dir", env_dir]
    import numpy
    if int(numpy.__version__.split(".")[0]) >= 2:
        pytest.skip(f"this interpreter has numpy {numpy.__version__} (upstream pins numpy<2); set "
                    "MNEMETRIC_CROSSCHECK_BUILD_ENV=1 to build the locked venv (needs the package index)")
    return Path(root), ["--python", sys.executable]


def test_real_upstream_scripts_agree_with_us(real_env, tmp_path):
    checkout, env_args = real_env
    logs = {}
    for granularity in ("session", "turn"):
        logs[granularity] = tmp_path / f"sample_retrievallog_{granularity}_bm25-upstream"
        assert main(["retrieve", str(SAMPLE), "--memory", "bm25-upstream", "--granularity", granularity,
                     "--conf", str(ROOT / "conf"), "--out", str(logs[granularity])]) == 0
    hyp = tmp_path / "hyp.jsonl"
    instances = json.loads(SAMPLE.read_text())
    hyp.write_text("".join(json.dumps({"question_id": x["question_id"], "hypothesis": str(x["answer"]) if i % 3
                                       else "not sure"}) + "\n" for i, x in enumerate(instances)))
    lexical = tmp_path / "hyp.jsonl.eval-results-lexical"
    assert main(["judge", str(hyp), str(SAMPLE), "--judge", "lexical", "--conf", str(ROOT / "conf"),
                 "--out", str(lexical)]) == 0
    judged = tmp_path / "judged_as_gpt-4o.jsonl"  # print_qa_metrics asserts the official judge model id
    lines = [json.loads(x) for x in lexical.read_text().splitlines()]
    judged.write_text("".join(json.dumps(x | {"autoeval_label": x["autoeval_label"] | {"model": JUDGE}}) + "\n"
                              for x in lines))
    note = "judged file: lexical-judge labels with autoeval_label.model rewritten to gpt-4o-2024-08-06"
    for granularity, n in (("session", 4), ("turn", 10)):
        out = tmp_path / f"ev_{granularity}.json"
        assert main(["crosscheck", "--upstream-dir", str(checkout), *env_args, "--retrieval-log",
                     str(logs[granularity]), "--judged", str(judged), "--reference", str(SAMPLE),
                     "--note", note, "--out", str(out)]) == 0
        ev = json.loads(out.read_text())
        assert ev["agree"] and ev["upstream"]["pinned"] and len(ev["checks"]) == n + 16
        assert ev["notes"] == [note]
        assert ev["environment"]["matches_lock"] is (env_args[0] == "--env-dir")


def hashed_reply(messages: list[dict]) -> str:
    """yes or no by the prompt's sha256: two judges get equal labels only for byte-equal prompts."""
    digest = hashlib.sha256(messages[-1]["content"].encode("utf-8")).digest()
    return "Yes" if digest[0] % 2 else "No."


def test_real_evaluate_qa_labels_equal_our_upstream_judge(real_env, tmp_path, monkeypatch):
    checkout, env_args = real_env
    instances = json.loads(SAMPLE.read_text())
    hyp = tmp_path / "hyp.jsonl"
    hyp.write_text("".join(json.dumps({"question_id": x["question_id"], "hypothesis": f"maybe {x['answer']}"})
                           + "\n" for x in instances))
    ours = tmp_path / "ours.eval-results-gpt-4o"
    with FakeOpenAIServer(reply=hashed_reply) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-local-test")
        assert main(["judge", str(hyp), str(SAMPLE), "--judge", "upstream-gpt-4o", "--conf", str(ROOT / "conf"),
                     "--longmemeval-dir", str(checkout), "--base-url", server.base_url, "--out", str(ours)]) == 0
        out = tmp_path / "ev_judge.json"
        assert main(["crosscheck", "--upstream-dir", str(checkout), *env_args, "--judged", str(ours),
                     "--reference", str(SAMPLE), "--hypotheses", str(hyp), "--judge-timeout", "600",
                     "--note", "evaluate_qa.py and our judge ran against a local test server (replies by prompt "
                     "sha256), not the OpenAI API", "--out", str(out)]) == 0
        assert server.count == 2 * len(instances)
    ev = json.loads(out.read_text())
    labels = [c for c in ev["checks"] if c["metric"].startswith("label.")]
    assert len(labels) == len(instances) and all(c["agree"] for c in labels)
    assert 0 < sum(c["ours"] for c in labels) < len(instances)  # both labels occur: the test can fail
