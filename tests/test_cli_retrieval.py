"""`mnemetric retrieve` and `mnemetric score-retrieval`, end to end through the real command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

SAMPLE = ROOT / "data" / "sample" / "longmemeval_sample.json"
PROFILE = "longmemeval-session-upstream-v1"
RULES = ("exclude_abs", "exclude_abs_and_no_user_target")


def cli(*args: str | Path, cwd: Path = ROOT, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m mnemetric.cli ARGS`` in a fresh process; cache and PYTHONPATH under our control."""
    full_env = {**os.environ, "MNEMETRIC_CACHE_DIR": os.environ.get("MNEMETRIC_CACHE_DIR", str(cwd)), **(env or {})}
    return subprocess.run([sys.executable, "-m", "mnemetric.cli", *map(str, args)], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=600)


def ok(proc: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> dict[str, Path]:
    """bm25-upstream retrieval logs of the bundled sample at both granularities (made once)."""
    out = tmp_path_factory.mktemp("logs")
    paths = {}
    for g in ("turn", "session"):
        paths[g] = out / f"sample_retrievallog_{g}_bm25-upstream.jsonl"
        ok(cli("retrieve", SAMPLE, "--memory", "bm25-upstream", "--granularity", g, "--out", paths[g],
               "--contexts", out / f"contexts_{g}.jsonl", "--context-k", "5", "--context-tokens", "800",
               env={"MNEMETRIC_CACHE_DIR": str(out / "cache")}))
    return paths


def score(log: Path, out: Path, granularity: str, *extra: str) -> dict:
    """The detail file (detail/<name> beside --out) of a score-retrieval run."""
    proc = ok(cli("score-retrieval", log, "--granularity", granularity, "--profile", PROFILE, "--out", out, *extra))
    assert "recall_all@5" in proc.stdout and "ndcg_any@10" in proc.stdout and "exclude_abs" in proc.stdout
    return json.loads((out.parent / "detail" / out.name).read_text())


# ------------------------------------------------------------------ retrieve → score-retrieval


@pytest.mark.parametrize("granularity", ["turn", "session"])
def test_scores_equal_the_metrics_the_retrieve_step_embedded_in_the_log(logs, tmp_path, granularity):
    lines = read_jsonl(logs[granularity])
    assert len(lines) == len(json.loads(SAMPLE.read_text()))
    scored = score(logs[granularity], tmp_path / "scores.json", granularity)
    assert set(scored["per_question"]) == {line["question_id"] for line in lines}
    for line in lines:
        embedded = line["retrieval_results"]["metrics"]
        ours = scored["per_question"][line["question_id"]]
        assert {lv: m for lv, m in embedded.items() if m} == ours, line["question_id"]


@pytest.mark.parametrize("granularity", ["turn", "session"])
def test_log_lines_have_the_upstream_shape(logs, granularity):
    source = {inst["question_id"]: inst for inst in json.loads(SAMPLE.read_text())}
    for line in read_jsonl(logs[granularity]):
        inst = source[line["question_id"]]
        for key in ("question_type", "question", "answer", "question_date", "answer_session_ids"):
            assert line[key] == inst[key]
        assert sorted(line["haystack_session_ids"]) == sorted(inst["haystack_session_ids"])
        results = line["retrieval_results"]
        assert results["query"] == inst["question"]
        assert all(set(item) == {"corpus_id", "text", "timestamp"} for item in results["ranked_items"])
        ids = [item["corpus_id"] for item in results["ranked_items"]]
        assert len(ids) == len(set(ids)) > 0


def test_contexts_file_is_written_within_the_budget(logs):
    contexts = read_jsonl(logs["turn"].parent / "contexts_turn.jsonl")
    assert len(contexts) == len(read_jsonl(logs["turn"]))
    for c in contexts:
        assert c["memory"] == "bm25-upstream" and c["granularity"] == "turn"
        assert c["k"] == 5 and c["budget_tokens"] == 800 and 0 < c["tokens"] <= 800
        assert len(c["items"]) <= 5


def test_score_file_has_the_required_shape(logs, tmp_path):
    scored = score(logs["turn"], tmp_path / "scores.json", "turn", "--ks", "1,5,10,50", "--reference", str(SAMPLE))
    assert scored["profile"] == PROFILE and scored["official_equivalence"] == {"value": True, "reasons": []}
    assert scored["granularity"] == "turn"
    for per in scored["per_question"].values():
        assert set(per) == {"session", "turn"}
        metrics = ("recall_any", "recall_all", "ndcg_any")
        assert set(per["turn"]) == {f"{m}@{k}" for m in metrics for k in (1, 5, 10, 50)}
    for rule in RULES:
        agg = scored[rule]
        assert 0 < agg["n"] <= len(scored["per_question"])
        for level in ("session", "turn"):
            assert 0.0 <= agg[level]["recall_all@10"] <= 1.0
    ab = scored["exclude_abs"]
    assert ab["n"] == sum("_abs" not in q for q in scored["per_question"])
    assert ab["n"] + ab["excluded"] == len(scored["per_question"])


def test_session_log_is_scored_at_session_level_only(logs, tmp_path):
    scored = score(logs["session"], tmp_path / "scores.json", "session")
    assert all(set(per) == {"session"} for per in scored["per_question"].values())
    assert "turn" not in scored["exclude_abs"]


@pytest.mark.parametrize("granularity", ["turn", "session"])
def test_oracle_finds_every_target(tmp_path, granularity):
    log = tmp_path / "oracle.jsonl"
    ok(cli("retrieve", SAMPLE, "--memory", "oracle", "--granularity", granularity, "--out", log))
    scored = score(log, tmp_path / "scores.json", granularity)
    for rule in RULES:
        assert scored[rule]["session"]["recall_all@50"] == 1.0
        if granularity == "turn":
            assert scored[rule]["turn"]["recall_all@50"] == 1.0


def test_memory_from_a_yaml_path_plugs_in_an_outside_package(tmp_path):
    (tmp_path / "mymemory.py").write_text(
        "from mnemetric.longmemeval.memory.simple import FullContext\n"
        "class OldestFirst(FullContext):\n"
        "    def retrieve(self, query, granularity):\n"
        "        return super().retrieve(query, granularity)[::-1]\n")
    cfg = tmp_path / "oldest.yaml"
    cfg.write_text("_target_: mymemory.OldestFirst\nname: oldest-first\nroles: [user]\n")
    log = tmp_path / "log.jsonl"
    proc = ok(cli("retrieve", SAMPLE, "--memory", cfg, "--granularity", "session", "--out", log,
                  env={"PYTHONPATH": str(tmp_path)}))
    assert "oldest-first" in proc.stdout
    first = read_jsonl(log)[0]
    ranked = [item["timestamp"] for item in first["retrieval_results"]["ranked_items"]]
    assert ranked == sorted(first["haystack_dates"])  # chronological replay order, as the class says


# ------------------------------------------------------------------ bad input


def fails(proc: subprocess.CompletedProcess, *needles: str) -> None:
    assert proc.returncode != 0, proc.stdout
    for needle in needles:
        assert needle in proc.stderr, f"{needle!r} not in stderr:\n{proc.stderr}"
    assert "Traceback" not in proc.stderr


def edited_log(src: Path, dst: Path, index: int, edit) -> Path:
    lines = read_jsonl(src)
    edit(lines[index])
    dst.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return dst


def test_log_line_without_ranked_items_names_file_line_and_field(logs, tmp_path):
    bad = edited_log(logs["turn"], tmp_path / "bad.jsonl", 2,
                     lambda line: line["retrieval_results"].pop("ranked_items"))
    proc = cli("score-retrieval", bad, "--granularity", "turn", "--profile", PROFILE, "--out", tmp_path / "s.json")
    fails(proc, str(bad), "line 3", "retrieval_results.ranked_items", "missing")
    assert not (tmp_path / "s.json").exists()


def test_duplicate_corpus_ids_are_refused(logs, tmp_path):
    def dup(line):
        items = line["retrieval_results"]["ranked_items"]
        items.insert(4, dict(items[1]))
    bad = edited_log(logs["session"], tmp_path / "dup.jsonl", 0, dup)
    proc = cli("score-retrieval", bad, "--granularity", "session", "--profile", PROFILE, "--out", tmp_path / "s.json")
    fails(proc, str(bad), "line 1", "ranked_items[4].corpus_id", "duplicate corpus id")


def test_unknown_granularity_is_refused(logs, tmp_path):
    proc = cli("score-retrieval", logs["turn"], "--granularity", "sentence", "--profile", PROFILE,
               "--out", tmp_path / "s.json")
    fails(proc, str(logs["turn"]), "granularity", "'sentence'")
    proc = cli("retrieve", SAMPLE, "--memory", "bm25", "--granularity", "sentence", "--out", tmp_path / "l.jsonl")
    fails(proc, "--granularity", "'sentence'")


def test_wrong_granularity_for_the_log_names_the_field(logs, tmp_path):
    proc = cli("score-retrieval", logs["turn"], "--granularity", "session", "--profile", PROFILE,
               "--out", tmp_path / "s.json")
    fails(proc, "line 1", "retrieval_results.ranked_items[0].corpus_id", "not in the session corpus")


def test_question_missing_from_reference_is_refused(logs, tmp_path):
    reference = json.loads(SAMPLE.read_text())
    missing = reference.pop(5)["question_id"]
    ref = tmp_path / "ref.json"
    ref.write_text(json.dumps(reference))
    proc = cli("score-retrieval", logs["turn"], "--granularity", "turn", "--profile", PROFILE,
               "--out", tmp_path / "s.json", "--reference", ref)
    fails(proc, str(logs["turn"]), "line 6", missing, "question_id", "not found in reference file")


def test_unknown_memory_lists_the_available_ones(tmp_path):
    proc = cli("retrieve", SAMPLE, "--memory", "bm52", "--granularity", "turn", "--out", tmp_path / "l.jsonl")
    fails(proc, "Could not find 'memory/bm52'", "bm25-upstream", "dense", "oracle", "full-context")
    assert not (tmp_path / "l.jsonl").exists()


def test_memory_config_errors_are_user_errors(tmp_path):
    cfg = tmp_path / "dense-openai.yaml"
    cfg.write_text("_target_: mnemetric.longmemeval.memory.dense.Dense\nname: dense\nbackend: openai\n")
    proc = cli("retrieve", SAMPLE, "--memory", cfg, "--granularity", "turn", "--out", tmp_path / "l.jsonl")
    fails(proc, "memory.model")
    (tmp_path / "nt.yaml").write_text("name: x\n")
    fails(cli("retrieve", SAMPLE, "--memory", tmp_path / "nt.yaml", "--granularity", "turn",
              "--out", tmp_path / "l.jsonl"), "_target_")


def test_invalid_dataset_lists_its_problems_and_writes_nothing(tmp_path):
    data = json.loads(SAMPLE.read_text())
    data[1]["haystack_dates"][0] = "yesterday"
    data.append(dict(data[0]))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    proc = cli("retrieve", bad, "--memory", "bm25", "--granularity", "turn", "--out", tmp_path / "l.jsonl")
    fails(proc, str(bad), data[1]["question_id"], "haystack_dates[0]", "duplicate question_id")
    assert not (tmp_path / "l.jsonl").exists()


# ------------------------------------------------------------------ help


@pytest.mark.parametrize("args", [["--help"], ["retrieve", "--help"], ["score-retrieval", "--help"],
                                  ["validate", "--help"], ["adapt", "--help"], ["fetch", "--help"],
                                  ["compose", "--help"]])
def test_help_exits_zero(args):
    proc = ok(cli(*args))
    assert "usage: mnemetric" in proc.stdout
    if args[0] in ("retrieve", "score-retrieval"):
        assert "--granularity" in proc.stdout and "Example:" in proc.stdout.replace("\n", " ")


def test_named_options_work_from_any_directory_and_a_project_conf_adds_its_own(tmp_path):
    """Measured before: outside the repository root, "unknown judge 'upstream-gpt-4o'; available: none
    found in conf/judge". The options ship inside the package and compose through Hydra."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ok(cli("retrieve", SAMPLE, "--memory", "bm25-upstream", "--granularity", "session", "--out", "a.jsonl",
           cwd=elsewhere))
    assert len(read_jsonl(elsewhere / "a.jsonl")) == 43
    project = tmp_path / "project"
    (project / "conf" / "memory").mkdir(parents=True)
    (project / "conf" / "memory" / "mine.yaml").write_text(
        "_target_: mnemetric.longmemeval.memory.simple.FullContext\nname: mine\n")
    ok(cli("retrieve", SAMPLE, "--memory", "mine", "--granularity", "session", "--out", "b.jsonl", cwd=project))
    ok(cli("retrieve", SAMPLE, "--memory", "bm25", "--conf", project / "conf", "--granularity", "session",
           "--out", "c.jsonl", cwd=elsewhere))
    fails(cli("retrieve", SAMPLE, "--memory", "mine", "--granularity", "session", "--out", "d.jsonl",
              cwd=elsewhere), "Could not find 'memory/mine'")


# ------------------------------------------------------------------ one path: the stages and the CLI agree


def run_stages(ws: Path, overrides: list[str]) -> dict:
    """The pipeline up to retrieval_metrics in a temporary workspace (the real stage modules)."""
    import shutil

    import yaml

    from mnemetric.config import compose_to

    shutil.copytree(ROOT / "data" / "sample", ws / "data" / "sample")
    compose_to(ws / "params.yaml", ROOT / "conf", overrides)
    cmds = {s: d["cmd"].split()[3:] for s, d in yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"].items()}
    for name in ("fingerprint", "prepare", "adapt", "suite", "retrieve", "retrieval_metrics"):
        proc = subprocess.run([sys.executable, "-m", f"mnemetric.stages.{name}", *cmds[name]], cwd=ws, capture_output=True,
                              text=True, env={**os.environ, "MNEMETRIC_CACHE_DIR": str(ws / "cache")}, timeout=600)
        assert proc.returncode == 0, f"stage {name}: {proc.stderr}"
    return yaml.safe_load((ws / "params.yaml").read_text())


@pytest.mark.parametrize("overrides", [[], ["memory=oracle", "retrieval.granularity=turn", "retrieval.context_k=3",
                                            "retrieval.context_tokens=300", "adapter=legacy-v2"]],
                         ids=["default", "oracle-turn-legacy"])
def test_the_cli_and_the_stages_write_identical_bytes(tmp_path, overrides):
    """Not an expected value: the claim is that both doors take one path, so their files are equal."""
    ws, out = tmp_path / "ws", tmp_path / "cli"
    p = run_stages(ws, overrides)
    r = p["retrieval"]
    ok(cli("retrieve", SAMPLE, "--memory", p["memory"]["name"], "--granularity", r["granularity"],
           "--adapter", p["adapter"]["name"], "--context-k", str(r["context_k"]),
           "--context-tokens", str(r["context_tokens"]), "--out", out / "retrieval.jsonl",
           "--contexts", out / "contexts.jsonl", env={"MNEMETRIC_CACHE_DIR": str(tmp_path / "cache")}))
    for name in ("retrieval.jsonl", "contexts.jsonl"):
        assert (out / name).read_bytes() == (ws / "data" / "runs" / name).read_bytes(), name
    s = p["scoring"]
    ok(cli("score-retrieval", out / "retrieval.jsonl", "--granularity", r["granularity"], "--profile", s["name"],
           "--ks", ",".join(map(str, s["ks"])), "--resamples", str(s["bootstrap"]["resamples"]),
           "--seed", str(s["bootstrap"]["seed"]), "--memory", p["memory"]["name"], "--variant", p["variant"]["name"],
           "--suite", p["suite"]["name"], "--out", out / "retrieval.json", "--plot", out / "plot.json"))
    assert (out / "retrieval.json").read_bytes() == (ws / "metrics" / "retrieval.json").read_bytes()
    assert (out / "plot.json").read_bytes() == (ws / p["paths"]["plot_recall"]).read_bytes()
    ours, stage = (json.loads((d / "detail" / "retrieval.json").read_text()) for d in (out, ws / "metrics"))
    assert ours.pop("memory_fingerprint") is None  # the CLI has no fingerprint stage; the stage records it
    stage.pop("memory_fingerprint")
    assert set(ours.pop("per_question")) == set(ours.pop("questions")) == set(read_jsonl_ids(out / "retrieval.jsonl"))
    assert ours == stage


def read_jsonl_ids(path: Path) -> list[str]:
    return [line["question_id"] for line in read_jsonl(path)]


def key_paths(node, prefix: str = "") -> list[str]:
    """Every dotted key path of a JSON value, in file order."""
    if not isinstance(node, dict):
        return [prefix]
    return [p for k, v in node.items() for p in key_paths(v, f"{prefix}.{k}" if prefix else k)]


def test_score_retrieval_writes_the_layout_of_the_committed_metrics_files(logs, tmp_path):
    """The committed metrics/retrieval.json (bm25, session, the sample) and its detail file: same keys,
    same order; the CLI's detail adds only per_question and questions at the end."""
    ok(cli("retrieve", SAMPLE, "--memory", "bm25", "--granularity", "session", "--out", tmp_path / "log.jsonl"))
    out = tmp_path / "retrieval.json"
    ok(cli("score-retrieval", tmp_path / "log.jsonl", "--granularity", "session", "--profile", PROFILE, "--out", out))
    committed = json.loads((ROOT / "metrics" / "retrieval.json").read_text())
    assert key_paths(json.loads(out.read_text())) == key_paths(committed)
    detail = json.loads((tmp_path / "detail" / "retrieval.json").read_text())
    committed_detail = json.loads((ROOT / "metrics" / "detail" / "retrieval.json").read_text())
    assert list(detail)[-2:] == ["per_question", "questions"]
    assert key_paths({k: v for k, v in detail.items() if k not in ("per_question", "questions")}) == \
        key_paths(committed_detail)
    assert all(key_paths(per) == [f"session.{m}@{k}" for k in (1, 3, 5, 10, 30, 50)
                                  for m in ("recall_any", "recall_all", "ndcg_any")]
               for per in detail["per_question"].values())
    assert detail["memory"] is None and detail["memory_fingerprint"] is None  # not given on the command line


def test_a_memory_that_calls_models_embeds_through_the_run_s_executor_and_its_budget(tmp_path):
    """`mnemetric retrieve` builds one executor (--executor, the composed llm: settings and the command's
    budget options) for a system that calls models: its vectors come through the LLM response cache, and
    its budget is the run's (one request allowed: the run stops with one clean message)."""
    from tests.support.openai_server import FakeOpenAIServer

    cfg = tmp_path / "dense-openai.yaml"
    conf = tmp_path / "conf"
    (conf / "executor").mkdir(parents=True)
    (conf / "executor" / "mine.yaml").write_text(
        "_target_: mnemetric.execute.immediate.ImmediateExecutor\n_partial_: true\nname: mine\n")
    with FakeOpenAIServer() as server:
        # a priced model name (conf llm.prices), as the default budget's max_usd requires
        cfg.write_text("_target_: mnemetric.longmemeval.memory.dense.Dense\nname: dense\nbackend: openai\n"
                       f"model: gpt-4o-mini-2024-07-18\nbase_url: {server.base_url}\n")
        env = {"OPENAI_API_KEY": "sk-test-EMB", "MNEMETRIC_CACHE_DIR": str(tmp_path / "cache")}
        common = ["retrieve", SAMPLE, "--memory", cfg, "--granularity", "session"]
        fails(cli(*common, "--out", tmp_path / "l.jsonl", "--max-requests", "1", cwd=tmp_path, env=env),
              "budget")
        assert server.count == 1 and not (tmp_path / "l.jsonl").exists()
        ok(cli(*common, "--out", tmp_path / "l.jsonl", cwd=tmp_path, env=env))
        sent = server.count
        assert sent > 1 and len(read_jsonl(tmp_path / "l.jsonl")) == len(json.loads(SAMPLE.read_text()))
        (tmp_path / "cache" / "embeddings.sqlite3").unlink()
        ok(cli(*common, "--out", tmp_path / "m.jsonl", "--executor", "mine", "--conf", conf, cwd=tmp_path, env=env))
        assert server.count == sent  # the LLM response cache (the executor's) served every vector
    assert (tmp_path / "m.jsonl").read_bytes() == (tmp_path / "l.jsonl").read_bytes()
