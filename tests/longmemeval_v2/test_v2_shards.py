"""Issue 16 item 5 for LongMemEval-V2: `mnemetric v2 run --shard K/N` and `mnemetric merge` of its parts.

The reader and the LLM checkers talk to the loopback OpenAI server (stand-in texts, a test conf folder). The
measured query seconds are the one thing a run does not repeat, so the harness clock is pinned
(``perf_counter`` → 0.0): every other byte of the merged folder must be the unsharded run's, run_args.json
compared with its start time left out."""

from __future__ import annotations

import json
import types
from pathlib import Path

import pytest

from mnemetric.cli import main
from mnemetric.longmemeval_v2 import harness
from tests.conftest import ROOT
from tests.support.openai_server import FakeOpenAIServer

SAMPLE = ROOT / "data" / "sample-v2"


@pytest.fixture
def still_clock(monkeypatch):
    monkeypatch.setattr(harness, "time", types.SimpleNamespace(perf_counter=lambda: 0.0))


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")

    def reply(messages):
        if messages[0]["content"].startswith("Stand-in rubric"):  # the judge
            return '{"label": 1}'
        return "\\boxed{Meadow Post}"

    with FakeOpenAIServer(reply=reply) as s:
        yield s


@pytest.fixture
def conf(tmp_path, server):
    folder = tmp_path / "conf"
    for group, target in (("reader", "standin_reader"), ("checker", "standin_checker")):
        (folder / "v2" / group).mkdir(parents=True)
        (folder / "v2" / group / "standin.yaml").write_text(
            f"_target_: tests.support.v2_standin_components.{target}\nname: {group}-standin\nmodel: m-{group}\n"
            f"base_url: {server.base_url}\n", encoding="utf-8")
    return folder


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != "run_args.json"}


def _run_args(folder: Path) -> dict[str, dict]:
    out = {}
    for p in sorted(folder.rglob("run_args.json")):
        args = json.loads(p.read_text().replace(str(folder.resolve()), "<OUT>"))
        args.pop("started_at_utc")
        out[p.relative_to(folder).as_posix()] = args
    return out


def _v2(capsys, conf, out, *extra) -> tuple[int, str]:
    code = main(["v2", "run", str(SAMPLE), "--haystack", "medium", "--memory", "bm25", "--token-counter", "o200k",
                 "--conf", str(conf), "--reader", "standin", "--checker", "standin", "--out", str(out), *extra])
    _, err = capsys.readouterr()
    return code, err


def _merge(capsys, out, *parts) -> tuple[int, str, str]:
    code = main(["merge", "--out", str(out), *map(str, parts)])
    o, err = capsys.readouterr()
    return code, o, err


def _rows(folder: Path) -> list[dict]:
    return [json.loads(line) for d in ("web", "enterprise") if (folder / d / "per_question.jsonl").exists()
            for line in (folder / d / "per_question.jsonl").read_text().splitlines()]


def test_two_shards_merged_are_the_unsharded_runs_bytes(tmp_path, capsys, conf, server, still_clock):
    assert _v2(capsys, conf, tmp_path / "full")[0] == 0
    sent_whole = server.count
    assert sent_whole > 14  # every question read, the LLM-checked ones judged
    for k in (1, 2):
        code, err = _v2(capsys, conf, tmp_path / f"p{k}", "--shard", f"{k}/2")
        assert code == 0, err
    p1, p2 = _rows(tmp_path / "p1"), _rows(tmp_path / "p2")
    assert len(p1) == 7 and len(p2) == 7 and not {r["question_id"] for r in p1} & {r["question_id"] for r in p2}
    for part in ("p1", "p2"):  # stratified: both domains in each part
        assert all((tmp_path / part / d / "per_question.jsonl").read_text().strip() for d in ("web", "enterprise"))
    part = json.loads((tmp_path / "p1" / "v2.json").read_text())
    assert any("shard 1/2" in r for r in part["official_equivalence"]["reasons"])
    manifest = json.loads((tmp_path / "p1" / "shard.json").read_text())
    assert manifest["command"] == "v2 run" and manifest["shard"] == "1/2" and manifest["universe"] == 14
    assert len(manifest["config_sha256"]) == 64 and len(manifest["data_sha256"]) == 64

    code, out, err = _merge(capsys, tmp_path / "merged", tmp_path / "p2", tmp_path / "p1")
    assert code == 0, err
    assert "2 v2 run shard(s), 14 question(s)" in out
    full, merged = _files(tmp_path / "full"), _files(tmp_path / "merged")
    assert set(full) == set(merged) and "web/per_question.jsonl" in full and "usage.json" in full
    for name in full:
        assert merged[name] == full[name], name
    assert _run_args(tmp_path / "merged") == _run_args(tmp_path / "full")
    assert json.loads(full["usage.json"])["responses"] == sent_whole  # the parts' usage summed


@pytest.fixture
def offline_parts(tmp_path, capsys, still_clock):
    def make(name, shard, *extra):
        code = main(["v2", "run", str(SAMPLE), "--haystack", "small", "--memory", "bm25", "--token-counter", "o200k",
                     "--shard", shard, "--out", str(tmp_path / name), *extra])
        err = capsys.readouterr().err
        assert code == 0, err
        return tmp_path / name
    return make


def test_merge_refuses_overlap_gap_and_mismatch_naming_them(tmp_path, capsys, offline_parts):
    p1, p2, p3 = offline_parts("p1", "1/3"), offline_parts("p2", "2/3"), offline_parts("p3", "3/3")
    other = offline_parts("q3", "3/3", "--top-k", "2")
    two = offline_parts("h2", "2/2")

    code, _, err = _merge(capsys, tmp_path / "m", p1, p2, p2, p3)
    assert code == 2 and "overlap" in err and "shard 2/3" in err and str(p2) in err
    code, _, err = _merge(capsys, tmp_path / "m", p1, p3)
    assert code == 2 and "gap" in err and "2/3" in err
    code, _, err = _merge(capsys, tmp_path / "m", p1, p2, other)
    assert code == 2 and "config mismatch" in err and str(other) in err
    code, _, err = _merge(capsys, tmp_path / "m", p1, p2, two)
    assert code == 2 and "shard count" in err
    assert "Traceback" not in err
    assert not (tmp_path / "m").exists()
    # a part's rows edited after it was written are refused, naming the part
    pq = p3 / "web" / "per_question.jsonl"
    pq.write_text("".join(pq.read_text().splitlines(keepends=True)[1:]))
    code, _, err = _merge(capsys, tmp_path / "m", p1, p2, p3)
    assert code == 2 and str(p3) in err and "rows" in err and not (tmp_path / "m").exists()
    before = _files(p1)
    code, _, err = _merge(capsys, p1, p1, p2, offline_parts("p3b", "3/3"))  # --out naming a part: refused, kept
    assert code == 2 and "--out" in err and "would overwrite it" in err and _files(p1) == before
    code, out, err = _merge(capsys, tmp_path / "m", p1, p2, offline_parts("p3b", "3/3"))
    assert code == 0, err


@pytest.mark.parametrize("spec", ["0/0", "3/2", "a/b", "0/2"])
def test_bad_shard_specs_are_clean_usage_errors(tmp_path, capsys, spec):
    with pytest.raises(SystemExit) as exit_:
        main(["v2", "run", str(SAMPLE), "--haystack", "small", "--memory", "bm25", "--shard", spec,
              "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "--shard" in err and "K/N" in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_merge_refuses_parts_of_different_data(tmp_path, capsys, still_clock):
    import shutil

    root = tmp_path / "data"
    shutil.copytree(SAMPLE, root)

    def part(name, shard):
        code = main(["v2", "run", str(root), "--haystack", "small", "--memory", "bm25", "--token-counter", "o200k",
                     "--shard", shard, "--out", str(tmp_path / name)])
        assert code == 0, capsys.readouterr().err
        return tmp_path / name

    p1 = part("p1", "1/2")
    questions = root / "questions.jsonl"
    original = questions.read_text()
    questions.write_text(original.replace('"answer": "', '"answer": "not ', 1))
    p2 = part("p2", "2/2")
    code, _, err = _merge(capsys, tmp_path / "m", p1, p2)
    assert code == 2 and "data mismatch" in err and str(p2) in err and not (tmp_path / "m").exists()
    questions.write_text(original)  # both parts on the same data, then the data changes before the merge
    p2 = part("p2", "2/2")
    questions.write_text(original.replace('"answer": "', '"answer": "not ', 1))
    code, _, err = _merge(capsys, tmp_path / "m", p1, p2)
    assert code == 2 and "data mismatch" in err and "questions.jsonl" in err and not (tmp_path / "m").exists()


@pytest.mark.parametrize("haystack", ["small", "medium"])
def test_a_proxy_memorys_cost_and_usage_merge_into_the_unsharded_runs(tmp_path, capsys, conf, server, still_clock,
                                                                       monkeypatch, haystack):
    """A memory whose own openai client calls models through the model proxy (real HTTP). small: every question
    of a domain shares one haystack, each part built that memory, so memory_cost.json and usage.json count the
    build once; medium: per-question haystacks, each part built its own questions' memories, summed."""
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    (conf / "v2" / "memory").mkdir()
    (conf / "v2" / "memory" / "toy.yaml").write_text(
        "_target_: tests.support.proxy_memory.ToyTrajectoryMemory\nname: toy-library-v2\n"
        "chat_model: gpt-4o-mini-2024-07-18\nembed_model: text-embedding-3-small\n", encoding="utf-8")  # priced

    def run(out, *extra):
        code = main(["v2", "run", str(SAMPLE), "--haystack", haystack, "--memory", "toy", "--token-counter", "o200k",
                     "--conf", str(conf), "--reader", "standin", "--checker", "standin",
                     "--out", str(out), *extra])
        err = capsys.readouterr().err
        assert code == 0, err

    run(tmp_path / "full")
    for k in (1, 2):
        run(tmp_path / f"p{k}", "--shard", f"{k}/2")
    code, _, err = _merge(capsys, tmp_path / "merged", tmp_path / "p1", tmp_path / "p2")
    assert code == 0, err
    full, merged = _files(tmp_path / "full"), _files(tmp_path / "merged")
    cost = json.loads(full["memory_cost.json"])
    assert cost["uses_model_proxy"] and cost["systems"]["toy-library-v2"]["ingest"]["requests"]["chat"] > 0
    parts = [json.loads((tmp_path / f"p{k}" / "memory_cost.json").read_text()) for k in (1, 2)]
    ingest = [p["systems"]["toy-library-v2"]["ingest"]["requests"]["chat"] for p in parts]
    whole = cost["systems"]["toy-library-v2"]["ingest"]["requests"]["chat"]
    assert ingest == [whole, whole] if haystack == "small" else (sum(ingest) == whole and 0 < ingest[0] < whole)
    assert set(full) == set(merged)
    from tests.longmemeval_v2.test_stage_shards import _usd, _without_usd

    for name in ("memory_cost.json", "usage.json"):  # the dollars summed: equal up to float rounding
        a, b = json.loads(merged.pop(name)), json.loads(full.pop(name))
        assert _without_usd(a) == _without_usd(b) and _usd(a) == pytest.approx(_usd(b), rel=1e-12), name
    for name in full:  # every other byte the unsharded run's
        assert merged[name] == full[name], name
