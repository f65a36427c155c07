"""A made-up third family, Quiz, plugs into a project with no edit outside its package (tests/custody/quiz/),
its conf options and its dvc.yaml stages — and runs through the executor, the gate, the run manifest, the
custody manifest, the fingerprint stage, the card and the report page, each reached by the generic doors.

The project here is a temporary folder whose conf/ is the repository's conf/, byte for byte, plus Quiz's
option files (conf/benchmark/quiz.yaml, conf/quiz/exam.yaml): config.yaml does not name Quiz, yet the
composition chooses its ``quiz`` group (the family's ``conf_groups``, added by the schema). Its dvc.yaml
stages (tests/custody/quiz/stages.yaml) declare exactly what the modules they run read. No dvc process: the
stage doors are called in-process, in dvc.yaml's order.
"""

from __future__ import annotations

import filecmp
import json
import shutil
from pathlib import Path

import pytest
import yaml

from mnemetric.config import compose, compose_to
from mnemetric.custody.manifest import read_run_manifest
from mnemetric.family import family_named
from tests.conftest import ROOT
from tests.custody.test_fake_family import quiz_reply
from tests.support.openai_server import FakeOpenAIServer

QUIZ = Path(__file__).parent / "quiz"
QUIZ_CONF = ("benchmark/quiz.yaml", "quiz/exam.yaml")
"""Quiz's conf options: everything it adds to a project's conf/."""

UNPRICED = "llm.budget.max_usd=null"
"""quiz-7 has no price in the project's table, so the run caps requests only."""
REPO_CONF = ROOT / "src" / "mnemetric" / "conf"


def files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project folder: the repository's conf/ plus Quiz's option files; the working directory."""
    shutil.copytree(REPO_CONF, tmp_path / "conf", ignore=shutil.ignore_patterns("__pycache__"))
    for rel in QUIZ_CONF:
        (tmp_path / "conf" / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(QUIZ / "conf" / rel, tmp_path / "conf" / rel)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    return tmp_path


def test_quiz_adds_only_its_own_conf_files(project):
    added = files(project / "conf") - files(REPO_CONF)
    assert added == set(QUIZ_CONF)
    same, changed, _ = filecmp.cmpfiles(REPO_CONF, project / "conf", sorted(files(REPO_CONF)), shallow=False)
    assert changed == [] and len(same) == len(files(REPO_CONF))  # config.yaml included: not one edit
    assert "quiz" not in (project / "conf" / "config.yaml").read_text()


def test_the_composition_chooses_quiz_s_group_without_a_line_in_config_yaml(project):
    params = compose(conf_dir=project / "conf")
    assert params["quiz"]["name"] == "exam" and params["quiz"]["reader"]["model"] == "quiz-7"
    assert params["benchmark"]["name"] == "longmemeval"  # the headline stays the project's
    # V1's and V2's sections are all still there, in conf/config.yaml's order; Quiz's comes after
    assert list(params)[-1] == "quiz" and list(params)[:3] == ["variant", "adapter", "scoring"]
    # its typed section is checked at composition (the key named), and -S chooses among its options
    with pytest.raises(Exception, match=r"quiz\.questions"):
        compose(["quiz.questions=0"], conf_dir=project / "conf")
    (project / "conf" / "quiz" / "practice.yaml").write_text(
        (project / "conf" / "quiz" / "exam.yaml").read_text().replace("name: exam", "name: practice"))
    assert compose(["quiz=practice"], conf_dir=project / "conf")["quiz"]["name"] == "practice"


def stage_module(cmd: str):
    import importlib

    name, *args = cmd.removeprefix("python -m ").split()
    return importlib.import_module(name), args


STAGES = yaml.safe_load((QUIZ / "stages.yaml").read_text())["stages"]


def test_quiz_s_stages_declare_what_the_generic_doors_read_for_quiz(project):
    for name, spec in STAGES.items():
        module, args = stage_module(spec["cmd"])
        declared = module.params_for(args) if hasattr(module, "params_for") else module.PARAMS
        assert spec["params"] == declared, name


def test_dvc_loads_the_project_s_pipeline_with_quiz_s_stages_appended(project):
    """The repository's dvc.yaml, untouched, plus Quiz's stages: DVC resolves them (``${quiz.answers}``)."""
    from dvc.repo import Repo

    compose_to("params.yaml", project / "conf", [])
    pipeline = yaml.safe_load((ROOT / "dvc.yaml").read_text())
    pipeline["stages"].update(STAGES)
    Path("dvc.yaml").write_text(yaml.safe_dump(pipeline, sort_keys=False))
    (project / ".dvc").mkdir()  # what `dvc init --no-scm` writes (Repo.init would log to a closed capture)
    (project / ".dvc" / "config").write_text("[core]\n    no_scm = True\n")
    with Repo(str(project)) as repo:
        stages = {s.addressing: s for s in repo.index.stages}
    assert set(STAGES) <= set(stages)
    assert [str(o) for o in stages["quiz"].outs] == ["data/quiz/answers.jsonl", "metrics/quiz.json"]


def run_stages(capsys) -> dict[str, str]:
    """Each of Quiz's dvc.yaml stages, in order, in-process; stage -> what it printed."""
    printed = {}
    for name, spec in STAGES.items():
        module, args = stage_module(spec["cmd"])
        module.main(args) if args else module.main()
        printed[name] = capsys.readouterr().out
    return printed


def test_quiz_runs_through_executor_gate_manifest_card_and_report(project, capsys):
    from mnemetric.cli import main as cli

    with FakeOpenAIServer(reply=quiz_reply) as server:
        # Quiz's official endpoint is the loopback server's: its own conf option says so (the registry reads it)
        option = project / "conf" / "benchmark" / "quiz.yaml"
        option.write_text(option.read_text().replace("http://quiz.example.test/v1", server.base_url))
        compose_to("params.yaml", project / "conf",
                   ["benchmark=quiz", f"quiz.reader.base_url={server.base_url}", UNPRICED])
        printed = run_stages(capsys)
        sent = server.count
    assert sent == 3  # one request per question, through the run's one executor
    # the executor: q1 "4" right, q2 "green" wrong, q3 "Paris" right -> 2/3
    metrics = json.loads(Path("metrics/quiz.json").read_text())
    assert metrics["recall"] == {"acc": 2 / 3, "n": 3} and "recall 0.6667 over 3" in printed["quiz"]
    # the fingerprint stage fingerprinted Quiz's reader (the family's `fingerprints`)
    fp = json.loads(Path("data/fingerprints/quiz-reader.json").read_text())
    assert fp["component"] == "quiz.reader" and "tests.custody.quiz.family" in fp["modules"]
    # the run manifest and its gate: every Quiz rule holds (the server is Quiz's official endpoint here)
    run = json.loads(Path("metrics/run-quiz.json").read_text())
    typed = read_run_manifest("metrics/run-quiz.json", family_named("quiz"))  # the frame's reader checks it
    assert typed.benchmark == "Quiz" and typed.official_equivalence.value is True and not typed.official_equivalence.reasons
    assert run["reader"]["endpoints"] == [server.base_url] and len(run["reader"]["requests"]) == 3
    # the custody manifest hashes Quiz's output files
    sha = json.loads(Path("data/custody/quiz.sha256.json").read_text())
    assert "data/quiz/answers.jsonl" in json.dumps(sha)
    # the report page: Quiz's own, with its card verbatim
    page = Path("reports/quiz.html").read_text()
    assert "Quiz report: exam" in page and "#### Quiz result" in page and "official_equivalence: true" in page
    # the card: `mnemetric card` reads params.yaml's benchmark (quiz) and shows Quiz's numbers and custody
    assert cli(["card"]) == 0
    card = capsys.readouterr().out
    assert card.startswith("#### Quiz result") and "| recall | 0.6667 | — | 3 |" in card
    assert "- 3 of 3 answered" in card and "- official_equivalence: **true**" in card


def test_quiz_s_gate_decides_an_unofficial_run(project, capsys):
    with FakeOpenAIServer(reply=quiz_reply) as server:
        compose_to("params.yaml", project / "conf", ["benchmark=quiz", f"quiz.reader.base_url={server.base_url}",
                                                   "quiz.questions=2", UNPRICED])
        run_stages(capsys)
    run = json.loads(Path("metrics/run-quiz.json").read_text())
    assert run["official_equivalence"] == {"value": False, "reasons": [
        f"endpoint(s) ['{server.base_url}'] are not Quiz's {family_named('quiz').official_endpoint}"]}
