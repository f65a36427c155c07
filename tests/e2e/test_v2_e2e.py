"""LongMemEval-V2 in the same pipeline: `dvc exp run -S benchmark=longmemeval-v2` runs the bundled V2
sample end to end offline (no API key) and writes metrics/v2.json; a rerun writes the same bytes."""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest

from mnemetric.longmemeval_v2.pins import DATA_PINS
from tests.support.file_server import FileServer

pytestmark = pytest.mark.e2e


@pytest.mark.task("longmemeval-v2", "Static state recall")
@pytest.mark.task("longmemeval-v2", "Dynamic state tracking")
@pytest.mark.task("longmemeval-v2", "Workflow knowledge")
@pytest.mark.task("longmemeval-v2", "Environment gotchas")
@pytest.mark.task("longmemeval-v2", "Premise awareness")
def test_exp_run_benchmark_v2_runs_the_bundled_v2_sample_offline(committed_repro):
    # the baseline's V2 run folder goes (this run writes its own); its measured latencies (latency.json, written
    # by v2_memory, which this experiment does not rerun) stay, so v2_metrics can write the run folder
    for old in (committed_repro.path / ".mnemetric" / "v2-run").glob("*"):
        if old.name != "latency.json":
            shutil.rmtree(old) if old.is_dir() else old.unlink()
    committed_repro.dvc("exp", "run", "-S", "benchmark=longmemeval-v2", env={"OPENAI_API_KEY": ""})
    m = committed_repro.json("metrics/v2.json")
    assert m["benchmark"] == "longmemeval-v2" and m["headline"] is True and m["v2"] == "sample"
    assert m["schema"] == "mnemetric.longmemeval-v2.metrics/1"
    assert set(m["domains"]) == {"web", "enterprise"} and m["combined"]["questions"] == 14
    assert m["official_equivalence"]["value"] is False and m["official_equivalence"]["reasons"]
    overall = m["combined"]["accuracy"]["overall_full_set"]
    assert 0 <= overall["value"] <= 1 and overall["n"] == 14
    assert "memory_query_avg_seconds" not in m["combined"]  # measured, so untracked
    run_dir = committed_repro.path / ".mnemetric" / "v2-run"
    assert (run_dir / "web" / "per_question.jsonl").exists() and (run_dir / "combined_aggregated_metrics.json").exists()
    args = json.loads((run_dir / "enterprise" / "run_args.json").read_text())  # upstream's run folder, for v2 package
    assert args["domain"] == "enterprise" and args["memory_context_max_tokens"] == 200000 and args["model"] is None
    assert len(json.loads((run_dir / "enterprise" / "runtime_inputs" / "questions.json").read_text())) == 7
    custody = committed_repro.json("data/custody/v2-sample.json")  # stage v2_prepare: the bundled root's custody
    assert custody["source"] == "bundled" and custody["all_verified"] is False and custody["data_root"] == "data/sample-v2"
    assert {f["file"] for f in custody["files"]} >= {"questions.jsonl", "trajectories.jsonl", "haystacks/lme_v2_small.json"}
    first = (committed_repro.path / "metrics/v2.json").read_bytes()
    committed_repro.dvc("repro", "--force", "--single-item", "v2_memory", "v2_read", "v2_check", "v2_metrics")
    assert (committed_repro.path / "metrics/v2.json").read_bytes() == first


def test_a_component_is_chosen_by_its_sub_group(committed_repro):
    committed_repro.dvc("exp", "run", "-S", "v2/memory=none", "-S", "v2.max_tokens=1000", "v2_metrics",
                        env={"OPENAI_API_KEY": ""})
    m = committed_repro.json("metrics/v2.json")
    assert m["settings"]["memory"] == "none" and m["settings"]["memory_context_max_tokens"] == 1000
    # no memory items → the offline reader answers UNKNOWN everywhere → 0 correct of 14 (upstream's is_unknown rule)
    assert m["combined"]["accuracy"]["overall_full_set"]["correct"] == 0
    run = committed_repro.json("metrics/run-v2.json")
    fingerprint = committed_repro.json("data/fingerprints/v2-memory.json")  # stage fingerprint's V2 memory file
    assert run["memory"] == {"name": "none", "target": "mnemetric.longmemeval_v2.baselines.NoMemory", "settings": {},
                             "config_sha256": hashlib.sha256(b'{"_target_":"mnemetric.longmemeval_v2.baselines.NoMemory",'
                                                             b'"name":"none"}').hexdigest(),
                             "fingerprint_sha256": fingerprint["sha256"]}
    assert fingerprint["target"] == "mnemetric.longmemeval_v2.baselines.NoMemory"
    custody = (committed_repro.path / "data/custody/v2-sample.json").read_bytes()
    assert run["variant"]["custody"]["file"] == "data/custody/v2-sample.json"
    assert run["variant"]["custody"]["sha256"] == hashlib.sha256(custody).hexdigest()
    assert (run["reader"]["sends_prompts"], run["reader"]["harness_sha256"]) == (False, None)
    assert run["token_counter"] == {"name": "o200k-standin", "official": False}


def test_official_tier_fails_closed_before_any_download(dvc_repo):
    """v2=small with images: the screenshot archives can only be checked against checksums.sha256, which is not
    pinned: stage v2_prepare stops with the file named and the ways on, having asked the server for nothing."""
    with FileServer() as server:
        server.files[f"/datasets/{DATA_PINS.repo}/resolve/{DATA_PINS.revision}/questions.jsonl"] = b"{}\n"
        done = dvc_repo.dvc("exp", "run", "-S", "v2=small", "v2_prepare", check=False,
                            env={"HF_ENDPOINT": server.url, "OPENAI_API_KEY": ""})
        assert server.requests == []
    text = done.stdout + done.stderr
    assert done.returncode != 0 and "Traceback" not in text
    assert "no sha256 is known for: checksums.sha256" in text and "web_screenshots.tar.gz" in text
    assert "-S v2.images=false" in text and "-S v2.checksums_sha256=" in text
    assert not (dvc_repo.path / "data" / "v2" / "small").exists()
    assert not (dvc_repo.path / "data" / "custody" / "v2-small.json").exists()


def test_official_text_only_tier_downloads_from_hf_endpoint_and_refuses_bytes_that_are_not_the_pinned_ones(dvc_repo):
    """-S v2.images=false: nothing needs the unpinned checksums file, so v2_prepare downloads the tier's files
    from HF_ENDPOINT; bytes that do not hash to the pin are refused and nothing is recorded as verified. (The
    o200k counter: the official one is checked before any download, tests/longmemeval_v2/test_obtain.py.)"""
    base = f"/datasets/{DATA_PINS.repo}/resolve/{DATA_PINS.revision}/"
    with FileServer() as server:
        for f in ("questions.jsonl", "trajectories.jsonl", "haystacks/lme_v2_small.json"):
            server.files[base + f] = b"not the pinned bytes\n"
        done = dvc_repo.dvc("exp", "run", "-S", "v2=small", "-S", "v2.images=false", "-S", "v2/token_counter=o200k",
                            "v2_prepare", check=False, env={"HF_ENDPOINT": server.url, "OPENAI_API_KEY": ""})
        asked = [r["path"] for r in server.requests]
    text = done.stdout + done.stderr
    assert done.returncode != 0 and "Traceback" not in text
    assert asked == [base + "questions.jsonl"]  # the first file, refused: the run stops there
    assert "questions.jsonl" in text and "0a3ae5ebea938c24d7800e1e0b0828e08ae1646f939a53853b2b8cdc08e292b7" in text
    assert not (dvc_repo.path / "data" / "v2" / "small" / "questions.jsonl").exists()
    assert not (dvc_repo.path / "data" / "custody" / "v2-small.json").exists()


V2_STEPS = ("v2_memory", "v2_read", "v2_check", "v2_metrics")


def _stale(dvc_repo) -> set[str]:
    import json

    done = dvc_repo.dvc("status", "--json", *V2_STEPS)
    return set(json.loads(done.stdout or "{}")) & set(V2_STEPS)


def test_v2_steps_rerun_only_what_changed_and_a_changed_data_file_is_named(reproduced_repo):
    """The V2 run is four stages with per-question DVC outputs between them: a checker change leaves memory and
    reading alone; an edited gold answer is caught by the custody check (stopped when the custody record is stale,
    named in the run when v2_prepare recorded the edit); a bad data root leaves the committed record alone."""
    import yaml

    dvc_repo = reproduced_repo  # the sample reproduced (the V2 steps included): this repro has nothing to do
    env = {"OPENAI_API_KEY": ""}
    assert "Running stage" not in dvc_repo.dvc("repro", "v2_metrics", env=env).stdout
    first = dvc_repo.json("metrics/v2.json")
    assert _stale(dvc_repo) == set()
    for name in ("memory.jsonl", "read.jsonl", "check.jsonl"):
        assert (dvc_repo.path / "data" / "v2-runs" / name).is_file()  # DVC outs, ignored by git
        assert f"/{name}" in (dvc_repo.path / "data" / "v2-runs" / ".gitignore").read_text()
    assert dvc_repo.json("data/v2-runs/read-usage.json")["responses"] == 0  # the usage sidecar (offline: no calls)

    params = yaml.safe_load((dvc_repo.path / "params.yaml").read_text())
    params["v2"]["checker"]["name"] = "offline-lexical"  # touch the checker's conf
    (dvc_repo.path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    assert _stale(dvc_repo) == {"v2_check", "v2_metrics"}
    done = dvc_repo.dvc("repro", "v2_metrics", env=env)
    assert "Running stage 'v2_check'" in done.stdout and "Running stage 'v2_metrics'" in done.stdout
    assert "Running stage 'v2_memory'" not in done.stdout and "Running stage 'v2_read'" not in done.stdout
    after = dvc_repo.json("metrics/v2.json")
    assert after["settings"]["checker"] == "offline-lexical" and after["combined"] == first["combined"]

    questions = dvc_repo.path / "data" / "sample-v2" / "questions.jsonl"
    lines = questions.read_text().splitlines()
    edited = lines[0].replace('"answer": "', '"answer": "not ', 1)
    assert edited != lines[0]
    questions.write_text("\n".join([edited, *lines[1:]]) + "\n")
    refused = dvc_repo.dvc("repro", "--single-item", "v2_check", check=False, env=env)  # custody record not redone
    text = refused.stdout + refused.stderr
    assert refused.returncode != 0 and "Traceback" not in text
    assert "questions.jsonl: changed since its custody record data/custody/v2-sample.json was written" in text
    dvc_repo.dvc("repro", "v2_metrics", env=env)  # v2_prepare records the edit: the run names the file
    run = dvc_repo.json("metrics/run-v2.json")
    assert run["variant"]["sha256_verified"] is False and run["variant"]["unverified_files"] == ["questions.jsonl"]
    reasons = dvc_repo.json("metrics/v2.json")["official_equivalence"]["reasons"]
    assert any(r.startswith("data file questions.jsonl does not match SHA256SUMS") for r in reasons)

    # a bad data root never replaces the record of the real one, and leaves the metrics as they were
    kept = {rel: (dvc_repo.path / rel).read_bytes() for rel in ("data/custody/v2-sample.json", "metrics/v2.json")}
    params = yaml.safe_load((dvc_repo.path / "params.yaml").read_text())
    params["v2"]["data_root"] = "data/no-such-root"
    (dvc_repo.path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    failed = dvc_repo.dvc("repro", "v2_metrics", check=False, env=env)
    assert failed.returncode != 0
    assert "is the custody record of data/sample-v2, not of data/no-such-root" in failed.stdout + failed.stderr
    assert {rel: (dvc_repo.path / rel).read_bytes() for rel in kept} == kept


def test_v2_latency_is_a_committed_metric_that_a_temp_experiment_carries_and_brings_back(committed_repro):
    """metrics/v2-latency.json: measured by the sample run, no LAFS (not official data); an experiment in a temporary
    workspace that reruns only v2_check and v2_metrics has no latency sidecar (untracked): the measurement of the same
    memory rows is carried over (persist: the committed file is read before the stage rewrites it), DVC brings the
    file back with the experiment, and `dvc exp show` / `dvc metrics diff` list it."""
    import json

    base = committed_repro.json("metrics/v2-latency.json")
    assert base["measured"] is True and base["source"]["carried"] is False and base["cache"]["warm"] is False
    assert base["query_seconds"]["combined"]["n"] == 14 and base["query_seconds"]["combined"]["avg_seconds"] > 0
    assert base["lafs"]["computed"] is False and "not the verified official tier" in base["lafs"]["reason"]
    committed_repro.dvc("exp", "run", "--temp", "-n", "lexical", "-S", "v2.checker.name=offline-lexical",
                        env={"OPENAI_API_KEY": ""})
    ref = next(r for r in committed_repro.run("git", "for-each-ref", "--format=%(refname)", "refs/exps").stdout.split()
               if r.endswith("/lexical"))
    exp = json.loads(committed_repro.run("git", "show", f"{ref}:metrics/v2-latency.json").stdout)
    assert exp["source"] == {**base["source"], "carried": True} and exp["query_seconds"] == base["query_seconds"]
    assert json.loads(committed_repro.run("git", "show", f"{ref}:metrics/v2.json").stdout)["settings"]["checker"] \
        == "offline-lexical"
    shown = committed_repro.dvc("exp", "show", "--json").stdout
    assert "metrics/v2-latency.json" in shown and "avg_seconds" in shown
    diff = json.loads(committed_repro.dvc("metrics", "diff", "--all", "--json", "HEAD", ref).stdout)
    assert "query_seconds.combined.avg_seconds" in diff["metrics/v2-latency.json"]
