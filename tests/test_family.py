"""mnemetric.family: every conf/benchmark option builds a Family; a newcomer's option plugs in by conf alone.

Expected facts are written by hand from the upstream protocols (shared/docs/upstream-protocol.md §1.2,
§3.2; upstream-v2-protocol.md §1), never read back from the family objects under test.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
import yaml

from mnemetric.config import compose
from mnemetric.errors import ConfigError
from mnemetric.family import (
    CardRow, CardSpec, Family, FamilyBase, TaskMetric, build_family, by_name, check_family, conf_families,
    family_named, headline_family,
)

from tests.conftest import ROOT

CONF = ROOT / "src" / "mnemetric" / "conf"
OPTIONS = sorted(p.stem for p in (CONF / "benchmark").glob("*.yaml"))


def test_the_benchmark_group_has_both_families():
    assert OPTIONS == ["longmemeval", "longmemeval-v2"]


@pytest.mark.parametrize("option", OPTIONS)
def test_every_benchmark_option_builds_a_family(option):
    section = yaml.safe_load((CONF / "benchmark" / f"{option}.yaml").read_text(encoding="utf-8"))
    fam = build_family(section)
    assert isinstance(fam, Family)
    assert fam.name == option == section["name"] and fam.metrics == section["metrics"]
    assert fam.display_name.lower() == option  # the marker spelling is the display name in lower case
    assert fam.task_metrics and all(isinstance(k, TaskMetric) for k in fam.task_metrics.values())


@pytest.mark.parametrize("option", OPTIONS)
def test_every_benchmark_option_composes_and_builds_from_the_composed_params(option):
    cfg = compose([f"benchmark={option}"], conf_dir=CONF)
    assert build_family(cfg["benchmark"]).name == option


def test_the_longmemeval_family_holds_the_upstream_v1_facts():
    v1 = {f.name: f for f in conf_families()}["longmemeval"]
    types = {"single-session-user", "single-session-assistant", "single-session-preference",
             "temporal-reasoning", "knowledge-update", "multi-session"}
    assert set(v1.task_metrics) == types | {"abstention"}
    assert v1.task_metrics["multi-session"].ref() == "metrics/detail/qa.json#per_type.multi-session.accuracy"
    assert v1.task_metrics["abstention"].count == "abstention.n"
    from mnemetric.longmemeval.gate import OFFICIAL as p  # the family's own rules, in its package
    assert (p.judge_model, dict(p.judge_params), p.endpoint) == (
        "gpt-4o-2024-08-06", {"temperature": 0, "max_tokens": 10, "n": 1}, "https://api.openai.com/v1")
    assert (p.source, p.suite, p.profile) == ("huggingface", "full", "longmemeval-session-upstream-v1")
    assert p.official_variants == {"s", "m", "oracle"}
    assert v1.required_sections == ("variant", "suite", "scoring", "judge", "counts")
    assert dict(v1.conf_groups) == {"variant": "sample", "adapter": "session-v3", "suite": "full", "memory": "bm25",
                                    "scoring": "longmemeval-session-upstream-v1", "reader": "extractive",
                                    "judge": "lexical"}
    assert tuple(v1.conf_groups) == ("variant", "adapter", "scoring", "suite", "memory", "reader", "judge")
    assert dict(v1.fingerprints) == {"adapter": "adapter", "memory": "memory", "reader": "reader", "judge": "judge"}
    assert set(v1.params_sections) == {*v1.conf_groups, "retrieval", "errata", "attribution", "judge_audit"}
    spec = v1.crosscheck
    assert spec.repo == "xiaowu0162/LongMemEval" and spec.revision.startswith("9e0b455f")
    assert spec.judge_script == "src/evaluation/evaluate_qa.py"
    assert spec.question_types[:3] == ("single-session-user", "single-session-preference", "single-session-assistant")


def test_the_v2_family_measures_its_five_abilities_and_has_no_v1_gate():
    v2 = {f.name: f for f in conf_families()}["longmemeval-v2"]
    assert set(v2.task_metrics) == {"Static state recall", "Dynamic state tracking", "Workflow knowledge",
                                    "Environment gotchas", "Premise awareness"}
    assert v2.task_metrics["Workflow knowledge"].value == "by_category.non_abstention_by_category.procedure.pct_correct"
    assert v2.crosscheck is None and v2.inventory_review is None and v2.required_sections == ()
    assert dict(v2.conf_groups) == {"v2": "sample"} and dict(v2.fingerprints) == {"v2.memory": "v2-memory"}
    # its verdict is the one stage v2_metrics recorded in its run manifest
    # its own gate decides from the manifest's protocol section, never reads back a stored verdict
    assert v2.official_reasons({"official_equivalence": {"value": False, "reasons": ["r"]}}) == [
        "the LongMemEval-V2 run manifest has no protocol section to check (regenerate it: dvc repro v2_metrics)"]
    # stage v2_metrics writes metrics/run-v2.json itself: custody builds no sections for it
    assert v2.run_manifest == "metrics/run-v2.json" and v2.manifest_sections is None and v2.output_files is None
    assert dict(v2.card.inputs) == {"v2": ("metrics/v2.json",)}


def test_the_v2_card_rows_are_the_combined_accuracy_then_each_category():
    v2 = family_named("longmemeval-v2")
    doc = {"combined": {"accuracy": {
        "overall_full_set": {"value": 0.5, "ci95_low": 0.25, "ci95_high": 0.75, "n": 8},
        "abstention_only": {"value": 0.0, "ci95_low": 0.0, "ci95_high": 0.9, "n": 2}}},
        "domains": {"web": {"accuracy": {"overall_full_set": {"value": 0.25, "ci95_low": 0.0, "ci95_high": 0.8, "n": 4}}}},
        "by_category": {"non_abstention_by_category": {"static": {"count": 3, "pct_correct": 1 / 3}},
                        "abstention_overall": {"count": 2, "pct_correct": 0.0}}}
    # non_abstention_only is absent: no row for it
    assert v2.card.rows({"v2": doc}) == [CardRow("overall accuracy (full set)", 0.5, 0.25, 0.75, 8),
                                         CardRow("abstention accuracy", 0.0, 0.0, 0.9, 2),
                                         CardRow("overall accuracy (web)", 0.25, 0.0, 0.8, 4),
                                         CardRow("static", 1 / 3, n=3), CardRow("abstention_overall", 0.0, n=2)]
    assert v2.card.rows({"v2": None}) == []


def test_the_longmemeval_family_builds_metrics_run_json():
    v1 = family_named("longmemeval")
    assert v1.run_manifest == "metrics/run.json" and callable(v1.manifest_sections)
    assert dict(v1.card.inputs) == {"qa": ("metrics/detail/qa.json", "metrics/qa.json"),
                                    "retrieval": ("metrics/detail/retrieval.json", "metrics/retrieval.json")}


def test_conf_config_yaml_lists_the_families_conf_groups_and_the_schema_their_sections():
    """The families register their conf groups and params sections; nothing generic names them."""
    from mnemetric.schema import BASE, conf_order, family_sections

    fams = conf_families()
    defaults = dict(next(iter(d.items())) for d in yaml.safe_load((CONF / "config.yaml").read_text())["defaults"]
                    if isinstance(d, dict))
    base_groups = ["benchmark", "executor"]  # the generic groups: the headline family, how model calls run
    assert sorted(defaults) == sorted([*base_groups, *(g for f in fams for g in f.conf_groups)])
    # config.yaml lists V1's and V2's groups (with comments for people); it chooses the families' own defaults
    assert all(defaults[g] == opt for f in fams for g, opt in f.conf_groups.items())
    sections = family_sections(fams)
    assert set(BASE) == {*base_groups, "llm", "memory_llm"}  # memory_llm: the generic model proxy (llm/proxy.py)
    assert set(sections) == {*BASE, *(k for f in fams for k in f.params_sections)}
    assert [k for k in conf_order() if k in sections or k == "paths"] == list(compose(conf_dir=CONF))


def test_a_family_is_found_by_name_and_an_unknown_name_lists_the_known_ones():
    with pytest.raises(ConfigError, match=r"(?s)no benchmark family is named 'quiz'.*'longmemeval', 'longmemeval-v2'"):
        family_named("quiz")


def test_the_headline_family_is_params_benchmark_else_the_conf_default():
    section = {"_target_": "mnemetric.longmemeval_v2.family.LongMemEvalV2Family", "name": "longmemeval-v2",
               "metrics": "metrics/v2.json"}
    assert headline_family({"benchmark": section}).name == "longmemeval-v2"
    # conf/config.yaml's default benchmark option is longmemeval
    assert headline_family(None).name == "longmemeval" and headline_family({}).name == "longmemeval"


# ------------------------------------------------------------------ a newcomer's family, by conf alone


@dataclass(frozen=True)
class QuizFamily(FamilyBase):
    """A second family that is not LongMemEval (built by _target_ from a conf option); the rest: FamilyBase's."""

    name: str = "quiz"
    metrics: str = "metrics/quiz.json"
    display_name: str = "Quiz"
    task_metrics: dict = field(default_factory=lambda: {"recall": TaskMetric("metrics/quiz.json", "recall.acc",
                                                                             "recall.n")})


def test_a_newcomer_adds_one_conf_option_and_is_a_family(tmp_path):
    (tmp_path / "benchmark").mkdir()
    (tmp_path / "benchmark" / "quiz.yaml").write_text(
        "_target_: tests.test_family.QuizFamily\nname: quiz\nmetrics: metrics/quiz.json\n", encoding="utf-8")
    (fam,) = conf_families(tmp_path)
    assert isinstance(fam, QuizFamily) and isinstance(fam, Family)
    assert fam.task_metrics["recall"].ref() == "metrics/quiz.json#recall.acc"
    # without a gate of its own a family is never official, and says so
    assert fam.official_reasons({}) == ["Quiz has no official protocol to check a run against"]


def test_an_unimportable_target_is_a_config_error_naming_the_option(tmp_path):
    (tmp_path / "benchmark").mkdir()
    (tmp_path / "benchmark" / "ghost.yaml").write_text("_target_: nowhere.Ghost\nname: ghost\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"benchmark \(ghost.yaml\)\._target_"):
        conf_families(tmp_path)


def test_an_object_that_is_not_a_family_is_refused():
    @dataclass(frozen=True)
    class Half:
        name: str = "half"
        metrics: str = "m.json"

    with pytest.raises(ConfigError, match="no display_name, task_metrics, official_reasons, required_sections"):
        check_family(Half(), "benchmark")
    with pytest.raises(ConfigError, match="are not TaskMetric"):
        check_family(QuizFamily(task_metrics={"recall": ("metrics/quiz.json", "recall.acc")}), "benchmark")
    with pytest.raises(ConfigError, match="benchmark.inventory_review"):
        check_family(QuizFamily(inventory_review="yes"), "benchmark")
    with pytest.raises(ConfigError, match="benchmark.conf_groups"):
        check_family(QuizFamily(conf_groups="quiz"), "benchmark")
    with pytest.raises(ConfigError, match="benchmark.fingerprints"):
        check_family(QuizFamily(fingerprints=["quiz.memory"]), "benchmark")
    with pytest.raises(ConfigError, match="benchmark.card"):
        check_family(QuizFamily(card={"inputs": {}}), "benchmark")
    with pytest.raises(ConfigError, match="benchmark.manifest_sections"):
        check_family(QuizFamily(manifest_sections="sections"), "benchmark")
    with pytest.raises(ConfigError, match="benchmark.output_files"):
        check_family(QuizFamily(output_files=["a.json"]), "benchmark")
    with pytest.raises(ConfigError, match="benchmark.run_manifest"):
        check_family(QuizFamily(run_manifest=3), "benchmark")


def test_two_families_of_one_name_are_refused():
    assert list(by_name([QuizFamily()])) == ["quiz"]
    with pytest.raises(ConfigError, match="two families are named 'quiz'"):
        by_name([QuizFamily(), QuizFamily(display_name="Quiz again")])
