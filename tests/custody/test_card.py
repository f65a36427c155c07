"""The result card's generic frame from hand-written run manifests, metrics and custody files.

The frame is drawn around a family's rows: here LongMemEval's (its rows are tested with its family,
tests/longmemeval/test_family.py) and a hand-written family whose rows are naive (Quiz's card in
tests/custody/test_fake_family.py goes through the same code).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest

from mnemetric.cli import main as cli
from mnemetric.custody.card import card_from_files, read_card_inputs, render_card, table
from mnemetric.errors import ConfigError, InputError
from mnemetric.family import CardRow, CardSpec
from mnemetric.longmemeval.family import FAMILY

RUN = {
    "benchmark": "LongMemEval", "mnemetric_version": "0.1.0",
    "variant": {"name": "s", "source": "huggingface", "repo": "xiaowu0162/longmemeval-cleaned",
                "revision": "98d7416c", "file": "longmemeval_s_cleaned.json", "sha256": "d" * 64,
                "sha256_verified": True},
    "suite": {"name": "full", "size": 500, "ids_sha256": "i" * 64},
    "memory": {"name": "bm25", "fingerprint_sha256": "f" * 64, "config_sha256": "c" * 64},
    "reader": {"name": "openai", "requested_model": "gpt-4o-2024-08-06", "resolved_models": ["gpt-4o-2024-08-06"]},
    "judge": {"name": "upstream-gpt-4o", "resolved_models": ["gpt-4o-2024-08-06"], "prompt_set_sha256": "p" * 64,
              "endpoints": ["http://127.0.0.1:8000/v1"]},
    "scoring": {"profile": "longmemeval-session-upstream-v1"},
    "counts": {"questions": 500, "judged": 500, "failed": 0},
    "official_equivalence": {"value": False, "reasons": ["judge endpoint(s) ['http://127.0.0.1:8000/v1'] are not "
                                                         "the official API https://api.openai.com/v1"]},
}
DETAIL = {"overall": 0.5, "task_averaged": 0.25, "abstention": {"accuracy": 0.75, "n": 4}, "n": 8,
          "ci95": {"overall": {"low": 0.125, "high": 0.875}, "task_averaged": {"low": 0.0, "high": 0.5},
                   "abstention": None},
          "per_type": {"multi-session": {"accuracy": 0.5, "n": 2, "ci95": {"low": 0.1, "high": 0.9}}}}
HEADLINE = {"overall": 0.5, "task_averaged": 0.25, "abstention": 0.75, "n": 8, "per_type": {"multi-session": 0.5}}
RETRIEVAL = {"granularity": "session", "exclude_abs": {"n": 6, "session": {"recall_all@5": 0.5, "ndcg_any@5": 0.25}}}
OUTPUTS = {"files": {"data/runs/h.jsonl.eval-results-gpt-4o": {"sha256": "e" * 64}}}


def naive_rows(docs):
    """One row per key of the "m" document: the value, no interval, n 1."""
    return [CardRow(k, v, n=1) for k, v in (docs.get("m") or {}).items()]


@dataclass(frozen=True)
class Tiny:
    name: str = "tiny"
    display_name: str = "Tiny"
    run_manifest: str | None = "out/run-tiny.json"
    card: CardSpec | None = field(default_factory=lambda: CardSpec({"m": ("out/a.json", "out/b.json")}, naive_rows,
                                                                   empty="(nothing measured)"))


def test_the_table_formats_value_interval_and_n():
    assert table([CardRow("x", 0.123456, 0.1, 0.2, 3), CardRow("y", None), CardRow("z", 1, low=0.5)]) == [
        "| metric | value | 95% interval | n |", "|---|---|---|---|",
        "| x | 0.1235 | [0.1000, 0.2000] | 3 |", "| y | — | — | — |", "| z | 1.0000 | — | — |"]


def test_the_card_carries_every_custody_fact():
    card = render_card(FAMILY, RUN, {"qa": DETAIL, "retrieval": RETRIEVAL}, OUTPUTS,
                       {"paths": {"judged": "data/runs/h.jsonl.eval-results-gpt-4o"}})
    for expected in ("| overall accuracy | 0.5000 | [0.1250, 0.8750] | 8 |",
                     "| abstention accuracy | 0.7500 | — | 4 |",
                     "| session recall_all@5 | 0.5000 | — | 6 |",
                     f"sha256 `{'d' * 64}` (verified)", "xiaowu0162/longmemeval-cleaned @ 98d7416c",
                     f"id-list sha256 `{'i' * 64}`", f"code fingerprint `{'f' * 64}`",
                     "snapshot(s) `gpt-4o-2024-08-06`", f"prompt-set sha256 `{'p' * 64}`",
                     f"`data/runs/h.jsonl.eval-results-gpt-4o`, sha256 `{'e' * 64}`",
                     "- official_equivalence: **false**", "  - judge endpoint(s) ['http://127.0.0.1:8000/v1']"):
        assert expected in card, expected


def test_a_judged_file_missing_from_custody_says_so():
    card = render_card(FAMILY, RUN, {"qa": HEADLINE, "retrieval": None}, None, {"paths": {"judged": "data/runs/x"}})
    assert "sha256 not in the custody manifest" in card


def test_the_title_names_the_manifest_s_benchmark_else_the_family_s_display_name():
    run = {k: v for k, v in RUN.items() if k != "benchmark"}
    assert render_card(Tiny(), run, {"m": {"a": 0.5}}, None).startswith(
        "#### Tiny result: memory `bm25` on `s` (suite `full`)\n\n| metric |")
    assert render_card(Tiny(), RUN, {"m": None}, None).startswith("#### LongMemEval result:")
    # a manifest without a memory, variant or suite (a family that has none) shows "—", not "None"
    bare = {k: v for k, v in RUN.items() if k not in ("memory", "variant", "suite")}
    assert render_card(Tiny(), bare, {"m": None}, None).startswith(
        "#### LongMemEval result: memory — on — (suite —)\n")


def test_no_rows_print_the_family_s_empty_text():
    lines = render_card(Tiny(), RUN, {"m": None}, None).splitlines()
    # a family without custody bullets of its own gets the frame's: dataset, suite, memory, counts
    assert lines[2] == "(nothing measured)" and lines[4:8] == [
        "- dataset: `s` (verified)", "- suite: `full`", "- memory system: `bm25`", "- 500 of 500 judged, 0 failed"]


def test_a_family_without_a_card_is_a_config_error():
    with pytest.raises(ConfigError, match="Tiny has no result card"):
        render_card(Tiny(card=None), RUN, {}, None)


def test_the_first_existing_candidate_of_each_role_is_read(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "b.json").write_text(json.dumps({"k": 0.25}))
    assert read_card_inputs(Tiny(), root=tmp_path) == {"m": {"k": 0.25}}
    (tmp_path / "out" / "a.json").write_text(json.dumps({"k": 0.5}))
    assert read_card_inputs(Tiny(), root=tmp_path) == {"m": {"k": 0.5}}
    (tmp_path / "c.json").write_text(json.dumps({"k": 1}))
    assert read_card_inputs(Tiny(), {"m": "c.json"}, root=tmp_path) == {"m": {"k": 1}}
    with pytest.raises(ConfigError, match=r"has no role \['qa'\]"):
        read_card_inputs(Tiny(), {"qa": "c.json"}, root=tmp_path)
    with pytest.raises(InputError, match="gone.json"):
        read_card_inputs(Tiny(), {"m": "gone.json"}, root=tmp_path)


def test_no_run_manifest_no_card_unless_one_is_named(tmp_path):
    assert card_from_files(Tiny(), "j", root=tmp_path) is None
    with pytest.raises(InputError, match="run-tiny.json"):
        card_from_files(Tiny(), "j", run="out/run-tiny.json", root=tmp_path)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "run-tiny.json").write_text(json.dumps(RUN))
    (tmp_path / "out" / "a.json").write_text(json.dumps({"acc": 0.75}))
    assert "| acc | 0.7500 | — | 1 |" in card_from_files(Tiny(), "j", root=tmp_path)


def test_the_command_prints_the_card(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "metrics").mkdir()
    (tmp_path / "metrics" / "run.json").write_text(json.dumps(RUN))
    (tmp_path / "metrics" / "qa.json").write_text(json.dumps(HEADLINE))
    assert cli(["card", "--judged", "data/runs/h.jsonl.eval-results-gpt-4o"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("#### LongMemEval result: memory `bm25` on `s` (suite `full`)")
    assert "| overall accuracy | 0.5000 | — | 8 |" in out


def test_the_command_leads_with_params_yaml_s_benchmark(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "metrics").mkdir()
    (tmp_path / "params.yaml").write_text("benchmark:\n  _target_: mnemetric.longmemeval_v2.family.LongMemEvalV2Family\n"
                                          "  name: longmemeval-v2\n  metrics: metrics/v2.json\n"
                                          "paths:\n  judged: data/runs/hypotheses.jsonl.eval-results-lexical\n")
    (tmp_path / "metrics" / "run-v2.json").write_text(json.dumps({
        "benchmark": "LongMemEval-V2", "variant": {"name": "sample", "data_root": "data/sample-v2", "haystack": "small",
                                                   "source": "bundled", "sha256_verified": False,
                                                   "custody": {"file": "data/custody/v2-sample.json", "sha256": "c" * 64}},
        "suite": {"name": "full"}, "memory": {"name": "none", "fingerprint_sha256": "f" * 64},
        "reader": {"name": "offline", "model": None, "official": False},
        "judge": {"name": "offline", "model": None, "prompt_set_sha256": None, "official": False},
        "token_counter": {"name": "o200k-standin", "official": False},
        "counts": {"questions": 4, "judged": 4, "failed": 0},
        "official_equivalence": {"value": False, "reasons": ["offline reader"]}}))
    (tmp_path / "metrics" / "v2.json").write_text(json.dumps({"combined": {"accuracy": {
        "overall_full_set": {"value": 0.25, "ci95_low": 0.1, "ci95_high": 0.5, "n": 4}}}}))
    assert cli(["card"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("#### LongMemEval-V2 result: memory `none` on `sample` (suite `full`)")
    assert "| overall accuracy (full set) | 0.2500 | [0.1000, 0.5000] | 4 |" in out
    # V2's own provenance, not V1's: its data custody, reader, checker, token counter; no judged file, no
    # "Mnemetric None", no "None questions"
    assert (f"- data: `sample` (bundled), root `data/sample-v2`, haystack `small`; custody record "
            f"`data/custody/v2-sample.json` sha256 `{'c' * 64}` (NOT verified against the dataset pins)") in out
    assert "- reader: `offline`, model — (not official)" in out
    assert "- checker: `offline`, model —, prompt-set sha256 — (not official)" in out
    assert "- token counter: `o200k-standin` (not official)" in out and "- 4 of 4 questions checked, 0 failed" in out
    assert "  - offline reader" in out
    assert "judged file" not in out and "None" not in out
    assert cli(["card", "--benchmark", "longmemeval"]) == 2  # V1's manifest metrics/run.json is absent
    assert "metrics/run.json" in capsys.readouterr().err


def test_metrics_overrides_are_role_equals_path(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "metrics").mkdir()
    (tmp_path / "metrics" / "run.json").write_text(json.dumps(RUN))
    (tmp_path / "mine.json").write_text(json.dumps({**HEADLINE, "overall": 0.125}))
    assert cli(["card", "--metrics", "qa=mine.json"]) == 0
    assert "| overall accuracy | 0.1250 | — | 8 |" in capsys.readouterr().out
    assert cli(["card", "--metrics", "qa"]) == 2
    assert "ROLE=PATH" in capsys.readouterr().err


def test_the_command_without_a_run_manifest_is_a_clean_error(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli(["card"]) == 2
    assert "metrics/run.json" in capsys.readouterr().err


@pytest.mark.parametrize("key, value, field", [("benchmark", 1, "benchmark"), ("memory", "bm25", "memory"),
                                               ("counts", {"judged": "500"}, "counts.judged")])
def test_a_wrong_type_in_the_frame_s_manifest_keys_names_file_and_field(key, value, field):
    # the frame's keys (title, bullets of a family without its own) are read through ManifestShown
    with pytest.raises(InputError) as err:
        render_card(Tiny(), {**RUN, key: value}, {"m": None}, None, file="out/run-tiny.json")
    assert (err.value.problem.file, err.value.problem.field) == ("out/run-tiny.json", field)
