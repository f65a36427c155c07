"""`mnemetric v2-aggregate`, `v2-combine` and `v2-lafs` on real files, as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from mnemetric.cli import main

from tests.conftest import ROOT
from tests.longmemeval_v2.rows import row, write_rows


def run(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def rows_for(prefix: str, n: int, correct: int) -> list[dict]:
    return [row(f"{prefix}{i}", "procedure", correct=i < correct, query=float(i + 1), index=i) for i in range(n)]


def test_aggregate_writes_upstream_layout(tmp_path, capsys):
    pq = write_rows(tmp_path / "per_question.jsonl", rows_for("w", 4, 3))
    code, out, _ = run(capsys, "v2-aggregate", pq, "--out", tmp_path / "agg.json")
    assert code == 0 and "4 questions scored" in out
    text = (tmp_path / "agg.json").read_text()
    agg = json.loads(text)
    assert agg["overall"]["overall_full_set"] == 0.75 and agg["memory_query"]["p50_seconds"] == 3.0
    assert "completed_at_utc" not in agg and text.startswith('{\n  "overall": {\n    "overall_full_set"')
    code, _, _ = run(capsys, "v2-aggregate", pq, "--out", tmp_path / "agg2.json", "--completed-at-utc", "T0")
    assert json.loads((tmp_path / "agg2.json").read_text())["completed_at_utc"] == "T0"


def test_aggregate_bad_input_names_file_line_field(tmp_path, capsys):
    bad = rows_for("w", 2, 1)
    bad[1]["score"] = "1.0"
    pq = write_rows(tmp_path / "per_question.jsonl", bad)
    code, _, err = run(capsys, "v2-aggregate", pq, "--out", tmp_path / "agg.json")
    assert code == 2 and f"{pq}: line 2 (w1): field 'score'" in err
    assert not (tmp_path / "agg.json").exists()
    (tmp_path / "empty.jsonl").write_text("")
    code, _, err = run(capsys, "v2-aggregate", tmp_path / "empty.jsonl", "--out", tmp_path / "agg.json")
    assert code == 2 and "no per-question rows" in err


def test_combine_and_lafs_from_aggregates(tmp_path, capsys):
    for name, prefix, n, ok in (("web", "w", 4, 3), ("ent", "e", 6, 3)):
        write_rows(tmp_path / f"{name}.jsonl", rows_for(prefix, n, ok))
        assert run(capsys, "v2-aggregate", tmp_path / f"{name}.jsonl", "--out", tmp_path / f"{name}.json")[0] == 0
    code, out, _ = run(capsys, "v2-combine", tmp_path / "web.json", tmp_path / "ent.json", "--out",
                       tmp_path / "combined.json")
    assert code == 0
    combined = json.loads((tmp_path / "combined.json").read_text())
    assert combined["overall"]["overall_full_set"] == 0.6                        # (3 + 3) / 10
    assert combined["memory_query"] == {"avg_seconds": 3.1, "max_seconds": 6.0, "total_seconds": 31.0}
    assert combined["combined_from"] == [str(tmp_path / "web.json"), str(tmp_path / "ent.json")]
    assert "combined_at_utc" not in combined


def test_combine_refuses_bad_files(tmp_path, capsys):
    (tmp_path / "list.json").write_text("[1]")
    (tmp_path / "cut.json").write_text('{"overall": ')
    write_rows(tmp_path / "pq.jsonl", rows_for("w", 2, 1))
    assert run(capsys, "v2-aggregate", tmp_path / "pq.jsonl", "--out", tmp_path / "good.json")[0] == 0
    good = json.loads((tmp_path / "good.json").read_text())

    def variant(name, edit):
        agg = json.loads(json.dumps(good))
        edit(agg)
        (tmp_path / name).write_text(json.dumps(agg))

    variant("zero.json", lambda a: a["overall"].update(count_all_questions=0))
    variant("no_tokens.json", lambda a: a.pop("tokens"))        # upstream's combine would fill in nulls
    variant("p50.json", lambda a: a["memory_query"].update(p50_seconds="1.0"))      # combine ignores p50
    variant("extra.json", lambda a: a.update(note="hand-edited"))
    variant("count.json", lambda a: a["abstention_by_category"]["static-abs"].update(count=-1))
    for a, needle in (("list.json", "expected a JSON object"), ("cut.json", "not valid JSON"),
                      ("zero.json", "overall: field 'count_all_questions': must be a positive integer"),
                      ("no_tokens.json", "<file>: field 'tokens': missing"),
                      ("p50.json", "memory_query: field 'p50_seconds': expected a non-negative number, got str"),
                      ("extra.json", "<file>: field 'note': unexpected field"),
                      ("count.json", "abstention_by_category.static-abs: field 'count': expected a non-negative"),
                      ("missing.json", "does not exist")):
        code, _, err = run(capsys, "v2-combine", tmp_path / a, tmp_path / "zero.json", "--out", tmp_path / "c.json")
        assert code == 2 and needle in err and f"{tmp_path / a}: " in err and "Traceback" not in err, (a, err)
        assert not (tmp_path / "c.json").exists()


def test_lafs_text_and_json(capsys):
    code, out, _ = run(capsys, "v2-lafs", "--tier", "small", "62@15")
    assert code == 0
    assert "reference LAFS            55.76484693638005" in out
    assert "LAFS gain                 2.106382898121801" in out
    assert "62 @ 15" in out and "AgentRunbook-C" in out and "AgentRunbook-R" not in out.split("frontier")[1]
    code, out, _ = run(capsys, "v2-lafs", "--tier", "medium", "--json")
    data = json.loads(out)
    assert data["reference_lafs"] == 51.0740894823051 and data["lafs_gain"] == 0.0
    assert data["points_alone_lafs"] == 0.0 and len(data["reference_frontier"]) == 3
    code, out, _ = run(capsys, "v2-lafs", "--tier", "small", "50@10s", "--json")
    assert json.loads(out)["points_alone_lafs"] == 28.27060051619532


@pytest.mark.parametrize("point, needle", [("62", "expected ACC@LATENCY"), ("a@3", "expected ACC@LATENCY"),
                                           ("62@0", "latency must be positive"), ("nan@3", "field 'accuracy'")])
def test_lafs_bad_points(capsys, point, needle):
    code, _, err = run(capsys, "v2-lafs", "--tier", "small", point)
    assert code == 2 and needle in err


@pytest.mark.parametrize("cmd, needle", [("v2 aggregate", "evaluation/harness.py"),
                                         ("v2 combine", "combine_aggregated_metrics.py"),
                                         ("v2 lafs", "compute_lafs.py"),
                                         ("v2-lafs", "compute_lafs.py")])
def test_help_names_the_upstream_source_and_an_example(capsys, cmd, needle):
    with pytest.raises(SystemExit) as done:
        main([*cmd.split(), "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert done.value.code == 0 and needle in out and "Example: mnemetric " + cmd.replace("-", " ", 1) in out


def test_bad_input_exits_2_without_traceback():
    done = subprocess.run([sys.executable, "-m", "mnemetric.cli", "v2-lafs", "--tier", "small", "x@y"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr and "x@y" in done.stderr


def test_v2_run_offline_writes_every_file(tmp_path, capsys):
    out = tmp_path / "out"
    code, stdout, err = run(capsys, "v2", "run", ROOT / "data" / "sample-v2", "--haystack", "small",
                            "--memory", "full-context", "--reader", "offline", "--checker", "offline", "--out", out)
    assert code == 0, err
    for rel in ("web/per_question.jsonl", "web/aggregated_metrics.json", "enterprise/per_question.jsonl",
                "enterprise/aggregated_metrics.json", "combined_aggregated_metrics.json", "v2.json"):
        assert (out / rel).is_file() and str(out / rel) in stdout
    summary = json.loads((out / "v2.json").read_text())
    assert summary["settings"]["memory"] == "full-context" and summary["combined"]["questions"] == 14
    assert "official False" in err


def test_v2_run_relative_haystack_file_and_one_domain(tmp_path, capsys):
    code, _, err = run(capsys, "v2", "run", ROOT / "data" / "sample-v2", "--haystack", "haystacks/lme_v2_medium.json",
                       "--memory", "none", "--domain", "enterprise", "--out", tmp_path)
    assert code == 0, err
    assert not (tmp_path / "web").exists() and not (tmp_path / "combined_aggregated_metrics.json").exists()
    assert json.loads((tmp_path / "v2.json").read_text())["settings"]["tier"] == "medium"


def test_v2_run_bad_data_root_exits_2(tmp_path, capsys):
    (tmp_path / "root").mkdir()
    code, _, err = run(capsys, "v2", "run", tmp_path / "root", "--haystack", "small", "--memory", "none",
                       "--out", tmp_path / "o")
    assert code in (1, 2) and "questions.jsonl" in err and not (tmp_path / "o" / "v2.json").exists()


def test_v2_validate_in_the_group(capsys):
    code, _, err = run(capsys, "v2", "validate", ROOT / "data" / "sample-v2")
    assert code == 0 and "0 problem(s)" in err


def test_v2_run_takes_a_users_own_options_from_conf(tmp_path, capsys):
    """Options are the files of <conf>/v2/<group>/ plus the package's: a user's memory and token counter work."""
    conf = tmp_path / "conf"
    (conf / "v2" / "memory").mkdir(parents=True)
    (conf / "v2" / "token_counter").mkdir(parents=True)
    (conf / "v2" / "memory" / "one-state.yaml").write_text(
        "_target_: mnemetric.longmemeval_v2.baselines.bm25_states\nname: one-state\ntop_k: 1\n", encoding="utf-8")
    (conf / "v2" / "token_counter" / "tiny.yaml").write_text(
        "_target_: mnemetric.longmemeval_v2.tokens.O200kCounter\nname: tiny-counter\nimage_tokens: 1\n"
        "message_tokens: 0\n", encoding="utf-8")
    out = tmp_path / "out"
    code, _, err = run(capsys, "v2", "run", ROOT / "data" / "sample-v2", "--haystack", "small", "--conf", conf,
                       "--memory", "one-state", "--top-k", "1", "--token-counter", "tiny", "--out", out)
    assert code == 0, err
    settings = json.loads((out / "v2.json").read_text())["settings"]
    assert (settings["memory"], settings["token_counter"]) == ("one-state", "tiny-counter")
    rows = [json.loads(line) for line in (out / "web" / "per_question.jsonl").read_text().splitlines()]
    assert {len(r["memory_context"]) for r in rows} == {1}  # top_k 1: one state per question
    # a shipped option still works beside the user's; an unknown one names both places' options
    code, _, err = run(capsys, "v2", "run", ROOT / "data" / "sample-v2", "--haystack", "small", "--conf", conf,
                       "--memory", "nope", "--out", tmp_path / "o2")
    assert code == 2 and "Traceback" not in err and "'nope'" in err
    assert "one-state" in err and "bm25" in err and "full-context" in err
    assert not (tmp_path / "o2").exists()


def test_v2_run_help_lists_the_shipped_options(capsys):
    with pytest.raises(SystemExit):
        main(["v2", "run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "shipped: bm25, dense, full-context, none" in text and "shipped: auto, o200k, qwen" in text
    assert "--conf" in text


def test_v2_run_checks_the_data_against_its_custody_record(tmp_path, capsys, monkeypatch):
    """The CLI finds the custody record that names the data root (data/custody/v2-*.json), checks every file before
    use — an edited gold answer stops the run, the file named — and writes the usage of its one executor."""
    import shutil

    from mnemetric.longmemeval_v2.obtain import prepare

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MNEMETRIC_RUN_LOG", str(tmp_path / "run-log.jsonl"))
    shutil.copytree(ROOT / "data" / "sample-v2", tmp_path / "data" / "sample-v2")
    (tmp_path / "data" / "custody").mkdir()
    prepare({"name": "sample", "source": "bundled", "data_root": "data/sample-v2"}, "data/custody/v2-sample.json")
    args = ("v2", "run", "data/sample-v2", "--haystack", "small", "--memory", "bm25", "--token-counter", "o200k")
    code, _, err = run(capsys, *args, "--out", tmp_path / "ok")
    assert code == 0, err
    assert json.loads((tmp_path / "ok" / "usage.json").read_text())["responses"] == 0
    assert json.loads((tmp_path / "run-log.jsonl").read_text().splitlines()[-1])["stage"] == "v2 run"
    questions = tmp_path / "data" / "sample-v2" / "questions.jsonl"
    questions.write_text(questions.read_text().replace('"answer": "', '"answer": "not ', 1))
    code, _, err = run(capsys, *args, "--out", tmp_path / "edited")
    assert code != 0 and "Traceback" not in err
    assert "data/sample-v2/questions.jsonl: changed since its custody record data/custody/v2-sample.json" in err
    assert not (tmp_path / "edited").exists()
