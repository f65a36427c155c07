"""sha256 custody of outputs: known digests (FIPS 180-2), the typed manifest (round trip, the committed
file's exact bytes, a bad field named), drift named per file, `mnemetric verify` exit codes."""

from __future__ import annotations

import json

import pytest

from mnemetric.cli import main as cli
from mnemetric.custody.sha256_manifest import (
    SCHEMA,
    FileDigest,
    Sha256Manifest,
    build,
    read_sha256_manifest,
    verify,
    workspace_opener,
    write_sha256_manifest,
)
from mnemetric.errors import InputError

from tests.conftest import ROOT

COMMITTED = ROOT / "data" / "custody" / "outputs.sha256.json"

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
    m = build(["data/runs/judged.failures.jsonl", "data/runs/judged"], workspace_opener())
    assert m == Sha256Manifest({"data/runs/judged": FileDigest(SHA_ABC, 3),
                                "data/runs/judged.failures.jsonl": FileDigest(SHA_EMPTY, 0)})
    assert m.to_record() == {"schema": SCHEMA, "algorithm": "sha256", "files": {
        "data/runs/judged": {"sha256": SHA_ABC, "size": 3},
        "data/runs/judged.failures.jsonl": {"sha256": SHA_EMPTY, "size": 0}}}
    assert list(m.files) == ["data/runs/judged", "data/runs/judged.failures.jsonl"]  # sorted by path


def test_the_committed_manifest_reads_and_writes_back_to_its_bytes(tmp_path):
    m = read_sha256_manifest(COMMITTED)
    assert "data/raw/longmemeval_sample.json" in m.files
    write_sha256_manifest(tmp_path / "m.json", m)
    assert (tmp_path / "m.json").read_bytes() == COMMITTED.read_bytes()


def test_a_missing_output_names_it(ws):
    with pytest.raises(InputError) as exc:
        build(["data/runs/nope"], workspace_opener())
    assert "data/runs/nope" in str(exc.value)


def _write_manifest(ws) -> None:
    m = build(["data/runs/judged", "data/runs/judged.failures.jsonl"], workspace_opener())
    (ws / "data" / "custody").mkdir(exist_ok=True)
    (ws / "data" / "custody" / "outputs.sha256.json").write_text(json.dumps(m.to_record()))


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
    files = {"data/runs/judged": FileDigest(SHA_EMPTY, 0), "data/runs/judged.failures.jsonl": FileDigest(SHA_EMPTY, 0)}
    result = dict(verify(files, workspace_opener()))
    assert result["data/runs/judged.failures.jsonl"] is None
    assert (result["data/runs/judged"].expected, result["data/runs/judged"].actual) == (SHA_EMPTY, SHA_ABC)


GOOD = {"schema": SCHEMA, "algorithm": "sha256", "files": {"a": {"sha256": SHA_ABC, "size": 3}}}


@pytest.mark.parametrize(("change", "record", "field"), [
    ({"schema": "x"}, "<file>", "schema"),
    ({"algorithm": "md5"}, "<file>", "algorithm"),
    ({"files": []}, "<file>", "files"),
    ({"extra": 1}, "<file>", "extra"),
    ({"files": {"a": {"sha256": "12", "size": 3}}}, "a", "sha256"),
    ({"files": {"a": {"sha256": SHA_ABC.upper(), "size": 3}}}, "a", "sha256"),
    ({"files": {"a": {"sha256": SHA_ABC, "size": -1}}}, "a", "size"),
    ({"files": {"a": {"sha256": SHA_ABC}}}, "a", "size"),
])
def test_a_bad_manifest_names_the_record_and_field(change, record, field):
    assert Sha256Manifest.from_record(GOOD, file="m.json").to_record() == GOOD
    with pytest.raises(InputError) as exc:
        Sha256Manifest.from_record(GOOD | change, file="m.json")
    p = exc.value.problem
    assert (p.file, p.record, p.field) == ("m.json", record, field)


def test_verify_without_a_manifest_is_a_clean_error(ws, capsys):
    assert cli(["verify"]) == 2
    err = capsys.readouterr().err
    assert "outputs.sha256.json" in err and "Traceback" not in err
