"""Comparing two LongMemEval-V2 runs (mnemetric.longmemeval_v2.compare) on per_question files written here.

Every expected number is worked by hand from the rows below (comments show the arithmetic).
"""

from __future__ import annotations

import pytest

from mnemetric.stats.score import tango_interval

from mnemetric.errors import ConfigError, InputError
from mnemetric.longmemeval_v2.compare import NotComparable, compare_v2, read_run, render_table

from tests.longmemeval_v2.rows import row, write_rows

S, SA, P = "static-environment", "static-environment-abs", "procedure"
# question -> (type, A correct, B correct, A query seconds, B query seconds)
WEB = {"w1": (S, True, True, 0.4, 1.0), "w2": (S, False, True, 0.1, 2.0), "w3": (S, True, False, 0.3, 3.0),
       "w4": (SA, False, True, 0.2, 10.0)}
ENT = {"e1": (P, False, True, 0.5, 1.5), "e2": (P, False, True, 0.7, 0.5)}


def write_run(folder, side: int, *, web=WEB, ent=ENT, **changes):
    """A `mnemetric v2 run`-style folder: <domain>/per_question.jsonl; ``changes``: qid -> extra row fields."""
    for domain, table in (("web", web), ("enterprise", ent)):
        if table is None:
            continue
        (folder / domain).mkdir(parents=True, exist_ok=True)
        rows = [row(q, t, correct=v[side], query=v[2 + side], index=i, **changes.get(q, {}))
                for i, (q, (t, *v)) in enumerate(table.items())]
        write_rows(folder / domain / "per_question.jsonl", rows)
    return folder


@pytest.fixture
def runs(tmp_path):
    return read_run(write_run(tmp_path / "A", 0)), read_run(write_run(tmp_path / "B", 1))


def test_paired_accuracy_worked_example(runs):
    r = compare_v2(*runs, resamples=200)
    acc = r["accuracy"]
    overall = acc["overall_full_set"]
    # A right on w1, w3 (2/6); B right on all but w3 (5/6); a_only = {w3}, b_only = {w2, w4, e1, e2}
    assert (overall["n"], overall["a_mean"], overall["b_mean"]) == (6, pytest.approx(2 / 6), pytest.approx(5 / 6))
    assert overall["diff"] == pytest.approx(0.5) and (overall["a_only"], overall["b_only"]) == (1, 4)
    assert overall["p_value"] == pytest.approx(12 / 32)  # 2 * P[X <= 1], X ~ Bin(5, 1/2) = 2 * (1 + 5) / 32
    assert overall["low"] <= overall["diff"] <= overall["high"]
    non_abs = acc["overall_non_abstention_only"]  # w4 is the abstention question
    assert (non_abs["n"], non_abs["diff"], non_abs["p_value"]) == (5, pytest.approx(0.4), pytest.approx(10 / 16))
    abst = acc["overall_abstention_only"]
    assert (abst["n"], abst["a_mean"], abst["b_mean"], abst["p_value"]) == (1, 0.0, 1.0, 1.0)
    web, ent = acc["per_domain"]["web"], acc["per_domain"]["enterprise"]
    assert (web["a_mean"], web["b_mean"], web["p_value"]) == (0.5, 0.75, 1.0)  # 2 * (1 + 3) / 8 -> capped at 1
    # every enterprise pair goes 0 -> 1: every resample's difference is 1, so the bootstrap says [1, 1];
    # the primary score interval on two questions reaches below 0 (mirror of tests/stats: Tango(0, 2, 2))
    assert (ent["diff"], ent["bootstrap_low"], ent["bootstrap_high"], ent["p_value"]) == (1.0, 1.0, 1.0, 0.5)
    assert ent["high"] == 1.0 and ent["low"] == pytest.approx(-tango_interval(0, 2, 2)[1]) and ent["low"] < 0
    cats = acc["per_category"]
    assert list(cats) == ["static", "static-abs", "dynamic", "dynamic-abs", "procedure", "procedure-abs", "gotchas"]
    assert (cats["static"]["n"], cats["static"]["diff"], cats["static"]["p_value"]) == (3, 0.0, 1.0)
    assert (cats["static-abs"]["n"], cats["procedure"]["n"], cats["procedure"]["diff"]) == (1, 2, 1.0)
    assert cats["dynamic"]["n"] == 0 and cats["dynamic"]["diff"] is None and cats["dynamic"]["p_value"] is None
    assert [(f["domain"], f["question_id"], f["old"], f["new"]) for f in r["flips"]] == [
        ("web", "w2", False, True), ("web", "w3", True, False), ("web", "w4", False, True),
        ("enterprise", "e1", False, True), ("enterprise", "e2", False, True)]
    assert (r["questions"], r["paired"], r["left_out"]) == (6, 6, {"failed_in_a": [], "failed_in_b": []})


def test_latency_is_reported_apart_with_upstream_quantiles(runs):
    lat = compare_v2(*runs, resamples=50)["latency"]
    web = lat["per_domain"]["web"]
    # A: sorted [0.1, 0.2, 0.3, 0.4] -> p50 = [4 // 2] = 0.3, p95 = [min(3, int(3.8))] = 0.4; B: [1, 2, 3, 10]
    assert web["a"] == {"n": 4, "p50_seconds": 0.3, "p95_seconds": 0.4, "avg_seconds": pytest.approx(0.25)}
    assert web["b"] == {"n": 4, "p50_seconds": 3.0, "p95_seconds": 10.0, "avg_seconds": 4.0}
    assert web["diff"]["p50_seconds"] == pytest.approx(2.7) and web["diff"]["p95_seconds"] == pytest.approx(9.6)
    ent = lat["per_domain"]["enterprise"]  # A [0.5, 0.7]: p50 = [1] = 0.7, p95 = [min(1, int(1.9))] = 0.7
    assert (ent["a"]["p50_seconds"], ent["a"]["p95_seconds"], ent["b"]["p50_seconds"]) == (0.7, 0.7, 1.5)
    pooled = lat["overall"]  # A [.1 .2 .3 .4 .5 .7]: p50 = [3] = .4, p95 = [min(5, int(5.7))] = .7; B [.5 1 1.5 2 3 10]
    assert (pooled["a"]["p50_seconds"], pooled["a"]["p95_seconds"]) == (0.4, 0.7)
    assert (pooled["b"]["p50_seconds"], pooled["b"]["p95_seconds"], pooled["b"]["avg_seconds"]) == (2.0, 10.0, 3.0)


def test_latency_never_changes_the_accuracy_numbers(tmp_path, runs):
    slow = {q: (t, a, b, qa, qb * 100) for q, (t, a, b, qa, qb) in WEB.items()}
    other = read_run(write_run(tmp_path / "B-slow", 1, web=slow))
    base, changed = compare_v2(*runs, resamples=100), compare_v2(runs[0], other, resamples=100)
    assert changed["accuracy"] == base["accuracy"] and changed["flips"] == base["flips"]
    assert changed["latency"]["per_domain"]["web"]["b"]["p95_seconds"] == 1000.0


def test_a_question_failed_in_either_run_is_left_out_pairwise(tmp_path):
    a = read_run(write_run(tmp_path / "A", 0))
    b = read_run(write_run(tmp_path / "B", 1, e2={"failed": "judge reply not parseable"}))
    r = compare_v2(a, b, resamples=50)
    assert r["left_out"] == {"failed_in_a": [], "failed_in_b": ["enterprise/e2"]} and r["paired"] == 5
    ent = r["accuracy"]["per_domain"]["enterprise"]
    assert (ent["n"], ent["a_mean"], ent["b_mean"]) == (1, 0.0, 1.0)
    assert r["accuracy"]["overall_full_set"]["a_mean"] == pytest.approx(2 / 5)  # w1, w3 of the 5 kept
    # latency: each run's own scored rows (as its aggregated_metrics.json): B's enterprise is e1 alone
    lat = r["latency"]["per_domain"]["enterprise"]
    assert (lat["a"]["n"], lat["b"]["n"], lat["b"]["p50_seconds"]) == (2, 1, 1.5)
    assert r["b"]["failed"] == 1


def test_refuses_runs_that_do_not_hold_the_same_questions(tmp_path):
    a = read_run(write_run(tmp_path / "A", 0))
    fewer = read_run(write_run(tmp_path / "B1", 1, web={k: v for k, v in WEB.items() if k != "w4"}))
    with pytest.raises(NotComparable, match=r"web: 1 question\(s\) only in .*A: w4"):
        compare_v2(a, fewer)
    other_tier = read_run(write_run(tmp_path / "B2", 1, w2={"haystack_ids": ["t9"]}))
    with pytest.raises(NotComparable, match=r"web/w2: haystack_ids differs \(\['t1', 't2'\] vs \['t9'\]\)"):
        compare_v2(a, other_tier)
    one_domain = read_run(write_run(tmp_path / "B3", 1, ent=None))
    with pytest.raises(NotComparable, match=r"domain enterprise only in .*A") as exc:
        compare_v2(a, one_domain)
    assert "fix: compare two runs of the same data root" in str(exc.value)
    regraded = read_run(write_run(tmp_path / "B4", 1, e1={"answer_gold": "another answer"}))
    with pytest.raises(NotComparable, match="enterprise/e1: answer_gold differs"):
        compare_v2(a, regraded)


def test_read_run_finds_the_domain(tmp_path):
    write_run(tmp_path / "A", 0)
    assert list(read_run(tmp_path / "A").rows) == ["web", "enterprise"]
    assert list(read_run(tmp_path / "A", "enterprise").rows) == ["enterprise"]
    assert list(read_run(tmp_path / "A" / "web" / "per_question.jsonl").rows) == ["web"]
    upstream_dir = tmp_path / "rag_enterprise_small"
    upstream_dir.mkdir()
    (upstream_dir / "per_question.jsonl").write_bytes((tmp_path / "A/enterprise/per_question.jsonl").read_bytes())
    assert [r.question_id for r in read_run(upstream_dir).rows["enterprise"]] == ["e1", "e2"]
    loose = tmp_path / "loose.jsonl"
    loose.write_bytes((tmp_path / "A/web/per_question.jsonl").read_bytes())
    with pytest.raises(ConfigError, match="--domain"):
        read_run(loose)
    assert list(read_run(loose, "web").rows) == ["web"]
    with pytest.raises(InputError, match="no such file or folder"):
        read_run(tmp_path / "missing.jsonl")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no <domain>/per_question.jsonl"):
        read_run(tmp_path / "empty")


def test_render_table_keeps_latency_apart(runs):
    text = render_table(compare_v2(*runs, resamples=50))
    acc, lat = text.split("memory query latency")
    assert "overall_full_set" in acc and "+0.500" in acc and "0.3750" in acc and "p50" not in acc
    assert "web p50" in lat and "+2.700" in lat and "+9.600" in lat
    assert "web/w3 (static): correct -> wrong" in lat


def test_an_upstream_run_of_the_same_data_compares_whatever_its_image_paths(tmp_path, monkeypatch):
    """Upstream writes absolute resolved image paths, Mnemetric paths under its data root: compared as images."""
    monkeypatch.chdir(tmp_path)
    image = tmp_path / "data" / "v2" / "small" / "screenshots" / "questions" / "w1.png"
    image.parent.mkdir(parents=True)
    image.write_bytes(b"\x89PNG\r\n\x1a\n one")
    ours = read_run(write_run(tmp_path / "A", 0, w1={"question_image": "data/v2/small/screenshots/questions/w1.png"}))
    upstream = read_run(write_run(tmp_path / "B", 1, w1={"question_image": str(image.resolve())}))
    assert compare_v2(ours, upstream)["paired"] == 6
    elsewhere = read_run(write_run(tmp_path / "C", 1, w1={"question_image": "/home/u/LongMemEval-V2/data/screenshots/"
                                                                          "questions/w1.png"}))
    assert compare_v2(ours, elsewhere)["paired"] == 6  # not readable here: the folder/file names decide
    other = tmp_path / "other" / "questions" / "w1.png"  # readable, same names, other bytes: another image
    other.parent.mkdir(parents=True)
    other.write_bytes(b"\x89PNG\r\n\x1a\n two")
    changed = read_run(write_run(tmp_path / "D", 1, w1={"question_image": str(other)}))
    with pytest.raises(NotComparable, match="web/w1: question_image differs"):
        compare_v2(ours, changed)
    renamed = read_run(write_run(tmp_path / "E", 1, w1={"question_image": "/x/data/screenshots/questions/w9.png"}))
    with pytest.raises(NotComparable, match="web/w1: question_image differs"):
        compare_v2(ours, renamed)
