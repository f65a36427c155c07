"""The ``v2`` option: every component is a conf option built by ``_target_`` (conf/v2/<group>/*.yaml), the
official tiers select the official data and components, and a run is built from the composed settings."""

from __future__ import annotations

import os

import pytest

from mnemetric.config import compose
from mnemetric.errors import ConfigError, MnemetricError
from mnemetric.longmemeval_v2.pins import DATA_PINS
from mnemetric.longmemeval_v2.data_custody import DataCheck
from mnemetric.longmemeval_v2.manifest import v2_manifest
from mnemetric.longmemeval_v2.summary_file import Block, Lafs, V2Summary
from mnemetric.official import OfficialEquivalence
from mnemetric.longmemeval_v2.pipeline import GROUPS, build_component, conf_dir, option, run_from_settings
from tests.conftest import ROOT

V2_OPTIONS = sorted((g, p.stem) for g in GROUPS for p in (ROOT / "conf" / "v2" / g).glob("*.yaml"))
UPSTREAM_MEMORIES = {f"upstream-{m}" for m in ("no_retrieval", "rag_query_to_slice", "rag_query_to_slice_notes",
                                                "agentrunbook_r", "codex", "agentrunbook_c", "agentrunbook_c_v2")}
EXPECTED = {
    "memory": {"none", "full-context", "bm25", "dense", *UPSTREAM_MEMORIES},
    "reader": {"offline", "openai"},
    "checker": {"offline", "llm"},
    "token_counter": {"o200k", "qwen", "auto"},
}
NEEDS_UPSTREAM = {("reader", "openai"): "harness.py", ("checker", "llm"): "qa_eval_metrics.py"}


def test_every_group_has_its_options():
    assert {g: {o for gg, o in V2_OPTIONS if gg == g} for g in GROUPS} == EXPECTED
    assert conf_dir().resolve() == (ROOT / "conf" / "v2").resolve()


@pytest.mark.parametrize(("group", "name"), V2_OPTIONS)
def test_every_v2_option_composes_and_instantiates(tmp_path, monkeypatch, group, name):
    cfg = compose([f"v2/{group}={name}"])["v2"][group]
    assert isinstance(cfg.get("_target_"), str) and cfg["_target_"].startswith("mnemetric.longmemeval_v2.")
    if (group, name) in NEEDS_UPSTREAM and not os.environ.get("MNEMETRIC_LONGMEMEVAL_V2_DIR"):
        # no checkout named: a stand-in file is refused by its sha256 (the download is never reached)
        stand_in = tmp_path / "upstream"
        (stand_in / "evaluation").mkdir(parents=True)
        (stand_in / "evaluation" / NEEDS_UPSTREAM[group, name]).write_text("X = 1\n")
        monkeypatch.setenv("MNEMETRIC_LONGMEMEVAL_V2_DIR", str(stand_in))
        with pytest.raises(MnemetricError, match="not the pinned upstream revision"):
            build_component(cfg, f"v2.{group}")
        return
    if group == "memory" and name in UPSTREAM_MEMORIES:  # tests/longmemeval_v2/test_upstream_memory.py builds them
        monkeypatch.delenv("MNEMETRIC_LONGMEMEVAL_V2_DIR", raising=False)
        with pytest.raises(ConfigError, match="MNEMETRIC_LONGMEMEVAL_V2_DIR") as err:
            build_component(cfg, "v2.memory")
        assert "v2.memory.checkout" in str(err.value) and "be15ea6" in str(err.value)
        return
    if (group, name) == ("token_counter", "qwen"):
        with pytest.raises(ConfigError, match="Qwen/Qwen3.5-9B") as err:
            build_component(cfg | {"path": str(tmp_path / "no-processor")}, "v2.token_counter")
        assert "not official" in str(err.value)
        return
    if (group, name) == ("memory", "dense"):
        cfg = cfg | {"backend": "openai", "model": "emb-test", "base_url": "http://127.0.0.1:9/v1"}
    built = build_component(cfg, f"v2.{group}")
    if (group, name) == ("token_counter", "auto"):
        assert built.name.startswith(("o200k-standin", "qwen3.5-9b-processor"))  # the counter keeps its own name
    else:
        assert built.name == cfg["name"]
    assert "_partial_" not in cfg and not hasattr(built, "client")  # no component holds a client (the executor sends)
    if group == "memory":
        assert built.query("anything") == []  # an empty memory: nothing inserted yet
    if group in ("reader", "checker"):
        assert built.official is ((group, name) in NEEDS_UPSTREAM)
        assert built.calls_model is ((group, name) in NEEDS_UPSTREAM)


@pytest.mark.parametrize("tier", ["small", "medium"])
def test_official_tiers_select_the_official_data_and_components(tier):
    v2 = compose([f"v2={tier}"])["v2"]
    assert (v2["name"], v2["source"], v2["data_root"], v2["haystack"]) == (tier, "huggingface", f"data/v2/{tier}", tier)
    assert (v2["repo"], v2["revision"]) == ("xiaowu0162/longmemeval-v2", "f152293e235517d504809563c833d7190b8c713b")
    assert (v2["repo"], v2["revision"]) == (DATA_PINS.repo, DATA_PINS.revision)
    assert v2["domains"] == ["web", "enterprise"] and v2["official"] is True and v2["images"] is True
    assert v2["checksums_sha256"] is None and v2["max_tokens"] == 200_000
    assert (v2["reader"]["name"], v2["reader"]["model"], v2["reader"]["enable_thinking"]) == (
        "openai", "Qwen/Qwen3.5-9B", True)
    assert (v2["checker"]["name"], v2["checker"]["model"], v2["checker"]["reasoning_effort"],
            v2["checker"]["max_completion_tokens"]) == ("llm", "gpt-5.2", "medium", 4096)
    assert v2["token_counter"]["_target_"] == "mnemetric.longmemeval_v2.tokens.load_official_counter"


def test_the_sample_option_is_offline_and_bundled():
    v2 = compose()["v2"]
    assert (v2["source"], v2["data_root"], v2["official"]) == ("bundled", "data/sample-v2", False)
    assert [v2[g]["name"] for g in GROUPS] == ["bm25", "offline", "offline", "o200k-standin"]


def test_a_component_given_as_a_name_says_how_to_choose_an_option():
    settings = compose()["v2"] | {"memory": "full-context"}
    with pytest.raises(ConfigError) as err:
        run_from_settings(settings)
    text = str(err.value)
    assert text.startswith("v2.memory: expected a component") and "-S v2/memory=<option>" in text
    assert "bm25, dense, full-context, none" in text


def test_option_resolves_the_data_root_and_sets_only_the_keys_it_has():
    assert option("memory", "full-context", "some/root", images=True, top_k=3) == {
        "_target_": "mnemetric.longmemeval_v2.baselines.FullContext", "name": "full-context", "root": "some/root",
        "images": True}
    assert option("reader", "offline", "r", model="m", base_url="u") == {
        "_target_": "mnemetric.longmemeval_v2.reader.offline_reader", "name": "offline"}
    assert option("memory", "bm25", "r", top_k=None)["top_k"] == 10  # None: keep the option's value
    with pytest.raises(ConfigError, match="no LongMemEval-V2 token_counter option 'gpt2'") as err:
        option("token_counter", "gpt2", "r")
    assert "auto, o200k, qwen" in str(err.value)


def test_run_with_no_memory_answers_unknown_everywhere(monkeypatch):
    """memory none → no items → the offline reader answers \\boxed{UNKNOWN} → every score is 0 (is_unknown rule)."""
    monkeypatch.chdir(ROOT)
    settings = compose(["v2/memory=none"])["v2"]
    run = run_from_settings(settings)
    rows = [r for rs in run.rows.values() for r in rs]
    assert len(rows) == 14 and all(len(r.memory_context) == 0 and r.is_unknown and r.score == 0.0 for r in rows)
    assert run.summary.to_record()["settings"]["memory"] == "none"
    assert run.summary.to_record()["combined"]["accuracy"]["overall_full_set"]["value"] == 0.0
    reasons = run.summary.to_record()["official_equivalence"]["reasons"]
    assert reasons[0] == "data root not verified against the pinned dataset revision"
    assert not any(r.startswith("images off") for r in reasons)
    off = run_from_settings(settings | {"images": False})
    assert ("images off: screenshots and question images are not required to exist, and a missing question "
            "image is left out (upstream's runs use them)") in off.summary.official_equivalence.reasons


def _naive_sha(obj) -> str:
    import hashlib
    import json

    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
                          .encode("utf-8")).hexdigest()


DATA = DataCheck("data/custody/v2-small.json", "c" * 64, "f" * 64, 2, True)


def test_manifest_names_the_data_components_and_the_custody_verdict():

    settings = compose(["v2=small"])["v2"]
    block = Block(3, 2, 1, accuracy={}, category_accuracy={}, memory_query_avg_seconds=None, memory_context={})
    summary = V2Summary("s", {}, {"web": block}, block, Lafs(False, None, "r"), OfficialEquivalence(False, ("r",)))
    facts = {"reader": {"name": "openai", "model": "Qwen/Qwen3.5-9B", "sends_prompts": True, "official": False,
                        "harness_sha256": "h1", "texts_sha256": "t1"},
             "checker": {"name": "llm", "model": "gpt-5.2", "reasoning_effort": "medium",
                         "max_completion_tokens": 4096, "official": True, "qa_eval_metrics_sha256": "q1",
                         "prompt_set_sha256": "p1", "kind": "llm"},
             "token_counter": {"name": "qwen3.5-9b-processor", "official": False}}
    sent = [{"max_completion_tokens": 4096, "reasoning_effort": "medium"}]
    m = v2_manifest(settings, summary, "metrics/run-v2.json", data=DATA, facts=facts, fingerprint_sha256="f1",
                    judge_params_sent=sent).to_record()
    memory = {"_target_": "mnemetric.longmemeval_v2.baselines.bm25_states", "name": "bm25", "top_k": 10}
    assert settings["memory"] == memory
    assert m == {
        "schema": "mnemetric.longmemeval-v2.run-manifest/1",
        "path": "metrics/run-v2.json", "benchmark": "LongMemEval-V2",
        "variant": {"name": "small", "data_root": "data/v2/small", "haystack": "small", "sha256_verified": True,
                    "source": "huggingface", "repo": "xiaowu0162/longmemeval-v2",
                    "revision": "f152293e235517d504809563c833d7190b8c713b",
                    "custody": {"file": "data/custody/v2-small.json", "sha256": "c" * 64, "files_sha256": "f" * 64},
                    "unverified_files": []},
        "suite": {"name": "full"},
        "memory": {"name": "bm25", "target": memory["_target_"], "settings": {"top_k": 10},
                   "config_sha256": _naive_sha(memory), "fingerprint_sha256": "f1"},
        "reader": {"name": "openai", "model": "Qwen/Qwen3.5-9B", "sends_prompts": True, "official": False,
                   "harness_sha256": "h1", "texts_sha256": "t1", "params_sent": []},
        "judge": {"name": "llm", "kind": "llm", "model": "gpt-5.2", "reasoning_effort": "medium",
                  "max_completion_tokens": 4096, "prompt_set_sha256": "p1", "official": True,
                  "qa_eval_metrics_sha256": "q1", "params_sent": sent},
        "token_counter": {"name": "qwen3.5-9b-processor", "official": False},
        "counts": {"questions": 3, "judged": 2, "failed": 1},
        "official_equivalence": {"value": False, "reasons": ["r"]}}
    sample = v2_manifest(compose()["v2"], summary, "p").to_record()
    assert (sample["reader"], sample["judge"]["kind"], sample["variant"]["sha256_verified"]) == (
        {"name": "offline", "model": None, "params_sent": []}, "offline", False)
    assert (sample["variant"]["repo"], sample["variant"]["custody"]) == (
        None, {"file": None, "sha256": None, "files_sha256": None})


def test_the_sample_run_records_what_its_components_are(monkeypatch):
    """The offline reader sends no prompts, so no harness.py hash is recorded even when the texts are at hand."""
    monkeypatch.chdir(ROOT)
    run = run_from_settings(compose(["v2/memory=none"])["v2"])
    assert run.provenance == {
        "reader": {"name": "offline", "model": None, "sends_prompts": False, "official": False,
                   "harness_sha256": None, "texts_sha256": None},
        "checker": {"name": "offline", "model": None, "reasoning_effort": None, "max_completion_tokens": None,
                    "official": False, "qa_eval_metrics_sha256": None, "prompt_set_sha256": None, "kind": "offline"},
        "token_counter": {"name": "o200k-standin", "official": False}}


@pytest.mark.skipif(not os.environ.get("MNEMETRIC_LONGMEMEVAL_V2_DIR"),
                    reason="set MNEMETRIC_LONGMEMEVAL_V2_DIR to a LongMemEval-V2 checkout at be15ea6 (the reader and "
                           "checker prompts are read from the pinned files)")
def test_the_llm_options_run_the_sample_against_a_local_server_and_a_rerun_sends_nothing(tmp_path, monkeypatch):
    from tests.support.openai_server import FakeOpenAIServer

    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("MNEMETRIC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    settings = compose(["v2/reader=openai", "v2/checker=llm", "v2.domains=[web]"])["v2"]
    with FakeOpenAIServer(reply=lambda messages: '{"label": 1} \\boxed{Meadow Post}') as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        from mnemetric.execute import build_executor

        first = run_from_settings(settings, build_executor(None, {"max_concurrency": 4}))
        sent = server.count
        again = run_from_settings(settings, build_executor(None, {"max_concurrency": 4}))
        assert server.count == sent  # every request served from the cache
    rows = first.rows["web"]
    llm_rows = [r for r in rows if r.eval_function.split("|")[0] in ("llm_abstention_checker", "llm_gotchas_checker")]
    assert sent == len(rows) + len(llm_rows) and llm_rows  # one reader request per question + one per LLM check
    assert [r.score for r in again.rows["web"]] == [r.score for r in rows]
    assert all(r.response_parsed_boxed == "Meadow Post" for r in rows)
    reasons = first.summary.to_record()["official_equivalence"]["reasons"]
    assert not any(r.startswith(("reader ", "checker ")) for r in reasons)  # the official reader and judge
    assert any(r.startswith("token counter 'o200k-standin'") for r in reasons)
    # the manifest facts name the pinned files and the recorded text-set hashes (upstream_text's constants)
    from mnemetric.longmemeval_v2 import upstream_text as ut

    reader, checker = first.provenance["reader"], first.provenance["checker"]
    assert (reader["sends_prompts"], reader["harness_sha256"], reader["texts_sha256"]) == (
        True, "8c6d1bd124ce2caf8a4bdc8516ef1b54ffca98ea4c49b4e50355ee4207b55eb1", ut.READER_TEXTS_SHA256)
    assert (checker["qa_eval_metrics_sha256"], checker["prompt_set_sha256"], checker["model"]) == (
        "f8ba659e237c4282a07a92538090ea500ce8483820b390b1d19af187c01417ac", ut.CHECKER_TEXTS_SHA256, "gpt-5.2")


def test_a_project_option_shadows_the_shipped_one_and_bad_files_are_config_errors(tmp_path):
    from mnemetric.longmemeval_v2.pipeline import options

    folder = tmp_path / "v2" / "memory"
    folder.mkdir(parents=True)
    (folder / "bm25.yaml").write_text("_target_: mnemetric.longmemeval_v2.baselines.bm25_states\nname: bm25\n"
                                      "top_k: 3\n", encoding="utf-8")
    (folder / "broken.yaml").write_text("name: [unclosed\n", encoding="utf-8")
    (folder / "plain.yaml").write_text("name: plain\n", encoding="utf-8")
    assert options("memory", tmp_path) == ["bm25", "broken", "dense", "full-context", "none", "plain",
                                           *sorted(UPSTREAM_MEMORIES)]
    assert options("memory") == ["bm25", "dense", "full-context", "none", *sorted(UPSTREAM_MEMORIES)]
    assert option("memory", "bm25", "root", tmp_path)["top_k"] == 3
    assert option("memory", "bm25", "root")["top_k"] == 10
    with pytest.raises(ConfigError, match="not valid YAML"):
        option("memory", "broken", "root", tmp_path)
    with pytest.raises(ConfigError, match="_target_ and name"):
        option("memory", "plain", "root", tmp_path)
