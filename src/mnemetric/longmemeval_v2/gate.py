"""LongMemEval-V2's publishability gate: may a run's numbers be called upstream's protocol?

The family's rules (``LongMemEvalV2Family.official_reasons``); custody frames them (:func:`mnemetric.custody.gate.gate`:
official exactly when there is no reason). One reason per failed condition, never silent, under upstream's harness.py
and leaderboard at be15ea6e995462f3391c1a610892df3f67dfa7bd (upstream-v2-protocol.md):

1. the data root is verified against the pinned dataset revision, every file matching its pin;
2. images are on (screenshots and question images required, as upstream's runs use them);
3. the haystack is an official tier file (``lme_v2_small.json`` / ``lme_v2_medium.json``);
4. both domains run (official results combine web and enterprise);
5. the reader is the official Qwen/Qwen3.5-9B reader, and a reader that sends prompts reads them from the
   pinned harness.py;
6. when an LLM checker scored a question, the checker is the official gpt-5.2 judge with pinned prompts;
7. the token counter is the Qwen/Qwen3.5-9B processor (and says nothing against itself: its ``note``);
8. ``memory_context_max_tokens`` is upstream's default;
9. no question failed where upstream aborts the run;
10. the memory saw the question text and image only (not upstream's query context at be15ea6, which hands a
    memory the whole question row, gold answer included: :mod:`.upstream_memory`).
11. every question of the run was asked: not a subset (``v2.subset``, ``--question-ids`` / ``--per-type`` /
    ``--limit``) and not one shard of it (``--shard K/N``).

The facts these rules read are one typed record, :class:`GateFacts`, which metrics/run-v2.json keeps as its
``protocol`` section: the gate decides from the manifest alone (``official_reasons(manifest)``), and the run
(:func:`mnemetric.longmemeval_v2.run.finish`) decides from the same record. Pure, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from mnemetric.longmemeval_v2.memory import QUESTION_ONLY
from mnemetric.longmemeval_v2.questions import DOMAINS
from mnemetric.longmemeval_v2.tokens import DEFAULT_MAX_TOKENS
from mnemetric.records import Fields

SECTION = "protocol"
"""The run manifest's section holding :class:`GateFacts`."""
OPTIONAL = ("subset", "shard")
"""Facts the section holds only when set."""


@dataclass(frozen=True)
class GateFacts:
    """What the gate reads of one run (module docstring), as recorded by its steps."""

    data_verified: bool
    data_reasons: tuple[str, ...]
    """The data check's own reasons (each file that did not match its pin)."""
    images: bool
    haystack: str
    tier: str | None
    """The official tier of the haystack file, or None."""
    domains: tuple[str, ...]
    reader: str
    reader_official: bool
    reader_sends_prompts: bool
    reader_texts_pinned: bool
    uses_llm_checker: bool
    checker: str
    checker_official: bool
    token_counter: str
    token_counter_official: bool
    token_counter_note: str | None
    memory_context_max_tokens: int
    failed: int
    memory_query_context: str = QUESTION_ONLY
    """What the memory saw of each question (:data:`~.memory.QUESTION_ONLY`, or :data:`~.memory.UPSTREAM_ROW`:
    the whole question row, gold answer included)."""
    subset: str | None = None
    """Which questions a subset run asked (:meth:`.selection.Selection.reason`: "a subset of the questions: 4 of
    14 (limit=2); ..."), None when it asked every question."""
    shard: str | None = None
    """Which part of the run a shard is (``shard K/N ...``, :mod:`.shards`), None for a whole run."""

    def to_record(self) -> dict[str, Any]:
        """The protocol section; ``subset`` / ``shard`` only when set (a whole run's section keeps its layout)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()
                if k not in OPTIONAL or v is not None}

    @classmethod
    def from_record(cls, raw: Any, *, file: str) -> GateFacts:
        f = Fields.of(raw, file=file, record="<manifest>", prefix=f"{SECTION}.",
                      fix="regenerate it (dvc repro v2_metrics)")
        texts = ("haystack", "reader", "checker", "token_counter")
        flags = ("data_verified", "images", "reader_official", "reader_sends_prompts", "reader_texts_pinned",
                 "uses_llm_checker", "checker_official", "token_counter_official")
        values: dict[str, Any] = {k: f.string(k) for k in texts} | {k: f.boolean(k) for k in flags}
        values |= {"data_reasons": f.strings("data_reasons"), "domains": f.strings("domains"),
                   "tier": f.optional_string("tier"), "token_counter_note": f.optional_string("token_counter_note"),
                   "memory_context_max_tokens": f.integer("memory_context_max_tokens"), "failed": f.count("failed"),
                   "memory_query_context": (f.optional_string("memory_query_context")
                                            if "memory_query_context" in raw else None) or QUESTION_ONLY}
        values |= {k: f.optional_string(k) if k in f.raw else None for k in OPTIONAL}
        return cls(**{x.name: values[x.name] for x in fields(cls)})


def reasons(g: GateFacts) -> list[str]:
    """Every reason the run is not official; empty only when every condition holds (module docstring)."""
    out = []
    if not g.data_verified:
        out.append("data root not verified against the pinned dataset revision")
    out += list(g.data_reasons)
    if not g.images:
        out.append("images off: screenshots and question images are not required to exist, and a missing "
                   "question image is left out (upstream's runs use them)")
    if g.tier is None:
        out.append(f"haystack {g.haystack!r} is not an official tier file")
    if set(g.domains) != set(DOMAINS):
        out.append("only " + ", ".join(g.domains) + " run; official results combine both domains")
    if not g.reader_official:
        out.append(f"reader {g.reader!r} is not the official Qwen/Qwen3.5-9B reader with pinned texts")
    if g.reader_sends_prompts and not g.reader_texts_pinned:
        out.append("reader texts not read from the pinned upstream harness.py")
    if g.uses_llm_checker and not g.checker_official:
        out.append(f"checker {g.checker!r} is not the official gpt-5.2 judge with pinned prompts")
    if not g.token_counter_official:
        out.append(f"token counter {g.token_counter!r} is not the Qwen/Qwen3.5-9B processor")
    if g.memory_context_max_tokens != DEFAULT_MAX_TOKENS:
        out.append(f"memory_context_max_tokens {g.memory_context_max_tokens} != {DEFAULT_MAX_TOKENS}")
    if g.failed:
        out.append(f"{g.failed} question(s) failed where upstream aborts the run")
    if g.memory_query_context != QUESTION_ONLY:
        out.append(f"the memory saw more than the question text and image ({g.memory_query_context}: upstream's "
                   "query context, the whole question row with its gold answer; set v2.memory.query_context=none)")
    if g.token_counter_note:
        out.append(g.token_counter_note)
    out += [text for text in (g.subset, g.shard) if text]
    return out


def official_reasons(manifest: Mapping[str, Any], *, file: str = "metrics/run-v2.json") -> list[str]:
    """The gate over a run manifest: its ``protocol`` section (:class:`GateFacts`) through :func:`reasons`."""
    if not isinstance(manifest.get(SECTION), Mapping):
        return [f"the LongMemEval-V2 run manifest has no {SECTION} section to check (regenerate it: dvc repro v2_metrics)"]
    return reasons(GateFacts.from_record(manifest[SECTION], file=file))
