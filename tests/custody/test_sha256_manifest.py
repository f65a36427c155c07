"""sha256 custody of outputs: known digests (FIPS 180-2), drift named per file, `mnemetric verify` exit codes."""

from __future__ import annotations

import json

import pytest

from mnemetric.cli import main as cli
from mnemetric.custody.sha256_manifest import SCHEMA, build, read_manifest, verify, workspace_opener
from mnemetric.errors import InputError

SHA_ABC = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"  # sha256(b"abc"), FIPS 180-2
SHA_EMPTY = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"  # sha256(b"")
SHA_ABD = "a52d159f262b2c6ddb724a61840befc36eb30c88877a4030b65cbe86298449c9"  # sha256(b"abd"), hashlib by hand


@pytest.fixture()
def ws(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data" / "runs").mkdir(parents=True)
    (tmp_path / "data" / "runs" / "judged").write_bytes(b"abc")
    (tmp_path / "data" / "runs" / "judged.failures.jsonl").write_bytes(b"")
    return tmp_path


def test_build_hashes_each_file(ws):
    m = build(["data/runs/judged", "data/runs/judged.failures.jsonl"], workspace_opener())
    assert m == {"schema": SCHEMA, "algorithm": "sha256", "files": {
        "data/runs/judged": {"sha256": SHA_ABC, "size": 3},
        "data/runs/judged.failures.jsonl": {"sha256": SHA_EMPTY, "size": 0}}}


def test_a_missing_output_names_it(ws):
    with pytest.raises(InputError) as exc:
        build(["data/runs/nope"], workspace_opener())
    assert "data/runs/nope" in str(exc.value)


def _write_manifest(ws) -> None:
    m = build(["data/runs/judged", "data/runs/judged.failures.jsonl"], workspace_opener())
    (ws / "data" / "custody").mkdir(exist_ok=True)
    (ws / "data" / "custody" / "outputs.sha256.json").write_text(json.dumps(m))


def test_verify_clean_then_one_byte_tampered(ws, capsys):
    _write_manifest(ws)
    assert cli(["verify"]) == 0
    assert "2 of 2 file(s) match" in capsys.readouterr().out
    (ws / "data" / "runs" / "judged").write_bytes(b"abd")  # one byte
    assert cli(["verify"]) == 1
    out = capsys.readouterr()
    assert f"DRIFT    data/runs/judged (expected sha256 {SHA_ABC}, got {SHA_ABD})" in out.out
    assert "ok       data/runs/judged.failures.jsonl" in out.out
    assert "1 drifted" in out.err


def test_verify_names_a_missing_file(ws, capsys):
    _write_manifest(ws)
    (ws / "data" / "runs" / "judged.failures.jsonl").unlink()
    assert cli(["verify"]) == 1
    assert "MISSING  data/runs/judged.failures.jsonl" in capsys.readouterr().out


def test_pure_verify_reports_every_file(ws):
    files = {"data/runs/judged": {"sha256": SHA_EMPTY}, "data/runs/judged.failures.jsonl": {"sha256": SHA_EMPTY}}
    result = dict(verify(files, workspace_opener()))
    assert result["data/runs/judged.failures.jsonl"] is None
    assert (result["data/runs/judged"].expected, result["data/runs/judged"].actual) == (SHA_EMPTY, SHA_ABC)


@pytest.mark.parametrize(("doc", "field"), [({"schema": "x", "files": {}}, "schema"),
                                            ({"schema": SCHEMA, "files": []}, "files"),
                                            ({"schema": SCHEMA, "files": {"a": {"sha256": "12"}}}, "sha256")])
def test_a_bad_manifest_names_the_field(doc, field):
    with pytest.raises(InputError) as exc:
        read_manifest(doc, file="m.json")
    assert exc.value.problem.field == field and exc.value.problem.file == "m.json"


def test_verify_without_a_manifest_is_a_clean_error(ws, capsys):
    assert cli(["verify"]) == 2
    err = capsys.readouterr().err
    assert "outputs.sha256.json" in err and "Traceback" not in err
