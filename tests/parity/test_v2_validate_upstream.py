"""Differential check: whatever upstream LongMemEval-V2 refuses in a data root, our validator refuses too.

Opt in with MNEMETRIC_LONGMEMEVAL_V2_DIR=<a checkout of xiaowu0162/LongMemEval-V2 at be15ea6>; no
upstream code is in this repository. Each upstream file is verified against its sha256 (computed from
the pinned revision be15ea6e995462f3391c1a610892df3f67dfa7bd) before it is used. Upstream is run on
the bundled sample and on broken copies of it, two ways: data/validate_data.py as a script
(--tier, with and without --check-screenshots), and memory_modules/trajectory_store.py's
prepare_trajectory_insert — what every indexing backend runs on each inserted trajectory — loaded
from its file on every row. A copy counts as refused upstream when either refuses it.

One difference is intended and asserted as such: with images off, upstream still requires every
question image to exist (validate_public_data always resolves it); ours does not.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mnemetric.longmemeval_v2.validate import validate_root

from tests.conftest import ROOT

SAMPLE = ROOT / "data" / "sample-v2"
UPSTREAM_SHA256 = {
    "data/validate_data.py": "b5c7367a4ff26f5e57d2e2dd580aa179b10ad788680f753720d05645b5a1e332",
    "data/public_data.py": "d2b868bfb0b6f8b66489c9445389eb6d0f26975f940a9c2365be154e63649c89",
    "memory_modules/trajectory_store.py": "437b825499000f7ae774f948a5e62a2ff9f455367491f97d0382431965ce594c",
}


@pytest.fixture(scope="module")
def checkout() -> Path:
    root = os.environ.get("MNEMETRIC_LONGMEMEVAL_V2_DIR")
    if not root:
        pytest.skip("set MNEMETRIC_LONGMEMEVAL_V2_DIR to a LongMemEval-V2 checkout at be15ea6 to run V2 parity checks")
    for rel, digest in UPSTREAM_SHA256.items():
        assert hashlib.sha256((Path(root) / rel).read_bytes()).hexdigest() == digest, f"{rel} is not the pinned revision"
    return Path(root)


@pytest.fixture(scope="module")
def trajectory_store(checkout):
    spec = importlib.util.spec_from_file_location("upstream_trajectory_store", checkout / "memory_modules/trajectory_store.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def upstream_refuses(checkout: Path, store, root: Path, tier: str, images: bool) -> bool:
    flag = "--check-screenshots" if images else "--no-check-screenshots"
    script = subprocess.run([sys.executable, str(checkout / "data/validate_data.py"), "--data-root", str(root),
                             "--tier", tier, flag], capture_output=True, text=True, timeout=120)
    if script.returncode != 0:
        return True
    if not images:
        return False  # trajectory_store resolves every screenshot: it cannot run without images
    try:
        for line in (root / "trajectories.jsonl").read_text(encoding="utf-8").splitlines():
            if line.strip():
                store.prepare_trajectory_insert(json.loads(line), trajectories_root_dir=root)
    except Exception:  # noqa: BLE001 — any upstream failure counts as a refusal
        return True
    return False


# ------------------------------------------------------------------ broken copies


def _rows(root, name):
    return [json.loads(x) for x in (root / name).read_text().splitlines()]


def _write(root, name, rows):
    (root / name).write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))


def question(**changes):
    def mutate(root):
        rows = _rows(root, "questions.jsonl")
        rows[2] = {k: v for k, v in (rows[2] | changes).items() if v is not ...}
        _write(root, "questions.jsonl", rows)
    return mutate


def state(**changes):
    def mutate(root):
        rows = _rows(root, "trajectories.jsonl")
        s = rows[4]["states"][1]
        rows[4]["states"][1] = {k: v for k, v in (s | changes).items() if v is not ...}
        _write(root, "trajectories.jsonl", rows)
    return mutate


def trajectory(**changes):
    def mutate(root):
        rows = _rows(root, "trajectories.jsonl")
        rows[6] = {k: v for k, v in (rows[6] | changes).items() if v is not ...}
        _write(root, "trajectories.jsonl", rows)
    return mutate


def haystack(fn):
    def mutate(root):
        path = root / "haystacks/lme_v2_small.json"
        data = json.loads(path.read_text())
        path.write_text(json.dumps(fn(data)))
    return mutate


def raw_file(name, fn):
    def mutate(root):
        (root / name).write_bytes(fn((root / name).read_bytes()))
    return mutate


def duplicate_trajectory(root):
    rows = _rows(root, "trajectories.jsonl")
    _write(root, "trajectories.jsonl", rows + [rows[0]])


def first_key(h):
    return next(iter(h))


MUTATIONS = {
    "intact": lambda root: None,
    "question without haystack": haystack(lambda h: {k: v for k, v in h.items() if k != first_key(h)}),
    "haystack key without question": haystack(lambda h: h | {"nobody": []}),
    "bad question domain": question(domain="mars"),
    "empty question text": question(question=" "),
    "question text not a string": question(question=["a"]),
    "question without id": question(id=...),
    "question row not an object": lambda root: _write(root, "questions.jsonl", [*_rows(root, "questions.jsonl"), [1, 2]]),
    "missing question image": question(image="screenshots/questions/none.png"),
    "question image empty string": question(image=""),
    "duplicate trajectory id": duplicate_trajectory,
    "trajectory id empty": trajectory(id=""),
    "unknown trajectory in haystack": haystack(lambda h: h | {first_key(h): [*h[first_key(h)], "ghost"]}),
    "trajectory twice in one haystack": haystack(lambda h: h | {first_key(h): [*h[first_key(h)], h[first_key(h)][0]]}),
    "cross-domain haystack": haystack(lambda h: h | {first_key(h): [*h[first_key(h)][:1], "df-desk-001"]}),
    "haystack not an object": haystack(lambda h: list(h)),
    "haystack list not a list": haystack(lambda h: h | {first_key(h): "fm-shop-001"}),
    "haystack id empty": haystack(lambda h: h | {first_key(h): [""]}),
    "haystack id not a string": haystack(lambda h: h | {first_key(h): [7]}),
    "missing screenshot file": lambda root: (root / "screenshots/qb-forum-001/1.png").unlink(),
    "state url empty": state(url=""),
    "state url missing": state(url=...),
    "state action not text": state(action=3),
    "state thought not text": state(thought={"a": 1}),
    "state text null": state(accessibility_tree=None),
    "state text missing": state(accessibility_tree=...),
    "state screenshot empty": state(screenshot=""),
    "state screenshot missing": state(screenshot=...),
    "state step negative": state(step=-2),
    "state not an object": lambda root: _write(root, "trajectories.jsonl", [
        r | {"states": [*r["states"], "x"]} if i == 4 else r for i, r in enumerate(_rows(root, "trajectories.jsonl"))]),
    "goal a list": trajectory(goal=["Reassign", "INC0107"]),
    "goal missing": trajectory(goal=...),
    "start_url empty": trajectory(start_url=""),
    "outcome a number": trajectory(outcome=1),
    "states empty": trajectory(states=[]),
    "bom in questions": raw_file("questions.jsonl", lambda b: b"\xef\xbb\xbf" + b),
    "broken json line": raw_file("trajectories.jsonl", lambda b: b + b"{not json\n"),
    "non-utf8 bytes": raw_file("questions.jsonl", lambda b: b.replace(b"Meadow Post", b"Meadow \xff Post", 1)),
    "raw U+2028 in a string": raw_file("questions.jsonl", lambda b: b.replace(b"Meadow Post", "Meadow\u2028Post".encode(), 1)),
    "empty haystack file": raw_file("haystacks/lme_v2_small.json", lambda b: b""),
    "questions file missing": lambda root: (root / "questions.jsonl").unlink(),
}


@pytest.mark.parametrize("images", [True, False], ids=["images", "no-images"])
@pytest.mark.parametrize("name", list(MUTATIONS))
def test_we_refuse_whatever_upstream_refuses(checkout, trajectory_store, tmp_path, name, images):
    root = tmp_path / "root"
    shutil.copytree(SAMPLE, root)
    MUTATIONS[name](root)
    theirs = upstream_refuses(checkout, trajectory_store, root, "small", images)
    ours = validate_root(root, "small", check_images=images)
    if name == "intact":
        assert (theirs, ours) == (False, [])
    elif name == "missing question image" and not images:
        assert theirs and ours == []  # intended: our no-images mode does not need question images
    elif theirs:
        assert ours, f"upstream refuses {name!r} ({'with' if images else 'without'} images) but we accept it"


def test_both_tiers_of_the_sample_pass_upstream(checkout, trajectory_store):
    for tier in ("small", "medium"):
        assert not upstream_refuses(checkout, trajectory_store, SAMPLE, tier, True)


def duplicate_question(root):
    rows = _rows(root, "questions.jsonl")
    _write(root, "questions.jsonl", rows + [rows[0]])


STRICTER = {
    "duplicate question id": duplicate_question,  # upstream's harness aborts on it, its validator does not look
    "llm_abstention_checker on a non -abs type": question(eval_function="llm_abstention_checker"),  # harness aborts
    "NaN in an extra key": raw_file("questions.jsonl", lambda b: b.replace(b'"id": ', b'"score": NaN, "id": ', 1)),
    "a haystack key twice": raw_file("haystacks/lme_v2_small.json",
                                     lambda b: b.replace(b"{", b'{"mnv2-web-01": ["fm-shop-001"],', 1)),
}


@pytest.mark.parametrize("name", list(STRICTER))
def test_where_we_are_stricter_than_upstreams_validator(checkout, trajectory_store, tmp_path, name):
    root = tmp_path / "root"
    shutil.copytree(SAMPLE, root)
    STRICTER[name](root)
    assert not upstream_refuses(checkout, trajectory_store, root, "small", True)
    assert validate_root(root, "small", check_images=True)
