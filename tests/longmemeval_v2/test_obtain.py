"""obtain(): downloads from a loopback file server, verification, custody, safe screenshot extraction.

The dataset served here is built in the test: the bundled sample's data files plus small screenshot
archives and a checksums.sha256, pinned by a DataPins table made from their real hashes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import tarfile

import pytest

from mnemetric.errors import ConfigError, DownloadError, IntegrityError, InputError
from mnemetric.longmemeval_v2.obtain import obtain, parse_checksums
from mnemetric.longmemeval_v2.pins import DATA_PINS, FilePin
from mnemetric.longmemeval_v2.screenshots import safe_extract
from tests.support.file_server import FileServer

from tests.conftest import ROOT

SAMPLE = ROOT / "data" / "sample-v2"
REV = DATA_PINS.revision
BASE_URL = f"/datasets/{DATA_PINS.repo}/resolve/{REV}/"
WEB, ENT_BASE, ENT_PATCH = (f"trajectory_screenshots/{n}.tar.gz" for n in
                            ("web_screenshots", "enterprise_screenshots_base", "enterprise_screenshots_patch"))


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def tar_gz(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


ARCHIVES = {
    WEB: tar_gz({"wa/0.png": b"web a", "wb/0.png": b"web b"}),
    ENT_BASE: tar_gz({"ea/0.png": b"base a", "eb/0.png": b"base b"}),
    ENT_PATCH: tar_gz({"eb/0.png": b"patch b", "ec/0.png": b"patch c"}),
}
DATA = {f: (SAMPLE / f).read_bytes() for f in ("questions.jsonl", "trajectories.jsonl", "haystacks/lme_v2_small.json")}
CHECKSUMS = "".join(f"{sha(b)}  ./{f}\n" for f, b in {**DATA, **ARCHIVES}.items()).encode()


def served_pins(checksums_sha: str | None = None):
    """The real pin table with the sha256 of the bytes served here (archives unpinned, as upstream)."""
    def one(p: FilePin) -> FilePin:
        if p.file in DATA:
            return dataclasses.replace(p, sha256=sha(DATA[p.file]), size=len(DATA[p.file]))
        if p.file in ARCHIVES:
            return dataclasses.replace(p, size=len(ARCHIVES[p.file]))
        return dataclasses.replace(p, sha256=checksums_sha) if p.file == "checksums.sha256" else p
    return dataclasses.replace(DATA_PINS, files=tuple(one(p) for p in DATA_PINS.files))




@pytest.fixture()
def server():
    with FileServer() as srv:
        for f, b in {**DATA, **ARCHIVES, "checksums.sha256": CHECKSUMS}.items():
            srv.files[BASE_URL + f] = b
        yield srv


def run(root, srv, **kw):
    kw = {"with_images": False, "official": False, "pins": served_pins(), "endpoint": srv.url, "progress": False} | kw
    return obtain(root, "small", **kw)


def test_text_only_run_gets_three_verified_files_and_a_clockless_custody(server, tmp_path):
    custody = tmp_path / "custody.json"
    record = run(tmp_path / "root", server, official=True, custody_path=custody)
    assert sorted(r["path"] for r in server.requests) == sorted(BASE_URL + f for f in DATA)
    for f, data in DATA.items():
        assert (tmp_path / "root" / f).read_bytes() == data  # haystacks/… (a path with "/") works
    entry = record["files"][2]
    assert entry == {
        "variant": "longmemeval-v2-small", "source": "huggingface",
        "url": f"{server.url}{BASE_URL}haystacks/lme_v2_small.json", "repo": DATA_PINS.repo, "revision": REV,
        "file": "haystacks/lme_v2_small.json", "sha256": sha(DATA["haystacks/lme_v2_small.json"]),
        "expected_sha256": sha(DATA["haystacks/lme_v2_small.json"]), "expected_from": "pin",
        "size": len(DATA["haystacks/lme_v2_small.json"]), "expected_size": len(DATA["haystacks/lme_v2_small.json"]),
        "license": "Apache-2.0", "verified": True, "verification": "sha256 matches the pin"}
    assert record["all_verified"] is True and "screenshots" not in record
    first = custody.read_bytes()
    assert json.loads(first) == record
    run(tmp_path / "root", server, official=True, custody_path=custody)
    assert custody.read_bytes() == first  # no clock time: same inputs, same bytes
    assert len(server.requests) == 3  # the verified files were not downloaded again


def test_official_run_with_images_fails_closed_before_any_download(server, tmp_path):
    with pytest.raises(ConfigError, match="checksums.sha256"):
        run(tmp_path / "root", server, with_images=True, official=True)
    assert server.requests == [] and not (tmp_path / "root").exists()


def test_non_official_run_with_images_records_the_unverified_chain(server, tmp_path):
    root = tmp_path / "root"
    record = run(root, server, with_images=True, domain="enterprise")
    by_file = {e["file"]: e for e in record["files"]}
    assert list(by_file) == [*DATA, "checksums.sha256", ENT_BASE, ENT_PATCH]
    assert (by_file["checksums.sha256"]["verified"], by_file["checksums.sha256"]["sha256"]) == (False, sha(CHECKSUMS))
    assert by_file[ENT_BASE]["expected_sha256"] == sha(ARCHIVES[ENT_BASE])
    assert (by_file[ENT_BASE]["expected_from"], by_file[ENT_BASE]["verified"]) == ("checksums.sha256", False)
    assert record["all_verified"] is False
    assert record["screenshots"] == [
        {"archive": ENT_BASE, "folder": "trajectory_screenshots/enterprise_screenshots_base", "replaces_existing": False,
         "trajectory_folders": 2},
        {"archive": ENT_PATCH, "folder": "trajectory_screenshots/enterprise_screenshots_patch", "replaces_existing": True,
         "trajectory_folders": 2}]
    shots = root / "screenshots"
    assert sorted(p.name for p in shots.iterdir()) == ["ea", "eb", "ec"]
    assert (shots / "ea/0.png").read_bytes() == b"base a"
    assert (shots / "eb/0.png").read_bytes() == b"patch b"  # the patch replaces the base folder whole
    assert (shots / "eb").is_symlink() and os.readlink(shots / "eb") == "../trajectory_screenshots/enterprise_screenshots_patch/eb"
    assert WEB not in by_file and not (root / WEB).exists()


def test_pinned_checksums_make_an_official_run_with_images_verified(server, tmp_path):
    pins = served_pins(checksums_sha=sha(CHECKSUMS))
    record = run(tmp_path / "root", server, with_images=True, official=True, pins=pins, link_mode="copy")
    assert record["all_verified"] is True
    web = next(e for e in record["files"] if e["file"] == WEB)
    assert web["verification"] == "sha256 matches checksums.sha256, which matches its pin"
    wa = tmp_path / "root/screenshots/wa"
    assert wa.is_dir() and not wa.is_symlink() and (wa / "0.png").read_bytes() == b"web a"


def test_interrupted_download_resumes(server, tmp_path):
    path = BASE_URL + "trajectories.jsonl"
    server.cut_after[path] = 5000
    with pytest.raises(DownloadError):
        run(tmp_path / "root", server)
    part = tmp_path / "root/trajectories.jsonl.part"
    got = part.stat().st_size
    assert 0 < got < len(DATA["trajectories.jsonl"])
    run(tmp_path / "root", server)
    assert (tmp_path / "root/trajectories.jsonl").read_bytes() == DATA["trajectories.jsonl"]
    assert [r["headers"].get("Range") for r in server.requests if r["path"] == path][-1] == f"bytes={got}-"


def test_a_hash_mismatch_leaves_nothing_verified(server, tmp_path):
    server.files[BASE_URL + "questions.jsonl"] = DATA["questions.jsonl"].replace(b"Meadow", b"Meadoe")
    with pytest.raises(IntegrityError, match="sha256 mismatch"):
        run(tmp_path / "root", server)
    assert not (tmp_path / "root/questions.jsonl").exists()
    assert not (tmp_path / "root/questions.jsonl.part").exists()


def test_an_existing_file_with_the_wrong_hash_is_refused(server, tmp_path):
    (tmp_path / "root").mkdir()
    (tmp_path / "root/questions.jsonl").write_bytes(b"{}\n")
    with pytest.raises(IntegrityError):
        run(tmp_path / "root", server)
    assert server.requests == []


def test_an_archive_that_does_not_match_the_checksums_file_is_refused(server, tmp_path):
    server.files[BASE_URL + WEB] = tar_gz({"wa/0.png": b"tampered"})
    pins = dataclasses.replace(served_pins(), files=tuple(dataclasses.replace(p, size=None) if p.file == WEB else p
                                                        for p in served_pins().files))
    with pytest.raises(IntegrityError, match="sha256 mismatch"):
        run(tmp_path / "root", server, with_images=True, domain="web", pins=pins)
    assert not (tmp_path / "root/screenshots").exists()


def test_required_archive_missing_from_the_checksums_file(server, tmp_path):
    server.files[BASE_URL + "checksums.sha256"] = b"".join(
        line + b"\n" for line in CHECKSUMS.splitlines() if b"enterprise_screenshots" not in line)
    with pytest.raises(IntegrityError, match="lists no sha256 for trajectory_screenshots/enterprise_screenshots_base"):
        run(tmp_path / "root", server, with_images=True, domain="enterprise")


def test_an_unlisted_patch_archive_is_skipped(server, tmp_path):
    server.files[BASE_URL + "checksums.sha256"] = b"".join(
        line + b"\n" for line in CHECKSUMS.splitlines() if b"_patch" not in line)
    record = run(tmp_path / "root", server, with_images=True, domain="enterprise")
    assert ENT_PATCH not in {e["file"] for e in record["files"]}
    assert (tmp_path / "root/screenshots/eb/0.png").read_bytes() == b"base b"


def test_web_and_base_never_replace_and_extraction_happens_only_if_absent(server, tmp_path):
    root = tmp_path / "root"
    (root / "screenshots/wa").mkdir(parents=True)
    (root / "screenshots/wa/mine.png").write_bytes(b"mine")
    (root / "trajectory_screenshots/enterprise_screenshots_base/old").mkdir(parents=True)
    run(root, server, with_images=True)
    assert sorted(p.name for p in (root / "screenshots/wa").iterdir()) == ["mine.png"]  # not replaced by web
    assert (root / "screenshots/wb/0.png").read_bytes() == b"web b"
    assert not (root / "screenshots/ea").exists()  # base folder existed: its archive was not extracted
    assert (root / "screenshots/old").is_symlink()
    assert (root / "screenshots/eb/0.png").read_bytes() == b"patch b"


# ------------------------------------------------------------------ safe extraction


def special(name: str, kind: bytes, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


@pytest.mark.parametrize("member, says", [
    (tarfile.TarInfo("../evil.png"), "'..'"),
    (tarfile.TarInfo("/tmp/abs.png"), "absolute"),
    (tarfile.TarInfo("t1/../../evil.png"), "'..'"),
    (special("t1/up", tarfile.SYMTYPE, "../../outside"), "symbolic link"),
    (special("t1/etc", tarfile.SYMTYPE, "/etc/passwd"), "symbolic link"),
    (special("t1/hard", tarfile.LNKTYPE, "../outside"), "hard link"),
    (special("t1/tty", tarfile.CHRTYPE), "special file"),
    (special("t1/disk", tarfile.BLKTYPE), "special file"),
    (special("t1/pipe", tarfile.FIFOTYPE), "special file"),
])
def test_unsafe_archive_members_are_refused_and_nothing_is_left(tmp_path, member, says):
    archive = tmp_path / "bad.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        ok = tarfile.TarInfo("t1/0.png")
        ok.size = 3
        tar.addfile(ok, io.BytesIO(b"png"))
        tar.addfile(member, io.BytesIO(b"x" * member.size))
    dest = tmp_path / "out" / "web_screenshots"
    with pytest.raises(InputError, match=says) as err:
        safe_extract(archive, dest)
    assert err.value.problem.record == f"member {member.name!r}"
    assert list((tmp_path / "out").iterdir()) == []  # neither the folder nor a temporary one
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.tar.gz", "out"]


def test_links_that_stay_inside_are_extracted(tmp_path):
    archive = tmp_path / "ok.tar"
    with tarfile.open(archive, "w") as tar:
        info = tarfile.TarInfo("t1/0.png")
        info.size = 3
        tar.addfile(info, io.BytesIO(b"png"))
        tar.addfile(special("t1/latest.png", tarfile.SYMTYPE, "0.png"))
        tar.addfile(special("t2/copy.png", tarfile.LNKTYPE, "t1/0.png"))
    assert safe_extract(archive, tmp_path / "x") == 3
    assert (tmp_path / "x/t1/latest.png").read_bytes() == b"png" == (tmp_path / "x/t2/copy.png").read_bytes()


def test_a_cut_off_archive_leaves_no_folder(tmp_path):
    archive = tmp_path / "cut.tar.gz"
    archive.write_bytes(tar_gz({f"t{i}/0.png": os.urandom(2000) for i in range(20)})[:-3000])
    with pytest.raises(InputError, match="cannot be extracted"):
        safe_extract(archive, tmp_path / "out" / "dest")
    assert list((tmp_path / "out").iterdir()) == []


def test_a_stale_temporary_folder_is_cleared(server, tmp_path):
    root = tmp_path / "root"
    stale = root / "trajectory_screenshots/.web_screenshots.abc.partial"
    stale.mkdir(parents=True)
    run(root, server, with_images=True, domain="web")
    assert not stale.exists() and (root / "screenshots/wa/0.png").read_bytes() == b"web a"


def test_parse_checksums(tmp_path):
    a, b = "a" * 64, "B" * 64
    (tmp_path / "c").write_text(f"# list\n{a}  ./x/y.json\n\n{b} *z.tar.gz\n")
    assert parse_checksums(tmp_path / "c") == {"x/y.json": a, "z.tar.gz": "b" * 64}
    (tmp_path / "d").write_text(f"{a}  ok\nnot a line\n")
    with pytest.raises(InputError) as err:
        parse_checksums(tmp_path / "d")
    assert err.value.problem.record == "line 2"


# --------------------------------------------------------------------------- prepare(): stage v2_prepare's work


def tier_settings(root, **kw):
    """conf/v2/small.yaml's data keys (the components do not matter to prepare)."""
    return {"name": "small", "source": "huggingface", "repo": DATA_PINS.repo, "revision": REV,
            "data_root": str(root), "haystack": "small", "domains": ["web", "enterprise"], "images": True,
            "official": True, "checksums_sha256": None} | kw


def test_prepare_official_tier_with_images_fails_closed_naming_the_file_and_the_ways_on(server, tmp_path):
    from mnemetric.longmemeval_v2.obtain import prepare

    custody = tmp_path / "custody" / "v2-small.json"
    with pytest.raises(ConfigError) as err:
        prepare(tier_settings(tmp_path / "root"), custody, pins=served_pins(), endpoint=server.url)
    text = str(err.value)
    assert "no sha256 is known for: checksums.sha256" in text
    assert WEB in text and ENT_BASE in text  # the files that cannot be verified, by name
    assert "-S v2.images=false" in text and "-S v2.checksums_sha256=" in text and "-S v2.official=false" in text
    assert server.requests == [] and not (tmp_path / "root").exists() and not custody.exists()


def test_prepare_official_tier_without_images_downloads_only_the_text_files(server, tmp_path):
    from mnemetric.longmemeval_v2.obtain import is_verified, prepare

    custody = tmp_path / "v2-small.json"
    record = prepare(tier_settings(tmp_path / "root", images=False), custody, pins=served_pins(), endpoint=server.url)
    assert sorted(r["path"] for r in server.requests) == sorted(BASE_URL + f for f in DATA)
    assert json.loads(custody.read_text()) == record and is_verified(record)
    assert [e["file"] for e in record["files"]] == list(DATA) and record["domain"] is None


def test_prepare_resumes_a_cut_download(server, tmp_path):
    from mnemetric.longmemeval_v2.obtain import prepare

    traj = BASE_URL + "trajectories.jsonl"
    server.cut_after[traj] = 100
    settings = tier_settings(tmp_path / "root", images=False)
    with pytest.raises(DownloadError):
        prepare(settings, tmp_path / "c.json", pins=served_pins(), endpoint=server.url)
    assert (tmp_path / "root" / "trajectories.jsonl.part").stat().st_size == 100
    prepare(settings, tmp_path / "c.json", pins=served_pins(), endpoint=server.url)
    ranges = [r["headers"].get("Range") for r in server.requests if r["path"] == traj]
    assert ranges == [None, "bytes=100-"]
    assert (tmp_path / "root" / "trajectories.jsonl").read_bytes() == DATA["trajectories.jsonl"]


def test_prepare_with_a_pinned_checksums_file_verifies_the_archives(server, tmp_path):
    from mnemetric.longmemeval_v2.obtain import is_verified, prepare

    settings = tier_settings(tmp_path / "root", checksums_sha256=sha(CHECKSUMS), domains=["web"])
    record = prepare(settings, tmp_path / "c.json", pins=served_pins(), endpoint=server.url)
    assert is_verified(record) and record["domain"] == "web"
    assert [e["file"] for e in record["files"]] == [*DATA, "checksums.sha256", WEB]
    assert next(e for e in record["files"] if e["file"] == "checksums.sha256")["expected_from"] == "pin"


@pytest.mark.parametrize("key, value", [("repo", "someone/else"), ("revision", "0" * 40)])
def test_prepare_refuses_data_it_has_no_pins_for(tmp_path, key, value):
    from mnemetric.longmemeval_v2.obtain import prepare

    with pytest.raises(ConfigError, match=f"v2.{key}: "):
        prepare(tier_settings(tmp_path / "root", **{key: value}), tmp_path / "c.json")


def _sample_copy(tmp_path):
    import shutil

    from tests.conftest import ROOT

    root = tmp_path / "sample"
    shutil.copytree(ROOT / "data" / "sample-v2", root)
    return root


def test_prepare_bundled_records_every_file_of_the_root_against_its_sha256sums(tmp_path):
    from mnemetric.longmemeval_v2.obtain import is_verified, prepare

    root = _sample_copy(tmp_path)
    settings = {"name": "sample", "source": "bundled", "data_root": str(root), "haystack": "small", "images": True}
    record = prepare(settings, tmp_path / "c.json")
    files = {f["file"]: f for f in record["files"]}
    assert set(files) == {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}
    q = (root / "questions.jsonl").read_bytes()
    assert files["questions.jsonl"] == {"file": "questions.jsonl", "sha256": sha(q), "size": len(q),
                                        "expected_sha256": sha(q), "verified": True}
    assert files["SHA256SUMS"]["expected_sha256"] is None  # the manifest itself
    assert record["source"] == "bundled" and record["data_root"] == root.as_posix() and not is_verified(record)
    assert json.loads((tmp_path / "c.json").read_text()) == record


def test_an_edited_bundled_file_is_recorded_as_not_matching_sha256sums(tmp_path):
    from mnemetric.longmemeval_v2.data_custody import verify_root
    from mnemetric.longmemeval_v2.obtain import prepare

    root = _sample_copy(tmp_path)
    text = (root / "questions.jsonl").read_text()
    (root / "questions.jsonl").write_text(text.replace('"answer": "', '"answer": "X', 1))
    prepare({"name": "sample", "source": "bundled", "data_root": str(root)}, tmp_path / "c.json")
    check = verify_root(tmp_path / "c.json", root)
    assert check.unverified == ("questions.jsonl",) and not check.sha256_verified
    assert check.reasons[0].startswith("data file questions.jsonl does not match SHA256SUMS")


def test_a_failed_prepare_never_replaces_a_record(tmp_path):
    """A bad data root (not a V2 root, or another root than the record's) leaves the record byte for byte."""
    from mnemetric.errors import MnemetricError
    from mnemetric.longmemeval_v2.obtain import prepare

    root = _sample_copy(tmp_path)
    custody = tmp_path / "c.json"
    prepare({"name": "sample", "source": "bundled", "data_root": str(root)}, custody)
    before = custody.read_bytes()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "questions.jsonl").write_text('{"id": "q"}\n')
    with pytest.raises(ConfigError, match="is the custody record of .*sample, not of .*other") as err:
        prepare({"name": "sample", "source": "bundled", "data_root": str(tmp_path / "other")}, custody)
    assert "-S v2.name=" in str(err.value)
    fresh = tmp_path / "fresh.json"
    with pytest.raises(MnemetricError):  # not a valid root: validated before anything is written
        prepare({"name": "x", "source": "bundled", "data_root": str(tmp_path / "other")}, fresh)
    assert custody.read_bytes() == before and not fresh.exists()


def test_prepare_names_a_bad_source_and_a_missing_bundled_root(tmp_path):
    from mnemetric.longmemeval_v2.obtain import prepare

    with pytest.raises(ConfigError, match="v2.source: 'ftp'"):
        prepare({"name": "x", "source": "ftp", "data_root": str(tmp_path)}, tmp_path / "c.json")
    with pytest.raises(ConfigError, match="v2.data_root: .* is not a folder"):
        prepare({"name": "x", "source": "bundled", "data_root": str(tmp_path / "nope")}, tmp_path / "c.json")


QWEN = {"_target_": "mnemetric.longmemeval_v2.tokens.load_official_counter", "name": "qwen3.5-9b-processor"}


def _counter_packages() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("transformers", "PIL", "torch"))


@pytest.mark.skipif(not _counter_packages(), reason="the official counter's packages are not installed")
def test_prepare_checks_the_official_counter_before_any_download(server, tmp_path):
    """The processor files missing from the counter's folder: refused, each named, nothing asked of the server."""
    from mnemetric.longmemeval_v2.obtain import prepare

    folder = tmp_path / "processor"
    folder.mkdir()
    (folder / "tokenizer.json").write_text("{}")
    settings = tier_settings(tmp_path / "root", images=False, token_counter={**QWEN, "path": str(folder)})
    with pytest.raises(ConfigError) as err:
        prepare(settings, tmp_path / "c.json", pins=served_pins(), endpoint=server.url)
    text = str(err.value)
    assert "missing tokenizer_config.json, preprocessor_config.json, chat_template.jinja" in text
    assert "checked before any download" in text and str(folder) in text
    assert "pip install 'mnemetric[qwen-counter]'" in text and "-S v2/token_counter=o200k" in text
    assert server.requests == [] and not (tmp_path / "root").exists()
    for name in ("tokenizer_config.json", "preprocessor_config.json", "chat_template.jinja"):
        (folder / name).write_text("{}")
    prepare(settings, tmp_path / "c.json", pins=served_pins(), endpoint=server.url)  # the files at hand: downloaded
    assert sorted(r["path"] for r in server.requests) == sorted(BASE_URL + f for f in DATA)


def test_prepare_names_the_extra_when_the_counter_packages_are_missing(server, tmp_path, monkeypatch):
    import importlib.util

    from mnemetric.longmemeval_v2.obtain import prepare

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in ("PIL", "torch") else real(name, *a))
    with pytest.raises(ConfigError) as err:
        prepare(tier_settings(tmp_path / "root", images=False, token_counter=QWEN), tmp_path / "c.json",
                pins=served_pins(), endpoint=server.url)
    assert "needs pillow, torch, not installed (the 'qwen-counter' extra)" in str(err.value)
    assert server.requests == []


def test_prepare_with_a_counter_path_that_is_not_a_folder(server, tmp_path):
    from mnemetric.longmemeval_v2.obtain import prepare

    settings = tier_settings(tmp_path / "root", images=False, token_counter={**QWEN, "path": str(tmp_path / "nope")})
    with pytest.raises(ConfigError, match="v2.token_counter.path: .*nope is not a folder"):
        prepare(settings, tmp_path / "c.json", pins=served_pins(), endpoint=server.url)
    assert server.requests == []
