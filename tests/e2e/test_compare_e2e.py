"""`mnemetric compare` and `mnemetric runs` against real DVC experiments of the sample pipeline.

main runs the sample (`dvc repro`, committed); experiments memory=oracle (better retrieval) and
adapter=legacy-v2 (not comparable: another adapter schema) come from the session's legacy_experiment
(tests/e2e/conftest.py); branch `rejudged` holds another judge model (the judged
file, a DVC output, rewritten and `dvc commit`ed); a further experiment:
memory=none (retrieval collapses).
Expected numbers come from each run's own metric files (written by the pipeline's stages, not by
compare) and from a McNemar p recomputed here from the printed flips.
"""

from __future__ import annotations

import json
from math import comb

import pytest

from tests.e2e.conftest import exp_ref

pytestmark = pytest.mark.e2e


def _exp(repo, name: str, *sets: str) -> dict:
    args = ["exp", "run", "-n", name]
    for s in sets:
        args += ["-S", s]
    repo.dvc(*args)
    return {"qa": repo.json("metrics/qa.json"), "retrieval": repo.json("metrics/retrieval.json")}


JUDGED = "data/runs/hypotheses.jsonl.eval-results-lexical"


def _rejudged_branch(repo) -> tuple[str, bool]:
    """Branch `rejudged`: the judged file (a DVC output) says another judge model and flips the first label."""
    repo.run("git", "checkout", "-qb", "rejudged")
    path = repo.path / JUDGED
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    lines[0]["autoeval_label"]["label"] = not lines[0]["autoeval_label"]["label"]
    for line in lines:
        line["autoeval_label"]["model"] = "other-judge-v2"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    repo.dvc("commit", "-q", "-f", "judge")
    repo.run("git", "add", "-A")
    repo.run("git", "commit", "-qm", "another judge")
    repo.run("git", "checkout", "-q", "main")
    repo.dvc("checkout", "-q")
    return lines[0]["question_id"], not lines[0]["autoeval_label"]["label"]


def _compare(repo, *args: str):
    return repo.run("mnemetric", "compare", *args, check=False)


def _exp_json(repo, name: str, rel: str) -> dict:
    return json.loads(repo.run("git", "show", f"{exp_ref(repo, name)}:{rel}").stdout)


def test_compare_and_runs_on_real_experiments(legacy_repo):
    # the sample run committed on main, experiments `oracle` (-S memory=oracle) and `legacy` (-S adapter=legacy-v2)
    # run on it (tests/e2e/conftest.py legacy_experiment: the pipeline, views and retrieval tests read the same)
    reproduced_repo = legacy_repo
    oracle = {"qa": _exp_json(reproduced_repo, "oracle", "metrics/qa.json"),
              "retrieval": _exp_json(reproduced_repo, "oracle", "metrics/retrieval.json")}
    reproduced_repo.run("git", "reset", "-q", "--hard")  # the workspace back to main's committed run
    reproduced_repo.dvc("checkout", "-q")
    assert reproduced_repo.run("git", "status", "--porcelain").stdout == ""
    assert json.loads(reproduced_repo.dvc("status", "--json").stdout) == {}
    main = {"qa": reproduced_repo.json("metrics/qa.json"), "retrieval": reproduced_repo.json("metrics/retrieval.json")}
    assert main["retrieval"] != oracle["retrieval"]
    first_id, first_label = _rejudged_branch(reproduced_repo)
    _exp(reproduced_repo, "none", "memory=none")

    # main vs oracle: the retrieval gain with paired intervals, QA with McNemar
    proc = _compare(reproduced_repo, "main", "oracle", "--json")
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert r["comparable"] is True and r["differences"] == []
    r5 = r["retrieval"]["levels"]["session"]["recall_all@5"]
    assert r5["n"] == main["retrieval"]["exclude_abs"]["n"] == 36
    assert r5["a_mean"] == pytest.approx(main["retrieval"]["exclude_abs"]["session"]["recall_all@5"])
    assert r5["b_mean"] == pytest.approx(oracle["retrieval"]["exclude_abs"]["session"]["recall_all@5"]) == 1.0
    assert r5["diff"] > 0 and r5["low"] <= r5["diff"] <= r5["high"]
    overall = r["qa"]["overall"]
    assert overall["n"] == 43
    assert overall["a_mean"] == pytest.approx(main["qa"]["overall"])
    assert overall["b_mean"] == pytest.approx(oracle["qa"]["overall"])
    b = sum(1 for f in r["qa"]["flips"] if f["old"] and not f["new"])
    c = sum(1 for f in r["qa"]["flips"] if f["new"] and not f["old"])
    d = b + c
    expected_p = 1.0 if d == 0 else min(1.0, sum(comb(d, i) for i in range(min(b, c) + 1)) / 2 ** (d - 1))
    assert (overall["a_only"], overall["b_only"]) == (b, c)
    assert overall["p_value"] == pytest.approx(expected_p)
    table = _compare(reproduced_repo, "main", "oracle")
    assert table.returncode == 0
    assert "session recall_all@10" in table.stdout and "exact p" in table.stdout and "flipped questions" in table.stdout
    assert "exploratory (per type, Holm-adjusted p):" in table.stdout and "family-wise" in table.stdout
    print(table.stdout)  # the README example
    # the gate reads the exact test: the sample's one-way QA flips (McNemar p = 0.125 for 4:0) do not fail it
    md = _compare(reproduced_repo, "main", "oracle", "--md", "--fail-on-regression", "recall_all@10",
                  "--fail-on-regression", "overall")
    assert md.returncode == 0 and "| overall | 43 |" in md.stdout, md.stderr
    assert overall["p_value"] >= 0.05 and "regression" not in md.stderr

    # another adapter: refused, naming the field; --force compares and prints the differences first
    refused = _compare(reproduced_repo, "main", "legacy")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "not comparable" in refused.stderr and "adapter schema" in refused.stderr
    assert "longmemeval-session/v3" in refused.stderr and "longmemeval-session/v2" in refused.stderr
    forced = _compare(reproduced_repo, "main", "legacy", "--force")
    assert forced.returncode == 0 and "warning (--force)" in forced.stderr and "adapter schema" in forced.stderr

    # another judge (read from the DVC-tracked judged file at each branch): refused; forced, the flip shows
    judge = _compare(reproduced_repo, "main", "rejudged")
    assert judge.returncode == 2 and "judge model" in judge.stderr and "other-judge-v2" in judge.stderr
    forced = json.loads(_compare(reproduced_repo, "main", "rejudged", "--force", "--json").stdout)
    assert [(f["question_id"], f["old"], f["new"]) for f in forced["qa"]["flips"]] == \
        [(first_id, first_label, not first_label)]

    # the CI gate: memory=none loses recall significantly
    gate = _compare(reproduced_repo, "main", "none", "--fail-on-regression", "recall_all@10")
    assert gate.returncode == 1, gate.stdout + gate.stderr
    assert "regression: recall_all@10 dropped" in gate.stderr and "mcnemar exact, two-sided p = " in gate.stderr
    print(gate.stderr)  # the README example

    # a revision lacking a metric file: a clear message
    reproduced_repo.run("git", "checkout", "-qb", "nometrics", "main")
    reproduced_repo.run("git", "rm", "-q", "metrics/data.json")
    reproduced_repo.run("git", "commit", "-qm", "no data metrics")
    reproduced_repo.run("git", "checkout", "-q", "main")
    missing = _compare(reproduced_repo, "main", "nometrics")
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert "nometrics:metrics/data.json" in missing.stderr
    unknown = _compare(reproduced_repo, "main", "no-such-exp")
    assert unknown.returncode == 2 and "no-such-exp" in unknown.stderr and "oracle" in unknown.stderr

    # runs: main, oracle, none comparable (one group); legacy alone
    runs = reproduced_repo.run("mnemetric", "runs", "--no-workspace", "--json")
    rows = {row["name"]: row for row in json.loads(runs.stdout)}
    assert {"main", "nometrics", "oracle", "legacy", "none"} <= set(rows)
    assert rows["main"]["group"] == rows["oracle"]["group"] == rows["none"]["group"] != rows["legacy"]["group"]
    assert rows["oracle"]["headline"]["overall"] == pytest.approx(oracle["qa"]["overall"])
    sha = reproduced_repo.json("metrics/data.json")["variant"]["sha256"]
    assert rows["main"]["keys"]["sha256"] == sha[:12] and rows["legacy"]["keys"]["adapter"].endswith("/v2")
    assert rows["main"]["official"]["value"] is False and rows["main"]["official"]["reasons"]  # the sample's gate
    text = reproduced_repo.run("mnemetric", "runs").stdout
    assert "comparable: " in text and "alone: legacy" in text
    assert "not official (main): " in text and "no (" in text
