"""Readable DVC views on the sample with the real dvc CLI: a screen-sized `dvc metrics diff`, the
detail one `--targets` away, a narrow `dvc exp show`, offline `dvc plots show/diff` and the report page.

URL rule for the plots page (tests/test_plots_page.py): outside the inlined library scripts (whose
URL constants that test reviews) there is no URL except the Vega-Lite ``$schema`` identifier of
each embedded spec (a name, never fetched), and no src=/href= pointing at a network address.
"""

from __future__ import annotations

import re

import pytest

from tests.test_plots_page import URL, outside_libraries

pytestmark = pytest.mark.e2e

SCHEMA = "https://vega.github.io/schema/vega-lite/v5.json"
FETCH = re.compile(r"""\b(?:src|href)\s*=\s*["']?(?:https?:)?//""", re.I)


def check_offline_plots(html: str) -> None:
    assert "cdn.jsdelivr.net" not in html and not FETCH.search(html)
    rest = outside_libraries(html)
    assert {m.group(0) for m in URL.finditer(rest)} <= {SCHEMA}
    assert all(rest[max(0, m.start() - 12):m.start()].endswith('"$schema": "') for m in URL.finditer(rest))
    assert '<div id = "per_type_accuracy">' in html and '<div id = "recall_all_at_k">' in html


def test_views_on_main_against_an_oracle_experiment(oracle_repo):
    # the sample run committed on main, then `dvc exp run -S memory=oracle -n oracle` (its results in the
    # workspace): tests/e2e/conftest.py oracle_experiment, this test's own copy
    reproduced_repo = oracle_repo

    diff = reproduced_repo.dvc("metrics", "diff", "main", "oracle").stdout
    lines = diff.strip().splitlines()
    assert len(lines) <= 40, diff  # fits a screen
    rows = {tuple(line.split()[:2]) for line in lines[1:]}
    assert ("metrics/qa.json", "overall") in rows and ("metrics/qa.json", "task_averaged") in rows
    assert ("metrics/retrieval.json", "exclude_abs.session.recall_all@5") in rows
    assert ("metrics/retrieval.json", "exclude_abs.session.ndcg_any@10") in rows
    assert "ci95" not in diff and ".low" not in diff and "mdd80" not in diff and "metrics/detail" not in diff

    detail = reproduced_repo.dvc("metrics", "diff", "main", "oracle", "--targets", "metrics/detail/qa.json").stdout
    assert "ci95.overall.low" in detail and "metrics/detail/qa.json" in detail

    shown = reproduced_repo.dvc("exp", "show", "--md", "--drop", ".*", "--keep",
                         r"Experiment|^overall$|^task_averaged$|^exclude_abs\.session\.recall_all@10$").stdout
    assert "oracle" in shown and max(len(line) for line in shown.splitlines()) < 200, shown

    reproduced_repo.dvc("plots", "show", "-o", "shown")
    reproduced_repo.dvc("plots", "diff", "main", "oracle", "-o", "diffed")
    for folder in ("shown", "diffed"):
        check_offline_plots((reproduced_repo.path / folder / "index.html").read_text(encoding="utf-8"))

    page = (reproduced_repo.path / "reports/index.html").read_text(encoding="utf-8")
    assert "<script" not in page and not re.search(r"https?://", page.replace('xmlns="http://www.w3.org/2000/svg"', "")
                                                     .replace("https://api.openai.com/v1", ""))
    assert 'id="official-equivalence"' in page and 'id="per-type"' in page and 'id="retrieval"' in page

    # the CLI adds flips against a baseline revision, read with dvc.api at that revision
    out = reproduced_repo.run("mnemetric", "report", "--baseline", "main", "--out", "flips.html", "--resamples", "200")
    flips = (reproduced_repo.path / "flips.html").read_text(encoding="utf-8")
    assert 'id="flips"' in flips and "exact McNemar p = " in flips and "against main" in out.stdout
    bad = reproduced_repo.run("mnemetric", "report", "--baseline", "no-such-rev", "--out", "bad.html", check=False)
    assert bad.returncode == 2 and "no-such-rev" in bad.stderr and "Traceback" not in bad.stderr
    assert not (reproduced_repo.path / "bad.html").exists()
