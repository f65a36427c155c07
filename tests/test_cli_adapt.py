"""`mnemetric adapt` / `mnemetric retrieve --adapter`: adapters are conf options built by `_target_`, as in
stage adapt, so a project's own option works from the command line."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import ROOT

SAMPLE = ROOT / "data" / "sample" / "longmemeval_sample.json"


def mnemetric(*args, cwd):
    return subprocess.run([sys.executable, "-m", "mnemetric.cli", *args], cwd=cwd, capture_output=True, text=True)


def test_a_projects_own_adapter_option_is_built_by_its_target(tmp_path):
    (tmp_path / "conf" / "adapter").mkdir(parents=True)
    (tmp_path / "conf" / "adapter" / "undated.yaml").write_text(
        "_target_: mnemetric.longmemeval.adapted.SessionAdapter\nname: undated\n"
        "schema: mnemetric.longmemeval-session/v2\n")
    proc = mnemetric("adapt", str(SAMPLE), "--adapter", "undated", "--out", "out.jsonl", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    first = json.loads((tmp_path / "out.jsonl").read_text().splitlines()[0])
    # the v2 schema is the undated replay: no dates on the sessions or the query
    assert first["memory"]["schema"] == "mnemetric.longmemeval-session/v2"
    assert first["memory"]["query"]["date"] is None and all(s["date"] is None for s in first["memory"]["sessions"])
    shipped = mnemetric("adapt", str(SAMPLE), "--adapter", "legacy-v2", "--out", "shipped.jsonl", cwd=tmp_path)
    assert shipped.returncode == 0, shipped.stderr
    assert (tmp_path / "shipped.jsonl").read_bytes() == (tmp_path / "out.jsonl").read_bytes()


def test_an_unknown_adapter_names_the_options_and_writes_nothing(tmp_path):
    proc = mnemetric("adapt", str(SAMPLE), "--adapter", "nope", "--out", "out.jsonl", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "adapter/nope" in proc.stderr and "session-v3" in proc.stderr
    assert not (tmp_path / "out.jsonl").exists()


def test_an_option_that_is_not_an_adapter_is_refused_by_name(tmp_path):
    (tmp_path / "bad.yaml").write_text("_target_: mnemetric.longmemeval.memory.simple.NoMemory\nname: none\n")
    proc = mnemetric("adapt", str(SAMPLE), "--adapter", str(tmp_path / "bad.yaml"), "--out", "out.jsonl", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "is not a LongMemEval adapter" in proc.stderr and not (tmp_path / "out.jsonl").exists()
