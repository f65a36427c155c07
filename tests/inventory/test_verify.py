"""verify_reviewed_sources and `mnemetric inventory verify`: re-hash reviewed sources in a checkout.

The checkouts here are made by the tests, with files whose sha256 is known (FIPS 180-2 vectors).
Opt-in: MNEMETRIC_LONGMEMEVAL_DIR / MNEMETRIC_LONGMEMEVAL_V2_DIR name real upstream checkouts.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from mnemetric.cli import main
from mnemetric.custody.inventory import Inventory, verify_reviewed_sources
from mnemetric.errors import ConfigError, InputError

from tests.conftest import ROOT
from tests.inventory import helpers
from tests.inventory.helpers import SHA_ABC, SHA_EMPTY, V1_REPO, V1_REV, V2_REPO

SEED = ROOT.parent / "shared" / "seed" / "upstream-task-inventory.json"


def source(path: str, sha: str) -> dict:
    return {"path": path, "sha256": sha, "url": f"{V1_REPO}/blob/{V1_REV}/{path}"}


def inventory_record(v1_sources, v2_sources=None) -> dict:
    inv = helpers.seed()
    inv["families"][0]["reviewed_sources"] = v1_sources
    if v2_sources is not None:
        inv["families"][1]["reviewed_sources"] = v2_sources
    return inv


def inventory(v1_sources, v2_sources=None) -> Inventory:
    return Inventory.from_record(inventory_record(v1_sources, v2_sources), file="inv.json")


@pytest.fixture()
def checkout(tmp_path) -> Path:
    root = tmp_path / "LongMemEval"
    (root / "src" / "evaluation").mkdir(parents=True)
    (root / "README.md").write_bytes(b"abc")
    (root / "src" / "evaluation" / "changed.py").write_bytes(b"abc")
    (root / "src" / "evaluation" / "empty.py").write_bytes(b"")
    (root / "src" / "a_folder.py").mkdir()
    return root


SOURCES = [source("README.md", SHA_ABC), source("src/evaluation/changed.py", SHA_EMPTY),
           source("src/evaluation/empty.py", SHA_EMPTY), source("src/evaluation/gone.py", SHA_ABC),
           source("src/a_folder.py", SHA_ABC)]


def test_match_mismatch_missing_per_file(checkout):
    results = verify_reviewed_sources(inventory(SOURCES), {V1_REPO: checkout})
    assert [(r.path, r.status, r.actual_sha256) for r in results] == [
        ("README.md", "match", SHA_ABC),
        ("src/evaluation/changed.py", "mismatch", SHA_ABC),
        ("src/evaluation/empty.py", "match", SHA_EMPTY),
        ("src/evaluation/gone.py", "missing", None),
        ("src/a_folder.py", "missing", None),
    ]
    assert {r.repository for r in results} == {V1_REPO}   # the V2 family was not given: not checked
    assert results[1].to_record() == {"repository": V1_REPO, "path": "src/evaluation/changed.py",
                                      "expected_sha256": SHA_EMPTY, "actual_sha256": SHA_ABC, "status": "mismatch"}


def test_one_changed_byte_is_a_mismatch(checkout):
    (checkout / "README.md").write_bytes(b"abd")
    [r] = verify_reviewed_sources(inventory([source("README.md", SHA_ABC)]), {V1_REPO: checkout})
    assert r.status == "mismatch"


@pytest.mark.parametrize("bad", ["../outside.py", "/etc/passwd", "", "src/../../x.py", "src\\evil.py"])
def test_a_path_outside_the_checkout_is_an_input_error(checkout, bad):
    with pytest.raises(InputError) as err:
        verify_reviewed_sources(inventory([source(bad, SHA_ABC)]), {V1_REPO: checkout}, file="inv.json")
    assert (err.value.problem.file, err.value.problem.field) == ("inv.json", "reviewed_sources.path")


def test_a_checkout_that_is_not_a_folder_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError):
        verify_reviewed_sources(inventory(SOURCES), {V1_REPO: tmp_path / "nope"})


def write_inventory(tmp_path: Path, inv: dict) -> Path:
    path = tmp_path / "inventory.json"
    path.write_text(json.dumps(inv), encoding="utf-8")
    return path


def test_cli_exit_0_when_every_file_matches(tmp_path, checkout, capsys):
    inv = write_inventory(tmp_path, inventory_record([source("README.md", SHA_ABC)]))
    assert main(["inventory", "verify", "--upstream-dir", str(checkout), "--inventory", str(inv)]) == 0
    out = capsys.readouterr().out
    assert "  match    README.md" in out
    assert "LongMemEval-V2: not checked (no --checkout for it): 1 reviewed source(s)" in out
    assert "1 match, 0 mismatch, 0 missing" in out


def test_cli_exit_1_and_names_every_bad_file(tmp_path, checkout, capsys):
    v2 = tmp_path / "LongMemEval-V2"
    v2.mkdir()
    (v2 / "README.md").write_bytes(b"")
    inv = write_inventory(tmp_path, inventory_record(SOURCES, [source("README.md", SHA_EMPTY)]))
    code = main(["inventory", "verify", "--checkout", f"longmemeval={checkout}", "--checkout", f"longmemeval-v2={v2}",
                 "--inventory", str(inv)])
    captured = capsys.readouterr()
    assert code == 1
    assert f"  mismatch src/evaluation/changed.py (expected {SHA_EMPTY}, got {SHA_ABC})" in captured.out
    assert "  missing  src/evaluation/gone.py (no such file)" in captured.out
    assert "  missing  src/a_folder.py (no such file)" in captured.out
    assert f"LongMemEval-V2 {V2_REPO}" in captured.out
    assert "3 match, 1 mismatch, 2 missing" in captured.err


@pytest.mark.parametrize(("edit", "record", "field"), [
    (lambda inv: inv["families"][0]["reviewed_sources"][0].update(sha256=7), "families[0]",
     "reviewed_sources[0].sha256"),
    (lambda inv: inv["families"][0]["reviewed_sources"][0].pop("path"), "families[0]", "reviewed_sources[0].path"),
    (lambda inv: inv["families"][0].update(repository=None), "families[0]", "repository"),
    (lambda inv: inv["families"][1].update(reviewed_sorces=[]), "families[1]", "reviewed_sorces"),
    (lambda inv: inv.update(schema="other/v1"), "<file>", "schema"),
])
def test_cli_reads_the_inventory_typed_and_names_a_bad_field(tmp_path, checkout, capsys, edit, record, field):
    """`inventory verify` reads the inventory through its typed reader (custody/inventory_file.py): a wrong type,
    a missing or a misspelt field is one message naming the file, the record and the field, exit 2, before any
    file is hashed (it used to read the file as dicts: a misspelt key was skipped, a wrong type a traceback)."""
    raw = inventory_record([source("README.md", SHA_ABC)])
    edit(raw)
    inv = write_inventory(tmp_path, raw)
    code = main(["inventory", "verify", "--upstream-dir", str(checkout), "--inventory", str(inv)])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert f"{inv}" in err and record in err and field in err


@pytest.mark.parametrize("argv, needle", [
    (["inventory", "verify"], "--checkout: is required"),
    (["inventory", "verify", "--checkout", "{tmp}"], "is not FAMILY=DIR"),
    (["inventory", "verify", "--checkout", "quiz={tmp}"], "no benchmark family is named 'quiz'"),
    (["inventory", "verify", "--upstream-dir", "{tmp}", "--checkout", "longmemeval={tmp}"], "a second checkout"),
    (["inventory", "verify", "--upstream-dir", "{tmp}/nope"], "is not a folder"),
    (["inventory", "verify", "--upstream-dir", "{tmp}", "--inventory", "{tmp}/missing.json"], "missing.json"),
    (["inventory", "verify", "--upstream-dir", "{tmp}", "--seed", "x.json"], "--seed"),
])
def test_cli_usage_errors_are_one_message(tmp_path, capsys, argv, needle):
    code = main([a.replace("{tmp}", str(tmp_path)) for a in argv])
    assert code == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


# ---------------------------------------------------------------- opt-in: real upstream checkouts


def real_checkout(variable: str) -> Path:
    root = os.environ.get(variable)
    if not root:
        pytest.skip(f"set {variable} to a checkout of the upstream repository to re-hash its reviewed sources")
    if not SEED.exists():
        pytest.skip(f"the user's seed is not present at {SEED}")
    return Path(root)


def git_head(root: Path) -> str | None:
    out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=False)
    return out.stdout.strip() if out.returncode == 0 else None


def test_real_v1_checkout_matches_the_users_seed(capsys):
    """At 9e0b455f the four reviewed V1 files hash as the seed says (upstream-protocol.md §0.1 table)."""
    root = real_checkout("MNEMETRIC_LONGMEMEVAL_DIR")
    head = git_head(root)
    if head is not None and head != V1_REV:
        pytest.skip(f"{root} is at {head}, not the seed's revision {V1_REV}")
    assert main(["inventory", "verify", "--upstream-dir", str(root), "--inventory", str(SEED)]) == 0
    out = capsys.readouterr().out
    for path in ("README.md", "src/evaluation/print_retrieval_metrics.py", "src/evaluation/print_qa_metrics.py",
                 "src/retrieval/eval_utils.py"):
        assert f"  match    {path}" in out


V2_PINNED = "be15ea6e995462f3391c1a610892df3f67dfa7bd"
V2_AT_PIN = {  # upstream-v2-protocol.md §0, sha256 at be15ea6
    "evaluation/qa_eval_metrics.py": "f8ba659e237c4282a07a92538090ea500ce8483820b390b1d19af187c01417ac",
    "evaluation/harness.py": "8c6d1bd124ce2caf8a4bdc8516ef1b54ffca98ea4c49b4e50355ee4207b55eb1",
    "leaderboard/compute_lafs.py": "4670ea92ab87600e344bca7f387076b2a43f28b506d036950c10443ce2c8b8c2",
}


def test_real_v2_checkout_and_the_seeds_other_revision():
    """The seed's V2 README hash is for 2cc8c540, which is not the checkout we can read (be15ea6).

    At be15ea6 the three scoring files match the protocol notes' hashes, and the seed's README entry
    is reported as a mismatch (a different revision), not as missing.
    """
    root = real_checkout("MNEMETRIC_LONGMEMEVAL_V2_DIR")
    seed = json.loads(SEED.read_text(encoding="utf-8"))
    v2 = next(f for f in seed["families"] if f["benchmark"] == "LongMemEval-V2")
    head = git_head(root)
    if head == v2["revision"]:
        typed = Inventory.from_record(seed, file=str(SEED))
        assert {r.status for r in verify_reviewed_sources(typed, {v2["repository"]: root})} == {"match"}
        return
    if head != V2_PINNED:
        pytest.skip(f"{root} is at {head}, neither {v2['revision']} nor {V2_PINNED}")
    v2["reviewed_sources"] = [{"path": p, "sha256": s, "url": f"{V2_REPO}/blob/{V2_PINNED}/{p}"}
                              for p, s in V2_AT_PIN.items()] + v2["reviewed_sources"]
    results = verify_reviewed_sources(Inventory.from_record(seed, file=str(SEED)), {v2["repository"]: root})
    assert [(r.path, r.status) for r in results] == [(p, "match") for p in V2_AT_PIN] + [("README.md", "mismatch")]
