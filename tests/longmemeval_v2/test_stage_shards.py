"""``executor.shard`` on the V2 stages (v2_memory → v2_read → v2_check, each run as a module in a temp workspace
over the bundled sample, offline) and `mnemetric merge` of their step files: the merged files are the unsharded
stages' bytes; bad part sets are refused by name; v2_metrics on a part is not official."""

from __future__ import annotations

import json
import shutil

import pytest

from mnemetric.cli import main
from mnemetric.errors import ConfigError
from tests.longmemeval_v2.test_selection import SAMPLE, _stage_workspace

STEPS = ("memory", "read", "check")
SIDE = {"memory": ("memory.json", "memory-usage.json", "memory-cost.json"),
        "read": ("read.json", "read-usage.json"), "check": ("check.json", "check-usage.json")}


def _run(tmp_path, monkeypatch, name, *overrides, metrics=False):
    from mnemetric.stages import v2_check, v2_memory, v2_metrics, v2_prepare, v2_read

    ws, _ = _stage_workspace(tmp_path / name, monkeypatch, *overrides)
    for stage in (v2_prepare, v2_memory, v2_read, v2_check, *((v2_metrics,) if metrics else ())):
        stage.main()
    return ws / "data" / "v2-runs"


def _files(folder, step):
    return {f: (folder / f).read_bytes() for f in (f"{step}.jsonl", *SIDE[step])}


def _merge(out, *parts):
    return main(["merge", "--out", str(out), *map(str, parts)])


@pytest.fixture
def runs(tmp_path, monkeypatch):
    whole = _run(tmp_path, monkeypatch, "whole")
    parts = [_run(tmp_path, monkeypatch, f"s{k}", f"executor.shard={k}/2", metrics=k == 1) for k in (1, 2)]
    return tmp_path, whole, parts


def test_two_shards_of_the_stages_merge_into_the_unsharded_step_files_byte_for_byte(runs, capsys):
    tmp_path, whole, (s1, s2) = runs
    for step in STEPS:  # each part holds half of the questions, with the generic manifest beside its rows
        n = [len((s / f"{step}.jsonl").read_bytes().splitlines()) for s in (s1, s2)]
        assert n == [7, 7] and all((s / f"{step}.jsonl.shard.json").is_file() for s in (s1, s2))
        assert not (whole / f"{step}.jsonl.shard.json").exists()
    out = tmp_path / "merged"
    for step in STEPS:
        assert _merge(out / f"{step}.jsonl", s2 / f"{step}.jsonl", s1 / f"{step}.jsonl") == 0  # any order
        assert _files(out, step) == _files(whole, step)
        assert not (out / f"{step}.jsonl.shard.json").exists()
    assert "merge: 2 v2_check shard(s), 14 question(s)" in capsys.readouterr().out


def test_metrics_on_a_part_are_not_official_and_name_the_shard(runs):
    tmp_path, _, (s1, _) = runs
    metrics = json.loads((s1.parent.parent / "metrics" / "v2.json").read_text())
    assert metrics["official_equivalence"]["value"] is False
    assert any(r.startswith("shard 1/2 of the questions (7 of 14)") and "mnemetric merge" in r
               for r in metrics["official_equivalence"]["reasons"])
    assert metrics["combined"]["questions"] == 7


def test_metrics_on_the_merged_step_files_are_those_of_the_unsharded_run(runs, monkeypatch):
    from mnemetric.stages import v2_metrics

    tmp_path, whole, (s1, s2) = runs
    monkeypatch.chdir(whole.parent.parent)
    v2_metrics.main()
    want = (whole.parent.parent / "metrics" / "v2.json").read_bytes()
    assert "shard" not in json.dumps(json.loads(want)["official_equivalence"])
    for step in STEPS:  # the merged files in the whole run's place: the same metrics
        assert _merge(tmp_path / "m" / f"{step}.jsonl", s1 / f"{step}.jsonl", s2 / f"{step}.jsonl") == 0
        for f in _files(tmp_path / "m", step):
            shutil.copyfile(tmp_path / "m" / f, whole / f)
    v2_metrics.main()
    assert (whole.parent.parent / "metrics" / "v2.json").read_bytes() == want


def test_overlap_gap_mismatched_steps_and_settings_are_refused_by_name(runs, tmp_path, monkeypatch, capsys):
    tmp_path, _, (s1, s2) = runs
    out = tmp_path / "bad" / "memory.jsonl"
    cases = [((s1 / "memory.jsonl", s1 / "memory.jsonl"), "overlap"),
             ((s1 / "memory.jsonl",), r"gap.*2/2 missing"),
             ((s1 / "memory.jsonl", s2 / "read.jsonl"), "command.*v2_read"),
             ((s1 / "memory.jsonl", s2 / "memory.jsonl", s1 / "memory.jsonl"), "overlap")]
    other = _run(tmp_path, monkeypatch, "s2-other", "executor.shard=2/2", "v2.max_tokens=500")
    cases.append(((s1 / "memory.jsonl", other / "memory.jsonl"), "config mismatch"))
    # read.jsonl of a shard whose memory step had other settings: its inputs differ, named
    cases.append(((s1 / "read.jsonl", other / "read.jsonl"), "(config|input) mismatch"))
    moved = tmp_path / "sample-copy"  # the same settings, other data: one trajectory re-spaced
    shutil.copytree(SAMPLE, moved)
    lines = (moved / "trajectories.jsonl").read_text().splitlines(keepends=True)
    lines[0] = json.dumps(json.loads(lines[0]), indent=None, separators=(",", ":")) + "\n"
    (moved / "trajectories.jsonl").write_text("".join(lines))
    elsewhere = _run(tmp_path, monkeypatch, "s2-data", "executor.shard=2/2", f"v2.data_root={moved}")
    cases.append(((s1 / "memory.jsonl", elsewhere / "memory.jsonl"), "data mismatch"))
    for parts, named in cases:
        assert _merge(out, *parts) != 0
        err = capsys.readouterr().err
        assert __import__("re").search(named, err), (named, err)
        assert "Traceback" not in err
    assert not out.parent.exists() or not any(out.parent.iterdir())  # nothing written
    (s2 / "memory.json").write_text((s2 / "memory.json").read_text().replace('"images"', '"images" ', 1))
    assert _merge(out, s1 / "memory.jsonl", s2 / "memory.jsonl") != 0
    assert "step facts mismatch" in capsys.readouterr().err and not out.exists()


def test_a_later_stage_asked_for_a_shard_of_an_unsharded_memory_step_is_refused(tmp_path, monkeypatch):
    import yaml

    from mnemetric.stages import v2_memory, v2_prepare, v2_read

    ws, params = _stage_workspace(tmp_path, monkeypatch)
    v2_prepare.main()
    v2_memory.main()
    params["executor"]["shard"] = "1/2"
    (ws / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    with pytest.raises(ConfigError, match=r"(?s)executor\.shard.*not a shard.*v2_memory with executor\.shard=1/2"):
        v2_read.main()
    assert not (ws / "data" / "v2-runs" / "read.jsonl").exists()


def test_a_sharded_subset_records_the_whole_runs_subset_so_the_merged_memory_facts_are_the_unsharded(
        tmp_path, monkeypatch):
    from mnemetric.stages import v2_memory, v2_prepare

    def memory(name, *overrides):
        ws, _ = _stage_workspace(tmp_path / name, monkeypatch, "v2.subset.per_type=1", *overrides)
        v2_prepare.main()
        v2_memory.main()
        return ws / "data" / "v2-runs"

    whole, parts = memory("whole"), [memory(f"s{k}", f"executor.shard={k}/2") for k in (1, 2)]
    assert json.loads((parts[0] / "memory.json").read_text())["settings"]["subset"].startswith(
        "a subset of the questions: 12 of 14")  # the whole run's count, not the shard's 6
    assert _merge(tmp_path / "m" / "memory.jsonl", *(p / "memory.jsonl" for p in parts)) == 0
    assert _files(tmp_path / "m", "memory") == _files(whole, "memory")


def test_shards_with_a_model_reader_and_judge_merge_into_the_unsharded_files_and_summed_usage(tmp_path, monkeypatch):
    """Real HTTP (the local OpenAI-compatible server) for the reader and the LLM checkers: the merged read and
    check rows and their usage sidecars (requests and tokens summed over the parts) are the unsharded bytes."""
    from tests.support.openai_server import FakeOpenAIServer

    def answer(messages):
        return "\\boxed{yes}" if isinstance(messages[-1]["content"], list) else '{"label": 1}'

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeOpenAIServer(reply=answer) as api:
        models = ["v2/reader=openai", "v2.reader._target_=tests.support.v2_tier.standin_reader",
                  f"v2.reader.base_url={api.base_url}", "v2/checker=llm",
                  "v2.checker._target_=tests.support.v2_tier.standin_checkers", f"v2.checker.base_url={api.base_url}"]
        whole = _run(tmp_path, monkeypatch, "whole", *models)
        sent = api.count
        parts = [_run(tmp_path, monkeypatch, f"s{k}", f"executor.shard={k}/2", *models) for k in (1, 2)]
        assert api.count == 2 * sent  # every part asked its own questions, from its own cache
    assert json.loads((whole / "read-usage.json").read_text())["responses"] == 14
    assert json.loads((whole / "check-usage.json").read_text())["responses"] > 0
    for step in STEPS:
        assert _merge(tmp_path / "m" / f"{step}.jsonl", *(p / f"{step}.jsonl" for p in parts)) == 0
        assert _files(tmp_path / "m", step) == _files(whole, step)


@pytest.mark.parametrize("spec, named", [("3/2", r"must be in 1\.\.2"), ("0/0", "must be >= 1")])
def test_a_bad_shard_spec_is_refused_naming_executor_shard_before_any_step_file(tmp_path, monkeypatch, spec, named):
    from mnemetric.stages import v2_memory, v2_prepare

    ws, _ = _stage_workspace(tmp_path, monkeypatch, f"executor.shard={spec}")
    v2_prepare.main()
    with pytest.raises(ConfigError, match=rf"(?s)executor\.shard.*{named}"):
        v2_memory.main()
    assert not (ws / "data" / "v2-runs" / "memory.jsonl").exists()
    with pytest.raises(ConfigError, match=r"(?s)executor\.shard.*1/2/3"):  # not K/N: refused as params compose
        _stage_workspace(tmp_path / "x", monkeypatch, "executor.shard=1/2/3")
