"""`mnemetric judge`, `mnemetric score-qa` and `mnemetric cache` as a user runs them (subprocesses)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support.batch import embed_batch, plan_batch, run_batch
from tests.support.openai_server import FakeOpenAIServer
from tests.support.standin_evaluate_qa import write_standin

from tests.conftest import ROOT


SAMPLE = ROOT / "data" / "sample" / "longmemeval_sample.json"


def cli(*args, env=None, cwd=ROOT, drop=()) -> subprocess.CompletedProcess:
    full = {k: v for k, v in {**os.environ, **(env or {})}.items() if k not in drop}
    return subprocess.run([sys.executable, "-m", "mnemetric.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=full, timeout=300)


@pytest.fixture()
def files(tmp_path):
    """A trimmed reference (4 fields, as upstream needs) and upstream-format hypotheses."""
    ref = [{k: i[k] for k in ("question_id", "question_type", "question", "answer")} for i in json.loads(SAMPLE.read_text())]
    (tmp_path / "ref.json").write_text(json.dumps(ref))
    hyps = [{"question_id": r["question_id"], "hypothesis": f"I think it is {r['answer']}."} for r in ref]
    (tmp_path / "hyp.jsonl").write_text("".join(json.dumps(h) + "\n" for h in hyps))
    return tmp_path, ref


def test_lexical_judge_writes_next_to_the_hypotheses(files):
    tmp, ref = files
    out = cli("judge", tmp / "hyp.jsonl", tmp / "ref.json", "--judge", "lexical")
    assert out.returncode == 0, out.stderr
    lines = [json.loads(x) for x in (tmp / "hyp.jsonl.eval-results-lexical").read_text().splitlines()]
    assert len(lines) == len(ref) and all(set(x["autoeval_label"]) == {"model", "label"} for x in lines)


def reply(messages):
    return "yes" if "I think" in messages[-1]["content"] else "no"


def test_upstream_judge_dry_run_then_real_then_free_rerun(files):
    tmp, ref = files
    sha = write_standin(tmp / "LongMemEval")
    with FakeOpenAIServer(reply=reply, model_map={"gpt-4o-2024-08-06": "gpt-4o-2024-08-06"}) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test"}
        args = ["judge", tmp / "hyp.jsonl", tmp / "ref.json", "--longmemeval-dir", tmp / "LongMemEval",
                "--evaluate-qa-sha256", sha]
        dry = cli(*args, "--dry-run", env=env)
        assert dry.returncode == 0, dry.stderr
        plan = json.loads(dry.stdout)
        assert (plan["requests_total"], plan["cached"], plan["to_send"]) == (len(ref), 0, len(ref))
        assert plan["estimated_usd"] > 0 and server.count == 0
        first = cli(*args, env=env)
        assert first.returncode == 0, first.stderr
        assert server.count == len(ref) and f"requests sent {len(ref)}" in first.stderr
        judged = [json.loads(x) for x in (tmp / "hyp.jsonl.eval-results-gpt-4o").read_text().splitlines()]
        assert all(j["autoeval_label"] == {"model": "gpt-4o-2024-08-06", "label": True} for j in judged)
        assert len({j["mnemetric_judge"]["prompt_set_sha256"] for j in judged}) == 1
        again = cli(*args, env=env)
        assert again.returncode == 0 and server.count == len(ref) and "requests sent 0" in again.stderr
        assert json.loads(cli(*args, "--dry-run", env=env).stdout)["to_send"] == 0


def test_upstream_judge_refuses_a_file_with_the_wrong_hash(files):
    tmp, _ = files
    write_standin(tmp / "LongMemEval")
    out = cli("judge", tmp / "hyp.jsonl", tmp / "ref.json", "--longmemeval-dir", tmp / "LongMemEval")
    assert out.returncode != 0 and "ecce9c4c79dc89d99534ac17b383a5cbb5b9f0c69ee98adaf0684742e3d95251" in out.stderr


def test_score_qa_aggregates_like_upstream_and_records_provenance(files):
    tmp, ref = files
    judged = [{"question_id": r["question_id"], "hypothesis": "x",
               "autoeval_label": {"model": "gpt-4o-2024-08-06", "label": i % 2 == 0}} for i, r in enumerate(ref)]
    (tmp / "judged").write_text("".join(json.dumps(j) + "\n" for j in judged))
    out = cli("score-qa", tmp / "judged", tmp / "ref.json", "--out", tmp / "qa.json")
    assert out.returncode == 0, out.stderr
    m = json.loads((tmp / "detail" / "qa.json").read_text())  # the detail layout, beside --out
    assert m["overall"] == sum(i % 2 == 0 for i in range(len(ref))) / len(ref)
    assert m["n"] == len(ref) and m["abstention"]["n"] == sum("_abs" in r["question_id"] for r in ref)
    by_type: dict[str, list[bool]] = {}
    for i, r in enumerate(ref):  # expected per-type accuracy computed here from the labels written above
        by_type.setdefault(r["question_type"], []).append(i % 2 == 0)
    expected = {t: sum(v) / len(v) for t, v in by_type.items()}
    assert len(expected) == 6
    assert m["task_averaged"] == pytest.approx(sum(expected.values()) / 6, abs=1e-15)
    assert m["official_equivalence"]["value"] is False and m["official_equivalence"]["reasons"]  # prompt set unknown
    assert "task-averaged" in out.stdout


def test_score_qa_id_mismatch_is_an_error_unless_partial(files):
    tmp, ref = files
    judged = [{"question_id": r["question_id"], "autoeval_label": {"model": "m", "label": True}} for r in ref[:-3]]
    (tmp / "judged").write_text("".join(json.dumps(j) + "\n" for j in judged))
    out = cli("score-qa", tmp / "judged", tmp / "ref.json", "--out", tmp / "qa.json")
    assert out.returncode != 0 and ref[-1]["question_id"] in out.stderr and not (tmp / "qa.json").exists()
    out = cli("score-qa", tmp / "judged", tmp / "ref.json", "--out", tmp / "qa.json", "--allow-partial")
    assert out.returncode == 0, out.stderr
    assert json.loads((tmp / "detail" / "qa.json").read_text())["coverage"]["n_judged"] == len(ref) - 3


def test_bad_hypothesis_line_names_file_line_and_field(files):
    tmp, _ = files
    (tmp / "bad.jsonl").write_text('{"question_id": "a", "hypothesis": "x"}\n{"question_id": "b"}\n')
    out = cli("judge", tmp / "bad.jsonl", tmp / "ref.json", "--judge", "lexical")
    assert out.returncode != 0 and "bad.jsonl" in out.stderr and "line 2" in out.stderr and "hypothesis" in out.stderr


def test_upstream_judge_dry_run_needs_no_api_key(files):
    """Before: the client built the SDK eagerly and a --dry-run without OPENAI_API_KEY failed."""
    tmp, ref = files
    sha = write_standin(tmp / "LongMemEval")
    args = ["judge", tmp / "hyp.jsonl", tmp / "ref.json", "--longmemeval-dir", tmp / "LongMemEval",
            "--evaluate-qa-sha256", sha]
    with FakeOpenAIServer(reply=reply) as server:
        dry = cli(*args, "--dry-run", env={"OPENAI_BASE_URL": server.base_url}, drop=("OPENAI_API_KEY",))
        assert dry.returncode == 0, dry.stderr
        assert json.loads(dry.stdout)["to_send"] == len(ref) and server.count == 0
        assert cli(*args, env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test"}).returncode == 0
        warm = cli(*args, "--dry-run", env={"OPENAI_BASE_URL": server.base_url}, drop=("OPENAI_API_KEY",))
        assert json.loads(warm.stdout) | {"estimated_usd": 0} == {"requests_total": len(ref), "cached": len(ref),
                                                                  "to_send": 0, "estimated_usd": 0}
        real = cli(*args, env={"OPENAI_BASE_URL": server.base_url}, drop=("OPENAI_API_KEY",))
        assert real.returncode == 0, real.stderr  # a fully cached run needs no key either
        assert server.count == len(ref) and "requests sent 0" in real.stderr


def test_judge_cli_writes_failed_questions_to_a_sidecar(files):
    tmp, ref = files
    sha = write_standin(tmp / "LongMemEval")
    bad = ref[3]["question"]
    with FakeOpenAIServer(reply=reply, non_answer_for=lambda b: "refusal" if bad in b["messages"][-1]["content"]
                          else None) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test"}
        args = ["judge", tmp / "hyp.jsonl", tmp / "ref.json", "--longmemeval-dir", tmp / "LongMemEval",
                "--evaluate-qa-sha256", sha]
        out = cli(*args, env=env)
        assert out.returncode == 3, out.stderr  # written, but loud: exit 3 with the one re-ask command
        assert f"judge: 1 of {len(ref)} question(s) FAILED" in out.stderr and "Traceback" not in out.stderr
        assert f"re-ask only the 1 failed (the {len(ref) - 1} answered come from the cache): mnemetric judge" in out.stderr
        assert "with the 1 failed counted wrong" in out.stderr and "--allow-partial" in out.stderr
        sent = server.count
        kept = cli(*args, "--allow-partial", env=env)  # the same command re-asks only the failed one
        assert kept.returncode == 0, kept.stderr
        assert server.count == sent + 2 and "PARTIAL result kept" in kept.stderr  # asked twice (bounded retry)
    assert f"{ref[3]['question_id']} (judge, gpt-4o-2024-08-06): refusal" in out.stderr
    judged = tmp / "hyp.jsonl.eval-results-gpt-4o"
    assert ref[3]["question_id"] not in {json.loads(x)["question_id"] for x in judged.read_text().splitlines()}
    failed = [json.loads(x) for x in (tmp / "hyp.jsonl.eval-results-gpt-4o.failures.jsonl").read_text().splitlines()]
    assert [f["question_id"] for f in failed] == [ref[3]["question_id"]]
    scored = cli("score-qa", judged, tmp / "ref.json", "--out", tmp / "qa.json", "--resamples", "0")
    assert scored.returncode == 0, scored.stderr
    m = json.loads((tmp / "detail" / "qa.json").read_text())
    assert m["coverage"]["n_failed"] == 1 and m["n"] == len(ref) - 1 and m["official_equivalence"]["value"] is False
    assert ref[3]["question_id"] in scored.stderr


# ------------------------------------------------------------------ mnemetric cache


OLD_SCHEMA = """CREATE TABLE responses (key TEXT PRIMARY KEY, kind TEXT NOT NULL, model TEXT NOT NULL,
request_json TEXT NOT NULL, response_json TEXT NOT NULL, created_at REAL NOT NULL)"""


@pytest.fixture()
def filled_cache(tmp_path, monkeypatch):
    """A real cache file: one row from before the stage column, then 3 judge, 2 reader and 2
    embedding rows written by real clients against the local server. Returns (dir, server, keys)."""
    import sqlite3

    from mnemetric.llm import ChatRequest, LLMClient

    root = tmp_path / "cache"
    root.mkdir()
    monkeypatch.setenv("MNEMETRIC_CACHE_DIR", str(root))
    with sqlite3.connect(root / "llm-cache.sqlite3") as db:
        db.execute(OLD_SCHEMA)
        db.execute("INSERT INTO responses VALUES ('00ff' || hex(randomblob(30)), 'chat', 'old-model', '{}', "
                   "'{\"model\": \"old-model\"}', 1.0)")
    server = FakeOpenAIServer().start()
    keys = {}
    for role, model, n in (("judge", "gpt-4o-2024-08-06", 3), ("reader", "gpt-4o-mini", 2)):
        client = LLMClient(base_url=server.base_url, api_key="sk-test", role=role)
        reqs = [ChatRequest(model, [{"role": "user", "content": f"{role} {i}"}]) for i in range(n)]
        keys[role] = [r.request_sha256 for r in run_batch(client, reqs)]
        client.close()
    client = LLMClient(base_url=server.base_url, api_key="sk-test", role="embeddings")
    embed_batch(client, "emb-test", ["alpha", "beta"])
    client.close()
    yield root, server, keys
    server.stop()


def rows(root) -> list[tuple]:
    import sqlite3

    with sqlite3.connect(root / "llm-cache.sqlite3") as db:
        return sorted(db.execute("SELECT key, kind, model, stage FROM responses").fetchall())


def run_cli(capsys, *args) -> tuple[int, str]:
    from mnemetric.cli import main

    code = main(list(args))
    return code, capsys.readouterr().out


def test_cache_path_and_stats_count_per_kind_stage_and_model(filled_cache, capsys):
    root, _, _ = filled_cache
    assert run_cli(capsys, "cache", "path") == (0, f"{root}\n")
    code, out = run_cli(capsys, "cache", "stats")
    assert code == 0
    lines = [" ".join(line.split()) for line in out.splitlines()]
    assert "responses: 8" in lines
    for expected in ("kind chat 6", "kind embeddings 2", "stage judge 3", "stage reader 2", "stage embeddings 2",
                     "stage unknown 1", "model gpt-4o-2024-08-06 3", "model old-model 1",
                     "chat judge gpt-4o-2024-08-06 3", "embeddings embeddings emb-test 2",
                     "claims: 0 (0 in flight, 0 abandoned)"):
        assert expected in lines, (expected, lines)
    assert [r[3] for r in rows(root)].count(None) == 1  # the migrated row keeps NULL, shown as unknown


def test_cache_list_filters_by_stage_model_and_key(filled_cache, capsys):
    root, _, keys = filled_cache
    code, out = run_cli(capsys, "cache", "list", "--stage", "judge")
    listed = [line.split()[0] for line in out.splitlines()[1:-1]]
    assert code == 0 and sorted(listed) == sorted(keys["judge"]) and out.splitlines()[-1] == "3 entries"
    code, out = run_cli(capsys, "cache", "list", "--key", keys["reader"][1][:10])
    assert [line.split()[0] for line in out.splitlines()[1:-1]] == [keys["reader"][1]]
    code, out = run_cli(capsys, "cache", "list", "--model", "gpt-4o-mini", "--stage", "judge")
    assert out.splitlines()[-1] == "0 entries"
    code, out = run_cli(capsys, "cache", "list", "--stage", "unknown")
    assert out.splitlines()[1].split()[:3] == [out.splitlines()[1].split()[0], "chat", "unknown"]


def test_cache_evict_is_a_dry_listing_without_yes(filled_cache, capsys):
    root, server, keys = filled_cache
    before = rows(root)
    code, out = run_cli(capsys, "cache", "evict", "--model", "gpt-4o-mini")
    assert code == 0 and "dry run: 2 entries would be evicted" in out
    assert rows(root) == before
    code, out = run_cli(capsys, "cache", "evict", "--model", "gpt-4o-mini", "--yes")
    assert code == 0 and "evicted 2 entries" in out
    assert rows(root) == [r for r in before if r[2] != "gpt-4o-mini"]
    code, out = run_cli(capsys, "cache", "evict", "--stage", "unknown", "--yes")
    assert "evicted 1 entry" in out and all(r[3] is not None for r in rows(root))
    code, out = run_cli(capsys, "cache", "evict", "--key", keys["judge"][0], "--yes")
    assert "evicted 1 entry" in out
    assert {r[0] for r in rows(root)} == {*keys["judge"][1:]} | {r[0] for r in before if r[1] == "embeddings"}


def test_an_evicted_response_is_asked_again(filled_cache, capsys):
    from mnemetric.llm import ChatRequest, LLMClient

    root, server, keys = filled_cache
    run_cli(capsys, "cache", "evict", "--key", keys["judge"][0][:12], "--yes")
    sent = server.count
    client = LLMClient(base_url=server.base_url, api_key="sk-test", role="judge")
    reqs = [ChatRequest("gpt-4o-2024-08-06", [{"role": "user", "content": f"judge {i}"}]) for i in range(3)]
    assert [r.cached for r in run_batch(client, reqs)] == [False, True, True]
    assert server.count == sent + 1


def test_cache_evict_needs_exactly_one_selector_and_a_real_key(filled_cache, capsys):
    root, _, _ = filled_cache
    before = rows(root)
    with pytest.raises(SystemExit) as info:
        run_cli(capsys, "cache", "evict", "--yes")
    assert info.value.code == 2
    with pytest.raises(SystemExit):
        run_cli(capsys, "cache", "evict", "--stage", "judge", "--model", "m")
    from mnemetric.cli import main

    assert main(["cache", "evict", "--key", "ab", "--yes"]) == 2  # too short a prefix: a clear error
    assert "at least 4 hex digits" in capsys.readouterr().err
    assert rows(root) == before


def test_score_qa_and_stage_qa_metrics_write_the_same_bytes(tmp_path, sample_run_outputs):
    """The reproduced sample run (its DVC outputs), scored by the stage (in a copy of its workspace) and by the
    command with the same names and usage sidecars: headline, detail and plot rows are byte-identical."""
    import shutil

    import yaml

    ws = tmp_path / "ws"
    (ws / "data").mkdir(parents=True)
    shutil.copy(ROOT / "params.yaml", ws / "params.yaml")
    for d in ("adapted", "suites", "runs"):
        shutil.copytree(sample_run_outputs / "data" / d, ws / "data" / d)
    stage = subprocess.run([sys.executable, "-m", "mnemetric.stages.qa_metrics"], cwd=ws, capture_output=True,
                           text=True, timeout=300)
    assert stage.returncode == 0, stage.stderr
    params = yaml.safe_load((ws / "params.yaml").read_text())
    paths = params["paths"]
    out = tmp_path / "cli" / "qa.json"
    res = cli("score-qa", ws / paths["judged"], SAMPLE, "--out", out,
              "--usage", ws / paths["retrieve_usage"], ws / paths["answer_usage"], ws / paths["judge_usage"],
              "--reader", params["reader"]["name"], "--memory", params["memory"]["name"],
              "--variant", params["variant"]["name"], "--suite", params["suite"]["name"],
              "--resamples", params["scoring"]["bootstrap"]["resamples"], "--seed", params["scoring"]["bootstrap"]["seed"])
    assert res.returncode == 0, res.stderr
    pairs = [(ws / "metrics/qa.json", out), (ws / "metrics/detail/qa.json", out.parent / "detail" / "qa.json"),
             (ws / "metrics/plots/qa_per_type.json", out.parent / "plots" / "qa_per_type.json")]
    for stage_file, cli_file in pairs:
        assert stage_file.read_bytes() == cli_file.read_bytes(), stage_file.name
    assert json.loads(out.read_text())["judge"] == params["judge"]["name"]  # the traces name the same judge


# ------------------------------------------------------------------ verdicts as the parity record


def test_replay_rescores_stored_verdicts_with_zero_requests_and_refuses_incomplete_ones(files):
    tmp, ref = files
    sha = write_standin(tmp / "LongMemEval")
    args = ["judge", tmp / "hyp.jsonl", tmp / "ref.json", "--longmemeval-dir", tmp / "LongMemEval",
            "--evaluate-qa-sha256", sha]
    judged = tmp / "hyp.jsonl.eval-results-gpt-4o"
    with FakeOpenAIServer(reply=reply) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test"}
        assert cli(*args, env=env).returncode == 0
        sent = server.count
        assert sent == len(ref)
        replayed = cli(*args, "--replay", env=env)
        assert replayed.returncode == 0, replayed.stderr
        assert server.count == sent  # the server's own counter: replay sent nothing
        assert f"{len(ref)} stored verdict(s) of {judged} checked ({len(ref)} by their request sha256" in replayed.stdout
        assert "0 requests sent" in replayed.stdout and "overall 1.0000" in replayed.stdout

        lines = [json.loads(x) for x in judged.read_text().splitlines()]
        victim = lines[2]["question_id"]
        for field, edit in (("mnemetric_judge", lambda j: j.pop("mnemetric_judge")),
                            ("mnemetric_judge.response", lambda j: j["mnemetric_judge"].update(response="")),
                            ("autoeval_label.label", lambda j: j["autoeval_label"].update(label=False)),
                            ("mnemetric_judge.request_sha256",
                             lambda j: j.update(hypothesis="another hypothesis, same verdict"))):
            broken = [json.loads(json.dumps(j)) for j in lines]
            edit(broken[2])
            judged.write_text("".join(json.dumps(j) + "\n" for j in broken))
            refused = cli(*args, "--replay", env=env)
            assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr
            assert f"{judged}: {victim}: field '{field}'" in refused.stderr, refused.stderr
        assert server.count == sent


def test_check_model_sends_one_cheap_request_and_tells_served_from_not_served(tmp_path):
    model = "gpt-4o-2024-08-06"
    for unknown, code, word in ((set(), 0, "SERVED"), ({model}, 1, "NOT SERVED")):
        with FakeOpenAIServer(unknown_models=unknown) as server:
            out = cli("judge", "--check-model", env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test"},
                      cwd=tmp_path)
            assert out.returncode == code, out.stderr
            assert server.count == 1 and server.requests[0].body["max_tokens"] == 1
            assert server.requests[0].body["model"] == model
        assert f"{model} at {server.base_url}: {word} (" in out.stdout
    assert "HTTP 404 model_not_found" in out.stdout
    with FakeOpenAIServer() as server:
        from tests.support.openai_server import Fault

        server.add_faults(Fault.server_error(503))
        out = cli("judge", "--check-model", env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test"},
                  cwd=tmp_path)
        assert out.returncode == 2 and "ERROR (HTTP 503" in out.stdout and server.count == 1  # no retries
    assert list(tmp_path.iterdir()) == []  # writes nothing (no cache row, no file)


def test_judge_with_executor_batch_sends_its_requests_by_batch_and_writes_the_live_bytes(files):
    """`mnemetric judge --executor FILE.yaml` (the batch executor, polling every 10 ms): the judge's requests go to
    the loopback Batch API (none live), the judged lines are the live run's bytes, and a rerun sends nothing."""
    tmp, ref = files
    sha = write_standin(tmp / "LongMemEval")
    fast = tmp / "fast-batch.yaml"
    fast.write_text("_target_: mnemetric.execute.batch.BatchExecutor\n_partial_: true\nname: batch\n"
                    "poll_interval: 0.01\n", encoding="utf-8")
    out = tmp / "hyp.jsonl.eval-results-gpt-4o"
    with FakeOpenAIServer(reply=reply, model_map={"gpt-4o-2024-08-06": "gpt-4o-2024-08-06"}) as server:
        server.batch.auto = True
        args = ["judge", tmp / "hyp.jsonl", tmp / "ref.json", "--longmemeval-dir", tmp / "LongMemEval",
                "--evaluate-qa-sha256", sha]
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test"}
        live = cli(*args, env={**env, "MNEMETRIC_CACHE_DIR": str(tmp / "live-cache")})
        assert live.returncode == 0, live.stderr
        live_bytes, sent = out.read_bytes(), server.count
        batch_env = {**env, "MNEMETRIC_CACHE_DIR": str(tmp / "batch-cache")}
        batched = cli(*args, "--executor", fast, env=batch_env)
        assert batched.returncode == 0 and "Traceback" not in batched.stderr, batched.stderr
        assert server.count == sent and len(server.batch.submitted) == len(ref) == len(set(server.batch.submitted))
        assert out.read_bytes() == live_bytes
        again = cli(*args, "--executor", fast, env=batch_env)
        assert again.returncode == 0 and "requests sent 0" in again.stderr, again.stderr
        assert server.count == sent and len(server.batch.submitted) == len(ref)
    assert out.read_bytes() == live_bytes
