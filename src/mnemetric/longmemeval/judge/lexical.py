"""The offline ``lexical`` judge: deterministic answer matching, no model call.

For the bundled sample, smoke tests and CI without an API key. It is **not** the upstream judge
(``official_equivalence`` is always False) and its numbers are not comparable with published
LongMemEval results. Rules, per question:

* abstention (``"_abs"`` in question_id, checked first as upstream does): correct iff the
  hypothesis contains one of :data:`ABSTENTION_PHRASES` ("not enough information", "don't know",
  "not mentioned", "cannot", "no information", ...);
* single-session-preference: the gold "answer" is a rubric, so we only check that the hypothesis
  shares at least :data:`PREFERENCE_OVERLAP` (30%) of the rubric's content words. This is a
  *floor* (a cheap signal that the response uses the user's information), not a claim that the
  response satisfies the rubric;
* every other type: after :func:`normalize` (lowercase, punctuation and articles removed), correct
  if the gold answer (or one of its alternatives, see :func:`gold_alternatives`) appears as a
  contiguous word sequence in the hypothesis, or — when the gold is a number — that number appears
  in it, or token F1 ≥ :data:`F1_THRESHOLD` (0.8).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import ClassVar

from mnemetric.errors import InputError

from mnemetric.longmemeval.rules import ABSTENTION_MARK, PREFERENCE_TYPE, QUESTION_TYPES  # noqa: E402

F1_THRESHOLD = 0.8
PREFERENCE_OVERLAP = 0.3
ANSWER_TYPES = frozenset(QUESTION_TYPES) - {PREFERENCE_TYPE}

ABSTENTION_PHRASES = (
    "not enough information", "don't know", "do not know", "not mentioned", "never mentioned",
    "didn't mention", "did not mention", "cannot", "can't", "no information", "insufficient information",
    "not provided", "unable to", "no record", "not specified", "unanswerable",
)
ARTICLES = frozenset({"a", "an", "the"})
STOPWORDS = frozenset("""
a an the and or but if then than so of to in on at by for with from into onto about as is are was were be been
being am do does did doing have has had having i me my mine you your yours he him his she her hers it its we us
our ours they them their theirs this that these those there here what which who whom whose when where why how
not no nor can could should would will shall may might must just also very too only own same such some any all
each both few more most other again further once up down out off over under while because until before after
above below between through during user users response responses prefer prefers preferred preference would like
""".split())
_NUMBER_WORDS = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}
_TOKEN = re.compile(r"\d+(?:\.\d+)?|[^\W_]+")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_PARENS = re.compile(r"\(([^()]*)\)")


def tokens(text: object) -> list[str]:
    """Lowercase word/number tokens, punctuation dropped, articles removed ("1,000" → "1000")."""
    lowered = _THOUSANDS.sub("", str(text).lower())
    return [t for t in _TOKEN.findall(lowered) if t not in ARTICLES]


def normalize(text: object) -> str:
    """Lowercase, strip punctuation and articles, collapse whitespace."""
    return " ".join(tokens(text))


def _canonical_number(token: str) -> str | None:
    """"15", "15.0" and "fifteen" → "15"; non-numbers → None."""
    token = _NUMBER_WORDS.get(token, token)
    if not _NUMBER.fullmatch(token):
        return None
    value = float(token)
    return str(int(value)) if value.is_integer() else repr(value)


def gold_alternatives(answer: object) -> list[str]:
    """The gold answer, plus (for text like "25:50 (or 25 minutes 50 seconds)") the text without the
    parenthetical and each parenthetical with a leading "or" dropped. Normalized, non-empty, unique."""
    raw = str(answer)
    candidates = [raw, _PARENS.sub(" ", raw)]
    candidates += [re.sub(r"^\s*(?:or|i\.e\.|e\.g\.)\s+", "", inner, flags=re.I) for inner in _PARENS.findall(raw)]
    out: list[str] = []
    for c in candidates:
        norm = normalize(c)
        if norm and norm not in out:
            out.append(norm)
    return out


def token_f1(prediction: str, gold: str) -> float:
    """SQuAD-style token F1 between two normalized strings (0.0 if either is empty)."""
    p, g = prediction.split(), gold.split()
    common = sum((Counter(p) & Counter(g)).values())
    if not p or not g or common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


def _contains_words(haystack: str, needle: str) -> bool:
    return f" {needle} " in f" {haystack} "


def answer_matches(answer: object, hypothesis: str) -> bool:
    """Gold (or an alternative) appears in the hypothesis, a numeric gold's number appears, or F1 ≥ 0.8."""
    hyp = normalize(hypothesis)
    hyp_numbers = {n for n in map(_canonical_number, hyp.split()) if n is not None}
    for gold in gold_alternatives(answer):
        if _contains_words(hyp, gold) or token_f1(hyp, gold) >= F1_THRESHOLD:
            return True
        number = _canonical_number(gold) if " " not in gold else None
        if number is not None and number in hyp_numbers:
            return True
    return False


def is_abstention_response(hypothesis: str) -> bool:
    """The hypothesis says the question cannot be answered (one of ABSTENTION_PHRASES, case-insensitive)."""
    text = str(hypothesis).lower().replace("\u2019", "'")
    return any(phrase in text for phrase in ABSTENTION_PHRASES)


def content_words(text: object) -> set[str]:
    """Tokens of three or more characters that are not stopwords."""
    return {t for t in tokens(text) if len(t) >= 3 and t not in STOPWORDS}


def preference_overlap(rubric: object, hypothesis: str) -> float:
    """Share of the rubric's content words that the hypothesis also uses (0.0 for an empty rubric)."""
    wanted = content_words(rubric)
    return len(wanted & content_words(hypothesis)) / len(wanted) if wanted else 0.0


def lexical_label(question_id: str, question_type: str, answer: object, hypothesis: str) -> bool:
    """The lexical judge's verdict for one question (rules in the module docstring)."""
    if ABSTENTION_MARK in question_id:
        return is_abstention_response(hypothesis)
    if question_type == PREFERENCE_TYPE:
        return preference_overlap(answer, hypothesis) >= PREFERENCE_OVERLAP
    if question_type in ANSWER_TYPES:
        return answer_matches(answer, hypothesis)
    raise InputError("<reference>", question_id, "question_type", f"unknown question_type {question_type!r}; "
                     f"expected one of {sorted(ANSWER_TYPES | {PREFERENCE_TYPE})}")


@dataclass(frozen=True)
class LexicalJudge:
    """Offline judge for the bundled sample; never equivalent to the official LLM judge."""

    name: str = "lexical"
    model: str = "mnemetric-lexical-v1"
    """Written as autoeval_label.model, so the official-equivalence check sees a non-official judge."""
    official_equivalence: ClassVar[bool] = False

    def label(self, question_id: str, question_type: str, question: str, answer: object, hypothesis: str) -> bool:
        """Same arguments as the LLM judge's prompt renderer; ``question`` is not used."""
        return lexical_label(question_id, question_type, answer, hypothesis)

    def autoeval_label(self, question_id: str, question_type: str, question: str, answer: object,
                       hypothesis: str) -> dict[str, object]:
        """The upstream ``autoeval_label`` record: {"model": ..., "label": bool}."""
        return {"model": self.model, "label": self.label(question_id, question_type, question, answer, hypothesis)}
