"""`mnemetric v2-validate` as a user runs it (subprocesses), on the bundled sample and broken copies."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT

SAMPLE = ROOT / "data" / "sample-v2"


def cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mnemetric.cli", "v2-validate", *map(str, args)], capture_output=True,
                          text=True, cwd=ROOT, env={**os.environ}, timeout=300)


@pytest.fixture()
def root(tmp_path):
    shutil.copytree(SAMPLE, tmp_path / "root")
    return tmp_path / "root"


def test_the_sample_passes_for_both_tiers():
    for extra in ([], ["--tier", "medium"], ["--no-images"], ["--haystack", "medium"]):  # a tier, as v2 run takes it
        out = cli(SAMPLE, *extra)
        assert (out.returncode, out.stdout) == (0, ""), out.stderr
        assert "0 problem(s)" in out.stderr


def test_every_problem_is_one_line_and_the_exit_status_is_1(root):
    rows = [json.loads(line) for line in (root / "questions.jsonl").read_text().splitlines()]
    rows[0]["domain"] = "mars"
    rows[1]["eval_function"] = "llm_abstention_checker"
    (root / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = cli(root, "--no-images")
    assert out.returncode == 1
    assert out.stdout.splitlines() == [
        f"{root}/questions.jsonl: mnv2-web-01: domain: must be one of web, enterprise, got 'mars'",
        f"{root}/questions.jsonl: mnv2-web-02: eval_function: llm_abstention_checker needs an -abs question_type, "
        "got 'dynamic-environment' (upstream aborts the run)",
    ]
    assert "2 problem(s)" in out.stderr and "Traceback" not in out.stderr


def test_no_images_lets_a_root_without_screenshots_pass(root):
    shutil.rmtree(root / "screenshots")
    assert cli(root, "--no-images").returncode == 0
    out = cli(root)
    assert out.returncode == 1 and len(out.stdout.splitlines()) == 40  # 38 states + 2 question images


def test_haystack_file_relative_to_the_data_root(root):
    medium = json.loads((root / "haystacks/lme_v2_medium.json").read_text())
    medium["mnv2-ent-02"].append("fm-shop-001")
    (root / "haystacks/mine.json").write_text(json.dumps(medium))
    out = cli(root, "--haystack", "haystacks/mine.json")
    assert out.returncode == 1
    assert out.stdout.startswith(f"{root}/haystacks/mine.json: mnv2-ent-02: [{len(medium['mnv2-ent-02']) - 1}]: "
                                 "trajectory 'fm-shop-001' is from domain 'web'")


def test_a_missing_root_is_a_clean_error(tmp_path):
    out = cli(tmp_path / "nowhere")
    assert out.returncode == 2 and "is not a folder" in out.stderr and "Traceback" not in out.stderr


def test_tier_and_haystack_are_exclusive():
    out = cli(SAMPLE, "--tier", "small", "--haystack", "x.json")
    assert out.returncode == 2 and "not allowed with argument" in out.stderr
