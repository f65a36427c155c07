"""LongMemEval-V2 answer parsing, eval-function specs and the deterministic checkers.

Reimplements (no code copied) upstream ``evaluation/qa_eval_metrics.py`` of
github.com/xiaowu0162/LongMemEval-V2 at be15ea6e995462f3391c1a610892df3f67dfa7bd (sha256
``UPSTREAM_SHA256``), plus the scoring rules of ``evaluation/harness.py`` (score_prediction):

* The reader's reply is cut by :func:`extract_boxed_answer`; an answer for which :func:`is_unknown`
  holds scores 0 whatever the checker says (abstention questions included).
* A deterministic checker gets ``(parsed boxed answer, gold answer, **spec options)``; the harness adds
  no keyword of its own. An LLM checker gets the raw reply as the prediction, and the harness's keywords
  (:data:`HARNESS_LLM_KEYS`) override the spec's (``kwargs.update(overrides)``).
* A question is an abstention problem iff its eval function name is ``llm_abstention_checker``
  (harness.py:594) — never because of its question type.

Where upstream raises (an unknown name, a bad option, a non-binary score) we raise a
:class:`~mnemetric.errors.MnemetricError` that names the spec.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any

from mnemetric.errors import ConfigError, InputError, PluginError
from mnemetric.longmemeval_v2.judge_label import UnparseableJudgeReply, parse_judge_label

__all__ = [
    "DEFAULT_SEPARATORS", "DETERMINISTIC_CHECKERS", "HARNESS_LLM_KEYS", "KNOWN_CHECKERS", "LLM_CHECKERS",
    "UPSTREAM_FILE", "UPSTREAM_REVISION", "UPSTREAM_SHA256", "UnparseableJudgeReply",
    "eval_name", "extract_boxed_answer", "is_abstention_problem", "is_unknown", "mc_choice_match",
    "mc_choice_set_match", "norm_phrase_set_match", "norm_phrase_set_match_ordered", "normalize",
    "normalize_phrase", "parse_eval_function", "parse_judge_label", "parse_spec_value", "score_deterministic",
    "score_to_bool", "split_eval_function", "split_phrases", "with_harness_overrides", "SpecError",
]

UPSTREAM_REVISION = "be15ea6e995462f3391c1a610892df3f67dfa7bd"
UPSTREAM_FILE = "evaluation/qa_eval_metrics.py"
UPSTREAM_SHA256 = "f8ba659e237c4282a07a92538090ea500ce8483820b390b1d19af187c01417ac"

DEFAULT_SEPARATORS: tuple[str, ...] = (",", ";")
BOXED_MARKER = "\\boxed{"
ABSTENTION_CHECKER = "llm_abstention_checker"
LLM_CHECKERS = frozenset({ABSTENTION_CHECKER, "llm_gotchas_checker"})
"""Checkers that call a judge model (harness.py LLM_EVAL_FUNCTIONS); not scored here."""
HARNESS_LLM_KEYS = frozenset({
    "evaluator_model", "evaluator_base_url", "evaluator_api_key", "evaluator_reasoning_effort",
    "evaluator_max_completion_tokens", "evaluator_timeout_seconds",  # harness.py make_eval_config
    "question_item", "parsed_prediction", "model_response",          # harness.py score_prediction
})
"""The keywords the harness passes to an LLM checker; they override spec options of the same name."""

_MULTI_SELECT_FILLERS = frozenset({"AND", "ANSWER", "ANSWERS", "CHOICE", "CHOICES", "FINAL", "LETTER",
                                   "LETTERS", "OPTION", "OPTIONS"})
_HYPHEN_AND_SEPARATORS = str.maketrans({"-": " ", "_": " ", ",": " ", ";": " "})
_SEPARATORS_ONLY = str.maketrans({",": " ", ";": " "})
_NOT_WORD_OR_SPACE = re.compile(r"[^\w\s]")
_FIRST_FLAT_BOX = re.compile(r"\\boxed\{([^}]*)\}")
_CHOICE_WORDS = re.compile(r"\b(?:choice|option)\b", re.IGNORECASE)
_UPPER_RUNS = re.compile(r"[A-Z]+")


# ------------------------------------------------------------------ answers

def extract_boxed_answer(text: str) -> str:
    """The content of the last ``\\boxed{``, braces balanced; see the rule below.

    Start after the last occurrence of the literal ``\\boxed{`` (so an inner, nested box wins), scan with a
    brace depth starting at 1 until it returns to 0 (inner braces are kept); an unclosed box yields the rest
    of the text. The result is stripped; if empty, or if there is no marker, the whole text stripped.
    """
    start = text.rfind(BOXED_MARKER)
    if start < 0:
        return text.strip()
    depth, end = 1, start + len(BOXED_MARKER)
    body_start = end
    while end < len(text):
        depth += {"{": 1, "}": -1}.get(text[end], 0)
        if depth == 0:
            break
        end += 1
    body = text[body_start:end].strip()
    return body or text.strip()


def is_unknown(parsed_answer: str) -> bool:
    """True iff the parsed answer, stripped and lower-cased, is exactly ``unknown`` ("Unknown." is not)."""
    return parsed_answer.strip().lower() == "unknown"


# ------------------------------------------------------------------ phrase matching

def normalize(text: Any, *, lower: Any = True, normalize_hyphen: Any = True, strip_punct: Any = True) -> str:
    """Upstream ``normalize_phrase``: the text compared by the phrase checkers.

    ``None`` → ``""``; a non-string → ``str()``; then, in order: lower-case (if ``lower``); ``-`` and ``_`` → space
    (if ``normalize_hyphen``); ``,`` and ``;`` → space (always); every character that is neither a Unicode word
    character nor whitespace deleted (if ``strip_punct``); whitespace runs → one space; strip. Flags are
    tested for truthiness, as upstream does.
    """
    if text is None:
        return ""
    text = text if isinstance(text, str) else str(text)
    if lower:
        text = text.lower()
    text = text.translate(_HYPHEN_AND_SEPARATORS if normalize_hyphen else _SEPARATORS_ONLY)
    if strip_punct:
        text = _NOT_WORD_OR_SPACE.sub("", text)
    return " ".join(text.split())


normalize_phrase = normalize  # the upstream name


def split_phrases(text: Any, *, separators: Iterable[str] = DEFAULT_SEPARATORS, **flags: Any) -> list[str]:
    """Gold phrases: ``text`` split on the raw separators *before* normalizing, each part normalized, empty
    parts dropped (order and repeats kept). No separators: the whole text is one phrase. ``None`` → []."""
    if text is None:
        return []
    seps = list(separators)
    if not seps:
        whole = normalize(text, **flags)
        return [whole] if whole else []
    pattern = "|".join(map(re.escape, seps))
    parts = (normalize(part, **flags) for part in re.split(pattern, text))
    return [part for part in parts if part]


def _has_phrase(phrase: str, text: str) -> re.Match[str] | None:
    return re.search(r"\b" + re.escape(phrase) + r"\b", text)


def norm_phrase_set_match(prediction: Any, answer: Any, *, separators: Iterable[str] = DEFAULT_SEPARATORS,
                          require_non_empty: Any = True, lower: Any = True, normalize_hyphen: Any = True,
                          strip_punct: Any = True) -> bool:
    """True iff every distinct gold phrase occurs in the normalized prediction as a whole-word match
    (``\\b`` phrase ``\\b``). With ``require_non_empty``, an empty prediction or no phrase → False."""
    flags = {"lower": lower, "normalize_hyphen": normalize_hyphen, "strip_punct": strip_punct}
    pred = normalize(prediction, **flags)
    phrases = split_phrases(answer, separators=separators, **flags)
    if require_non_empty and (not pred or not phrases):
        return False
    return all(_has_phrase(phrase, pred) is not None for phrase in set(phrases))


def norm_phrase_set_match_ordered(prediction: Any, answer: Any, *,
                                  separators: Iterable[str] = DEFAULT_SEPARATORS, require_non_empty: Any = True,
                                  lower: Any = True, normalize_hyphen: Any = True, strip_punct: Any = True) -> bool:
    """Like :func:`norm_phrase_set_match` but in gold order, without dedup: each phrase is searched in the
    prediction after the end of the previous match (non-overlapping; a repeated phrase must repeat)."""
    flags = {"lower": lower, "normalize_hyphen": normalize_hyphen, "strip_punct": strip_punct}
    pred = normalize(prediction, **flags)
    phrases = split_phrases(answer, separators=separators, **flags)
    if require_non_empty and (not pred or not phrases):
        return False
    offset = 0
    for phrase in phrases:
        hit = _has_phrase(phrase, pred[offset:])
        if hit is None:
            return False
        offset += hit.end()
    return True


# ------------------------------------------------------------------ multiple choice

def mc_choice_match(prediction: Any, answer: Any, *, strip_chars: Iterable[str] = ".",
                    require_non_empty: Any = True, **ignored: Any) -> bool:
    """One multiple-choice letter. ``None`` on either side → False. Candidate: the content of the first
    ``\\boxed{...}`` without inner braces, taken from the *lower-cased* prediction, else the raw prediction;
    the whole words ``choice`` / ``option`` removed (any case); every ``strip_chars`` item deleted; stripped,
    upper-cased; equal to ``answer.strip().upper()``. With ``require_non_empty``, an empty side → False.
    Other keywords are ignored, as upstream does."""
    if prediction is None or answer is None:
        return False
    prediction = prediction if isinstance(prediction, str) else str(prediction)
    answer = answer if isinstance(answer, str) else str(answer)
    box = _FIRST_FLAT_BOX.search(prediction.lower())
    cleaned = _CHOICE_WORDS.sub("", box.group(1) if box else prediction)
    for chars in strip_chars:
        cleaned = cleaned.replace(chars, "")
    cleaned, expected = cleaned.strip().upper(), answer.strip().upper()
    if require_non_empty and (not cleaned or not expected):
        return False
    return cleaned == expected


def _choice_letters(text: Any) -> list[str]:
    """Letters of the runs of A–Z in the upper-cased text, filler words (ANSWER, OPTION, …) skipped."""
    if text is None:
        return []
    text = text if isinstance(text, str) else str(text)
    runs = _UPPER_RUNS.findall(text.upper())
    return [letter for run in runs if run not in _MULTI_SELECT_FILLERS for letter in run]


def mc_choice_set_match(prediction: Any, answer: Any, *, require_non_empty: Any = True, **ignored: Any) -> bool:
    """A set of choices: the sets of letters (:func:`_choice_letters`) are equal ("The answer is B" gives
    {T, H, E, B}). With ``require_non_empty``, an empty side → False. Other keywords are ignored."""
    pred, gold = _choice_letters(prediction), _choice_letters(answer)
    if require_non_empty and (not pred or not gold):
        return False
    return set(pred) == set(gold)


# ------------------------------------------------------------------ registry and specs

DETERMINISTIC_CHECKERS: Mapping[str, Callable[..., bool]] = MappingProxyType({
    "norm_phrase_set_match": norm_phrase_set_match,
    "norm_phrase_set_match_ordered": norm_phrase_set_match_ordered,
    "mc_choice_match": mc_choice_match,
    "mc_choice_set_match": mc_choice_set_match,
})
"""The deterministic checkers by upstream name."""
KNOWN_CHECKERS = frozenset(DETERMINISTIC_CHECKERS) | LLM_CHECKERS
_PHRASE_OPTIONS = frozenset({"separators", "require_non_empty", "lower", "normalize_hyphen", "strip_punct"})


def eval_name(spec: str) -> str:
    """The checker name of a spec: the text before the first ``|``, stripped."""
    return spec.split("|", 1)[0].strip()


def is_abstention_problem(eval_function_name: str) -> bool:
    """Upstream's abstention subset: the eval function is ``llm_abstention_checker`` (harness.py:594)."""
    return eval_function_name == ABSTENTION_CHECKER


def _spec_error(spec: Any, problem: str, file: str | None, record: str | None, fix: str | None = None):
    if file is not None:
        return InputError(file, record or "?", "eval_function", f"{problem} (in {spec!r})", fix=fix)
    return ConfigError(f"eval_function {spec!r}", problem, fix=fix)


class SpecError(ValueError):
    """An eval_function spec that cannot be parsed (the message is the problem, without the spec)."""

    def __init__(self, problem: str, fix: str | None = None):
        super().__init__(problem)
        self.problem, self.fix = problem, fix


def parse_spec_value(key: str, value: str) -> Any:
    """One spec option value, typed as upstream ``_parse_eval_value``; ``value`` is already stripped.

    true/false (any case) → bool; none/null (any case) → None; for ``separators``/``separator``: empty →
    [], ``[…]`` → the JSON list (not JSON → SpecError), else the list of its non-whitespace characters;
    else float if the value has a ``.``, else int, else the string (``"1.2.3"`` stays a string; float/int
    are Python's parsers). The one place this typing is written (questions.py's EvalSpec calls it).
    """
    lowered = value.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "null"):
        return None
    if key in ("separators", "separator"):
        if not value:
            return []
        if value.startswith("[") and value.endswith("]"):
            try:
                return json.loads(value)
            except json.JSONDecodeError as exc:
                raise SpecError(f"option {key!r}: {value!r} is not a JSON list ({exc.msg})") from None
        return [ch for ch in value if not ch.isspace()]
    try:
        return float(value) if "." in value else int(value)
    except ValueError:
        return value


def split_eval_function(spec: Any) -> tuple[str, dict[str, Any]]:
    """``name|key=value|…`` → (name, options in spec order), as upstream parse_eval_function_spec; pure.

    Parts are split on ``|`` and stripped; empty parts after the name are skipped; an empty name, a part
    without ``=``, an empty key or a repeated key is a :class:`SpecError`, and so is a name that is not one
    of :data:`KNOWN_CHECKERS` (upstream: any callable of its module). Values: :func:`parse_spec_value`.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise SpecError("an eval function spec must be a non-empty string")
    name, *parts = (part.strip() for part in spec.split("|"))
    if not name:
        raise SpecError("the checker name (before the first '|') is empty")
    if name not in KNOWN_CHECKERS:
        raise SpecError(f"unknown checker {name!r}", fix="one of: " + ", ".join(sorted(KNOWN_CHECKERS)))
    options: dict[str, Any] = {}
    for part in filter(None, parts):
        key, eq, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not eq or not key:
            raise SpecError(f"option {part!r} is not key=value")
        if key in options:
            raise SpecError(f"option {key!r} is given twice")
        options[key] = parse_spec_value(key, value)
    return name, options


def parse_eval_function(spec: Any, *, file: str | None = None, record: str | None = None) -> tuple[str, dict]:
    """``name|key=value|…`` → (name, options) by :func:`split_eval_function`; a bad spec is an InputError
    when ``file`` is given (``record`` = the question id), else a ConfigError, quoting the spec."""
    try:
        return split_eval_function(spec)
    except SpecError as exc:
        raise _spec_error(spec, exc.problem, file, record, exc.fix) from None


def with_harness_overrides(name: str, spec_options: Mapping[str, Any], harness: Mapping[str, Any]) -> dict:
    """The keywords a checker is called with: spec options, then the harness's on top (they win).

    The harness passes keywords only to LLM checkers, and only :data:`HARNESS_LLM_KEYS`.
    """
    extra = set(harness) - HARNESS_LLM_KEYS
    if harness and name not in LLM_CHECKERS:
        raise ConfigError(f"eval function {name!r}", "the harness passes no keywords to deterministic checkers")
    if extra:
        raise ConfigError(f"eval function {name!r}", f"not a harness keyword: {', '.join(sorted(extra))}",
                          fix="harness keywords: " + ", ".join(sorted(HARNESS_LLM_KEYS)))
    return {**spec_options, **harness}


def score_to_bool(score: Any) -> bool:
    """A checker result as a bool: a bool, or an int/float equal to 0 or 1; anything else aborts upstream."""
    if isinstance(score, bool):
        return score
    if isinstance(score, (int, float)) and score in (0, 1):
        return bool(score)
    raise PluginError("eval function", "score", f"returned a non-binary score {score!r}")


def _check_options(name: str, options: Mapping[str, Any]) -> None:
    """Raise where upstream's call would raise a TypeError (unknown keyword, wrong value type)."""
    where = f"eval function {name!r}"
    if name.startswith("norm_phrase"):
        unknown = set(options) - _PHRASE_OPTIONS
        if unknown:
            raise ConfigError(where, f"unknown option(s) {', '.join(sorted(unknown))}",
                              fix="options: " + ", ".join(sorted(_PHRASE_OPTIONS)))
        seps = options.get("separators", DEFAULT_SEPARATORS)
        if not isinstance(seps, (str, list, tuple)) or not all(isinstance(s, str) for s in seps):
            raise ConfigError(where, f"separators must be a list of strings, got {seps!r}")
    elif name == "mc_choice_match":
        chars = options.get("strip_chars", ".")
        if not isinstance(chars, (str, list, tuple)) or not all(isinstance(c, str) for c in chars):
            raise ConfigError(where, f"strip_chars must be a string, got {chars!r}")


def score_deterministic(name: str, options: Mapping[str, Any], parsed_answer: str, gold: Any) -> bool:
    """Score one answer with a deterministic checker as the harness does: ``checker(parsed_answer, gold,
    **options)``, made a bool by :func:`score_to_bool`, and False whenever :func:`is_unknown` holds."""
    if name not in DETERMINISTIC_CHECKERS:
        problem = ("is an LLM checker (needs a judge model)" if name in LLM_CHECKERS
                   else "is not a deterministic checker")
        raise ConfigError(f"eval function {name!r}", problem,
                          fix="deterministic checkers: " + ", ".join(sorted(DETERMINISTIC_CHECKERS)))
    _check_options(name, options)
    verdict = score_to_bool(DETERMINISTIC_CHECKERS[name](parsed_answer, gold, **options))
    return verdict and not is_unknown(parsed_answer)
