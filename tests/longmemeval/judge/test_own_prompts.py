"""Our strict and lenient prompt sets: upstream's template keys and fields, never upstream's words, never official."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mnemetric.errors import ConfigError
from mnemetric.longmemeval.judge.own_prompts import WORDINGS, OwnPromptJudge, own_prompt_set
from mnemetric.longmemeval.judge.upstream_prompts import PROMPT_SET_SHA256, TEMPLATE_KEYS, extract_templates
from mnemetric.longmemeval.judgments import judge_provenance

UPSTREAM = Path(os.environ.get("MNEMETRIC_LONGMEMEVAL_DIR", "/tmp/upstream/LongMemEval")) / "src/evaluation/evaluate_qa.py"


def test_both_wordings_have_upstreams_keys_and_three_fields_and_differ():
    strict, lenient = own_prompt_set("strict"), own_prompt_set("lenient")
    for ps in (strict, lenient):
        assert set(ps.templates) == set(TEMPLATE_KEYS)
        assert ps.render("q_abs", "multi-session", "Q?", "gold", "resp").startswith("This question cannot be answered")
        assert "Question: Q?\nReference: 15\nResponse to grade: resp" in ps.render("q", "temporal-reasoning", "Q?", 15, "resp")
    assert strict.prompt_set_sha256 != lenient.prompt_set_sha256
    assert judge_provenance(["gpt-4o-2024-08-06"], strict.prompt_set_sha256, strict.source_sha256)["official_equivalence"] is False
    assert PROMPT_SET_SHA256 not in {strict.prompt_set_sha256, lenient.prompt_set_sha256}
    with pytest.raises(ConfigError, match="wording"):
        OwnPromptJudge("x", "x", "m", "harsh")


def _ngrams(text: str, n: int = 6) -> set[tuple[str, ...]]:
    words = [w.strip(".,:;()\"'").lower() for w in text.split()]
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


@pytest.mark.skipif(not UPSTREAM.is_file(), reason=f"no upstream evaluate_qa.py at {UPSTREAM} (opt-in clean-room check)")
def test_no_six_word_run_of_upstream_text_in_our_wordings():
    theirs = set().union(*(_ngrams(t) for t in extract_templates(UPSTREAM.read_text(encoding="utf-8")).values()))
    for name, templates in WORDINGS.items():
        for key, text in templates.items():
            assert not _ngrams(text) & theirs, (name, key, sorted(_ngrams(text) & theirs)[:3])
