"""validate_root on copies of the bundled V2 sample, each broken in one known way.

Expected problems are written by hand (file, record, field); counts are hand-counted from
data/sample-v2 (10 trajectories with 4+4+4+5+3+3+3+6+3+3 = 38 states, 2 question images).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mnemetric.errors import ValidationFailed
from mnemetric.longmemeval_v2.validate import require_valid_root, validate_root

from tests.conftest import ROOT

SAMPLE = ROOT / "data" / "sample-v2"
STATES, QUESTION_IMAGES = 38, 2


@pytest.fixture()
def root(tmp_path) -> Path:
    dest = tmp_path / "root"
    shutil.copytree(SAMPLE, dest)
    return dest


def rows(root: Path, name: str) -> list[dict]:
    return [json.loads(line) for line in (root / name).read_text().splitlines()]


def write_rows(root: Path, name: str, items: list[dict]) -> None:
    (root / name).write_text("".join(json.dumps(r) + "\n" for r in items))


def edit(root: Path, name: str, index: int, **changes) -> None:
    items = rows(root, name)
    items[index] = items[index] | changes
    write_rows(root, name, items)


def found(problems, file: str, record: str, fld: str, says: str = "") -> bool:
    return any(Path(p.file).name == file and p.record == record and p.field == fld and says in p.message
               for p in problems)


def test_the_sample_is_valid_for_both_tiers_with_and_without_images():
    for tier in ("small", "medium"):
        for images in (True, False):
            assert validate_root(SAMPLE, tier, check_images=images) == []
    require_valid_root(SAMPLE, "medium", check_images=True)  # does not raise


def test_missing_screenshots_matter_only_with_images(root):
    shutil.rmtree(root / "screenshots")
    assert validate_root(root, check_images=False) == []
    problems = validate_root(root, check_images=True)
    assert len(problems) == STATES + QUESTION_IMAGES
    assert found(problems, "trajectories.jsonl", "df-desk-002", "states[5].screenshot", "screenshots/df-desk-002/5.png")
    assert found(problems, "questions.jsonl", "mnv2-web-07", "image", "question image")


def test_problems_are_capped_with_a_count_of_the_rest(root):
    shutil.rmtree(root / "screenshots")
    problems = validate_root(root, check_images=True, max_problems=5)
    assert len(problems) == 6
    assert problems[-1].message.startswith(f"{STATES + QUESTION_IMAGES - 5} more problem(s) not listed")


def test_duplicate_question_id(root):
    items = rows(root, "questions.jsonl")
    write_rows(root, "questions.jsonl", items + [items[2]])
    problems = validate_root(root, check_images=True)
    assert found(problems, "questions.jsonl", items[2]["id"], "id", "duplicate question id (line 15)")


def test_abstention_checker_needs_an_abs_type(root):
    edit(root, "questions.jsonl", 0, eval_function="llm_abstention_checker")
    problems = validate_root(root, check_images=True)
    assert found(problems, "questions.jsonl", "mnv2-web-01", "eval_function", "-abs")


@pytest.mark.parametrize("changes, fld", [
    ({"image": "../outside.png"}, "image"), ({"image": "/tmp/x.png"}, "image"), ({"answer": 7}, "answer"),
    ({"domain": "desktop"}, "domain"), ({"question": ""}, "question"), ({"question_type": "other"}, "question_type"),
    ({"eval_function": "mc_choice_match|bad"}, "eval_function"),
])
def test_bad_question_fields(root, changes, fld):
    edit(root, "questions.jsonl", 3, **changes)
    assert found(validate_root(root, check_images=False), "questions.jsonl", "mnv2-web-04", fld)


def test_screenshot_path_escaping_the_root(root):
    items = rows(root, "trajectories.jsonl")
    items[1]["states"][2]["screenshot"] = "screenshots/../../secret.png"
    write_rows(root, "trajectories.jsonl", items)
    assert found(validate_root(root, check_images=False), "trajectories.jsonl", "fm-shop-002", "states[2].screenshot", "'..'")


@pytest.mark.parametrize("mutate, file, record, fld, says", [
    (lambda p: p.write_bytes(b"\xef\xbb\xbf" + p.read_bytes()), "questions.jsonl", "line 1", "<encoding>", "byte order mark"),
    (lambda p: p.write_bytes(p.read_bytes().replace(b'"answer": "B"', b'"answer": NaN')), "questions.jsonl", "line 3",
     "<json>", "NaN"),
    (lambda p: p.write_bytes(p.read_bytes().replace(b"Meadow Post", b"Meadow \xe9 Post", 1)), "questions.jsonl",
     "line 1", "<encoding>", "not UTF-8"),
    (lambda p: p.write_bytes(b""), "questions.jsonl", "<file>", "<file>", "empty"),
    (lambda p: p.unlink(), "questions.jsonl", "<file>", "<file>", "does not exist"),
])
def test_file_level_problems(root, mutate, file, record, fld, says):
    mutate(root / "questions.jsonl")
    assert found(validate_root(root, check_images=True), file, record, fld, says)


def test_empty_trajectories_file(root):
    (root / "trajectories.jsonl").write_text("")
    problems = validate_root(root, check_images=True)
    assert found(problems, "trajectories.jsonl", "<file>", "<file>", "empty")
    assert found(problems, "lme_v2_small.json", "mnv2-ent-01", "[0]", "unknown trajectory")


def test_duplicate_trajectory_id(root):
    items = rows(root, "trajectories.jsonl")
    write_rows(root, "trajectories.jsonl", items + [items[0]])
    assert found(validate_root(root, check_images=True), "trajectories.jsonl", "fm-shop-001", "id", "line 11")


def haystack(root: Path, tier: str = "small") -> dict:
    return json.loads((root / f"haystacks/lme_v2_{tier}.json").read_text())


def save_haystack(root: Path, data: dict, tier: str = "small") -> None:
    (root / f"haystacks/lme_v2_{tier}.json").write_text(json.dumps(data))


def test_haystack_cross_checks(root):
    h = haystack(root)
    del h["mnv2-web-02"]
    h["mnv2-zzz"] = ["fm-shop-001"]
    h["mnv2-web-01"] = ["fm-shop-001", "df-desk-001", "nowhere", "fm-shop-001"]
    save_haystack(root, h)
    problems = validate_root(root, "small", check_images=True)
    assert found(problems, "lme_v2_small.json", "mnv2-web-02", "<key>", "has no haystack entry")
    assert found(problems, "lme_v2_small.json", "mnv2-zzz", "<key>", "no question")
    assert found(problems, "lme_v2_small.json", "mnv2-web-01", "[1]", "cross-domain")
    assert found(problems, "lme_v2_small.json", "mnv2-web-01", "[2]", "unknown trajectory 'nowhere'")
    assert found(problems, "lme_v2_small.json", "mnv2-web-01", "[3]", "listed twice")
    assert len(problems) == 5
    assert validate_root(root, "medium", check_images=True) == []  # the other tier is untouched


def test_haystack_given_as_a_file(root, tmp_path):
    other = tmp_path / "mine.json"
    other.write_text(json.dumps({k: v for k, v in haystack(root, "medium").items() if k != "mnv2-ent-07"}))
    problems = validate_root(root, other, check_images=True)
    assert [(p.file, p.record) for p in problems] == [(str(other), "mnv2-ent-07")]


def test_haystack_duplicate_key_and_wrong_shape(root):
    (root / "haystacks/lme_v2_small.json").write_text('{"mnv2-web-01": ["fm-shop-001"], "mnv2-web-01": []}')
    assert found(validate_root(root, check_images=True), "lme_v2_small.json", "<file>", "<json>", "appears twice")
    (root / "haystacks/lme_v2_small.json").write_text('["fm-shop-001"]')
    assert found(validate_root(root, check_images=True), "lme_v2_small.json", "<file>", "<file>", "JSON object")


def test_not_a_folder(tmp_path):
    problems = validate_root(tmp_path / "nope", check_images=False)
    assert [(p.record, p.field) for p in problems] == [("<root>", "<root>")]


def test_raising_variant_lists_the_problems(root):
    edit(root, "questions.jsonl", 0, domain="space")
    with pytest.raises(ValidationFailed) as err:
        require_valid_root(root, check_images=False)
    assert len(err.value.problems) == 1 and "mnv2-web-01: field 'domain'" in str(err.value)


def test_a_screenshot_symlinked_outside_the_root_is_refused_naming_the_file(root, tmp_path):
    outside = tmp_path / "elsewhere.png"
    outside.write_bytes((root / "screenshots" / "df-desk-002" / "5.png").read_bytes())
    shot = root / "screenshots" / "df-desk-002" / "5.png"
    shot.unlink()
    shot.symlink_to(outside)
    problems = validate_root(root, check_images=True)
    assert len(problems) == 1
    assert found(problems, "trajectories.jsonl", "df-desk-002", "states[5].screenshot",
                 "'screenshots/df-desk-002/5.png' resolves to")
    assert "outside the data root" in problems[0].message and str(outside) in problems[0].message
    assert validate_root(root, check_images=False) == []  # without images nothing is read


def test_a_symlinked_screenshot_folder_inside_the_root_is_accepted(root):
    """The official layout: screenshots/<dir> links to trajectory_screenshots/<archive>/<dir> in the same root."""
    target = root / "trajectory_screenshots" / "web_screenshots" / "df-desk-002"
    target.parent.mkdir(parents=True)
    shutil.move(root / "screenshots" / "df-desk-002", target)
    (root / "screenshots" / "df-desk-002").symlink_to(Path("..") / "trajectory_screenshots" / "web_screenshots"
                                                      / "df-desk-002")
    assert validate_root(root, check_images=True) == []


def test_a_text_file_posing_as_a_png_is_refused_naming_the_file(root):
    (root / "screenshots" / "qb-forum-001" / "1.png").write_text("not an image\n")
    image = next(r["image"] for r in rows(root, "questions.jsonl") if r.get("image"))
    (root / image).write_bytes(b"\xff\xd8\xff\xe0 a JPEG named .png")
    problems = validate_root(root, check_images=True)
    assert len(problems) == 2
    assert found(problems, "trajectories.jsonl", "qb-forum-001", "states[1].screenshot", "is not a PNG image")
    assert found(problems, "questions.jsonl", next(r["id"] for r in rows(root, "questions.jsonl") if r.get("image")),
                 "image", "is not a PNG image")
    with pytest.raises(ValidationFailed, match="qb-forum-001/1.png"):
        require_valid_root(root, check_images=True)
