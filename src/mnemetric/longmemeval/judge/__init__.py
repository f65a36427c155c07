"""Judges: the upstream LLM-judge prompts (read from the pinned upstream file) and the offline lexical judge."""

from mnemetric.longmemeval.judge.lexical import LexicalJudge, lexical_label
from mnemetric.longmemeval.judge.upstream_file import REVISION, SHA256, UPSTREAM_REPO, locate_evaluate_qa
from mnemetric.longmemeval.judge.upstream_prompts import (
    PROMPT_SET_SHA256,
    TEMPLATE_KEYS,
    PromptSet,
    extract_templates,
    load_prompt_set,
    parse_label,
    template_key_for,
)

__all__ = [
    "PROMPT_SET_SHA256",
    "REVISION",
    "SHA256",
    "TEMPLATE_KEYS",
    "UPSTREAM_REPO",
    "LexicalJudge",
    "PromptSet",
    "extract_templates",
    "lexical_label",
    "load_prompt_set",
    "locate_evaluate_qa",
    "parse_label",
    "template_key_for",
]
