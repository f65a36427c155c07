"""`mnemetric v2 package` and `--check`: the leaderboard package from V2 run folders, each refusal naming its file.

Real files in tmp_path: an official-shaped fake tier with its pins swapped in (tests/longmemeval_v2/package_fixture.py),
run folders as `mnemetric v2 run` writes them, and the bundled sample (which is not an official tier)."""

from __future__ import annotations

import io
import json
import shutil
import tarfile

import pytest

from mnemetric.cli import main
from mnemetric.errors import ConfigError, InputError, ValidationFailed
from mnemetric.longmemeval_v2.lafs import lafs_summary
from mnemetric.longmemeval_v2.package import build_package, check_tarball, export_runs
from mnemetric.longmemeval_v2.package_tar import write_tarball
from mnemetric.longmemeval_v2.pins import DATA_PINS
from mnemetric.longmemeval_v2.pipeline import named_settings, run_from_settings
from mnemetric.longmemeval_v2.run import write_run
from tests.conftest import ROOT
from tests.support.edits import set_at
from tests.longmemeval_v2.package_fixture import (IDS, code_file, filled_description, official_run,
                                                  official_tier)


def build(tmp, runs, pins, **kw):
    kw.setdefault("system_description", filled_description(tmp))
    return build_package(runs, submission="sub", code_file=code_file(tmp), output_root=tmp / "out", pins=pins, **kw)


@pytest.fixture
def tier(tmp_path):
    return official_tier(tmp_path)


def test_happy_path_two_operating_points(tmp_path, tier):
    data, pins = tier
    fast = official_run(tmp_path, data, "fast", latency=0.5, correct=1)
    slow = official_run(tmp_path, data, "slow", latency=50.0, correct=3)
    built = build(tmp_path, [("fast", fast), ("slow", slow)], pins)
    assert built.problems == () and built.tarball == tmp_path / "out" / "sub.tar.gz"
    root = built.folder
    assert sorted(p.name for p in root.iterdir()) == ["SYSTEM_DESCRIPTION.md", "mymem.py", "operating_points",
                                                      "submission_overview.json"]
    op = root / "operating_points" / "slow"
    assert sorted(p.name for p in (op / "web").iterdir()) == ["aggregated_metrics.json", "per_question.jsonl",
                                                              "run_args.json", "runtime_inputs"]
    assert (op / "web" / "per_question.jsonl").read_bytes() == (slow / "web" / "per_question.jsonl").read_bytes()
    overview = json.loads((op / "metric_overview.json").read_text())
    assert overview == {"overall_full_set": 1.0, "gotchas_accuracy": 1.0, "static_accuracy": 1.0,
                        "dynamic_accuracy": None, "procedure_accuracy": 1.0, "memory_query_avg_seconds": 50.0}
    meta = json.loads((op / "operating_point_metadata.json").read_text())
    assert meta["method"] == "mymem" and meta["tier"] == "small" and meta["runs"]["web"]["question_count"] == 3
    assert meta["generated_at_utc"] == "2026-12-01T10:00:00+00:00"
    sub = json.loads((root / "submission_overview.json").read_text())
    assert sub["lafs"] == json.loads(json.dumps(lafs_summary("small", [(100 / 3, 0.5, "fast"), (100.0, 50.0, "slow")])))
    assert [p["lafs_latency_seconds"] for p in sub["operating_points"]] == [0.5, 50.0]
    assert sub["archive_name"] == "sub.tar.gz" and sub["code_file"] == "mymem.py"
    assert check_tarball(built.tarball, data_root=data, pins=pins)[1] == []
    with tarfile.open(built.tarball) as tar:
        members = tar.getmembers()
    assert members[0].name == "sub" and all(m.mtime == 0 and m.uid == 0 and m.uname == "" for m in members)
    first = built.tarball.read_bytes()
    again = build(tmp_path, [("fast", fast), ("slow", slow)], pins, force=True)
    assert again.tarball.read_bytes() == first  # the same inputs give the same bytes


def test_existing_package_is_not_replaced_without_force(tmp_path, tier):
    data, pins = tier
    run = official_run(tmp_path, data)
    build(tmp_path, [("a", run)], pins)
    with pytest.raises(ConfigError, match="already exists"):
        build(tmp_path, [("a", run)], pins)


def test_the_bundled_sample_is_refused_with_its_reasons_unless_unofficial(tmp_path, capsys):
    sample = ROOT / "data" / "sample-v2"
    s = named_settings(sample, "small", memory="none", token_counter="o200k")
    write_run(tmp_path / "run", run_from_settings(s), s)
    with pytest.raises(ValidationFailed) as err:
        build(tmp_path, [("p", tmp_path / "run")], DATA_PINS)
    text = str(err.value)
    assert "sample-v2/questions.jsonl" in text and "not the official data" in text
    assert "run/v2.json" in text and "not the official Qwen/Qwen3.5-9B reader" in text
    assert not (tmp_path / "out" / "sub").exists() and not (tmp_path / "out" / "sub.tar.gz").exists()
    assert [p.name for p in (tmp_path / "out").iterdir()] == []  # nothing half-written
    code = main(["v2", "package", f"p={tmp_path / 'run'}", "--submission", "sub", "--code", str(code_file(tmp_path)),
                 "--system-description", str(filled_description(tmp_path)), "--out", str(tmp_path / "out"),
                 "--unofficial"])
    assert code == 0 and "NOT SUBMITTABLE" in capsys.readouterr().err
    marker = (tmp_path / "out" / "sub" / "NOT_SUBMITTABLE.txt").read_text()
    assert "not the official data" in marker
    code = main(["v2", "package", "--check", str(tmp_path / "out" / "sub.tar.gz")])
    err_text = capsys.readouterr().err
    assert code != 0 and "NOT_SUBMITTABLE.txt" in err_text and "no data root given" in err_text


def test_operating_points_that_disagree_are_refused(tmp_path, tier):
    data, pins = tier
    a = official_run(tmp_path, data, "a")
    fewer = official_run(tmp_path, data, "fewer", ids={"web": IDS["web"][:2], "enterprise": IDS["enterprise"]})
    with pytest.raises(InputError, match=r"operating_points/fewer/web/runtime_inputs/questions.json.*other web "
                                         r"question ids"):
        build(tmp_path, [("a", a), ("fewer", fewer)], pins)
    other = official_run(tmp_path, data, "other", memory="othermem")
    with pytest.raises(InputError, match=r"other/v2.json.*'othermem', but operating point 'a' has 'mymem'"):
        build(tmp_path, [("a", a), ("other", other)], pins)
    # a hand-made package whose second operating point holds other questions: --check refuses it by file
    built = build(tmp_path, [("a", a)], pins)
    b = build_package([("b", fewer)], submission="sub", code_file=code_file(tmp_path),
                      system_description=filled_description(tmp_path), output_root=tmp_path / "out2", pins=pins,
                      unofficial=True)
    shutil.copytree(b.folder / "operating_points" / "b", built.folder / "operating_points" / "b")
    hand = write_tarball(built.folder, tmp_path / "hand" / "sub.tar.gz")
    with pytest.raises(InputError, match=r"hand/sub.tar.gz:sub/operating_points/b/web/runtime_inputs/questions.json"):
        check_tarball(hand, data_root=data, pins=pins)


def test_a_question_set_other_than_the_tiers_is_not_submittable(tmp_path):
    data, pins = official_tier(tmp_path, extra_question=True)  # the tier has w4; the run has not
    run = official_run(tmp_path, data)
    with pytest.raises(ValidationFailed, match=r"web/runtime_inputs/questions.json.*3 web questions; the official "
                                               r"small tier has 4"):
        build(tmp_path, [("a", run)], pins)


def test_unofficial_sampling_and_a_gate_reason_are_named(tmp_path, tier):
    data, pins = tier
    run = official_run(tmp_path, data, sent={"max_tokens": 20000, "temperature": 0.0}, official=False)
    with pytest.raises(ValidationFailed) as err:
        build(tmp_path, [("a", run)], pins)
    text = str(err.value)
    assert "run/v2.json" in text and "web/run_args.json" in text and "temperature 0.0 (official 0.6)" in text


@pytest.mark.parametrize("missing", ["run_args.json", "runtime_inputs/haystack.json", "per_question.jsonl",
                                     "aggregated_metrics.json", "runtime_inputs/questions.json",
                                     "runtime_inputs/memory_config.json"])
def test_a_run_folder_missing_a_file_upstream_needs_is_refused(tmp_path, tier, missing):
    data, pins = tier
    run = official_run(tmp_path, data)
    (run / "enterprise" / missing).unlink()
    with pytest.raises(InputError, match=rf"run/enterprise/{missing}.*missing"):
        build(tmp_path, [("a", run)], pins)
    with pytest.raises(InputError, match=rf"run/enterprise/{missing}.*missing"):
        export_runs([("a", run)], tmp_path / "exported")
    # a package missing it: `--check` refuses it, naming the member
    built = build(tmp_path, [("a", official_run(tmp_path, data, "whole"))], pins)
    (built.folder / "operating_points" / "a" / "enterprise" / missing).unlink()
    hand = write_tarball(built.folder, tmp_path / "hand" / "sub.tar.gz")
    with pytest.raises(InputError, match=rf"hand/sub.tar.gz:sub/operating_points/a/enterprise/{missing}.*missing"):
        check_tarball(hand, data_root=data, pins=pins)


@pytest.mark.parametrize("dotted, value, record, field, message", [
    ("settings.tier", "large", "settings", "tier", "'large': the run's haystack is not an official tier file"),
    ("settings.tier", None, "settings", "tier", "None: the run's haystack is not an official tier file"),
    ("settings.domains", ["web"], "settings", "domains", "no enterprise run: an operating point is a web and"),
    ("settings.memory", KeyError, "settings", "memory", "missing"),
    ("official_equivalence", {"official": True}, "<file>", "official_equivalence", "expected"),
    ("combined.questions", "6", "combined", "questions", "expected a non-negative integer"),
])
def test_a_summary_that_is_malformed_or_not_one_package_point_is_refused_by_field(tmp_path, tier, dotted, value,
                                                                                  record, field, message):
    data, pins = tier
    run = official_run(tmp_path, data)
    raw = json.loads((run / "v2.json").read_text())
    (run / "v2.json").write_text(json.dumps(set_at(raw, dotted, value)))
    for call in (lambda: build(tmp_path, [("a", run)], pins), lambda: export_runs([("a", run)], tmp_path / "ex")):
        with pytest.raises(InputError, match=message) as err:
            call()
        assert (err.value.problem.file, err.value.problem.record, err.value.problem.field) == \
            (str(run / "v2.json"), record, field)
    (run / "v2.json").write_text("{not json")
    with pytest.raises(InputError, match=r"run/v2.json: line 1: field '<json>': not valid JSON"):
        build(tmp_path, [("a", run)], pins)


def test_generated_at_is_the_latest_start_and_a_malformed_start_is_refused(tmp_path, tier):
    data, pins = tier
    run = official_run(tmp_path, data)
    path = run / "enterprise" / "run_args.json"
    args = json.loads(path.read_text())
    path.write_text(json.dumps(args | {"started_at_utc": "2026-12-02T00:00:00+00:00"}))
    overview = build(tmp_path, [("a", run)], pins).overview
    assert overview["generated_at_utc"] == "2026-12-02T00:00:00+00:00"
    for value, message in ((5, "expected a string or null, got int 5"), (KeyError, "missing")):
        path.write_text(json.dumps(set_at(dict(args), "started_at_utc", value)))
        with pytest.raises(InputError, match=message) as err:
            build(tmp_path, [("a", run)], pins, force=True)
        assert (err.value.problem.file, err.value.problem.field) == (str(path), "started_at_utc")


def test_tampered_numbers_are_refused(tmp_path, tier):
    data, pins = tier
    built = build(tmp_path, [("a", official_run(tmp_path, data))], pins)
    path = built.folder / "operating_points" / "a" / "metric_overview.json"
    path.write_text(path.read_text().replace('"overall_full_set": 0.3333333333333333', '"overall_full_set": 0.9'))
    with pytest.raises(InputError, match=r"operating_points/a/metric_overview.json.*not what the web and enterprise"):
        check_tarball(write_tarball(built.folder, tmp_path / "t" / "sub.tar.gz"), data_root=data, pins=pins)


def _tar(path, *members):
    with tarfile.open(path, "w:gz") as tar:
        for name, kind in members:
            info = tarfile.TarInfo(name)
            if kind == "link":
                info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
                tar.addfile(info)
            else:
                info.size = 2
                tar.addfile(info, io.BytesIO(b"{}"))
    return path


@pytest.mark.parametrize("name, kind, problem", [
    ("sub/../../escape.json", "file", "escapes the package root"),
    ("/etc/sub.json", "file", "an absolute path"),
    ("other/x.json", "file", "outside the package root"),
    ("sub/link", "link", "a symlink"),
])
def test_unsafe_tarball_members_are_refused_by_name(tmp_path, name, kind, problem):
    bad = _tar(tmp_path / "sub.tar.gz", ("sub/submission_overview.json", "file"), (name, kind))
    with pytest.raises(InputError, match=rf"sub.tar.gz: member '{name}'.*{problem}"):
        check_tarball(bad, data_root=None)
    assert not (tmp_path / "escape.json").exists()


def test_export_names_runs_as_upstream_wrapper_scripts(tmp_path, tier):
    data, pins = tier
    run = official_run(tmp_path, data)
    out = export_runs([("fast", run)], tmp_path / "exported")
    assert [p.relative_to(tmp_path).as_posix() for p in out] == ["exported/fast/mymem_web_small",
                                                                  "exported/fast/mymem_enterprise_small"]
    args = json.loads((out[0] / "run_args.json").read_text())
    assert list(args)[0] == "domain" and len(args) == 34 and args["model"] == "Qwen/Qwen3.5-9B"
    assert args["temperature"] == 0.6 and args["top_k"] == 20 and args["evaluator_model"] == "gpt-5.2"


def test_cli_template_then_check_a_good_package(tmp_path, tier, capsys, monkeypatch):
    data, pins = tier
    assert main(["v2", "package", "--template", str(tmp_path / "SD.md")]) == 0
    assert "<!-- mnemetric: fill in -->" in (tmp_path / "SD.md").read_text()
    built = build(tmp_path, [("a", official_run(tmp_path, data))], pins)
    monkeypatch.setattr("mnemetric.longmemeval_v2.package_check.DATA_PINS", pins)
    capsys.readouterr()
    code = main(["v2", "package", "--check", str(built.tarball), "--data-root", str(data)])
    out = capsys.readouterr().out
    assert code == 0 and "submittable package sub (mymem, small, 1 operating point(s)" in out


def test_check_refuses_any_malformed_file_with_a_message_not_a_crash(tmp_path, tier):
    from mnemetric.errors import MnemetricError

    data, pins = tier
    built = build(tmp_path, [("a", official_run(tmp_path, data))], pins)
    targets = sorted(p.relative_to(built.folder).as_posix() for p in built.folder.rglob("*")
                     if p.suffix in (".json", ".jsonl"))
    assert len(targets) == 17  # token_counter.json of each domain among them
    for i, rel in enumerate(targets):
        for j, text in enumerate(("[]", '{"operating_points": [1], "runs": 3, "overall": [], "memory_type": 1}')):
            copy = tmp_path / f"c{i}-{j}" / "sub"
            shutil.copytree(built.folder, copy)
            (copy / rel).write_text(text)
            tarball = write_tarball(copy, copy.parent / "t" / "sub.tar.gz")
            try:
                _, problems = check_tarball(tarball, data_root=data, pins=pins)
            except MnemetricError as exc:
                assert "sub.tar.gz:" in str(exc) or "sub.tar.gz" in str(exc), (rel, text, str(exc))
            else:
                assert problems, (rel, text)


@pytest.mark.parametrize(("record", "field", "reason"), [
    (None, "token_counter", "missing: the run records no token counter"),
    ({"name": "o200k-standin", "official": False, "note": None}, "name",
     "token counter 'o200k-standin' is not the official Qwen/Qwen3.5-9B processor"),
    ({"name": "qwen3.5-9b-processor", "official": False, "note": "no video half"}, "official",
     "recorded as not official: no video half"),
    ({"name": "my-tokenizer"}, "name/official", "the token counter is unknown"),
    ("not json", "<json>", "the token counter is unknown"),
])
def test_check_refuses_a_hand_made_package_whose_token_counter_is_missing_or_unknown(tmp_path, tier, monkeypatch,
                                                                                     capsys, record, field, reason):
    data, pins = tier
    built = build(tmp_path, [("a", official_run(tmp_path, data))], pins)
    assert check_tarball(built.tarball, data_root=data, pins=pins)[1] == []  # the official counter's record passes
    hand = tmp_path / "hand" / "sub"
    shutil.copytree(built.folder, hand)
    counter = hand / "operating_points" / "a" / "enterprise" / "runtime_inputs" / "token_counter.json"
    if record is None:
        counter.unlink()
    else:
        counter.write_text(record if isinstance(record, str) else json.dumps(record))
    tarball = write_tarball(hand, tmp_path / "hand" / "t" / "sub.tar.gz")
    _, problems = check_tarball(tarball, data_root=data, pins=pins)
    assert [(p.file, p.field) for p in problems] == [
        (f"{tarball}:sub/operating_points/a/enterprise/runtime_inputs/token_counter.json", field)]
    assert reason in problems[0].message
    monkeypatch.setattr("mnemetric.longmemeval_v2.package_check.DATA_PINS", pins)
    capsys.readouterr()
    assert main(["v2", "package", "--check", str(tarball), "--data-root", str(data)]) != 0
    assert "enterprise/runtime_inputs/token_counter.json" in capsys.readouterr().err


def test_a_run_written_without_a_counter_record_is_not_packaged(tmp_path, tier):
    data, pins = tier
    with pytest.raises(ValidationFailed, match=r"web/runtime_inputs/token_counter.json.*records no token counter"):
        build(tmp_path, [("a", official_run(tmp_path, data, counter=None))], pins)


def test_a_run_folder_records_its_counter(tmp_path):
    sample = ROOT / "data" / "sample-v2"
    s = named_settings(sample, "small", memory="none", token_counter="o200k", domains=["web"])
    write_run(tmp_path / "run", run_from_settings(s), s)
    record = json.loads((tmp_path / "run" / "web" / "runtime_inputs" / "token_counter.json").read_text())
    assert record == {"name": "o200k-standin", "official": False, "note": None}


@pytest.mark.parametrize("edit, needle", [
    (lambda a: a.pop("tokens"), r"<file>: field 'tokens': missing"),
    (lambda a: a["memory_query"].update(p95_seconds="slow"), r"memory_query: field 'p95_seconds': expected a non-neg"),
])
def test_an_aggregate_off_the_harness_layout_is_refused_by_name(tmp_path, tier, edit, needle):
    data, pins = tier
    run = official_run(tmp_path, data)
    path = run / "web" / "aggregated_metrics.json"
    agg = json.loads(path.read_text())
    edit(agg)
    path.write_text(json.dumps(agg))
    with pytest.raises(InputError, match=rf"run/web/aggregated_metrics.json: {needle}"):
        build(tmp_path, [("a", run)], pins)
