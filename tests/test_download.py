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


# ---------------------------------------------------------------- the one GET, and its small-file door

SMALL = b"def f():\n    return 'pinned'\n"


def test_fetch_small_reads_the_whole_body_without_a_token(server, monkeypatch):
    from mnemetric.download import fetch_small

    monkeypatch.setenv("HF_TOKEN", "hf_secret_token")
    server.files["/o/r/abc/src/x.py"] = SMALL
    assert fetch_small(server.url + "/o/r/abc/src/x.py", timeout=10, fix="F") == SMALL
    headers = server.requests[0]["headers"]
    assert headers["User-Agent"] == "mnemetric" and "Authorization" not in headers and "Range" not in headers


def test_fetch_small_follows_redirects(server):
    from mnemetric.download import fetch_small

    server.redirects["/a"] = "/cdn/b"
    server.files["/cdn/b"] = SMALL
    assert fetch_small(server.url + "/a", timeout=10, fix="F") == SMALL
    assert [r["path"] for r in server.requests] == ["/a", "/cdn/b"]


def test_fetch_small_http_status_is_a_download_error_ending_with_the_fix(server):
    from mnemetric.download import fetch_small

    url = server.url + "/missing.py"
    with pytest.raises(DownloadError) as info:
        fetch_small(url, timeout=10, fix="get the file by hand")
    assert str(info.value) == f"could not download {url}: HTTP 404\n  fix: get the file by hand"


def test_fetch_small_broken_transfer_and_refused_connection_are_download_errors(server):
    from mnemetric.download import fetch_small

    server.files["/cut.py"] = SMALL * 100
    server.cut_after["/cut.py"] = 10
    with pytest.raises(DownloadError, match=r"could not download .*/cut\.py: \w+.*\n  fix: F$"):
        fetch_small(server.url + "/cut.py", timeout=10, fix="F")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(DownloadError, match=r"ConnectError.*\n  fix: F$"):
        fetch_small(f"http://127.0.0.1:{port}/x.py", timeout=5, fix="F")


def test_pinned_obtain_downloads_through_the_one_get(server, tmp_path, monkeypatch):
    """upstream/pinned.py holds no HTTP client of its own, and what it sends is http_get's request."""
    from pathlib import Path

    import mnemetric.upstream.pinned as pinned

    assert "httpx" not in Path(pinned.__file__).read_text(encoding="utf-8")
    monkeypatch.setenv("HF_TOKEN", "hf_secret_token")
    pin = pinned.PinnedFile("owner/repo", "a" * 40, "src/x.py", hashlib.sha256(SMALL).hexdigest())
    server.files[f"/owner/repo/{'a' * 40}/src/x.py"] = SMALL
    assert pinned.obtain(pin, cache_dir=tmp_path, base_url=server.url).read_bytes() == SMALL
    headers = server.requests[0]["headers"]
    assert headers["User-Agent"] == "mnemetric" and "Authorization" not in headers
