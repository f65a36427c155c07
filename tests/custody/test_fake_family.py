"""custody/ works for a family that is not LongMemEval: "Quiz", written here by hand.

The proof that a newcomer can plug a family in: the gate, the run manifest, the result card, the task
inventory and the cross-check take every family fact from the family object (custody imports no
family). Every
expected value is worked by hand in a comment; the Quiz "upstream" scripts are stand-ins run as real
processes.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType

import pytest

from mnemetric.custody.card import card_from_files
from mnemetric.custody.crosscheck import crosscheck
from mnemetric.custody.gate import official_equivalence
from mnemetric.custody.inventory import SCHEMA, derive_inventory, metrics_files
from mnemetric.custody.manifest import build_manifest
from mnemetric.errors import InputError, IntegrityError
from mnemetric.family import CardRow, CardSpec, CrosscheckSpec, Family, OfficialProtocol, TaskMetric, check_family

QUIZ_ENDPOINT = "http://quiz.example.test/v1"
PROMPTS = "a" * 64
PROTOCOL = OfficialProtocol(
    source="quizhub", suite="all", profile="quiz-v1", judge_model="judge-7", judge_params=MappingProxyType({"t": 0}),
    endpoint=QUIZ_ENDPOINT, prompt_set_sha256=PROMPTS, official_variants=frozenset({"exam"}), judge_kind="quiz-judge")


# ------------------------------------------------------------------ Quiz's own functions (naive, in the test)


def score_retrieval(log: Path, granularity: str) -> dict:
    """Mean of each line's ``hit5`` (0/1) over lines without "_abs" in qid."""
    lines = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
    kept = [x["hit5"] for x in lines if "_abs" not in x["qid"]]
    return {"granularity": "session", "aggregate": {"exclude_abs": {"session": {"recall_all@5": sum(kept) / len(kept)}}}}


def judged_labels(path: Path) -> list[tuple[str, bool, str]]:
    return [(x["qid"], x["ok"], x["by"]) for x in map(json.loads, path.read_text().splitlines()) if x]


def reference_types(path: Path) -> dict[str, str]:
    return {x["qid"]: x["kind"] for x in json.loads(path.read_text())}


def qa_estimates(pairs, types, file):
    by: dict[str, list[bool]] = {}
    for q, ok in pairs:
        by.setdefault(types[q], []).append(ok)
    per = {t: {"accuracy": sum(v) / len(v), "n": len(v)} for t, v in by.items()}
    return {"per_type": per, "task_averaged": sum(b["accuracy"] for b in per.values()) / len(per),
            "overall": sum(ok for _, ok in pairs) / len(pairs), "abstention": {"accuracy": None, "n": 0}}


def quiz_sections(params: dict) -> dict:
    """Quiz's run-manifest sections from its own params (naive: copied, counts from the judged list)."""
    judged = params["judged"]
    return {"variant": {**params["variant"], "sha256_verified": True}, "suite": {"name": params["suite"]},
            "scoring": {"profile": params["profile"]},
            "judge": {"name": "quiz-judge", "kind": "quiz-judge", "requested_model": "judge-7",
                      "resolved_models": ["judge-7"], "prompt_set_sha256": PROMPTS, "prompt_set_sha256s": [PROMPTS],
                      "endpoints": [params["endpoint"]],
                      "params_sent": {"requests": len(judged), "values": [{"t": 0}], "not_in_cache": 0}},
            "counts": {"questions": len(judged), "judged": len(judged), "failed": 0},
            "memory": {"name": params["memory"]}}


def quiz_card_rows(docs: dict) -> list[CardRow]:
    """recall.acc over recall.n, then speed.acc (no n)."""
    quiz, speed = docs.get("quiz") or {}, docs.get("speed") or {}
    rows = [CardRow("recall", quiz["recall"]["acc"], n=quiz["recall"]["n"])] if "recall" in quiz else []
    return rows + ([CardRow("speed", speed["speed"]["acc"])] if "speed" in speed else [])


@dataclass(frozen=True)
class Quiz:
    """A family that is not LongMemEval (satisfies mnemetric.family.Family)."""

    name: str = "quiz"
    metrics: str = "metrics/quiz.json"
    display_name: str = "Quiz"
    task_metrics: dict = field(default_factory=lambda: {
        "recall": TaskMetric("metrics/quiz.json", "recall.acc", "recall.n"),
        "speed": TaskMetric("metrics/quiz-speed.json", "speed.acc", "speed.n")})
    official: OfficialProtocol | None = PROTOCOL
    crosscheck: CrosscheckSpec | None = None
    run_manifest: str | None = "metrics/run-quiz.json"
    manifest_sections: object = quiz_sections
    card: CardSpec | None = CardSpec({"quiz": ("metrics/quiz.json",), "speed": ("metrics/quiz-speed.json",)},
                                     quiz_card_rows, empty="(Quiz measured nothing)")
    output_files: object = lambda params: [params["answers"]]


def test_quiz_is_a_family():
    assert isinstance(Quiz(), Family) and check_family(Quiz(), "benchmark") == Quiz()
    assert metrics_files([Quiz()]) == ["metrics/quiz-speed.json", "metrics/quiz.json"]


# ------------------------------------------------------------------ gate and run manifest


def official_manifest() -> dict:
    return {"variant": {"name": "exam", "source": "quizhub", "sha256_verified": True}, "suite": {"name": "all"},
            "scoring": {"profile": "quiz-v1"},
            "judge": {"requested_model": "judge-7", "resolved_models": ["judge-7"], "prompt_set_sha256": PROMPTS,
                      "prompt_set_sha256s": [PROMPTS], "endpoints": [QUIZ_ENDPOINT],
                      "params_sent": {"requests": 1, "values": [{"t": 0}], "not_in_cache": 0}},
            "counts": {"questions": 1, "judged": 1, "failed": 0}}


def test_the_gate_checks_a_run_against_quiz_s_protocol():
    assert official_equivalence(official_manifest(), PROTOCOL) == (True, [])
    doc = official_manifest()
    doc["judge"]["endpoints"] = ["https://api.openai.com/v1"]  # LongMemEval's official API is not Quiz's
    doc["suite"]["name"] = "full"
    ok, reasons = official_equivalence(doc, PROTOCOL)
    assert not ok and reasons == [
        "suite 'full' is not the all suite",
        f"judge endpoint(s) ['https://api.openai.com/v1'] are not the official API {QUIZ_ENDPOINT} "
        "(another server may serve the same model name)"]


QUIZ_PARAMS = {"variant": {"name": "exam", "source": "quizhub"}, "suite": "all", "profile": "quiz-v1",
               "endpoint": QUIZ_ENDPOINT, "judged": ["q1", "q2"], "memory": "keyword"}


def test_the_run_manifest_frames_quiz_s_sections_and_applies_its_gate():
    m = build_manifest(Quiz(), Quiz().manifest_sections(QUIZ_PARAMS))
    assert list(m) == ["schema", "benchmark", "variant", "suite", "scoring", "judge", "counts", "memory",
                       "official_equivalence"]
    assert m["benchmark"] == "Quiz" and m["schema"] == "mnemetric.run-manifest/v1"
    assert m["official_equivalence"] == {"value": True, "reasons": []}
    # the same sections under another suite: Quiz's gate says why (its suite is "all")
    m = build_manifest(Quiz(), quiz_sections({**QUIZ_PARAMS, "suite": "full"}))
    assert m["official_equivalence"] == {"value": False, "reasons": ["suite 'full' is not the all suite"]}


def test_a_family_without_an_official_protocol_is_never_official():
    m = build_manifest(Quiz(official=None), quiz_sections(QUIZ_PARAMS))
    assert m["official_equivalence"] == {"value": False,
                                         "reasons": ["Quiz has no official protocol to check a run against"]}


# ------------------------------------------------------------------ the result card


def test_quiz_s_card_goes_through_the_same_code(tmp_path):
    (tmp_path / "metrics").mkdir()
    assert card_from_files(Quiz(), "data/quiz/judged.jsonl", root=tmp_path) is None  # no run manifest yet
    run = build_manifest(Quiz(), quiz_sections(QUIZ_PARAMS))
    (tmp_path / "metrics" / "run-quiz.json").write_text(json.dumps(run))
    lines = card_from_files(Quiz(), "data/quiz/judged.jsonl", root=tmp_path).splitlines()
    assert lines[:3] == ["#### Quiz result: memory `keyword` on `exam` (suite `all`)", "", "(Quiz measured nothing)"]
    (tmp_path / "metrics" / "quiz.json").write_text(json.dumps({"recall": {"acc": 0.5, "n": 4}}))
    (tmp_path / "metrics" / "quiz-speed.json").write_text(json.dumps({"speed": {"acc": 0.125}}))
    (tmp_path / "data" / "custody").mkdir(parents=True)
    (tmp_path / "data" / "custody" / "outputs.sha256.json").write_text(json.dumps(
        {"files": {"data/quiz/judged.jsonl": {"sha256": "9" * 64}}}))
    card = card_from_files(Quiz(), "data/quiz/judged.jsonl", root=tmp_path)
    lines = card.splitlines()
    assert lines[2:6] == ["| metric | value | 95% interval | n |", "|---|---|---|---|",
                          "| recall | 0.5000 | — | 4 |", "| speed | 0.1250 | — | — |"]
    assert f"- judged file: `data/quiz/judged.jsonl`, sha256 `{'9' * 64}`" in lines
    assert "- official_equivalence: **true**" in lines
    assert "- judge: `quiz-judge`, snapshot(s) `judge-7`, prompt-set sha256 `" + PROMPTS + "`, endpoint(s) `" \
        + QUIZ_ENDPOINT + "`" in lines


# ------------------------------------------------------------------ the task inventory


def seed() -> dict:
    return {"schema": SCHEMA, "families": [{"benchmark": "Quiz", "implementation": {},
                                            "tasks": [{"task": "recall", "note": "kept"}, {"task": "speed"}]}],
            "qa_aggregation_review": {}}


def quiz_manifest(**over) -> dict:
    m = {"path": "metrics/run-quiz.json", "benchmark": "Quiz",
         "variant": {"name": "exam", "sha256_verified": True}, "suite": {"name": "all"},
         "judge": {"name": "quiz-judge", "kind": "quiz-judge", "prompt_set_sha256": PROMPTS},
         "counts": {"questions": 4, "judged": 4, "failed": 0},
         "official_equivalence": {"value": True, "reasons": []}}
    return m | over


def derive(manifests, families=(Quiz(),), metrics=None):
    return derive_inventory(seed(), run_manifests=list(manifests), crosscheck=None,
                            markers={("quiz", "speed"): ["tests/test_q.py::test_speed"]},
                            metrics={"metrics/quiz.json": {"recall": {"acc": 0.5, "n": 4}}} if metrics is None else metrics,
                            families=list(families))


def test_the_inventory_measures_quiz_tasks_and_derives_its_reviews():
    inv = derive([quiz_manifest()])
    recall, speed = inv["families"][0]["tasks"]
    # recall: 0.5 over n=4 in metrics/quiz.json, attributed to the Quiz manifest -> measured
    assert recall == {"task": "recall", "note": "kept", "coverage_status": "measured",
                      "evidence_refs": ["metrics/quiz.json#recall.acc", "metrics/run-quiz.json"], "test_refs": []}
    # speed: its metrics file is absent; a test carries its marker -> mapped
    assert speed["coverage_status"] == "mapped" and speed["test_refs"] == ["tests/test_q.py::test_speed"]
    # the manifest: variant exam (official for Quiz), verified, suite all, 0 failed; judge kind quiz-judge, 4 judged
    assert inv["families"][0]["implementation"] == {"full_held_out_run_completed": True, "full_protocol_equivalence": True}
    assert inv["qa_aggregation_review"] == {"judge_executed": True, "judge_prompt_parity_verified": True}
    assert inv["complete"] is False


def test_quiz_s_rules_decide_not_longmemeval_s():
    # variant "s" is official for LongMemEval, not for Quiz; judge kind "upstream" is LongMemEval's
    inv = derive([quiz_manifest(variant={"name": "s", "sha256_verified": True},
                                judge={"name": "j", "kind": "upstream", "prompt_set_sha256": "b" * 64})])
    assert inv["families"][0]["implementation"]["full_held_out_run_completed"] is False
    assert inv["qa_aggregation_review"] == {"judge_executed": False, "judge_prompt_parity_verified": False}


def test_a_manifest_of_an_unknown_family_names_the_known_ones():
    with pytest.raises(InputError) as info:
        derive([quiz_manifest(benchmark="LongMemEval")])
    assert info.value.problem.field == "benchmark" and "fix: Quiz" in str(info.value)


def test_without_an_official_protocol_there_is_nothing_to_review():
    inv = derive([quiz_manifest()], families=[Quiz(official=None)])
    assert inv["families"][0]["tasks"][0]["coverage_status"] == "measured"
    assert inv["families"][0]["implementation"] == {}  # no reviewed family: its block is left as the seed has it
    assert inv["qa_aggregation_review"] == {"judge_executed": False, "judge_prompt_parity_verified": False}


# ------------------------------------------------------------------ the cross-check with Quiz's scripts

RETRIEVAL = "eval/print_ret.py"
QA = "eval/print_qa.py"
JUDGE = "eval/judge.py"


def standins(root: Path, recall: str = "0.5") -> dict[str, str]:
    """Quiz's "upstream" scripts (stand-ins printing fixed numbers) and their sha256s."""
    scripts = {
        RETRIEVAL: f"print('Session-level metrics: recall_all@5 = {recall}')\nprint('Turn-level metrics: ')\n",
        QA: "print('\\teasy: 0.5 (2)')\nprint('\\thard: 1.0 (1)')\nprint('Task-averaged Accuracy: 0.75')\n"
            "print('Overall Accuracy: 0.6667')\nprint('Abstention Accuracy: nan (0)')\n",
        JUDGE: ("import json, sys\nalias, hyp, ref = sys.argv[1:4]\n"  # labels every question but q2 correct
                "rows = [json.loads(x) for x in open(hyp) if x.strip()]\n"
                "with open(hyp + '.eval-results-' + alias, 'w') as out:\n"
                "    for r in rows:\n"
                "        out.write(json.dumps({'qid': r['qid'], 'ok': r['qid'] != 'q2', 'by': 'judge-7'}) + '\\n')\n"
                "print('Accuracy: 0.6667')\n"),
    }
    for rel, text in scripts.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return {rel: hashlib.sha256(text.encode()).hexdigest() for rel, text in scripts.items()}


def spec(pins: dict[str, str], lock: Path) -> CrosscheckSpec:
    return CrosscheckSpec(repo="quiz/upstream", revision="rev-quiz", retrieval_script=RETRIEVAL, qa_script=QA,
                          judge_script=JUDGE, pinned_sha256=pins, lock=lock,
                          printed={"session": ("recall_all@5",), "turn": ()}, question_types=("easy", "hard"),
                          judge_model="judge-7", judge_alias="j7", score_retrieval=score_retrieval, judged_labels=judged_labels,
                          reference_types=reference_types, qa_estimates=qa_estimates)


@pytest.fixture
def quiz_files(tmp_path, monkeypatch):
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "lock.txt").write_text("quizlib==1.0\n")
    log = tmp_path / "ret.jsonl"  # hits 1, 0 (q3_abs excluded) -> recall_all@5 = 0.5
    log.write_text("".join(json.dumps(x) + "\n" for x in
                           [{"qid": "q1", "hit5": 1}, {"qid": "q2", "hit5": 0}, {"qid": "q3_abs", "hit5": 1}]))
    judged = tmp_path / "judged.jsonl"  # easy: q1 yes, q2 no -> 0.5 (2); hard: q3 yes -> 1.0 (1)
    judged.write_text("".join(json.dumps({"qid": q, "ok": ok, "by": "judge-7"}) + "\n"
                              for q, ok in (("q1", True), ("q2", False), ("q3", True))))
    ref = tmp_path / "ref.json"  # task-averaged (0.5 + 1.0) / 2 = 0.75; overall 2/3 -> 0.6667
    ref.write_text(json.dumps([{"qid": "q1", "kind": "easy"}, {"qid": "q2", "kind": "easy"},
                               {"qid": "q3", "kind": "hard"}]))
    return tmp_path, log, judged, ref


def test_the_crosscheck_runs_quiz_s_scripts_and_compares_with_quiz_s_functions(quiz_files):
    tmp, log, judged, ref = quiz_files
    checkout = tmp / "checkout"
    pins = standins(checkout)
    ev = crosscheck(checkout, spec(pins, tmp / "lock.txt"), retrieval_log=log, judged=judged, reference=ref,
                    python=sys.executable)
    assert ev["upstream"] == {"repo": "quiz/upstream", "revision": "rev-quiz", "pinned": True, "files": pins}
    got = {c["metric"]: (c["ours"], c["upstream"]) for c in ev["checks"]}
    assert got == {"session.recall_all@5": (0.5, 0.5), "easy.accuracy": (0.5, 0.5), "easy.n": (2, 2),
                   "hard.accuracy": (1.0, 1.0), "hard.n": (1, 1), "task_averaged": (0.75, 0.75),
                   "overall": (0.6667, 0.6667), "abstention.accuracy": (None, None), "abstention.n": (0, 0)}
    assert ev["agree"] is True
    assert ev["not_run"] == [{"script": "judge.py", "reason": "no endpoint configured (OPENAI_BASE_URL and OPENAI_API_KEY)"}]


def test_a_quiz_script_that_prints_another_number_disagrees(quiz_files):
    tmp, log, _, _ = quiz_files
    checkout = tmp / "checkout"
    pins = standins(checkout, recall="0.25")
    ev = crosscheck(checkout, spec(pins, tmp / "lock.txt"), retrieval_log=log, python=sys.executable)
    assert [(c["metric"], c["ours"], c["upstream"], c["agree"]) for c in ev["checks"]] == [
        ("session.recall_all@5", 0.5, 0.25, False)]
    assert ev["agree"] is False


def test_a_quiz_checkout_that_is_not_the_pinned_one_is_refused_naming_quiz(quiz_files):
    tmp, log, _, _ = quiz_files
    checkout = tmp / "checkout"
    pins = standins(checkout)
    with pytest.raises(IntegrityError, match="check out quiz/upstream at rev-quiz"):
        crosscheck(checkout, spec(pins | {QA: "0" * 64}, tmp / "lock.txt"), retrieval_log=log, python=sys.executable)


def test_labels_by_another_judge_are_refused_naming_quiz_s_model(quiz_files):
    tmp, _, judged, ref = quiz_files
    checkout = tmp / "checkout"
    pins = standins(checkout)
    with pytest.raises(InputError, match="'judge-7': upstream print_qa.py asserts every label is by judge-8"):
        crosscheck(checkout, replace(spec(pins, tmp / "lock.txt"), judge_model="judge-8"), judged=judged,
                   reference=ref, python=sys.executable)


def test_the_judge_script_runs_with_quiz_s_alias_when_an_endpoint_is_configured(quiz_files, monkeypatch):
    tmp, _, judged, ref = quiz_files
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # read only to record it; the stand-in sends nothing
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    hyp = tmp / "hyp.jsonl"
    hyp.write_text("".join(json.dumps({"qid": q, "hypothesis": "x"}) + "\n" for q in ("q1", "q2", "q3")))
    checkout = tmp / "checkout"
    pins = standins(checkout)
    ev = crosscheck(checkout, spec(pins, tmp / "lock.txt"), judged=judged, reference=ref, hypotheses=hyp,
                    python=sys.executable)
    judge = {c["metric"]: (c["ours"], c["upstream"]) for c in ev["checks"] if c["script"] == "judge.py"}
    # ours: q1 yes, q2 no, q3 yes (judged.jsonl); the stand-in wrote hyp.jsonl.eval-results-j7 with the same;
    # accuracy 2/3 -> 0.6667 on both sides
    assert judge == {"label.q1": (1, 1), "label.q2": (0, 0), "label.q3": (1, 1), "accuracy": (0.6667, 0.6667)}
    assert ev["not_run"] == [] and ev["judge_endpoint"] == "http://127.0.0.1:9/v1" and ev["agree"] is True
