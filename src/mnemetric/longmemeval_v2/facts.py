"""What a V2 run's built components say about themselves: the facts the official verdict and metrics/run-v2.json
need, recorded by the step that used the component (so the manifest is built from tracked files alone).

reader: ``sends_prompts`` (it sends the upstream texts) and then the sha256 of the harness.py it read and of its
extracted texts (``ReaderTexts.texts_sha256``); a reader that sends nothing records null for both, so whether
the texts are at hand changes nothing; ``texts_pinned`` (for the verdict only). checker: its model and
request settings, ``kind`` (llm | offline), and for an LLM checker the qa_eval_metrics.py sha256 and
``CheckerTexts.texts_sha256``. token counter: name, whether it is the official one, and its ``note`` (a reason
the run is not official, e.g. why the official counter was not used).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mnemetric.longmemeval_v2.upstream_text import ReaderTexts

CHECKER_CALLS_MODEL = "llm"
"""The checker facts' ``kind`` of a checker that calls a model (any other: ``offline``)."""


def reader_facts(reader: Any, texts: ReaderTexts | None) -> dict[str, Any]:
    """The reader block; ``texts``: the reader texts the run has (None: none at hand)."""
    sends = bool(getattr(reader, "sends_reader_texts", True))
    rtexts = getattr(reader, "texts", None) if sends else None
    return {"name": reader.name, "model": getattr(reader, "model", None), "sends_prompts": sends,
            "official": bool(getattr(reader, "official", False)),
            "harness_sha256": rtexts.source_sha256 if rtexts else None,
            "texts_sha256": rtexts.texts_sha256 if rtexts else None,
            "texts_pinned": bool(texts is not None and texts.is_pinned)}


def checker_facts(checker: Any) -> dict[str, Any]:
    ctexts = getattr(checker, "texts", None)
    return {"name": checker.name, "model": getattr(checker, "model", None),
            "reasoning_effort": getattr(checker, "reasoning_effort", None),
            "max_completion_tokens": getattr(checker, "max_completion_tokens", None),
            "official": bool(getattr(checker, "official", False)),
            "qa_eval_metrics_sha256": ctexts.source_sha256 if ctexts else None,
            "prompt_set_sha256": ctexts.texts_sha256 if ctexts else None,
            "kind": CHECKER_CALLS_MODEL if getattr(checker, "calls_model", False) else "offline"}


def checker_calls_model(facts: Mapping[str, Any]) -> bool:
    """Whether the checker of a facts block (:func:`checker_facts`) calls a model: its ``kind`` is llm (the one
    place that reads the rule :func:`checker_facts` writes)."""
    return facts.get("kind") == CHECKER_CALLS_MODEL


def counter_facts(counter: Any, note: str | None = None) -> dict[str, Any]:
    note = note if note is not None else getattr(counter, "note", None)
    return {"name": counter.name, "official": bool(counter.official), "note": note}
