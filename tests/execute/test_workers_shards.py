"""Issue 16 items 3 and 5: per-question work on a pool, question shards and `mnemetric merge`.

Real files from the bundled sample: the retrieval of 2 workers (and of a Dask LocalCluster) writes the
bytes of one; shards are stratified by type and deterministic; retrieve → answer → judge on each of 3
shards, merged, is byte-identical to the unsharded chain; merge refuses overlaps, gaps and config or data
mismatches, naming them; bad shard specs are usage errors."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from mnemetric.cli import main
from mnemetric.config import build
from mnemetric.errors import ConfigError, InputError, MnemetricError
from mnemetric.execute import ImmediateExecutor, build_executor
from mnemetric.longmemeval.adapted import read_adapted, read_adapted_lines
from mnemetric.longmemeval.retrieve import write_retrieval
from mnemetric.shard import Shard, ShardRun, assign, merge, parse_shard
from tests.conftest import ROOT

DATASET = ROOT / "data" / "sample" / "longmemeval_sample.json"


def _memory(name: str = "bm25-upstream"):
    import yaml

    return build(yaml.safe_load((ROOT / "conf" / "memory" / f"{name}.yaml").read_text(encoding="utf-8")), name)


def _retrieve(folder: Path, records, executor=None, shard=None, granularity="turn", tag="run"):
    folder.mkdir(parents=True, exist_ok=True)
    log, ctx = folder / f"{tag}.jsonl", folder / f"{tag}.ctx.jsonl"
    write_retrieval(_memory(), records, granularity=granularity, k=5, budget=2000, log=log, contexts=ctx,
                    executor=executor, shard=shard)
    return log, ctx


@pytest.fixture(scope="module")
def records(adapted_sample):
    return list(read_adapted(adapted_sample))


def test_two_workers_write_the_bytes_of_one(tmp_path, records):
    one = _retrieve(tmp_path / "one", records, ImmediateExecutor(workers=1, progress=False))
    two = _retrieve(tmp_path / "two", records, ImmediateExecutor(workers=2, progress=False))
    assert [p.read_bytes() for p in one] == [p.read_bytes() for p in two]
    assert len(one[0].read_bytes().splitlines()) == len(records) > 10


def test_unparsed_lines_parsed_on_two_workers_write_the_bytes_of_records_on_one(tmp_path, records, adapted_sample):
    """What stage retrieve hands the pool (AdaptedRecords.lines): the workers parse; the bytes do not move."""
    one = _retrieve(tmp_path / "one", records, ImmediateExecutor(workers=1, progress=False))
    two = _retrieve(tmp_path / "two", read_adapted_lines(adapted_sample), ImmediateExecutor(workers=2, progress=False))
    assert [p.read_bytes() for p in one] == [p.read_bytes() for p in two]


def test_a_bad_line_parsed_on_a_worker_is_named_as_in_this_process(tmp_path, adapted_sample):
    lines = adapted_sample.read_text(encoding="utf-8").splitlines(keepends=True)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(lines[:5]) + lines[5].replace('"role": "user"', '"role": 7', 1) + "".join(lines[6:]),
                   encoding="utf-8")
    with pytest.raises(MnemetricError) as here:
        list(read_adapted(bad))
    with pytest.raises(MnemetricError) as there:
        _retrieve(tmp_path / "two", read_adapted_lines(bad), ImmediateExecutor(workers=2, progress=False))
    assert f"{bad}" in str(there.value) and "line 6" in str(there.value) and "role" in str(there.value)
    assert str(there.value) == str(here.value) and there.value.exit_code == here.value.exit_code
    assert not (tmp_path / "two" / "run.jsonl").exists()  # nothing half-written


def test_a_dask_local_cluster_writes_the_bytes_of_the_immediate_executor(tmp_path, records):
    pytest.importorskip("distributed")
    from mnemetric.execute.dask import DaskExecutor

    base = _retrieve(tmp_path / "immediate", records, ImmediateExecutor(workers=1, progress=False))
    with DaskExecutor(workers=2, processes=False, progress=False) as ex:
        dask = _retrieve(tmp_path / "dask", records, ex)
        assert len(ex.dask_client.scheduler_info()["workers"]) == 2
    assert [p.read_bytes() for p in base] == [p.read_bytes() for p in dask]


def test_executor_address_joins_a_running_scheduler_and_writes_the_same_bytes(tmp_path, records):
    """executor.address: the run joins that scheduler (starts no cluster of its own) and its tasks run on the
    scheduler's workers; an address nobody listens at is a ConfigError naming executor.address."""
    pytest.importorskip("distributed")
    from distributed import Client, LocalCluster

    from mnemetric.execute.dask import DaskExecutor

    base = _retrieve(tmp_path / "immediate", records, ImmediateExecutor(workers=1, progress=False))
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            Client(cluster) as watcher:
        with DaskExecutor(address=cluster.scheduler_address, processes=False, progress=False) as ex:
            joined = _retrieve(tmp_path / "joined", records, ex)
            assert ex._cluster is None and ex.dask_client.scheduler.address == cluster.scheduler_address
        prefixes = watcher.run_on_scheduler(lambda dask_scheduler: sorted(dask_scheduler.task_prefixes))
        assert "run_chunk" in prefixes, prefixes  # the scheduler ran the run's per-question tasks
    assert [p.read_bytes() for p in base] == [p.read_bytes() for p in joined]
    import dask

    with dask.config.set({"distributed.comm.timeouts.connect": "2s"}), \
            DaskExecutor(address="tcp://127.0.0.1:9", progress=False) as ex, \
            pytest.raises(ConfigError, match=r"(?s)executor\.address.*cannot reach the Dask scheduler.*waited 2s"):
        ex.dask_client  # nobody listens there: refused for Dask's connect timeout (30 s unless set), then named


def test_executor_dask_is_an_option_of_the_executor_group():
    import yaml

    cfg = yaml.safe_load((ROOT / "conf" / "executor" / "dask.yaml").read_text(encoding="utf-8"))
    ex = build_executor(cfg, {}, progress=False)
    assert type(ex).__name__ == "DaskExecutor" and ex.address is None
    with pytest.raises(ConfigError, match="executor.address"):
        build_executor({**yaml.safe_load((ROOT / "conf/executor/immediate.yaml").read_text()), "address": "tcp://x:1"},
                       {})


def test_shards_are_stratified_by_type_balanced_and_deterministic(records):
    universe = [(r.eval.question_id, r.eval.question_type) for r in records]
    got = assign(universe, 3)
    assert got == assign(universe, 3) and set(got.values()) == {1, 2, 3}
    sizes = Counter(got.values())
    assert max(sizes.values()) - min(sizes.values()) <= 1
    for qtype in {t for _, t in universe}:
        per = Counter(got[q] for q, t in universe if t == qtype)
        assert max(per.values()) - min(per.get(k, 0) for k in (1, 2, 3)) <= 1, qtype


@pytest.mark.parametrize("spec, problem", [("0/0", "N must be >= 1"), ("3/2", "K must be in 1..2"),
                                           ("a/b", "not a shard spec"), ("0/2", "K must be in 1..2")])
def test_bad_shard_specs_are_clear_errors(spec, problem, capsys):
    with pytest.raises(ConfigError, match=problem):
        parse_shard(spec)
    with pytest.raises(SystemExit) as exit_:
        main(["retrieve", str(DATASET), "--memory", "bm25", "--granularity", "session", "--out", "x", "--shard", spec])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"argument --shard: {spec!r}" in err and problem in err and "Traceback" not in err
    with pytest.raises(ConfigError, match="executor.shard"):
        ImmediateExecutor(shard=spec)


def _shards(tmp_path: Path, records, n: int = 3):
    universe = [(r.eval.question_id, r.eval.question_type) for r in records]
    parts = []
    for k in range(1, n + 1):
        run = ShardRun.start("retrieve", Shard(k, n), universe, data_file=None, config={"k": 5})
        parts.append(_retrieve(tmp_path / "parts", records, shard=run, tag=f"p{k}"))
    return parts


def test_merged_retrieval_shards_are_the_unsharded_bytes(tmp_path, records):
    full = _retrieve(tmp_path / "full", records)
    parts = _shards(tmp_path, records)
    merge(tmp_path / "log.jsonl", [p[0] for p in reversed(parts)])
    merge(tmp_path / "ctx.jsonl", [p[1] for p in parts])
    assert (tmp_path / "log.jsonl").read_bytes() == full[0].read_bytes()
    assert (tmp_path / "ctx.jsonl").read_bytes() == full[1].read_bytes()
    assert not Path(f"{full[0]}.shard.json").exists()


def test_merge_refuses_overlaps_gaps_and_mismatches_naming_them(tmp_path, records):
    (p1, _), (p2, _), (p3, _) = _shards(tmp_path, records)
    out = tmp_path / "merged.jsonl"
    with pytest.raises(InputError, match=r"overlap.*shard 2/3 also given as .*p2\.jsonl"):
        merge(out, [p1, p2, p3, shutil.copy(p2, tmp_path / "copy.jsonl") and _copy_manifest(p2, tmp_path / "copy.jsonl")])
    with pytest.raises(InputError, match=r"gap.*shard\(s\) 3/3 missing"):
        merge(out, [p1, p2])
    universe = [(r.eval.question_id, r.eval.question_type) for r in records]
    other = _retrieve(tmp_path / "other", records, shard=ShardRun.start("retrieve", Shard(3, 3), universe,
                      data_file=None, config={"k": 6}), tag="p3")[0]
    with pytest.raises(InputError, match=r"p3\.jsonl: shard 3/3: field 'config mismatch'"):
        merge(out, [p1, p2, other])
    data = tmp_path / "data.json"
    data.write_text("[]", encoding="utf-8")
    elsewhere = _retrieve(tmp_path / "data", records, shard=ShardRun.start("retrieve", Shard(3, 3), universe,
                          data_file=data, config={"k": 5}), tag="p3")[0]
    with pytest.raises(InputError, match="data mismatch"):
        merge(out, [p1, p2, elsewhere])
    p3.write_bytes(b"".join(p3.read_bytes().splitlines(keepends=True)[:-1]))  # a truncated part
    with pytest.raises(InputError, match=r"p3\.jsonl: <file>: field 'lines': .* its shard manifest lists"):
        merge(out, [p1, p2, p3])
    (tmp_path / "bare.jsonl").write_text("", encoding="utf-8")
    with pytest.raises(InputError, match="not an output of a --shard run"):
        merge(out, [tmp_path / "bare.jsonl"])
    assert not out.exists()


def test_merge_refuses_a_log_part_among_contexts_parts_and_an_out_that_is_a_part(tmp_path, records, capsys):
    """retrieve writes two outputs per shard whose manifests agree on command, settings and data: the manifest
    names which output it is, so the parts of one are never joined with the other's; and --out naming a part
    would overwrite it."""
    (p1, c1), (p2, c2), (p3, c3) = _shards(tmp_path, records)
    out = tmp_path / "merged.jsonl"
    with pytest.raises(InputError, match=r"p2\.jsonl: shard manifest: field 'output': 'retrieval log', but .*p1\.ctx\.jsonl has 'contexts'"):
        merge(out, [c1, p2, c3])
    assert not out.exists()
    before = p1.read_bytes()
    for target in (p1, Path(f"{p1}.failures.jsonl"), Path(f"{p1}.shard.json")):
        assert main(["merge", "--out", str(target), str(p1), str(p2), str(p3)]) == 2
        err = capsys.readouterr().err
        assert "--out" in err and "would overwrite it" in err and "Traceback" not in err, err
    assert p1.read_bytes() == before and not Path(f"{p1}.failures.jsonl").exists()
    assert main(["merge", "--out", str(out), str(p1), str(p2), str(p3)]) == 0


def _copy_manifest(src: Path, dst: Path) -> Path:
    shutil.copy(f"{src}.shard.json", f"{dst}.shard.json")
    return dst


def test_retrieve_answer_judge_on_2_shards_merge_to_the_unsharded_chain(tmp_path, adapted_sample, capsys):
    def chain(folder: Path, shard: str | None) -> Path:
        folder.mkdir()
        extra = ["--shard", shard] if shard else []
        assert main(["retrieve", str(DATASET), "--memory", "bm25-upstream", "--granularity", "session",
                     "--out", str(folder / "log.jsonl"), "--contexts", str(folder / "ctx.jsonl"), "--workers", "2",
                     *extra]) == 0
        assert main(["answer", str(folder / "ctx.jsonl"), "--adapted", str(adapted_sample), "--reader",
                     "extractive", "--out", str(folder / "hyp.jsonl")]) == 0  # the shard is the input's
        assert main(["judge", str(folder / "hyp.jsonl"), str(DATASET), "--judge", "lexical",
                     "--out", str(folder / "judged.jsonl")]) == 0
        return folder

    full = chain(tmp_path / "full", None)
    parts = [chain(tmp_path / f"s{k}", f"{k}/2") for k in (1, 2)]
    for name in ("hyp.jsonl", "judged.jsonl"):
        # as a shell glob (runs/judged.*.jsonl) names them: each part and its .failures.jsonl sidecar
        globbed = [str(f) for p in parts for f in (p / name, p / f"{name}.failures.jsonl")]
        assert main(["merge", "--out", str(tmp_path / name), *globbed]) == 0, capsys.readouterr().err
        assert (tmp_path / name).read_bytes() == (full / name).read_bytes(), name
        assert (tmp_path / f"{name}.failures.jsonl").read_bytes() == (full / f"{name}.failures.jsonl").read_bytes()
    assert (tmp_path / "hyp.jsonl.usage.json").read_bytes() == (full / "hyp.jsonl.usage.json").read_bytes()
    (parts[1] / "hyp.jsonl.usage.json").unlink()  # one part without its sidecar: refused, named, nothing written
    assert main(["merge", "--out", str(tmp_path / "again.jsonl"), *(str(p / "hyp.jsonl") for p in parts)]) == 2
    assert "s2/hyp.jsonl.usage.json: <file>: field 'usage sidecar'" in capsys.readouterr().err
    assert not (tmp_path / "again.jsonl").exists()
    manifest = json.loads((parts[0] / "judged.jsonl.shard.json").read_text(encoding="utf-8"))
    assert manifest["command"] == "judge" and manifest["shard"] == "1/2"


@pytest.mark.parametrize("key, value, problem", [("workers", 0, ">= 1"), ("workers", "2", "expected an integer"),
                                                 ("grace_seconds", -1, ">= 0"), ("shard", "abc", "K/N"),
                                                 ("address", 3, "expected a string")])
def test_the_executor_section_is_typed(key, value, problem):
    import yaml

    from mnemetric.schema import check_section

    section = yaml.safe_load((ROOT / "conf" / "executor" / "immediate.yaml").read_text(encoding="utf-8"))
    check_section("executor", section)
    with pytest.raises(ConfigError, match=f"executor.{key}") as err:
        check_section("executor", {**section, key: value})
    assert problem in str(err.value)


def test_usage_sidecars_of_shards_add_up():
    from mnemetric.llm.usage import UsageRecord, sum_usage

    def rec(n, batch, usd, resolved):
        block = {"responses": n, "batch_responses": batch, "prompt_tokens": 10 * n, "completion_tokens": n,
                 "usd": usd, "resolved_models": [resolved]}
        return UsageRecord.from_record({"responses": n, "batch_responses": batch, "prompt_tokens": 10 * n,
                                        "completion_tokens": n, "usd": usd, "unpriced_models": [],
                                        "per_model": {"m": block}}, file="x")

    total = sum_usage([rec(2, 1, 0.5, "m-2"), rec(3, 0, 0.25, "m-1")]).to_record()
    assert total == {"responses": 5, "batch_responses": 1, "prompt_tokens": 50, "completion_tokens": 5, "usd": 0.75,
                     "unpriced_models": [], "per_model": {"m": {"responses": 5, "batch_responses": 1,
                     "prompt_tokens": 50, "completion_tokens": 5, "usd": 0.75, "resolved_models": ["m-1", "m-2"]}}}
    UsageRecord.from_record(total, file="merged")  # the sidecar layout validates


def _frozen(_item):
    import gc

    return gc.get_freeze_count()


def _periodic(dask_worker):
    return {name: getattr(callback, "callback_time", None) for name, callback in dask_worker.periodic_callbacks.items()}


def test_workers_settle_their_heap_before_the_first_task():
    """Pool and Dask workers freeze what they hold before any question (mnemetric.execute.pool.settle_heap), so a
    question's collections do not walk the inherited heap; the caller's own process is left as it was. The workers
    of a LocalCluster the executor starts run without the statistical profiler and with the slower periodic callbacks
    of mnemetric.execute.dask.LOCAL_CLUSTER_CONFIG (each took the GIL from the questions' work)."""
    import gc

    here = gc.get_freeze_count()
    pooled = list(ImmediateExecutor(workers=2, progress=False).map(_frozen, range(8)))
    assert all(n > 0 for n in pooled) and gc.get_freeze_count() == here
    pytest.importorskip("distributed")
    from mnemetric.execute.dask import DaskExecutor

    with DaskExecutor(workers=2, progress=False) as ex:
        assert all(n > 0 for n in ex.map(_frozen, range(8)))
        quiet = ex.dask_client.run(_periodic)  # the LocalCluster's workers run with LOCAL_CLUSTER_CONFIG
        assert len(quiet) == 2 and all(callbacks.get("profile") is None and callbacks["tick"] == 1000
                                       and callbacks["memory_monitor"] == 1000 for callbacks in quiet.values()), quiet
    with DaskExecutor(workers=2, processes=False, progress=False) as ex:  # workers that are threads of this process
        assert list(ex.map(_frozen, range(8))) == [here] * 8 and gc.get_freeze_count() == here  # its heap: not frozen
    import dask

    assert dask.config.get("distributed.worker.profile.enabled") is True  # this process's config is left as it was


def _lines_of(path: Path, ids: set[str]) -> bytes:
    return b"".join(x for x in path.read_bytes().splitlines(keepends=True) if json.loads(x)["question_id"] in ids)


def test_answer_and_judge_given_shard_run_its_questions_and_refuse_an_input_of_another_shard(tmp_path, adapted_sample,
                                                                                            capsys):
    """`answer --shard K/N` and `judge --shard K/N` given explicitly: on an unsharded input they run the shard's
    questions only (the unsharded run's lines of those questions, byte for byte) and write its manifest; on an
    input that is that same shard they are accepted (the same bytes); on an input of another shard they refuse,
    naming --shard and the input, exit 2, no traceback and nothing written."""
    from mnemetric.shard import shard_ids

    def retrieve(folder: Path, *extra: str) -> Path:
        folder.mkdir()
        assert main(["retrieve", str(DATASET), "--memory", "bm25-upstream", "--granularity", "session", "--out",
                     str(folder / "log.jsonl"), "--contexts", str(folder / "ctx.jsonl"), *extra]) == 0
        return folder / "ctx.jsonl"

    def answer(ctx: Path, out: Path, *extra: str) -> int:
        return main(["answer", str(ctx), "--adapted", str(adapted_sample), "--reader", "extractive",
                     "--out", str(out), *extra])

    def judge(hyp: Path, out: Path, *extra: str) -> int:
        return main(["judge", str(hyp), str(DATASET), "--judge", "lexical", "--out", str(out), *extra])

    full_ctx = retrieve(tmp_path / "full")
    sharded_ctx = retrieve(tmp_path / "s1", "--shard", "1/2")
    full = tmp_path / "full"
    assert answer(full_ctx, full / "hyp.jsonl") == 0 and judge(full / "hyp.jsonl", full / "judged.jsonl") == 0
    ids = shard_ids([(r.eval.question_id, r.eval.question_type) for r in read_adapted(adapted_sample)], Shard(1, 2))
    assert 0 < len(ids) < len(full_ctx.read_bytes().splitlines())

    on_full, on_shard = tmp_path / "on-full", tmp_path / "on-shard"
    # on-full: each command's input is unsharded; on-shard: each input is shard 1/2 (with its manifest)
    for tag, ctx, folder, hyp in (("full", full_ctx, on_full, full / "hyp.jsonl"),
                                  ("shard", sharded_ctx, on_shard, on_shard / "hyp.jsonl")):
        folder.mkdir()
        assert answer(ctx, folder / "hyp.jsonl", "--shard", "1/2") == 0, capsys.readouterr().err
        assert judge(hyp, folder / "judged.jsonl", "--shard", "1/2") == 0, capsys.readouterr().err
        for name, command in (("hyp.jsonl", "answer"), ("judged.jsonl", "judge")):
            got = folder / name
            assert got.read_bytes() == _lines_of(full / name, ids) != b"", (tag, name)
            manifest = json.loads(Path(f"{got}.shard.json").read_text(encoding="utf-8"))
            assert (manifest["command"], manifest["shard"]) == (command, "1/2"), (tag, name)
            assert set(manifest["lines"]["question_ids"]) == {json.loads(x)["question_id"]
                                                             for x in got.read_bytes().splitlines()}
    capsys.readouterr()

    sharded_hyp, bad = on_shard / "hyp.jsonl", tmp_path / "bad"  # a shard 1/2 input asked for 2/2: refused
    bad.mkdir()
    for run, given, out in ((answer, sharded_ctx, bad / "hyp.jsonl"), (judge, sharded_hyp, bad / "judged.jsonl")):
        assert run(given, out, "--shard", "2/2") == 2
        err = capsys.readouterr().err
        assert f"--shard: 2/2 asked, but the input {given} is shard 1/2" in err, err
        assert "run with --shard 1/2 (or without --shard)" in err and "Traceback" not in err, err
        assert list(bad.iterdir()) == [], out  # nothing written


def test_merge_keeps_the_failures_of_the_parts_and_refuses_a_part_that_lists_none(tmp_path, adapted_sample, capsys):
    """A judge shard with failures (a reader failure carried over) and one without (its sidecar empty, its manifest
    listing none) merge into the unsharded run's failures sidecar, holding the first part's failures. A part whose
    manifest lists no failures sidecar at all (not written by judge: hand-made or edited) among parts that list
    theirs is refused, naming it: merging only the listed sidecars, or none, would lose failures."""
    from mnemetric.llm.failures import QuestionFailure, write_failures
    from mnemetric.longmemeval.reference import reference_by_id
    from mnemetric.shard import shard_ids

    assert main(["retrieve", str(DATASET), "--memory", "bm25-upstream", "--granularity", "session",
                 "--out", str(tmp_path / "log.jsonl"), "--contexts", str(tmp_path / "ctx.jsonl")]) == 0
    hyp = tmp_path / "hyp.jsonl"
    assert main(["answer", str(tmp_path / "ctx.jsonl"), "--adapted", str(adapted_sample), "--reader", "extractive",
                 "--out", str(hyp)]) == 0
    refs = reference_by_id(DATASET)
    first = shard_ids([(r.question_id, r.question_type) for r in refs.values()], Shard(1, 2))
    lines = hyp.read_bytes().splitlines(keepends=True)
    failed = next(json.loads(x)["question_id"] for x in lines if json.loads(x)["question_id"] in first)
    hyp.write_bytes(b"".join(x for x in lines if json.loads(x)["question_id"] != failed))  # the reader failed it
    write_failures(f"{hyp}.failures.jsonl", [QuestionFailure(failed, "answer", "content is null", "0" * 64, "m", 2)])

    def judge(out: Path, *extra: str) -> None:
        assert main(["judge", str(hyp), str(DATASET), "--judge", "lexical", "--out", str(out), "--allow-partial",
                     *extra]) == 0, capsys.readouterr().err

    judge(tmp_path / "full.jsonl")
    parts = [tmp_path / f"judged.{k}.jsonl" for k in (1, 2)]
    for k, part in enumerate(parts, start=1):
        judge(part, "--shard", f"{k}/2")
    p1_fails, p2_fails = (Path(f"{p}.failures.jsonl").read_bytes() for p in parts)
    assert [json.loads(x)["question_id"] for x in p1_fails.splitlines()] == [failed] and p2_fails == b""
    assert json.loads(Path(f"{parts[1]}.shard.json").read_text(encoding="utf-8"))["failures"]["question_ids"] == []
    out = tmp_path / "merged.jsonl"
    assert main(["merge", "--out", str(out), *map(str, reversed(parts))]) == 0, capsys.readouterr().err
    assert out.read_bytes() == (tmp_path / "full.jsonl").read_bytes()
    assert Path(f"{out}.failures.jsonl").read_bytes() == p1_fails == \
        (tmp_path / "full.jsonl.failures.jsonl").read_bytes()

    bare = Path(f"{parts[1]}.shard.json")  # part 2's manifest without its failures listing, its sidecar gone
    manifest = json.loads(bare.read_text(encoding="utf-8"))
    del manifest["failures"]
    bare.write_text(json.dumps(manifest), encoding="utf-8")
    Path(f"{parts[1]}.failures.jsonl").unlink()
    capsys.readouterr()
    again = tmp_path / "again.jsonl"
    assert main(["merge", "--out", str(again), *map(str, parts)]) == 2
    err = capsys.readouterr().err
    assert f"{bare}: <file>: field 'failures': missing, but {parts[0]}.shard.json lists its .failures.jsonl" in err, err
    assert "would lose failures" in err and "Traceback" not in err
    assert not again.exists() and not Path(f"{again}.failures.jsonl").exists()
