"""Differential: upstream's own leaderboard builders (step 1 and step 2) on Mnemetric's run folders, against
`mnemetric v2 package`.

Opt in with MNEMETRIC_LONGMEMEVAL_V2_DIR=<a checkout of xiaowu0162/LongMemEval-V2 at be15ea6>; no upstream code is
in this repository. The leaderboard/ files are verified against their sha256 and copied under tmp_path (the
checkout is never written), then run as upstream documents them (`python build_submission_step_1_...py WEB ENT
SUBMISSION OP TIER --output-root DIR`, then step 2) on the run folders Mnemetric writes, exported under upstream's
`<method>_<domain>_<tier>` names. The two packages must hold the same files; every copied run file byte for byte,
every JSON file equal except the two values that name a clock or a machine path (generated_at_utc, source_run_dir).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from mnemetric.longmemeval_v2.package import build_package, check_tarball, export_runs
from tests.longmemeval_v2.package_fixture import code_file, filled_description, official_run, official_tier

PINS = {  # sha256 at be15ea6e995462f3391c1a610892df3f67dfa7bd
    "leaderboard/build_submission_step_1_single_operating_point.py":
        "8c197c28231a14b303ec8a11a5cd5ddbbe70a5e9072f1f97c28f30f484d8f078",
    "leaderboard/build_submission_step_2_build_package.py":
        "ae727018666e7131d6f1415515405f51ab91365ac9929ad0990d083a8bcf4907",
    "leaderboard/submission_utils.py": "1aa6e83ab8434a4e55dee8a581beb8d0c5eb01cd1c1341c58349ba61d069b088",
    "leaderboard/combine_aggregated_metrics.py": "b3b0a6af707aeb60fe985368aa2986968a4a9a266c2fff84b21f7e3d075d26cb",
    "leaderboard/compute_lafs.py": "4670ea92ab87600e344bca7f387076b2a43f28b506d036950c10443ce2c8b8c2",
}
VOLATILE = {"generated_at_utc", "source_run_dir"}


@pytest.fixture
def leaderboard(tmp_path) -> Path:
    root = os.environ.get("MNEMETRIC_LONGMEMEVAL_V2_DIR")
    if not root:
        pytest.skip("set MNEMETRIC_LONGMEMEVAL_V2_DIR to a LongMemEval-V2 checkout at be15ea6 to run V2 parity checks")
    dest = tmp_path / "upstream" / "leaderboard"
    dest.mkdir(parents=True)
    for rel, sha in PINS.items():
        data = (Path(root) / rel).read_bytes()
        assert hashlib.sha256(data).hexdigest() == sha, f"{rel} is not the pinned revision"
        (dest / Path(rel).name).write_bytes(data)
    return dest


def upstream(leaderboard: Path, script: str, *args) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, str(leaderboard / script), *map(str, args)], capture_output=True,
                          text=True, cwd=leaderboard.parent)
    assert done.returncode == 0, done.stderr + done.stdout
    return done


def scrub(obj):
    if isinstance(obj, dict):
        return {k: ("<volatile>" if k in VOLATILE else scrub(v)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [scrub(v) for v in obj]
    return obj


def files(root: Path) -> dict[str, Path]:
    return {p.relative_to(root).as_posix(): p for p in sorted(root.rglob("*")) if p.is_file()}


def test_upstream_builders_accept_our_run_folders_and_build_our_package(tmp_path, leaderboard):
    data, pins = official_tier(tmp_path)
    runs = [("fast", official_run(tmp_path, data, "fast", latency=0.5, correct=1)),
            ("accurate", official_run(tmp_path, data, "accurate", latency=50.0, correct=3))]
    exported = export_runs(runs, tmp_path / "exported")
    theirs_root = tmp_path / "theirs"
    for op, _ in runs:
        web, ent = (tmp_path / "exported" / op / f"mymem_{d}_small" for d in ("web", "enterprise"))
        upstream(leaderboard, "build_submission_step_1_single_operating_point.py", web, ent, "sub", op, "small",
                 "--output-root", theirs_root)
    desc, code = filled_description(tmp_path), code_file(tmp_path)
    upstream(leaderboard, "build_submission_step_2_build_package.py", "sub", desc, code,
             *(theirs_root / "sub" / "operating_points" / op for op, _ in runs), "--output-root", theirs_root)
    ours = build_package(runs, submission="sub", code_file=code, system_description=desc,
                         output_root=tmp_path / "ours", pins=pins)
    assert ours.problems == () and len(exported) == 4
    theirs, mine = files(theirs_root / "sub"), files(ours.folder)
    assert list(theirs) == list(mine)
    for rel, path in mine.items():
        if rel.endswith(".json") and (rel.count("/") <= 2 or rel.endswith("metric_overview.json")):
            a, b = json.loads(theirs[rel].read_text()), json.loads(path.read_text())
            assert scrub(a) == scrub(b), rel
        else:
            assert theirs[rel].read_bytes() == path.read_bytes(), rel
    with tarfile.open(theirs_root / "sub.tar.gz") as t1, tarfile.open(ours.tarball) as t2:
        assert sorted(m.name for m in t1.getmembers()) == sorted(m.name for m in t2.getmembers())
    assert check_tarball(theirs_root / "sub.tar.gz", data_root=data, pins=pins)[1] == []  # `--check` takes theirs
    # upstream's own step 1 also reads the unexported folders (with --method, as its README says)
    shutil.rmtree(theirs_root)
    upstream(leaderboard, "build_submission_step_1_single_operating_point.py", runs[0][1] / "web",
             runs[0][1] / "enterprise", "sub", "fast", "small", "--method", "mymem", "--output-root", theirs_root)
    assert json.loads((theirs_root / "sub" / "operating_points" / "fast" / "metric_overview.json").read_text()) == \
        json.loads((ours.folder / "operating_points" / "fast" / "metric_overview.json").read_text())


def test_upstream_builders_on_a_real_mnemetric_run_of_the_sample(tmp_path, leaderboard):
    """A whole Mnemetric run of the bundled sample (bm25, the reader and the LLM checkers over HTTP on the loopback
    server), written by write_run: upstream's step 1 and 2 accept its folders as they are (with --method, the
    folders being named web/ and enterprise/). Ours refuses it (the sample is not an official tier) unless
    --unofficial, and then holds upstream's package plus NOT_SUBMITTABLE.txt."""
    from mnemetric.longmemeval_v2.llm_checkers import LLMCheckers
    from mnemetric.longmemeval_v2.pipeline import option
    from mnemetric.longmemeval_v2.reader import OpenAIReader
    from mnemetric.longmemeval_v2.run import run_v2, write_run
    from mnemetric.longmemeval_v2.tokens import O200kCounter
    from mnemetric.longmemeval_v2.upstream_text import checker_texts, reader_texts
    from mnemetric.config import build
    from tests.conftest import ROOT
    from tests.longmemeval_v2.executing import executor
    from tests.support.openai_server import FakeOpenAIServer
    from tests.support.standin_v2 import HARNESS_STAND_IN, QA_STAND_IN

    sample = ROOT / "data" / "sample-v2"
    memory = option("memory", "bm25", sample)
    with FakeOpenAIServer(reply=lambda m: '{"label": 1}' if m[0]["content"].startswith("Stand-in rubric")
                          else "\\boxed{Meadow Post}") as server:
        texts = reader_texts(HARNESS_STAND_IN)
        ex = executor(tmp_path, server.base_url)
        run = run_v2(sample, "small", factory=lambda: build(memory, "v2.memory"), memory_name="bm25",
                     reader=OpenAIReader(texts, base_url=server.base_url),
                     checker=LLMCheckers(checker_texts(QA_STAND_IN), base_url=server.base_url),
                     counter=O200kCounter(), texts=texts, executor=ex)
        ex.close()
    settings = {"data_root": str(sample), "haystack": "small", "max_tokens": 200000, "memory": memory,
                "reader": {"name": "openai", "model": "Qwen/Qwen3.5-9B", "base_url": server.base_url}}
    out = tmp_path / "run"
    write_run(out, run, settings, started_at_utc="2026-12-02T00:00:00+00:00")
    theirs_root = tmp_path / "theirs"
    upstream(leaderboard, "build_submission_step_1_single_operating_point.py", out / "web", out / "enterprise",
             "sub", "p", "small", "--method", "bm25", "--output-root", theirs_root)
    desc, code = filled_description(tmp_path), code_file(tmp_path)
    upstream(leaderboard, "build_submission_step_2_build_package.py", "sub", desc, code,
             theirs_root / "sub" / "operating_points" / "p", "--output-root", theirs_root)
    ours = build_package([("p", out)], submission="sub", code_file=code, system_description=desc,
                         output_root=tmp_path / "ours", unofficial=True)
    assert any("not the official data" in p.message for p in ours.problems)
    theirs, mine = files(theirs_root / "sub"), files(ours.folder)
    assert sorted(mine) == sorted([*theirs, "NOT_SUBMITTABLE.txt"])
    reasons = [str(p) for p in check_tarball(theirs_root / "sub.tar.gz", data_root=sample)[1]]
    assert any("sample-v2/questions.jsonl" in r and "not the official data" in r for r in reasons)
    for rel, path in theirs.items():
        if rel.endswith(".json") and (rel.count("/") <= 2):
            assert scrub(json.loads(path.read_text())) == scrub(json.loads(mine[rel].read_text())), rel
        else:
            assert path.read_bytes() == mine[rel].read_bytes(), rel
