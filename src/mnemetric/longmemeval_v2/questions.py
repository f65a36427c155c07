"""questions.jsonl rows of LongMemEval-V2: the typed record, its eval-function spec, the checks.

Facts (xiaowu0162/LongMemEval-V2 at be15ea6e995462f3391c1a610892df3f67dfa7bd):

- a row has id, domain ("web" | "enterprise"), question_type, question (text), image (null or a
  path inside the data root), answer, eval_function (data/public_data.py validate_public_data;
  evaluation/harness.py main, lines 1094-1107);
- id, question_type and eval_function are non-empty strings, answer is a string, ids are unique,
  question text is a non-empty string after strip (harness.py 1095-1099, public_data.py 233);
- question_type is one of the seven CATEGORY_MAP keys, else the run aborts (harness.py 44-52, 935);
- llm_abstention_checker needs "-abs" inside question_type (harness.py 1103-1107, a substring test);
- the eval_function spec is "name|key=value|..." (evaluation/qa_eval_metrics.py
  parse_eval_function_spec / _parse_eval_value): split on "|", parts stripped, empty parts skipped,
  a part without "=" / with an empty key / a repeated key is an error; values: true/false (any case)
  → bool, none/null → None; for separators/separator: "" → [], "[...]" → JSON list, else the list
  of its non-whitespace characters; else float when the value contains ".", else int, else the
  raw string. Both are written once, in :mod:`.checkers` (split_eval_function, parse_spec_value);
  this module adds only the option checks.

Stricter than upstream (it parses the spec only when scoring, and resolves any callable of the
module by name): the name must be one of the six checkers, and options the checker would crash on,
or misread silently (a flag given as text), are problems here. Keywords that a checker accepts and
ignores (the mc_* and llm_* checkers take ``**_``) are allowed, as upstream allows them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mnemetric.errors import InputError, Problem
from mnemetric.longmemeval_v2.checkers import SpecError, parse_spec_value, split_eval_function
from mnemetric.longmemeval_v2.jsonfiles import data_path_problem, iter_rows

__all__ = ["ABSTENTION_CHECKER", "DOMAINS", "EVAL_FUNCTIONS", "QUESTION_TYPES", "EvalSpec", "Question", "SpecError",
           "check_question", "iter_questions", "parse_spec_value", "record_name"]

DOMAINS = ("web", "enterprise")
QUESTION_TYPES = (
    "static-environment", "static-environment-abs", "dynamic-environment", "dynamic-environment-abs",
    "procedure", "procedure-abs", "errors-gotchas",
)
"""The seven question types (harness.py CATEGORY_MAP keys, in its order)."""
ABSTENTION_CHECKER = "llm_abstention_checker"
_NORM = frozenset({"separators", "require_non_empty", "lower", "normalize_hyphen", "strip_punct"})
EVAL_FUNCTIONS: Mapping[str, frozenset[str] | None] = {
    "norm_phrase_set_match": _NORM,
    "norm_phrase_set_match_ordered": _NORM,
    "mc_choice_match": None,
    "mc_choice_set_match": None,
    ABSTENTION_CHECKER: None,
    "llm_gotchas_checker": None,
}
"""The six checkers of qa_eval_metrics.py → the only options they take (None: they take any keyword and
ignore the ones they do not know, so any option is allowed)."""
_BOOL_OPTIONS = frozenset({"require_non_empty", "lower", "normalize_hyphen", "strip_punct"})
_FIELDS = ("id", "domain", "question_type", "question", "image", "answer", "eval_function")


@dataclass(frozen=True)
class EvalSpec:
    """A parsed eval_function spec: the checker's name and its keyword options, in spec order."""

    name: str
    options: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def parse(cls, text: str) -> "EvalSpec":
        """Parse ``text`` (rules in the module docstring) by checkers.split_eval_function, then check the
        options (:meth:`check_options`); SpecError says what is wrong."""
        name, options = split_eval_function(text)
        spec = cls(name, tuple(options.items()))
        spec.check_options()
        return spec

    @property
    def kwargs(self) -> dict[str, Any]:
        return dict(self.options)

    def check_options(self) -> None:
        """Raise SpecError for an option the checker would crash on (an unknown keyword of the phrase
        checkers, separators that are not a list of strings, strip_chars that is not text) or silently
        misread (a flag given as text: ``lower=no`` is truthy upstream)."""
        allowed = EVAL_FUNCTIONS[self.name]
        for key, value in self.options:
            if allowed is not None and key not in allowed:
                raise SpecError(f"{self.name} takes no option {key!r} (it takes: {', '.join(sorted(allowed))})")
            if key in _BOOL_OPTIONS and not (isinstance(value, bool) or value in (0, 1)):
                raise SpecError(f"option {key} must be true or false, got {value!r}")
            if key == "separators" and allowed is not None and not (
                    isinstance(value, list) and all(isinstance(s, str) and s for s in value)):
                raise SpecError(f"option separators must be a list of non-empty strings, got {value!r}")
            if key == "strip_chars" and self.name == "mc_choice_match" and not isinstance(value, str):
                raise SpecError(f"option strip_chars must be text, got {value!r}")


@dataclass(frozen=True)
class Question:
    """One questions.jsonl row."""

    id: str
    domain: str
    """"web" or "enterprise"."""
    question_type: str
    question: str
    """The question text (upstream turns it into {text, image} at run time)."""
    image: str | None
    """A path relative to the data root, or None (also when the row has no image key)."""
    answer: str
    eval_function: str
    """The spec as written; ``spec`` is its parsed form."""
    extra: tuple[tuple[str, Any], ...] = field(default=(), hash=False)
    """Any other keys of the row, kept so to_record() gives them back."""

    @property
    def spec(self) -> EvalSpec:
        return EvalSpec.parse(self.eval_function)

    @property
    def is_abstention_problem(self) -> bool:
        """Upstream rule (harness.py:594): the checker is llm_abstention_checker, whatever the type."""
        return self.spec.name == ABSTENTION_CHECKER

    def image_path(self, root: str | Path) -> Path | None:
        return None if self.image is None else Path(root) / self.image

    @classmethod
    def from_record(cls, raw: Any, *, file: str, line: int) -> "Question":
        """Validate and type one row; the first problem raises InputError (file, id or line, field)."""
        problems = check_question(raw, file=file, line=line)
        if problems:
            first = problems[0]
            more = f" (and {len(problems) - 1} more problem(s) in this row)" if len(problems) > 1 else ""
            raise InputError(first.file, first.record, first.field, first.message + more)
        return cls(*(raw.get(k) for k in _FIELDS), extra=tuple((k, v) for k, v in raw.items() if k not in _FIELDS))

    def to_record(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in _FIELDS} | dict(self.extra)


def record_name(raw: Any, line: int) -> str:
    """The question id when it is a usable string, else "line N"."""
    qid = raw.get("id") if isinstance(raw, dict) else None
    return qid if isinstance(qid, str) and qid else f"line {line}"


def _non_empty_text(raw: dict, key: str) -> str | None:
    if key not in raw:
        return "missing"
    value = raw[key]
    if not isinstance(value, str):
        return f"must be a string, got {type(value).__name__}"
    if not value.strip():
        return "must not be empty"
    return None


def check_question(raw: Any, *, file: str, line: int) -> list[Problem]:
    """Every problem of one raw row (empty list = valid). Pure: the image's existence is checked by
    validate.py, and id uniqueness across rows too."""
    record = record_name(raw, line)
    if not isinstance(raw, dict):
        return [Problem(file, record, "<row>", f"must be a JSON object, got {type(raw).__name__}")]
    problems = [Problem(file, record, key, msg) for key in ("id", "question_type", "question", "eval_function")
                if (msg := _non_empty_text(raw, key))]
    if raw.get("domain") not in DOMAINS:
        problems.append(Problem(file, record, "domain", f"must be one of {', '.join(DOMAINS)}, got {raw.get('domain')!r}"))
    qtype = raw.get("question_type")
    if isinstance(qtype, str) and qtype.strip() and qtype not in QUESTION_TYPES:
        problems.append(Problem(file, record, "question_type", f"unknown type {qtype!r} (upstream aborts the run); "
                                f"known: {', '.join(QUESTION_TYPES)}"))
    if not isinstance(raw.get("answer"), str):
        problems.append(Problem(file, record, "answer", "missing" if "answer" not in raw else
                                f"must be a string, got {type(raw['answer']).__name__}"))
    problems += _check_image(raw, file, record)
    problems += _check_spec(raw, file, record)
    return problems


def _check_image(raw: dict, file: str, record: str) -> list[Problem]:
    image = raw.get("image")  # upstream reads it with .get: an absent image is no image
    if image is None:
        return []
    if not isinstance(image, str) or not image.strip():
        return [Problem(file, record, "image", f"must be null or a non-empty path, got {image!r}")]
    msg = data_path_problem(image)
    return [Problem(file, record, "image", msg)] if msg else []


def _check_spec(raw: dict, file: str, record: str) -> list[Problem]:
    text = raw.get("eval_function")
    if not isinstance(text, str) or not text.strip():
        return []  # reported as missing / empty already
    try:
        spec = EvalSpec.parse(text)
    except SpecError as exc:
        return [Problem(file, record, "eval_function", f"{text!r}: {exc}")]
    qtype = raw.get("question_type")
    if spec.name == ABSTENTION_CHECKER and isinstance(qtype, str) and "-abs" not in qtype:
        return [Problem(file, record, "eval_function", f"{ABSTENTION_CHECKER} needs an -abs question_type, got "
                        f"{qtype!r} (upstream aborts the run)")]
    return []


def iter_questions(path: str | Path) -> Iterator[Question]:
    """Stream typed questions line by line; the first bad row (or duplicate id) raises InputError."""
    file, seen = str(path), set()
    for row in iter_rows(path):
        question = Question.from_record(row.value, file=file, line=row.line)
        if question.id in seen:
            raise InputError(file, question.id, "id", f"duplicate question id (line {row.line})")
        seen.add(question.id)
        yield question
