"""A subset of the questions (--question-ids, a stratified --per-type subset, --limit) and per-question memories
built on worker processes, on the bundled V2 sample (offline: no model). Expected ids by hand from
data/sample-v2/questions.jsonl (web 01-07, enterprise 01-07; types listed there)."""

from __future__ import annotations

import json

import pytest

from mnemetric.cli import main
from mnemetric.errors import ConfigError
from mnemetric.execute import ImmediateExecutor
from mnemetric.longmemeval_v2.pipeline import run_named
from mnemetric.longmemeval_v2.selection import Selection
from tests.conftest import ROOT

SAMPLE = ROOT / "data" / "sample-v2"


def ids(run) -> dict[str, list[str]]:
    return {d: [r.question_id for r in rows] for d, rows in run.rows.items()}


def offline(haystack="small", **kw):
    return run_named(SAMPLE, haystack, memory="bm25", token_counter="o200k", **kw)


def test_question_ids_per_type_and_limit_choose_in_file_order_and_mark_the_run_not_official():
    picked = offline(select=Selection(("mnv2-ent-03", "mnv2-web-02", "mnv2-web-01")))
    assert ids(picked) == {"web": ["mnv2-web-01", "mnv2-web-02"], "enterprise": ["mnv2-ent-03"]}
    assert [r.index for r in picked.rows["web"]] == [0, 1]
    reasons = picked.summary.to_record()["official_equivalence"]["reasons"]
    assert "a subset of the questions: 3 of 14 (question_ids=3); official results ask every question" in reasons
    strata = offline(select=Selection(per_type=1))  # web 07 repeats static-environment, enterprise 07 procedure
    assert ids(strata)["web"] == [f"mnv2-web-0{i}" for i in range(1, 7)]
    assert ids(strata)["enterprise"] == [f"mnv2-ent-0{i}" for i in range(1, 7)]
    assert ids(offline(select=Selection(per_type=1, limit=2))) == {"web": ["mnv2-web-01", "mnv2-web-02"],
                                                                  "enterprise": ["mnv2-ent-01", "mnv2-ent-02"]}
    assert Selection.of({"question_ids": None, "per_type": None, "limit": None}) is None


def test_an_unknown_question_id_or_a_bad_size_is_refused():
    with pytest.raises(ConfigError, match="1 unknown question id.*mnv2-web-99"):
        offline(select=Selection(("mnv2-web-01", "mnv2-web-99")))
    with pytest.raises(ConfigError, match="limit: must be a positive integer"):
        Selection(limit=0)


def test_per_question_memories_on_workers_give_the_sequential_rows():
    """haystack medium: a memory per question; with executor.workers 2 built and queried on two processes."""
    def rows(run):
        return {d: [{k: v for k, v in r.to_record().items() if not k.endswith("duration_seconds")} for r in rs]
                for d, rs in run.rows.items()}

    sequential = offline("medium")
    with ImmediateExecutor({}, workers=2, progress=False) as ex:
        parallel = offline("medium", executor=ex)
    assert rows(parallel) == rows(sequential)
    assert parallel.summary.combined.accuracy == sequential.summary.combined.accuracy


def test_the_cli_takes_question_ids_and_limit(tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["v2", "run", str(SAMPLE), "--haystack", "small", "--memory", "bm25", "--token-counter", "o200k",
                 "--question-ids", "mnv2-web-03,mnv2-web-04,mnv2-ent-01", "--limit", "1", "--workers", "2",
                 "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    summary = json.loads((out / "v2.json").read_text())
    assert summary["domains"]["web"]["questions"] == 1 and summary["domains"]["enterprise"]["questions"] == 1
    assert any(r.startswith("a subset of the questions: 2 of 14") for r in summary["official_equivalence"]["reasons"])


def _stage_workspace(tmp_path, monkeypatch, *overrides):
    """A stage workspace (cwd) whose params.yaml is conf/ composed with ``overrides`` over the bundled sample."""
    import yaml

    from mnemetric.config import compose

    ws = tmp_path / "ws"
    (ws / "data" / "fingerprints").mkdir(parents=True)
    (ws / "data" / "fingerprints" / "v2-memory.json").write_text(json.dumps({"sha256": "0" * 64}))
    monkeypatch.chdir(ws)
    monkeypatch.setenv("MNEMETRIC_CACHE_DIR", str(tmp_path / "cache"))
    params = compose([f"v2.data_root={SAMPLE}", *overrides], ROOT / "conf")
    (ws / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return ws, params


def test_the_subset_is_a_conf_key_of_the_v2_section_with_the_clis_rules(tmp_path, monkeypatch):
    _, params = _stage_workspace(tmp_path, monkeypatch)
    assert params["v2"]["subset"] == {"question_ids": None, "per_type": None, "limit": None}
    assert Selection.of(params["v2"]["subset"]) is None  # as composed: every question
    _, params = _stage_workspace(tmp_path / "b", monkeypatch, "v2.subset.question_ids=[mnv2-web-02,mnv2-ent-01]",
                                 "v2.subset.limit=1")
    chosen = Selection.of(params["v2"]["subset"])
    assert chosen == Selection(("mnv2-web-02", "mnv2-ent-01"), None, 1)
    assert ids(offline(select=chosen)) == {"web": ["mnv2-web-02"], "enterprise": ["mnv2-ent-01"]}
    with pytest.raises(ConfigError, match="per_type"):
        _stage_workspace(tmp_path / "c", monkeypatch, "v2.subset.per_type=0")


def test_the_stages_ask_only_the_subset_the_params_choose_and_the_run_is_never_official(tmp_path, monkeypatch):
    from mnemetric.longmemeval_v2.step_rows import MemoryRow, read_rows
    from mnemetric.stages import v2_check, v2_memory, v2_metrics, v2_prepare, v2_read

    ws, _ = _stage_workspace(tmp_path, monkeypatch, "v2.subset.per_type=1", "v2.subset.limit=2")
    for stage in (v2_prepare, v2_memory, v2_read, v2_check, v2_metrics):
        stage.main()
    rows = read_rows(ws / "data" / "v2-runs" / "memory.jsonl", MemoryRow)
    assert sorted(r.question_id for r in rows) == ["mnv2-ent-01", "mnv2-ent-02", "mnv2-web-01", "mnv2-web-02"]
    metrics = json.loads((ws / "metrics" / "v2.json").read_text())
    verdict = metrics["official_equivalence"]
    assert verdict["value"] is False
    assert "a subset of the questions: 4 of 14 (per_type=1, limit=2); official results ask every question" \
        in verdict["reasons"]
    assert metrics["combined"]["questions"] == 4
    # the family's gate, deciding again from metrics/run-v2.json alone, gives the same verdict (the subset is a
    # gate fact of the manifest's protocol section, not a reason added beside the gate)
    from mnemetric.custody.gate import gate
    from mnemetric.longmemeval_v2.family import FAMILY
    run = json.loads((ws / "metrics" / "run-v2.json").read_text())
    assert run["official_equivalence"] == verdict and gate(run, FAMILY).to_record() == verdict


def test_the_stages_ask_only_the_shard_the_params_choose_the_questions_v2_run_shard_asks(tmp_path, monkeypatch):
    """executor.shard on the stages deals the questions as `v2 run --shard` does (the stages used to refuse it;
    the merge and its refusals: tests/longmemeval_v2/test_stage_shards.py)."""
    from mnemetric.longmemeval_v2.shards import universe
    from mnemetric.longmemeval_v2.step_rows import MemoryRow, read_rows
    from mnemetric.shard import Shard, shard_ids
    from mnemetric.stages import v2_memory, v2_prepare

    ws, params = _stage_workspace(tmp_path, monkeypatch, "executor.shard=1/2")
    v2_prepare.main()
    v2_memory.main()
    rows = read_rows(ws / "data" / "v2-runs" / "memory.jsonl", MemoryRow)
    want = shard_ids(universe(SAMPLE, params["v2"]["domains"]), Shard(1, 2))
    assert {r.question_id for r in rows} == want and len(want) == 7  # 14 questions, every type split over both
    assert (ws / "data" / "v2-runs" / "memory.jsonl.shard.json").is_file()
