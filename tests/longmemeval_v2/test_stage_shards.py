"""``executor.shard`` on the V2 stages (v2_memory → v2_read → v2_check, each run as a module in a temp workspace
over the bundled sample, offline) and `mnemetric merge` of their step files: the merged files are the unsharded
stages' bytes; bad part sets are refused by name; v2_metrics on a part is not official."""

from __future__ import annotations

import json
import shutil

import pytest

from mnemetric.cli import main
from mnemetric.errors import ConfigError
from mnemetric.longmemeval_v2.metrics_file import read_metrics, write_metrics
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


def _all_refused(out, cases, capsys):
    """Each (arguments, pattern): `mnemetric merge --out OUT ARGS` fails with an error matching the pattern, no
    traceback; nothing is written for any of them."""
    import re

    for parts, named in cases:
        assert _merge(out, *parts) != 0
        err = capsys.readouterr().err
        assert re.search(named, err), (named, err)
        assert "Traceback" not in err
    assert not out.parent.exists() or not any(out.parent.iterdir())  # nothing written


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
    assert read_metrics(s1.parent.parent / "metrics" / "v2.json").to_record() == metrics


def test_metrics_on_the_merged_step_files_are_those_of_the_unsharded_run(runs, monkeypatch):
    from mnemetric.stages import v2_metrics

    tmp_path, whole, (s1, s2) = runs
    monkeypatch.chdir(whole.parent.parent)
    v2_metrics.main()
    want = (whole.parent.parent / "metrics" / "v2.json").read_bytes()
    assert "shard" not in json.dumps(json.loads(want)["official_equivalence"])
    write_metrics(tmp_path / "again.json", read_metrics(whole.parent.parent / "metrics" / "v2.json"))
    assert (tmp_path / "again.json").read_bytes() == want  # the stage's file through the typed reader and writer
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
    _all_refused(out, cases, capsys)
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


def _ws(steps_dir):
    return steps_dir.parent.parent


def _latency(steps_dir):
    return _ws(steps_dir) / ".mnemetric" / "v2-run" / "latency.json"


def _without_usd(doc):
    if isinstance(doc, dict):
        return {k: _without_usd(v) for k, v in doc.items() if k != "usd"}
    return doc


def _usd(doc):
    if isinstance(doc, dict):
        return [*([doc["usd"]] if "usd" in doc else []), *(u for v in doc.values() for u in _usd(v))]
    return []


@pytest.fixture
def proxied(tmp_path, monkeypatch):
    """A memory whose own openai client calls models through the model proxy (real HTTP to the local server),
    run whole and as two shards."""
    from tests.support.openai_server import FakeOpenAIServer

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    mem = ["v2/memory=none", "v2.memory._target_=tests.support.proxy_memory.ToyTrajectoryMemory",
           "v2.memory.name=toy-library-v2",  # priced, so the dollars are summed too
           "++llm.prices={toy-chat: {input: 0.15, output: 0.6}, toy-embed: {input: 0.02, output: 0.0}}"]
    with FakeOpenAIServer(reply=lambda messages: '{"facts": "x"}') as api:
        monkeypatch.setenv("OPENAI_BASE_URL", api.base_url)
        whole = _run(tmp_path, monkeypatch, "whole", *mem, metrics=True)
        parts = [_run(tmp_path, monkeypatch, f"s{k}", f"executor.shard={k}/2", *mem) for k in (1, 2)]
    return tmp_path, whole, parts


def test_a_proxy_memorys_shard_costs_add_up_to_the_unsharded_record_and_its_latency_is_joined(proxied, monkeypatch,
                                                                                              capsys):
    from mnemetric.longmemeval_v2.step_rows import MemoryRow, read_rows
    from mnemetric.longmemeval_v2.steps import Latencies, memory_file_sha256
    from mnemetric.stages import v2_metrics

    tmp_path, whole, (s1, s2) = proxied
    cost = json.loads((whole / "memory-cost.json").read_text())
    assert cost["uses_model_proxy"] is True and cost["requests"]["chat"] > 0 and cost["requests"]["embeddings"] > 0
    assert set(cost["systems"]["toy-library-v2"]) == {"ingest", "query"}
    part_costs = [json.loads((s / "memory-cost.json").read_text()) for s in (s1, s2)]
    assert part_costs[0] != part_costs[1]  # each shard its own questions' work: not one record copied
    out = tmp_path / "m" / "memory.jsonl"
    joined = tmp_path / "m" / "latency.json"
    assert _merge(out, s2 / "memory.jsonl", s1 / "memory.jsonl", "--latency", _latency(s1), _latency(s2),
                  "--latency-out", joined) == 0
    assert f"latency → {joined}" in capsys.readouterr().out
    merged, want = _files(tmp_path / "m", "memory"), _files(whole, "memory")
    for name in ("memory-cost.json", "memory-usage.json"):  # the dollars summed: equal up to float rounding
        assert _without_usd(json.loads(merged.pop(name))) == _without_usd(json.loads(want.pop(name)))
        assert _usd(json.loads((tmp_path / "m" / name).read_text())) == pytest.approx(
            _usd(json.loads((whole / name).read_text())), rel=1e-12)
    assert merged == want  # every other byte: the rows, their facts
    # the shared build counted once (each shard built the whole memory), the queries summed
    assert json.loads((tmp_path / "m" / "memory-cost.json").read_text())["requests"] == cost["requests"]
    assert [c["systems"]["toy-library-v2"]["ingest"] for c in part_costs] == [cost["systems"]["toy-library-v2"][
        "ingest"]] * 2
    # the joined latency: keyed by the merged rows, each question's seconds those its shard measured
    sha, got = Latencies.read_sidecar(joined)
    assert sha == memory_file_sha256(out)
    order = [(r.domain, r.question_id) for r in read_rows(out, MemoryRow)]
    assert list(got.seconds) == order
    for s in (s1, s2):
        _, mine = Latencies.read_sidecar(_latency(s))
        assert mine.seconds and all(got.seconds[k] == v for k, v in mine.seconds.items())
    # in the whole run's place, v2_metrics reads it: measured latency, not "not measured"
    for f in _files(tmp_path / "m", "memory"):
        shutil.copyfile(tmp_path / "m" / f, whole / f)
    for step in ("read", "check"):
        assert _merge(tmp_path / "m" / f"{step}.jsonl", s1 / f"{step}.jsonl", s2 / f"{step}.jsonl") == 0
        for f in _files(tmp_path / "m", step):
            shutil.copyfile(tmp_path / "m" / f, whole / f)
    shutil.copyfile(joined, _latency(whole))
    monkeypatch.chdir(_ws(whole))
    v2_metrics.main()
    timing = json.loads((_ws(whole) / "metrics" / "v2-latency.json").read_text())
    assert timing["measured"] is True and timing["source"] == {"memory_rows_sha256": memory_file_sha256(out),
                                                               "carried": False}
    assert timing["query_seconds"]["combined"]["n"] == 14
    measured = [a for a, _ in got.seconds.values()]
    assert timing["query_seconds"]["combined"]["max_seconds"] == max(measured)


def test_latency_files_that_do_not_belong_to_the_parts_are_refused_by_name(proxied, capsys):
    tmp_path, whole, (s1, s2) = proxied
    out = tmp_path / "bad" / "memory.jsonl"
    cases = [((s1 / "memory.jsonl", s2 / "memory.jsonl", "--latency", _latency(s1)), r"memory\.jsonl.*latency"),
             ((s1 / "memory.jsonl", s2 / "memory.jsonl", "--latency", _latency(s1), _latency(s2), _latency(whole)),
              r"latency\.json.*memory_sha256.*belongs to none"),
             ((s1 / "read.jsonl", s2 / "read.jsonl", "--latency", _latency(s1), _latency(s2)), r"--latency.*only the "
              r"memory step"),
             ((s1 / "memory.jsonl", s2 / "memory.jsonl", "--latency-out", tmp_path / "x.json"), "--latency-out"),
             ((s1 / "memory.jsonl", s2 / "memory.jsonl", "--memory-cost", s1 / "memory-cost.json"),
              r"--memory-cost.*only retrieve")]
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"memory_sha256": "0" * 64, "seconds": [["web", "q", "fast", 0.0]]}))
    cases.append(((s1 / "memory.jsonl", s2 / "memory.jsonl", "--latency", broken), r"broken\.json.*seconds\[0\]"))
    short = tmp_path / "short.json"  # s1's own sidecar, one question's seconds gone: named before anything is written
    doc = json.loads(_latency(s1).read_text())
    short.write_text(json.dumps({**doc, "seconds": doc["seconds"][:-1]}))
    cases.append(((s1 / "memory.jsonl", s2 / "memory.jsonl", "--latency", short, _latency(s2)),
                  r"short\.json.*seconds.*measures 6 question\(s\).*holds 7"))
    _all_refused(out, cases, capsys)


def test_a_proxy_memory_part_whose_cost_record_was_edited_is_refused_by_field(proxied, capsys):
    tmp_path, _, (s1, s2) = proxied
    record = json.loads((s2 / "memory-cost.json").read_text())
    record["requests"]["chat"] += 1  # no longer the phases' sum
    (s2 / "memory-cost.json").write_text(json.dumps(record))
    out = tmp_path / "bad" / "memory.jsonl"
    assert _merge(out, s1 / "memory.jsonl", s2 / "memory.jsonl") != 0
    err = capsys.readouterr().err
    assert "memory-cost.json" in err and "requests.chat" in err and "phases' sum" in err
    assert not out.parent.exists() or not any(out.parent.iterdir())


def test_a_memory_calling_models_on_a_shared_haystack_is_not_added_up_but_refused_naming_its_usage(tmp_path,
                                                                                                  monkeypatch, capsys):
    """dense over an OpenAI-compatible endpoint (the run's executor, real HTTP): every shard embedded the shared
    haystack, and its usage sidecar cannot tell that build from the queries."""
    from tests.support.openai_server import FakeOpenAIServer

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeOpenAIServer() as api:
        mem = ["v2/memory=dense", "v2.memory.backend=openai", "v2.memory.model=toy-embed",
               f"v2.memory.base_url={api.base_url}", "++llm.prices={toy-embed: {input: 0.02, output: 0.0}}"]
        parts = [_run(tmp_path, monkeypatch, f"s{k}", f"executor.shard={k}/2", *mem) for k in (1, 2)]
    assert all(json.loads((p / "memory-usage.json").read_text())["responses"] > 0 for p in parts)
    out = tmp_path / "m" / "memory.jsonl"
    assert _merge(out, *(p / "memory.jsonl" for p in parts)) != 0
    err = capsys.readouterr().err
    assert "memory-usage.json" in err and "share one haystack" in err and "unsharded" in err
    assert "Traceback" not in err and not out.parent.exists()
