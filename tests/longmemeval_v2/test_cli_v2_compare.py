"""`mnemetric v2 compare A B` on real files, as a user runs it (numbers worked by hand in test_compare.py)."""

from __future__ import annotations

import json

from mnemetric.cli import main

from tests.longmemeval_v2.test_compare import WEB, write_run


def run(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_compare_prints_tables_and_writes_json(tmp_path, capsys):
    a, b = write_run(tmp_path / "A", 0), write_run(tmp_path / "B", 1)
    code, out, _ = run(capsys, "v2", "compare", a, b, "--out", tmp_path / "cmp.json", "--resamples", "100")
    assert code == 0
    assert "overall_full_set" in out and "memory query latency" in out and "flipped questions: 5" in out
    written = json.loads((tmp_path / "cmp.json").read_text())
    assert written["accuracy"]["overall_full_set"]["diff"] == 0.5 and written["paired"] == 6
    code, out, _ = run(capsys, "v2", "compare", a, b, "--json", "--resamples", "100")
    assert code == 0 and json.loads(out) == written  # same seed, same numbers


def test_compare_one_domain_of_bare_files(tmp_path, capsys):
    a, b = write_run(tmp_path / "A", 0), write_run(tmp_path / "B", 1)
    loose_a, loose_b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    loose_a.write_bytes((a / "web" / "per_question.jsonl").read_bytes())
    loose_b.write_bytes((b / "web" / "per_question.jsonl").read_bytes())
    code, _, err = run(capsys, "v2", "compare", loose_a, loose_b)
    assert code == 2 and "--domain" in err and "Traceback" not in err
    code, out, _ = run(capsys, "v2", "compare", loose_a, loose_b, "--domain", "web", "--json")
    result = json.loads(out)
    assert code == 0 and list(result["accuracy"]["per_domain"]) == ["web"]
    assert result["accuracy"]["overall_full_set"]["b_mean"] == 0.75  # w1, w2, w4 of 4


def test_compare_refuses_different_question_sets_without_a_traceback(tmp_path, capsys):
    a = write_run(tmp_path / "A", 0)
    b = write_run(tmp_path / "B", 1, web={k: v for k, v in WEB.items() if k != "w1"})
    code, out, err = run(capsys, "v2", "compare", a, b, "--out", tmp_path / "cmp.json")
    assert code == 2 and out == "" and "not comparable" in err and "only in" in err and "w1" in err
    assert "Traceback" not in err and not (tmp_path / "cmp.json").exists()
