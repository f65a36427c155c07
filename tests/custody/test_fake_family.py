"""A made-up third family, "Quiz" (tests/custody/quiz/: its package and its conf, nothing else), runs through
the generic layers: params schema and composition, the executor over real HTTP, the gate, the run
manifest, the result card, the report page, the task inventory, the fingerprint stage's component list
and the cross-check frame. Every expected value is worked by hand in a comment.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from mnemetric.config import build, compose
from mnemetric.custody.card import card_from_files
from mnemetric.custody.crosscheck import Check, crosscheck, number
from mnemetric.custody.gate import gate
from mnemetric.custody.inventory import SCHEMA, derive_inventory, metrics_files
from mnemetric.custody.manifest import build_manifest
from mnemetric.custody.upstream_env import run_script
from mnemetric.errors import ConfigError, IntegrityError, PluginError
from mnemetric.execute import ImmediateExecutor
from mnemetric.family import Family, build_family, check_family, conf_families
from mnemetric.fingerprint import component_target, fingerprint
from mnemetric.params import lookup
from mnemetric.report.page import write_family_report
from mnemetric.stages.fingerprint import components

from tests.custody.quiz.family import QUESTIONS, Quiz
from tests.support.openai_server import FakeOpenAIServer

CONF = Path(__file__).parent / "quiz" / "conf"
GOLD = {text: gold for _, _, text, gold in QUESTIONS}


def quiz_reply(messages):
    """The fake model answers q1 and q3 right and q2 wrong: recall 2/3; easy 1/2, hard 1/1."""
    text = messages[-1]["content"].removeprefix("Answer in one word: ")
    return "green" if text == "What colour is the sky?" else GOLD[text]


def flat(params: dict, keys) -> dict:
    return {k: lookup(params, k) for k in keys}


def test_quiz_is_a_family_built_from_its_own_conf():
    (fam,) = conf_families(CONF)
    assert isinstance(fam, Quiz) and isinstance(fam, Family) and check_family(fam, "benchmark") is fam
    assert metrics_files([fam]) == ["metrics/quiz.json"]
    # the fingerprint stage's component list comes from the families: Quiz's reader is fingerprinted
    assert components((fam,)) == {"quiz.reader": "quiz-reader"}
    reader = compose(conf_dir=CONF)["quiz"]["reader"]
    fp = fingerprint(component_target(reader))
    assert "tests.custody.quiz.family" in fp.to_record()["modules"]


def test_quiz_registers_its_params_schema_and_its_conf_group():
    params = compose(conf_dir=CONF)
    assert list(params) == ["quiz", "benchmark", "executor", "llm", "paths", "memory_llm"]  # conf/config.yaml's order (memory_llm: the generic model proxy)
    assert params["quiz"]["questions"] == 3 and params["benchmark"]["name"] == "quiz"
    # Quiz's typed section refuses a bad value at composition, naming the key (Hydra) ...
    with pytest.raises(ConfigError, match="quiz.questions"):
        compose(["quiz.questions=three"], conf_dir=CONF)
    # ... and its range check (mnemetric.schema over Quiz's Section) names it too
    with pytest.raises(ConfigError, match=r"quiz\.questions: must be >= 1, got 0"):
        compose(["quiz.questions=0"], conf_dir=CONF)
    with pytest.raises(ConfigError, match=r"quiz\.source: 'ftp' is not one of quizhub, homemade"):
        compose(["quiz.source=ftp"], conf_dir=CONF)


@pytest.fixture
def quiz_run(tmp_path, monkeypatch):
    """One Quiz run in a temporary project: compose, build the reader, answer through the executor
    against the loopback server, write the run manifest. Quiz's official endpoint is the server's."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeOpenAIServer(reply=quiz_reply) as server:
        params = compose([f"quiz.reader.base_url={server.base_url}", f"benchmark.official_endpoint={server.base_url}"],
                         conf_dir=CONF)
        family = build_family(params["benchmark"])
        reader = build(params["quiz"]["reader"], "quiz.reader")
        with ImmediateExecutor(params["llm"], progress=False) as executor:
            from tests.custody.quiz.family import run_quiz

            metrics = run_quiz(params, executor, reader)
            sent, used = server.count, executor.usage.requests_sent
    manifest = build_manifest(family, family.manifest_sections(params))
    Path("metrics/run-quiz.json").write_text(json.dumps(manifest), encoding="utf-8")
    return params, family, metrics, manifest, (sent, used), server.base_url


def test_quiz_answers_through_the_executor_and_the_manifest_carries_the_evidence(quiz_run):
    params, family, metrics, manifest, (sent, used), url = quiz_run
    assert (sent, used) == (3, 3)  # three questions, three requests, one ledger
    # q1 "4" right, q2 "green" wrong, q3 "Paris" right: 2/3; easy 1/2, hard 1/1
    assert metrics["recall"] == {"acc": 2 / 3, "n": 3}
    assert metrics["per_kind"] == {"easy": {"acc": 0.5, "n": 2}, "hard": {"acc": 1.0, "n": 1}}
    lines = [json.loads(x) for x in Path("data/quiz/answers.jsonl").read_text().splitlines()]
    assert all(len(x["request_sha256"]) == 64 and x["params_sent"] == {"temperature": 0, "max_tokens": 5}
               for x in lines)
    assert list(manifest) == ["schema", "benchmark", "variant", "suite", "reader", "counts", "official_equivalence"]
    assert manifest["benchmark"] == "Quiz" and manifest["schema"] == "mnemetric.run-manifest/v1"
    assert manifest["reader"]["resolved_models"] == ["quiz-7"] and manifest["reader"]["endpoints"] == [url]
    assert manifest["official_equivalence"] == {"value": True, "reasons": []}  # every Quiz rule holds


def test_quiz_s_gate_decides_not_longmemeval_s(quiz_run):
    _, family, _, manifest, _, url = quiz_run
    doc = json.loads(json.dumps(manifest))
    doc["reader"]["endpoints"] = ["https://api.openai.com/v1"]  # LongMemEval's official API is not Quiz's
    doc["counts"]["answered"] = 2
    verdict = gate(doc, family)
    assert not verdict.value and verdict.reasons == (
        "2 of 3 question(s) answered",
        f"endpoint(s) ['https://api.openai.com/v1'] are not Quiz's {url}")


def test_the_manifest_frame_refuses_sections_quiz_s_gate_needs_or_frame_keys(quiz_run):
    params, family, _, _, _, _ = quiz_run
    sections = family.manifest_sections(params)
    with pytest.raises(PluginError, match=r"returned no \['counts'\] section"):
        build_manifest(family, {k: v for k, v in sections.items() if k != "counts"})
    with pytest.raises(PluginError, match="frame's own key"):
        build_manifest(family, {**sections, "benchmark": "x"})

    @dataclass(frozen=True)
    class Sloppy(Quiz):
        def official_reasons(self, manifest):
            return "not a list"

    with pytest.raises(PluginError, match="official_reasons"):
        build_manifest(Sloppy(), sections)


def test_quiz_s_card_goes_through_the_same_frame(quiz_run):
    params, family, _, _, _, url = quiz_run
    lines = card_from_files(family, params).splitlines()
    assert lines[:7] == ["#### Quiz result: memory — on `exam` (suite `all`)", "",
                         "| metric | value | 95% interval | n |", "|---|---|---|---|",
                         "| recall | 0.6667 | — | 3 |", "| recall (easy) | 0.5000 | — | 2 |",
                         "| recall (hard) | 1.0000 | — | 1 |"]
    assert lines[8:] == ["- exam: `exam` from quizhub",
                         f"- reader: `quiz-7`, returned ['quiz-7'], sent [{{'temperature': 0, 'max_tokens': 5}}], "
                         f"endpoint(s) ['{url}']",
                         "- 3 of 3 answered", "- official_equivalence: **true**"]


def test_quiz_s_report_goes_through_the_same_page(quiz_run, tmp_path):
    params, family, _, manifest, _, _ = quiz_run
    model = write_family_report(family, flat(params, family.report_params), tmp_path / "reports" / "index.html")
    page = (tmp_path / "reports" / "index.html").read_text()
    assert model.title == "Quiz report: exam" and model.equivalence.official is True
    assert "<h2>Recall per question kind</h2>" in page and "official_equivalence: true" in page
    assert manifest["reader"]["requests"][0] in page  # the custody row shows the first request's sha256
    assert "#### Quiz result" in page  # the card, verbatim


def test_the_inventory_measures_quiz_tasks_and_runs_quiz_s_review(quiz_run):
    _, family, metrics, manifest, _, _ = quiz_run
    task = {"coverage_status": "unmapped", "evidence_refs": [], "test_refs": []}
    seed = {"schema": SCHEMA, "reviewed_date": "2026-12-01", "families": [{
        "benchmark": "Quiz", "implementation": {}, "repository": "https://github.com/example/quiz", "revision": "0" * 40,
        "review_scope": "README", "reviewed_sources": [], "protocol_requirements": [], "remaining_audit": [],
        "tasks": [{**task, "task": "recall", "selector": "kind = recall"}, {**task, "task": "hard", "selector": "kept"}]}]}
    inv = derive_inventory(seed, run_manifests=[{**manifest, "path": "metrics/run-quiz.json"}], crosscheck=None,
                           markers={}, metrics={"metrics/quiz.json": metrics}, families=[family])
    recall, hard = inv["families"][0]["tasks"]
    # metrics/quiz.json states variant "exam", the manifest ran exam: attributed; 2/3 over n=3 -> measured
    assert recall == {"task": "recall", "selector": "kind = recall", "coverage_status": "measured",
                      "evidence_refs": ["metrics/quiz.json#recall.acc", "metrics/run-quiz.json"], "test_refs": []}
    assert hard["selector"] == "kept"  # the seed's text is kept
    assert hard["coverage_status"] == "measured" and inv["complete"] is True
    assert inv["families"][0]["implementation"] == {"official_run": True}  # Quiz's own review block
    # a metrics file of another exam is not evidence for this manifest
    inv = derive_inventory(seed, run_manifests=[{**manifest, "path": "metrics/run-quiz.json"}], crosscheck=None,
                           markers={}, metrics={"metrics/quiz.json": {**metrics, "variant": "practice"}},
                           families=[family])
    assert inv["families"][0]["tasks"][0]["coverage_status"] == "unmapped"


def test_a_family_without_a_gate_of_its_own_is_never_official(quiz_run):
    params, _, _, _, _, _ = quiz_run

    @dataclass(frozen=True)
    class Ungated(Quiz):
        def official_reasons(self, manifest):
            return super(Quiz, self).official_reasons(manifest)  # FamilyBase's: no protocol

    m = build_manifest(Ungated(), Ungated().manifest_sections(params))
    assert m["official_equivalence"] == {"value": False, "reasons": ["Quiz has no official protocol to check a run against"]}


# ------------------------------------------------------------------ the cross-check frame with Quiz's own scripts

SCORE = "eval/score.py"


@dataclass(frozen=True)
class QuizScripts:
    """Quiz's upstream scoring script prints ``recall=<x>``; Quiz parses that layout itself."""

    pinned_sha256: dict
    lock: Path
    repo: str = "quiz/upstream"
    revision: str = "rev-quiz"
    judge_script: str = "eval/judge.py"

    def input_files(self, inputs):
        if inputs.get("answers") is None:
            raise ConfigError("crosscheck", "nothing to check", fix="pass answers")
        return [Path(inputs["answers"])]

    def run(self, python, root, inputs):
        printed = run_script(python, root / SCORE, [Path(inputs["answers"]).resolve()])
        upstream = number(printed.strip().removeprefix("recall="))
        lines = [json.loads(x) for x in Path(inputs["answers"]).read_text().splitlines() if x.strip()]
        ours = round(sum(x["correct"] for x in lines) / len(lines), 4)
        return [Check("score.py", "recall", ours, upstream)], [], None


def standin(root: Path, printed: str = "0.6667") -> dict[str, str]:
    text = f"print('recall={printed}')\n"
    (root / SCORE).parent.mkdir(parents=True, exist_ok=True)
    (root / SCORE).write_text(text)
    return {SCORE: hashlib.sha256(text.encode()).hexdigest()}


def test_the_crosscheck_frame_runs_quiz_s_scripts_with_quiz_s_parser(quiz_run, tmp_path):
    (tmp_path / "lock.txt").write_text("quizlib==1.0\n")
    checkout = tmp_path / "checkout"
    pins = standin(checkout)
    spec = QuizScripts(pins, tmp_path / "lock.txt")
    ev = crosscheck(checkout, spec, python=sys.executable, answers=Path("data/quiz/answers.jsonl"))
    assert ev["upstream"] == {"repo": "quiz/upstream", "revision": "rev-quiz", "pinned": True, "files": pins}
    # ours: 2/3 rounded to 4 decimals = 0.6667; the stand-in prints 0.6667
    assert [(c["metric"], c["ours"], c["upstream"], c["agree"]) for c in ev["checks"]] == [
        ("recall", 0.6667, 0.6667, True)]
    assert ev["agree"] is True and ev["environment"]["built_from_lock"] is False
    pins = standin(checkout, printed="0.5")
    ev = crosscheck(checkout, replace(spec, pinned_sha256=pins), python=sys.executable,
                    answers=Path("data/quiz/answers.jsonl"))
    assert ev["agree"] is False
    with pytest.raises(IntegrityError, match="check out quiz/upstream at rev-quiz"):
        crosscheck(checkout, replace(spec, pinned_sha256={SCORE: "0" * 64}), python=sys.executable,
                   answers=Path("data/quiz/answers.jsonl"))
    with pytest.raises(ConfigError, match="nothing to check"):
        crosscheck(checkout, spec, python=sys.executable)
