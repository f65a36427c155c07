"""`mnemetric sample`: the command's entry point in process (exit code, stdout, stderr) and, for the drift
check and `python -m mnemetric.cli`, in a fresh interpreter."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mnemetric.cli import main

from tests.conftest import ROOT

COMMITTED = ROOT / "data" / "sample" / "longmemeval_sample.json"
SAMPLE_SHA256 = "85aa0d974c4cd5cd28034fb9463b4f14d6807e46b9ac39fcf8c8f6ca6a9d95e6"
SMALL_SHA256 = "4133cab48d0559c8a0c6fea0b7829580cc02b12147d917f40237157f691e027f"  # old generator: 5 × 16, seed 11


class Result:
    def __init__(self, returncode: int, stdout: str, stderr: str):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


@pytest.fixture()
def run(capsys, monkeypatch):
    """``mnemetric sample ARGS`` in process, from the repository root."""
    monkeypatch.chdir(ROOT)

    def call(*args: str | Path) -> Result:
        code = main(["sample", *map(str, args)])
        out = capsys.readouterr()
        return Result(code, out.out, out.err)
    return call


def run_process(*args: str | Path, module: str = "mnemetric.cli") -> subprocess.CompletedProcess:
    prefix = ["sample"] if module == "mnemetric.cli" else []
    return subprocess.run([sys.executable, "-m", module, *prefix, *map(str, args)], cwd=ROOT,
                          env=dict(os.environ), capture_output=True, text=True, timeout=300)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_writes_the_committed_sample(run, tmp_path):
    out = tmp_path / "sample.json"
    proc = run("--out", out)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes() == COMMITTED.read_bytes()
    assert f"wrote 43 instances to {out} (sha256 {SAMPLE_SHA256})" in proc.stdout


def test_check_passes_on_the_committed_file(run):
    proc = run("--check")
    assert proc.returncode == 0, proc.stderr
    assert SAMPLE_SHA256 in proc.stdout and "up to date" in proc.stdout


def test_check_detects_a_one_byte_change_and_writes_nothing(tmp_path):
    copy = tmp_path / "sample.json"
    data = bytearray(COMMITTED.read_bytes())
    data[1000] ^= 0x01  # one bit of one byte
    copy.write_bytes(bytes(data))
    before = sha(copy)
    proc = run_process("--check", "--out", copy)
    assert proc.returncode == 1
    assert "drift" in proc.stderr and before in proc.stderr and SAMPLE_SHA256 in proc.stderr
    assert "Traceback" not in proc.stderr
    assert sha(copy) == before and os.listdir(tmp_path) == ["sample.json"]


def test_check_of_a_missing_file_is_a_clean_error(run, tmp_path):
    proc = run("--check", "--out", tmp_path / "absent.json")
    assert proc.returncode == 2
    assert "does not exist" in proc.stderr and "mnemetric sample --out" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_synthetic_set_with_seed_and_check(run, tmp_path):
    out = tmp_path / "synthetic.json"
    proc = run("--synthetic", "5", "--sessions", "16", "--seed", "11", "--out", out)
    assert proc.returncode == 0, proc.stderr
    assert sha(out) == SMALL_SHA256
    assert run("--synthetic", "5", "--sessions", "16", "--seed", "11", "--out", out, "--check").returncode == 0
    assert run("--synthetic", "5", "--sessions", "16", "--seed", "12", "--out", out, "--check").returncode == 1


@pytest.mark.parametrize("args, key", [(["--synthetic", "2", "--sessions", "3"], "--sessions"),
                                       (["--sessions", "20"], "--sessions")])
def test_bad_options_are_clean_errors(run, tmp_path, args, key):
    proc = run(*args, "--out", tmp_path / "x.json")
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"error: {key}:") and "Traceback" not in proc.stderr
    assert not (tmp_path / "x.json").exists()


def test_a_negative_count_is_refused_by_its_option_type(run, tmp_path):
    with pytest.raises(SystemExit) as info:  # argparse (mnemetric.cli.types): exit 2, the option named
        run("--synthetic", "-1", "--out", tmp_path / "x.json")
    assert info.value.code == 2 and not (tmp_path / "x.json").exists()


def test_python_dash_m_mnemetric_cli_sample_is_the_command(tmp_path):
    shutil.copy(COMMITTED, tmp_path / "sample.json")
    proc = run_process("--check", "--out", tmp_path / "sample.json", module="mnemetric.cli")
    assert proc.returncode == 0, proc.stderr
    assert "up to date" in proc.stdout
