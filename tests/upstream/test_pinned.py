"""The pinned-file service against real files and a real HTTP server on 127.0.0.1 (no internet)."""

from __future__ import annotations

import hashlib
import socket

import pytest

from mnemetric.errors import ConfigError, DownloadError, IntegrityError
from mnemetric.upstream import (
    REPORTED,
    VERIFIED,
    KnownPin,
    KnownPins,
    PinnedFile,
    checkout_from_env,
    env_checkout,
    obtain,
)
from tests.support.file_server import FileServer

BODY = b"# a small upstream-like source file\nX = 'made-up bytes for the test'\n"
SHA = hashlib.sha256(BODY).hexdigest()
OTHER_SHA = hashlib.sha256(b"other bytes").hexdigest()
REV = "0123456789abcdef0123456789abcdef01234567"
PIN = PinnedFile("xiaowu0162/LongMemEval-V2", REV, "evaluation/tool.py", SHA)
URL_PATH = f"/xiaowu0162/LongMemEval-V2/{REV}/evaluation/tool.py"


def _checkout(tmp_path, body: bytes = BODY):
    root = tmp_path / "LongMemEval-V2"
    (root / "evaluation").mkdir(parents=True)
    (root / "evaluation" / "tool.py").write_bytes(body)
    return root


# ---------------------------------------------------------------- the pin itself


def test_url_and_cache_layout(tmp_path):
    assert PIN.url("http://host:1/") == f"http://host:1{URL_PATH}"
    assert PIN.url() == f"https://raw.githubusercontent.com{URL_PATH}"
    assert PIN.cache_path(tmp_path) == tmp_path / "upstream" / SHA / "tool.py"
    assert PIN.name == "tool.py"


@pytest.mark.parametrize("kwargs, word", [
    ({"repo": "no-slash"}, "owner/name"),
    ({"revision": "main"}, "hex commit"),
    ({"path": "../etc/passwd"}, "relative path"),
    ({"path": "/abs/file.py"}, "relative path"),
    ({"sha256": SHA.upper()}, "lower-case hex"),
    ({"sha256": SHA[:-1]}, "64"),
])
def test_bad_pins_are_config_errors(kwargs, word):
    fields = {"repo": PIN.repo, "revision": PIN.revision, "path": PIN.path, "sha256": PIN.sha256} | kwargs
    with pytest.raises(ConfigError, match=word):
        PinnedFile(**fields)


def test_pins_are_frozen():
    with pytest.raises(AttributeError):
        PIN.sha256 = OTHER_SHA  # type: ignore[misc]


# ---------------------------------------------------------------- the checkout


def test_checkout_is_used_verified_and_not_copied(tmp_path):
    root = _checkout(tmp_path)
    cache = tmp_path / "cache"
    assert obtain(PIN, checkout_dir=root, cache_dir=cache, download=False) == root / "evaluation" / "tool.py"
    assert not cache.exists()


def test_checkout_with_other_bytes_is_refused_with_every_detail(tmp_path):
    root = _checkout(tmp_path, b"tampered\n")
    with pytest.raises(IntegrityError) as info:
        obtain(PIN, checkout_dir=root, cache_dir=tmp_path / "cache")
    message = str(info.value)
    actual = hashlib.sha256(b"tampered\n").hexdigest()
    for part in (PIN.repo, REV, PIN.path, SHA, actual, str(root / "evaluation" / "tool.py"),
                 f"git -C {root} checkout {REV}", "MNEMETRIC_LONGMEMEVAL_V2_DIR"):
        assert part in message, part


def test_mismatch_names_the_known_revision_the_bytes_belong_to(tmp_path):
    root = _checkout(tmp_path, b"old bytes\n")
    old = PinnedFile(PIN.repo, "fedcba9876543210fedcba9876543210fedcba98", PIN.path,
                     hashlib.sha256(b"old bytes\n").hexdigest())
    known = KnownPins([KnownPin(PIN, VERIFIED), KnownPin(old, REPORTED)])
    with pytest.raises(IntegrityError, match=f"revision {old.revision} \\(reported\\)"):
        obtain(PIN, checkout_dir=root, cache_dir=tmp_path / "cache", known=known)


def test_checkout_without_the_file_says_how_to_fix(tmp_path):
    with pytest.raises(ConfigError) as info:
        obtain(PIN, checkout_dir=tmp_path / "nowhere", cache_dir=tmp_path / "cache")
    message = str(info.value)
    assert "file not found" in message and "MNEMETRIC_LONGMEMEVAL_V2_DIR" in message
    assert f"git clone https://github.com/{PIN.repo} && git -C LongMemEval-V2 checkout {REV}" in message
    assert "network" in message


def test_a_checkout_never_falls_back_to_the_cache(tmp_path):
    cache = tmp_path / "cache"
    PIN.cache_path(cache).parent.mkdir(parents=True)
    PIN.cache_path(cache).write_bytes(BODY)
    with pytest.raises(ConfigError, match="file not found"):
        obtain(PIN, checkout_dir=tmp_path / "empty", cache_dir=cache)


# ---------------------------------------------------------------- cache and download


def test_download_is_cached_atomically_and_reused(tmp_path):
    cache = tmp_path / "cache"
    with FileServer() as server:
        server.files[URL_PATH] = BODY
        first = obtain(PIN, cache_dir=cache, base_url=server.url)
        second = obtain(PIN, cache_dir=cache, base_url=server.url)
        assert [r["path"] for r in server.requests] == [URL_PATH]  # the second came from the cache
    assert first == second == cache / "upstream" / SHA / "tool.py"
    assert first.read_bytes() == BODY
    assert sorted(p.name for p in first.parent.iterdir()) == ["tool.py"]  # no temporary file left


def test_cached_copy_needs_no_network(tmp_path):
    cache = tmp_path / "cache"
    PIN.cache_path(cache).parent.mkdir(parents=True)
    PIN.cache_path(cache).write_bytes(BODY)
    assert obtain(PIN, cache_dir=cache, download=False) == PIN.cache_path(cache)


def test_corrupted_cache_is_refused_and_says_delete(tmp_path):
    cache = tmp_path / "cache"
    PIN.cache_path(cache).parent.mkdir(parents=True)
    PIN.cache_path(cache).write_bytes(BODY + b"# tampered\n")
    with pytest.raises(IntegrityError, match="sha256 mismatch") as info:
        obtain(PIN, cache_dir=cache, download=False)
    assert f"delete {PIN.cache_path(cache)}" in str(info.value)


def test_download_with_other_bytes_stores_nothing(tmp_path):
    cache = tmp_path / "cache"
    with FileServer() as server:
        server.files[URL_PATH] = b"not the pinned bytes"
        with pytest.raises(IntegrityError) as info:
            obtain(PIN, cache_dir=cache, base_url=server.url)
    message = str(info.value)
    assert SHA in message and hashlib.sha256(b"not the pinned bytes").hexdigest() in message
    assert "nothing was stored" in message and REV in message and PIN.repo in message
    assert not PIN.cache_path(cache).exists()
    assert not cache.exists() or not any(cache.rglob("*.py*"))


def test_download_follows_redirects(tmp_path):
    with FileServer() as server:
        server.redirects[URL_PATH] = "/cdn/blob"
        server.files["/cdn/blob"] = BODY
        assert obtain(PIN, cache_dir=tmp_path / "c", base_url=server.url).read_bytes() == BODY


def test_http_error_is_a_download_error_with_the_fix(tmp_path):
    with FileServer() as server:
        with pytest.raises(DownloadError, match="HTTP 404") as info:
            obtain(PIN, cache_dir=tmp_path / "c", base_url=server.url)
    assert "MNEMETRIC_LONGMEMEVAL_V2_DIR" in str(info.value) and URL_PATH in str(info.value)


def test_offline_download_disabled_says_how_to_fix(tmp_path):
    with pytest.raises(DownloadError) as info:
        obtain(PIN, cache_dir=tmp_path / "cache", download=False)
    message = str(info.value)
    for part in ("MNEMETRIC_LONGMEMEVAL_V2_DIR", REV, PIN.path, PIN.repo, "downloading is disabled",
                 "git clone", "network", str(PIN.cache_path(tmp_path / "cache"))):
        assert part in message, part


def test_unreachable_server_is_a_download_error(tmp_path):
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(DownloadError, match="could not download") as info:
        obtain(PIN, cache_dir=tmp_path / "cache", base_url=f"http://127.0.0.1:{port}", timeout=5.0)
    assert "network" in str(info.value) and "MNEMETRIC_LONGMEMEVAL_V2_DIR" in str(info.value)


def test_repo_without_env_var_names_checkout_dir(tmp_path):
    pin = PinnedFile("someone/tool", REV, "a.py", SHA)
    with pytest.raises(DownloadError) as info:
        obtain(pin, cache_dir=tmp_path, download=False)
    assert "pass checkout_dir = a checkout" in str(info.value) and "git -C tool checkout" in str(info.value)


def test_v1_layout_is_the_same_as_the_judge_cache(tmp_path):
    """What the V1 judge would pass: its cache path and URL are unchanged."""
    rev = "9e0b455f4ef0e2ab8f2e582289761153549043fc"
    v1 = PinnedFile("xiaowu0162/LongMemEval", rev, "src/evaluation/evaluate_qa.py", SHA)
    assert v1.cache_path(tmp_path) == tmp_path / "upstream" / SHA / "evaluate_qa.py"
    assert v1.url("http://h") == f"http://h/xiaowu0162/LongMemEval/{rev}/src/evaluation/evaluate_qa.py"
    with pytest.raises(DownloadError, match="MNEMETRIC_LONGMEMEVAL_DIR"):
        obtain(v1, cache_dir=tmp_path, download=False)


# ---------------------------------------------------------------- env vars


def test_env_var_mapping():
    assert env_checkout("xiaowu0162/LongMemEval") == "MNEMETRIC_LONGMEMEVAL_DIR"
    assert env_checkout("xiaowu0162/LongMemEval-V2") == "MNEMETRIC_LONGMEMEVAL_V2_DIR"
    assert env_checkout("xiaowu0162/longmemeval-v2") is None  # exact spelling only
    assert env_checkout("other/repo") is None


def test_checkout_from_env():
    env = {"MNEMETRIC_LONGMEMEVAL_V2_DIR": "/src/v2", "MNEMETRIC_LONGMEMEVAL_DIR": ""}
    assert checkout_from_env("xiaowu0162/LongMemEval-V2", env) == "/src/v2"
    assert checkout_from_env("xiaowu0162/LongMemEval", env) is None  # set but empty
    assert checkout_from_env("other/repo", env) is None


def test_checkout_from_env_reads_the_process_environment(monkeypatch):
    monkeypatch.setenv("MNEMETRIC_LONGMEMEVAL_V2_DIR", "/x/y")
    assert checkout_from_env("xiaowu0162/LongMemEval-V2") == "/x/y"


# ---------------------------------------------------------------- the table of known pins


REV2 = "fedcba9876543210fedcba9876543210fedcba98"
TABLE = KnownPins([
    KnownPin(PIN, VERIFIED, "hashed here"),
    KnownPin(PinnedFile(PIN.repo, REV2, PIN.path, OTHER_SHA), REPORTED, "a lock file"),
    KnownPin(PinnedFile(PIN.repo, REV2, "evaluation/other.py", SHA), VERIFIED),
])


def test_lookup_by_full_or_short_revision():
    assert TABLE.pin(PIN.repo, REV, PIN.path) == PIN
    assert TABLE.pin(PIN.repo, REV[:7], PIN.path) == PIN
    assert TABLE.get(PIN.repo, REV[:6], PIN.path) is None  # too short to trust
    assert TABLE.get(PIN.repo, REV, "evaluation/other.py") is None
    assert len(TABLE) == 3


def test_unknown_revision_lists_the_known_ones():
    with pytest.raises(ConfigError) as info:
        TABLE.pin(PIN.repo, "abcdef0", PIN.path)
    assert f"{REV} (verified)" in str(info.value) and f"{REV2} (reported)" in str(info.value)


def test_status_needs_the_same_bytes():
    assert TABLE.status_of(PIN) == VERIFIED and TABLE.is_verified(PIN)
    reported = TABLE.pin(PIN.repo, REV2, PIN.path)
    assert TABLE.status_of(reported) == REPORTED and not TABLE.is_verified(reported)
    assert TABLE.status_of(PinnedFile(PIN.repo, REV, PIN.path, OTHER_SHA)) is None
    assert TABLE.status_of(PinnedFile(PIN.repo, "1" * 40, PIN.path, SHA)) is None


def test_matching_and_verified_hashes():
    assert [r.file.revision for r in TABLE.matching(PIN.repo, PIN.path, OTHER_SHA)] == [REV2]
    assert TABLE.verified_sha256s(PIN.repo, PIN.path) == {SHA}


def test_extended_adds_rows_and_conflicts_are_refused():
    user_pin = PinnedFile(PIN.repo, "2" * 40, PIN.path, SHA)
    bigger = TABLE.extended([KnownPin(user_pin, VERIFIED, "checked by the user")])
    assert len(bigger) == 4 and len(TABLE) == 3
    with pytest.raises(ConfigError, match="two different rows"):
        TABLE.extended([KnownPin(PinnedFile(PIN.repo, REV, PIN.path, OTHER_SHA), VERIFIED)])
    with pytest.raises(ConfigError, match="status"):
        KnownPin(PIN, "trusted")
