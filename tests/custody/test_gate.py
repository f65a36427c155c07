"""LongMemEval's publishability gate (its rules, mnemetric.longmemeval.gate) in custody's frame: a hand-written
official manifest passes; each single deviation fails with its reason."""

from __future__ import annotations

import copy

import pytest

from mnemetric.custody.gate import gate
from mnemetric.longmemeval.family import FAMILY


def official_equivalence(manifest):
    """The gate's verdict under LongMemEval's rules, as (value, reasons)."""
    verdict = gate(manifest, FAMILY)
    return verdict.value, list(verdict.reasons)

PINNED = "80a2a38e6c8aa82aaefb929f7b755d2bdfce9253c066f20174e0ab51cc358b53"  # recorded 2026-11-29 (README)


def official() -> dict:
    return {
        "variant": {"name": "s", "source": "huggingface", "sha256_verified": True},
        "suite": {"name": "full"},
        "scoring": {"profile": "longmemeval-session-upstream-v1"},
        "judge": {"requested_model": "gpt-4o-2024-08-06", "resolved_models": ["gpt-4o-2024-08-06"],
                  "prompt_set_sha256": PINNED, "endpoints": ["https://api.openai.com/v1"],
                  "params_sent": {"requests": 500, "values": [{"temperature": 0, "max_tokens": 10, "n": 1}],
                                  "not_in_cache": 0}},
        "counts": {"questions": 500, "judged": 500, "failed": 0},
    }


def test_an_official_run_passes():
    assert official_equivalence(official()) == (True, [])


def _set(doc: dict, dotted: str, value) -> dict:
    doc = copy.deepcopy(doc)
    *parents, last = dotted.split(".")
    node = doc
    for part in parents:
        node = node[part]
    node[last] = value
    return doc


DEVIATIONS = [
    ("variant.source", "bundled", "not an official pinned file"),
    ("variant.sha256_verified", False, "not verified by sha256"),
    ("suite.name", "development", "not the full suite"),
    ("scoring.profile", "mnemetric-historical", "scoring profile"),
    ("judge.requested_model", "gpt-4o", "judge model requested"),
    ("judge.resolved_models", ["gpt-4o-2024-08-06", "gpt-4o-2024-11-20"], "judge model(s) returned"),
    ("judge.prompt_set_sha256", "0" * 64, "prompt set sha256"),
    ("judge.params_sent.values", [{"temperature": 0, "max_tokens": 10, "n": 1},
                                  {"temperature": 0.2, "max_tokens": 10, "n": 1}], "differ from upstream"),
    ("judge.params_sent.not_in_cache", 2, "not in cache"),
    ("judge.params_sent", None, "no judge request was sent"),
    ("judge.endpoints", ["http://127.0.0.1:8000/v1"], "not the official API"),
    ("judge.endpoints", ["https://api.openai.com/v1", "https://proxy.example/v1"], "not the official API"),
    ("counts.judged", 499, "499 of 500 question(s) judged"),
    ("counts.failed", 1, "1 question(s) failed"),
]


@pytest.mark.parametrize(("key", "value", "reason"), DEVIATIONS, ids=[f"{k}={v}" for k, v, _ in DEVIATIONS])
def test_each_deviation_is_one_named_reason(key, value, reason):
    ok, reasons = official_equivalence(_set(official(), key, value))
    assert ok is False
    assert len(reasons) == 1 and reason in reasons[0], reasons


def test_a_local_server_serving_the_official_name_is_not_silent():
    """Same model name, same snapshot returned, but a local endpoint: false, and the reason says why."""
    ok, reasons = official_equivalence(_set(official(), "judge.endpoints", ["http://127.0.0.1:9999/v1"]))
    assert not ok and "127.0.0.1:9999" in reasons[0] and "same model name" in reasons[0]


def test_several_deviations_give_several_reasons():
    doc = _set(_set(official(), "suite.name", "development"), "counts.failed", 3)
    ok, reasons = official_equivalence(doc)
    assert not ok and len(reasons) == 2


def test_an_empty_run_is_not_official():
    doc = _set(_set(official(), "counts.questions", 0), "counts.judged", 0)
    assert official_equivalence(doc) == (False, ["the run has no questions"])


def test_judgments_naming_two_prompt_sets_are_not_official():
    doc = _set(_set(official(), "judge.prompt_set_sha256s", [PINNED, "0" * 64]), "judge.prompt_set_sha256", None)
    ok, reasons = official_equivalence(doc)
    assert not ok and "2 different prompt sets" in reasons[0]
