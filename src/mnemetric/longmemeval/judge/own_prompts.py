"""Two judge prompt sets of Mnemetric's OWN wording — ``strict`` and ``lenient`` — for the judge matrix.

Written here from scratch (no upstream text): they exist to measure how much the wording of a judge
moves the verdicts on the same answers (`mnemetric judge-audit validity`), and they can judge a run
(conf/judge/strict.yaml, conf/judge/lenient.yaml). A run judged with them is never official: their
prompt-set sha256 is not the pinned upstream one (:func:`mnemetric.longmemeval.judgments.judge_provenance`).

Both sets have upstream's five template keys (:data:`~mnemetric.longmemeval.judge.upstream_prompts.TEMPLATE_KEYS`,
chosen by the same rule: "_abs" in the id first, then the question type) and three positional fields
(question, reference, response), so they reuse the upstream judge's call path and label rule
("yes" in the lowercased reply). ``strict`` demands the reference fact and nothing that contradicts
or dilutes it; ``lenient`` accepts any response whose substance matches.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mnemetric.errors import ConfigError
from mnemetric.io import dumps_canonical, sha256_text
from mnemetric.longmemeval.judge.run import PromptSetJudge
from mnemetric.longmemeval.judge.upstream_prompts import PromptSet, check_template_fields

_TAIL = "\n\nQuestion: {}\nReference: {}\nResponse to grade: {}\n\nAnswer with one word, yes or no."

STRICT: Mapping[str, str] = {
    "default": "You grade a chat assistant's memory of earlier conversations strictly. Say yes only if the "
               "response states the reference fact itself, plainly and without offering other candidates. "
               "Say no if the fact is missing, only hinted at, hedged between options, or contradicted." + _TAIL,
    "temporal-reasoning": "You grade a chat assistant's reasoning about dates strictly. Say yes only if the "
                          "response gives exactly the reference value (the same day, date, count or order). "
                          "Any other number, even one day away, is no; so is a hedge between values." + _TAIL,
    "knowledge-update": "You grade a chat assistant's memory of facts that changed over time strictly. Say yes "
                        "only if the response gives the latest value, the reference, as its answer. An older "
                        "value, a list of values without a choice, or a hedge is no." + _TAIL,
    "single-session-preference": "You grade whether a chat assistant's suggestion honours what the user told it "
                                 "about their tastes, strictly. The reference describes what a good suggestion "
                                 "takes into account. Say yes only if the response clearly follows every part "
                                 "of it; generic advice is no." + _TAIL,
    "abstention": "This question cannot be answered from the earlier conversations; the reference explains "
                  "why. Grade strictly: say yes only if the response clearly declines to give an answer or "
                  "says the information is missing. Any attempt to answer, even a tentative one, is no." + _TAIL,
}

LENIENT: Mapping[str, str] = {
    "default": "You check a chat assistant's answer about earlier conversations. Say yes if the response, read "
               "generously, conveys the same information as the reference (other wording, extra detail or a "
               "partial match that keeps the essential fact are fine). Otherwise say no." + _TAIL,
    "temporal-reasoning": "You check a chat assistant's answer about dates and durations. Say yes if the "
                          "response reaches the reference value or one close to it (a count off by a single "
                          "unit is acceptable), in any wording. Otherwise say no." + _TAIL,
    "knowledge-update": "You check a chat assistant's answer about a fact that changed over time. Say yes if the "
                        "response mentions the reference (the latest value), even alongside older values. "
                        "Otherwise say no." + _TAIL,
    "single-session-preference": "You check whether a chat assistant's suggestion takes the user's stated tastes "
                                 "into account. The reference describes a good suggestion. Say yes if the "
                                 "response reflects the main point of it, even loosely. Otherwise say no." + _TAIL,
    "abstention": "This question cannot be answered from the earlier conversations; the reference explains why. "
                  "Say yes if the response signals in any way that it does not know or lacks the information, "
                  "even while guessing. Say no if it answers confidently." + _TAIL,
}

WORDINGS: Mapping[str, Mapping[str, str]] = {"strict": STRICT, "lenient": LENIENT}


def own_prompt_set(wording: str) -> PromptSet:
    """The :class:`PromptSet` of one of our wordings; ``source_sha256`` = its prompt-set sha256 (no file)."""
    try:
        templates = WORDINGS[wording]
    except KeyError:
        raise ConfigError("judge.wording", f"unknown wording {wording!r}; expected one of {sorted(WORDINGS)}") from None
    for key, text in templates.items():
        check_template_fields(key, text, __name__)
    return PromptSet(templates, sha256_text(dumps_canonical(dict(templates))))


@dataclass(frozen=True)
class OwnPromptJudge(PromptSetJudge):
    """A model judge with one of our own prompt sets (``wording``: strict | lenient); never official."""

    name: str
    alias: str
    model: str
    wording: str = "strict"
    temperature: float = 0
    max_tokens: int = 10
    n: int = 1
    base_url: str | None = None
    kind: str = "own-prompt"

    def __post_init__(self) -> None:
        own_prompt_set(self.wording)  # an unknown wording is a ConfigError at build time

    def prompts(self) -> PromptSet:
        return own_prompt_set(self.wording)
