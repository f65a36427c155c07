"""The V1 dataset custody record (data/custody/<variant>.json), typed: the committed record's exact bytes,
what prepare's obtain() writes for the bundled sample, a failed download's record by hand, a bad field named."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from mnemetric.custody.dataset import (
    DatasetCustody,
    Variant,
    failed_record,
    obtain,
    read_dataset_custody,
    write_dataset_custody,
)
from mnemetric.errors import DownloadError, InputError

from tests.conftest import ROOT

COMMITTED = ROOT / "data" / "custody" / "sample.json"


def test_the_committed_record_reads_and_writes_back_to_its_bytes(tmp_path: Path):
    rec = read_dataset_custody(COMMITTED)
    assert rec.verified and rec.sha256 == rec.expected_sha256 and rec.path == "data/sample/longmemeval_sample.json"
    write_dataset_custody(tmp_path / "sample.json", rec)
    assert (tmp_path / "sample.json").read_bytes() == COMMITTED.read_bytes()


def test_obtain_writes_the_committed_record_for_the_bundled_sample(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data" / "sample").mkdir(parents=True)
    shutil.copy(ROOT / "data" / "sample" / "longmemeval_sample.json", tmp_path / "data" / "sample")
    variant = Variant.from_params(yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))["variant"])
    dest, rec = obtain(variant, Path("data/raw"), Path("data/downloads"), progress=False)
    assert dest.read_bytes() == (tmp_path / "data" / "sample" / "longmemeval_sample.json").read_bytes()
    assert rec == read_dataset_custody(COMMITTED)


def test_a_failed_download_record_by_hand(tmp_path: Path):
    variant = Variant("s", "huggingface", "s.json", "a" * 64, 10, "MIT", "org/ds", "rev1")
    rec = failed_record(variant, DownloadError("HTTP 404"))
    write_dataset_custody(tmp_path / "s.json", rec)
    assert json.loads((tmp_path / "s.json").read_text()) == {
        "variant": "s", "source": "huggingface", "url": variant.pin().url(), "file": "s.json", "raw_path": None,
        "sha256": None, "expected_sha256": "a" * 64, "size": None, "expected_size": 10, "license": "MIT",
        "verified": False, "error": "HTTP 404"}
    assert read_dataset_custody(tmp_path / "s.json") == rec


@pytest.mark.parametrize("change, field", [
    ({"source": "ftp"}, "source"),
    ({"verified": "yes"}, "verified"),
    ({"sha256": "b" * 64}, "sha256"),
    ({"size": "big"}, "size"),
    ({"verified_at": "2026-01-01"}, "verified_at"),
    ({"path": 3}, "path"),
])
def test_a_bad_field_is_named(change: dict, field: str):
    raw = json.loads(COMMITTED.read_text())
    with pytest.raises(InputError) as err:
        DatasetCustody.from_record(raw | change, file="c.json")
    assert (err.value.problem.file, err.value.problem.field) == ("c.json", field)
