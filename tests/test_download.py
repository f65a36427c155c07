"""Download + custody against a real HTTP server on 127.0.0.1 (no internet)."""

from __future__ import annotations

import hashlib
import socket

import pytest

from mnemetric.download import Pin, fetch
from mnemetric.errors import DownloadError, IntegrityError
from tests.support.file_server import FileServer

PAYLOAD = b"[" + b",".join(b'{"i": %d}' % i for i in range(50_000)) + b"]"
SHA = hashlib.sha256(PAYLOAD).hexdigest()
PIN = Pin("owner/data", "0123abcd", "data.json", SHA, len(PAYLOAD))
PATH = "/datasets/owner/data/resolve/0123abcd/data.json"


@pytest.fixture()
def server():
    with FileServer() as srv:
        yield srv


def test_good_file_is_downloaded_and_verified(server, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    monkeypatch.setenv("HF_TOKEN", "hf_secret_token")
    server.files[PATH] = PAYLOAD
    out = fetch(PIN, tmp_path, progress=False)
    assert out == tmp_path / "data.json" and out.read_bytes() == PAYLOAD
    assert server.requests[0]["headers"]["Authorization"] == "Bearer hf_secret_token"
    assert not (tmp_path / "data.json.part").exists()


def test_redirect_is_followed(server, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    server.redirects[PATH] = "/cdn/blob"
    server.files["/cdn/blob"] = PAYLOAD
    assert fetch(PIN, tmp_path, progress=False).read_bytes() == PAYLOAD


def test_wrong_hash_is_refused_with_expected_and_actual(server, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    bad = PAYLOAD.replace(b'"i": 7}', b'"i": 8}')
    server.files[PATH] = bad
    with pytest.raises(IntegrityError) as err:
        fetch(Pin("owner/data", "0123abcd", "data.json", SHA), tmp_path, progress=False)  # size unpinned: hash decides
    text = str(err.value)
    assert f"expected sha256: {SHA}" in text
    assert f"actual sha256:   {hashlib.sha256(bad).hexdigest()}" in text
    assert list(tmp_path.iterdir()) == []  # nothing left that looks verified (or partial)


def test_wrong_size_is_refused(server, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    server.files[PATH] = PAYLOAD + b"\n"
    with pytest.raises(IntegrityError, match="size mismatch"):
        fetch(PIN, tmp_path, progress=False)


def test_interrupted_download_resumes_with_range(server, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    server.files[PATH] = PAYLOAD
    server.cut_after[PATH] = 100_000
    with pytest.raises(DownloadError):
        fetch(PIN, tmp_path, progress=False)
    part = tmp_path / "data.json.part"
    got = part.stat().st_size
    assert 0 < got < len(PAYLOAD)
    assert not (tmp_path / "data.json").exists()
    out = fetch(PIN, tmp_path, progress=False)
    assert out.read_bytes() == PAYLOAD
    assert server.requests[-1]["headers"]["Range"] == f"bytes={got}-"  # resumed, not restarted


def test_existing_verified_file_is_not_downloaded_again(server, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    (tmp_path / "data.json").write_bytes(PAYLOAD)
    fetch(PIN, tmp_path, progress=False)
    assert server.requests == []


def test_offline_error_says_how_to_get_the_file(tmp_path, monkeypatch):
    with socket.socket() as s:  # a port with nothing listening: connection refused, like no network
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    with pytest.raises(DownloadError) as err:
        fetch(PIN, tmp_path, progress=False)
    text = str(err.value)
    assert "could not download" in text and f"place it at {tmp_path / 'data.json'}" in text and SHA in text


def test_http_404_names_the_fix(server, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    with pytest.raises(DownloadError, match=r"(?s)HTTP 404.*check repo, revision and file"):
        fetch(PIN, tmp_path, progress=False)
