"""The bundled V2 sample (data/sample-v2): byte-identical regeneration, validity, coverage, haystacks.

Coverage lists, PNG structure and the answer search are written here independently of the generator.
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
import zlib
from itertools import combinations
from urllib.parse import urlparse

import pytest

from mnemetric.longmemeval_v2.sample import SEED, generate_sample, main
from mnemetric.longmemeval_v2.validate import validate_root

from tests.conftest import ROOT

SAMPLE = ROOT / "data" / "sample-v2"
TYPES = {"static-environment", "dynamic-environment", "procedure", "errors-gotchas",
         "static-environment-abs", "dynamic-environment-abs", "procedure-abs"}
CHECKERS = {"norm_phrase_set_match", "norm_phrase_set_match_ordered", "mc_choice_match", "mc_choice_set_match",
            "llm_abstention_checker", "llm_gotchas_checker"}


def committed() -> dict[str, bytes]:
    return {p.relative_to(SAMPLE).as_posix(): p.read_bytes() for p in sorted(SAMPLE.rglob("*")) if p.is_file()}


def jsonl(name: str) -> list[dict]:
    return [json.loads(line) for line in (SAMPLE / name).read_text().splitlines()]


@pytest.fixture(scope="module")
def questions() -> list[dict]:
    return jsonl("questions.jsonl")


@pytest.fixture(scope="module")
def trajectories() -> dict[str, dict]:
    return {t["id"]: t for t in jsonl("trajectories.jsonl")}


def test_the_committed_sample_is_exactly_what_the_generator_writes(tmp_path):
    assert generate_sample() == generate_sample(SEED)  # deterministic in one process
    assert main(["--out", str(tmp_path / "out")]) == 0
    fresh = {p.relative_to(tmp_path / "out").as_posix(): p.read_bytes()
             for p in sorted((tmp_path / "out").rglob("*")) if p.is_file()}
    assert fresh == committed()
    assert generate_sample(SEED + 1) != generate_sample()  # the seed matters


def test_the_sample_validates():
    for tier in ("small", "medium"):
        assert validate_root(SAMPLE, tier, check_images=True) == []


def test_every_question_type_and_checker_is_covered(questions):
    assert {q["question_type"] for q in questions} == TYPES
    assert {q["eval_function"].split("|")[0] for q in questions} == CHECKERS
    assert {q["domain"] for q in questions} == {"web", "enterprise"}
    flawed = [q for q in questions if q["eval_function"] == "llm_abstention_checker"]
    assert flawed and all(q["question_type"].endswith("-abs") for q in flawed)
    assert any(q["question_type"].endswith("-abs") and not q["eval_function"].startswith("llm_") for q in questions)
    with_options = [q["eval_function"] for q in questions if "=" in q["eval_function"]]
    assert 'norm_phrase_set_match|separators=[";"]' in with_options and len(with_options) >= 3
    images = [q["image"] for q in questions if q["image"]]
    assert images and all((SAMPLE / i).is_file() for i in images)


def test_shared_and_per_question_haystacks(questions, trajectories):
    small = json.loads((SAMPLE / "haystacks/lme_v2_small.json").read_text())
    medium = json.loads((SAMPLE / "haystacks/lme_v2_medium.json").read_text())
    assert set(small) == set(medium) == {q["id"] for q in questions}
    for domain in ("web", "enterprise"):
        ids = [q["id"] for q in questions if q["domain"] == domain]
        assert all(small[i] == small[ids[0]] for i in ids)  # shared: one ordered list per domain
        assert all(medium[a] != medium[b] for a, b in combinations(ids, 2))  # per question: all differ
        assert sorted(small[ids[0]]) == sorted(t for t, v in trajectories.items() if v["domain"] == domain)
        assert all(trajectories[t]["domain"] == domain for i in ids for t in medium[i])


def words(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())


@pytest.mark.parametrize("tier", ["small", "medium"])
def test_phrase_answers_can_be_found_in_the_haystack_text(questions, trajectories, tier):
    hay = json.loads((SAMPLE / f"haystacks/lme_v2_{tier}.json").read_text())
    checked = 0
    for q in questions:
        name, *opts = q["eval_function"].split("|")
        if not name.startswith("norm_phrase"):
            continue
        seps = next((json.loads(o.split("=", 1)[1]) for o in opts if o.startswith("separators=")), [",", ";"])
        phrases = [words(p) for p in re.split("|".join(map(re.escape, seps)), q["answer"]) if words(p)]
        text = " ".join(words(s["accessibility_tree"] + " " + (s["thought"] or ""))
                        for t in hay[q["id"]] for s in trajectories[t]["states"])
        assert phrases and all(f" {p} " in f" {text} " for p in phrases), q["id"]
        checked += 1
    assert checked == 5


def png_pixels(data: bytes) -> tuple[int, int, bytes]:
    """A small independent PNG reader: signature, chunk CRCs, IHDR, inflated IDAT."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, []
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        assert struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])[0] == zlib.crc32(kind + body)
        chunks.append((kind, body))
        pos += 12 + n
    assert [k for k, _ in chunks] == [b"IHDR", b"IDAT", b"IEND"]
    width, height, depth, colour = struct.unpack(">IIBB", chunks[0][1][:10])
    assert (depth, colour) == (8, 2)
    return width, height, zlib.decompress(chunks[1][1])


def test_screenshots_are_tiny_valid_pngs(trajectories):
    shots = {s["screenshot"] for t in trajectories.values() for s in t["states"]}
    files = {p for p in committed() if p.endswith(".png")}
    assert shots <= files and len(files) == len(shots) + 2  # + the two question images
    for rel in files:
        data = (SAMPLE / rel).read_bytes()
        width, height, raw = png_pixels(data)
        assert len(raw) == height * (1 + 3 * width) and 100 < len(data) < 1000


def test_states_have_the_public_fields_and_invented_hosts(trajectories):
    for t in trajectories.values():
        assert urlparse(t["start_url"]).hostname.endswith(".example.test")
        for step, s in enumerate(t["states"]):
            assert set(s) == {"url", "action", "thought", "accessibility_tree", "screenshot", "step"}
            assert s["step"] == step and s["screenshot"] == f"screenshots/{t['id']}/{step}.png"
            assert urlparse(s["url"]).hostname.endswith(".example.test")


def test_manifest_and_readme():
    files = committed()
    listed = dict(reversed(line.split("  ", 1)) for line in files["SHA256SUMS"].decode().splitlines())
    assert set(listed) == set(files) - {"SHA256SUMS"}
    assert all(hashlib.sha256(files[p]).hexdigest() == h for p, h in listed.items())
    readme = files["README.md"].decode()
    assert "authored by Mnemetric" in readme and "License: MIT" in readme and "not upstream data" in readme
    assert "python -m mnemetric.longmemeval_v2.sample --out data/sample-v2" in readme
    for name in ("questions.jsonl", "trajectories.jsonl", "haystacks/lme_v2_small.json", "haystacks/lme_v2_medium.json"):
        assert f"`{name}` | {len(files[name])} | `{listed[name]}`" in readme
