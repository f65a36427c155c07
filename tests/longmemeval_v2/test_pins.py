"""Data pins: the values of upstream-v2-protocol.md §0 (copied here by hand) and what a run needs."""

from __future__ import annotations

import pytest

from mnemetric.errors import ConfigError
from mnemetric.longmemeval_v2.pins import DATA_PINS, files_for, is_trusted, require_pinned, unpinned

FACTS = {
    "questions.jsonl": "0a3ae5ebea938c24d7800e1e0b0828e08ae1646f939a53853b2b8cdc08e292b7",
    "trajectories.jsonl": "363cec9a8e87aa8d9101ce4e600aadbf7031d674056ebe4f969e8424abc5f3c6",
    "haystacks/lme_v2_small.json": "9b5301defb23a088a5f06e45ff8d5f35e569d78305a66d492046a9fff9b46593",
    "haystacks/lme_v2_medium.json": "4756d5126347f0d18f045bb6c47b08cb3b23e9db24386cc48a9b2879e7969b59",
    "SCHEMA.md": "0672cf47cf16c30365648770628b433076bb3f5b73edded673af7dd6d5f3246f",
}
WEB = "trajectory_screenshots/web_screenshots.tar.gz"
BASE = "trajectory_screenshots/enterprise_screenshots_base.tar.gz"
PATCH = "trajectory_screenshots/enterprise_screenshots_patch.tar.gz"
CORE = ["questions.jsonl", "trajectories.jsonl"]


def test_dataset_pin_and_file_hashes_match_the_facts():
    assert (DATA_PINS.repo, DATA_PINS.revision) == ("xiaowu0162/longmemeval-v2", "f152293e235517d504809563c833d7190b8c713b")
    assert DATA_PINS.license == "Apache-2.0"
    assert {f: DATA_PINS.get(f).sha256 for f in FACTS} == FACTS
    assert (DATA_PINS.get(WEB).size, DATA_PINS.get(BASE).size) == (2_562_302_847, 3_354_163_660)
    assert DATA_PINS.get("checksums.sha256").sha256 is None  # unknown, modelled explicitly
    assert all(DATA_PINS.get(a).sha256 is None and DATA_PINS.get(a).verify_with == "checksums.sha256"
               for a in (WEB, BASE, PATCH))


@pytest.mark.parametrize("tier, images, domain, expected", [
    ("small", False, None, CORE + ["haystacks/lme_v2_small.json"]),
    ("medium", False, "web", CORE + ["haystacks/lme_v2_medium.json"]),
    ("medium", True, None, CORE + ["haystacks/lme_v2_medium.json", "checksums.sha256", WEB, BASE, PATCH]),
    ("small", True, "web", CORE + ["haystacks/lme_v2_small.json", "checksums.sha256", WEB]),
    ("small", True, "enterprise", CORE + ["haystacks/lme_v2_small.json", "checksums.sha256", BASE, PATCH]),
])
def test_files_for_lists_exactly_what_a_run_needs(tier, images, domain, expected):
    assert [p.file for p in files_for(tier, images, domain=domain)] == expected


def test_only_the_patch_archive_is_optional():
    assert [p.file for p in files_for("small", True) if not p.required] == [PATCH]


@pytest.mark.parametrize("tier, domain", [("large", None), ("small", "mobile")])
def test_bad_tier_or_domain(tier, domain):
    with pytest.raises(ConfigError):
        files_for(tier, False, domain=domain)


def test_official_gate_without_images_passes():
    require_pinned(files_for("small", False))


def test_official_gate_fails_closed_on_unknown_checksums():
    needed = files_for("small", True, domain="web")
    assert [p.file for p in unpinned(needed)] == ["checksums.sha256", WEB]
    with pytest.raises(ConfigError) as err:
        require_pinned(needed)
    text = str(err.value)
    assert "no sha256 is known for: checksums.sha256" in text and WEB in text and "with_sha256" in text


def test_pinning_the_checksums_file_makes_the_archives_trusted():
    pins = DATA_PINS.with_sha256("checksums.sha256", "ab" * 32)
    require_pinned(files_for("medium", True, pins=pins), pins)
    assert is_trusted(pins.get(BASE), pins) and not is_trusted(DATA_PINS.get(BASE), DATA_PINS)
    assert DATA_PINS.get("checksums.sha256").sha256 is None  # the default table is unchanged


def test_with_sha256_refuses_what_is_not_a_sha256():
    for bad in ("AB" * 32, "ab" * 31, "zz" * 32):
        with pytest.raises(ConfigError):
            DATA_PINS.with_sha256("checksums.sha256", bad)
    with pytest.raises(ConfigError):
        DATA_PINS.with_sha256("nope.json", "ab" * 32)
