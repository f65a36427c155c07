"""The result card from hand-written run manifest, metrics and custody files (both QA layouts)."""

from __future__ import annotations

import json

from mnemetric.cli import main as cli
from mnemetric.custody.card import Number, qa_numbers, render_card, retrieval_numbers

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


def test_qa_numbers_from_the_detail_layout():
    assert qa_numbers(DETAIL) == [Number("overall accuracy", 0.5, 0.125, 0.875, 8),
                                  Number("task-averaged accuracy", 0.25, 0.0, 0.5, 8),
                                  Number("abstention accuracy", 0.75, None, None, 4),
                                  Number("multi-session", 0.5, 0.1, 0.9, 2)]


def test_qa_numbers_from_the_headline_layout():
    assert qa_numbers(HEADLINE) == [Number("overall accuracy", 0.5, None, None, 8),
                                    Number("task-averaged accuracy", 0.25, None, None, 8),
                                    Number("abstention accuracy", 0.75, None, None, None),
                                    Number("multi-session", 0.5, None, None, None)]


def test_retrieval_numbers():
    assert retrieval_numbers(RETRIEVAL) == [Number("session recall_all@5", 0.5, n=6),
                                            Number("session ndcg_any@5", 0.25, n=6)]


def test_the_card_carries_every_custody_fact():
    card = render_card(RUN, DETAIL, RETRIEVAL, OUTPUTS, "data/runs/h.jsonl.eval-results-gpt-4o")
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
    card = render_card(RUN, HEADLINE, None, None, "data/runs/x")
    assert "sha256 not in the custody manifest" in card


def test_the_command_prints_the_card(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "metrics").mkdir()
    (tmp_path / "metrics" / "run.json").write_text(json.dumps(RUN))
    (tmp_path / "metrics" / "qa.json").write_text(json.dumps(HEADLINE))
    assert cli(["card", "--judged", "data/runs/h.jsonl.eval-results-gpt-4o"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("#### LongMemEval result: memory `bm25` on `s` (suite `full`)")
    assert "| overall accuracy | 0.5000 | — | 8 |" in out


def test_the_command_without_a_run_manifest_is_a_clean_error(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli(["card"]) == 2
    assert "metrics/run.json" in capsys.readouterr().err
