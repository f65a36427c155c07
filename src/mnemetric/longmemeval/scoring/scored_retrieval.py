"""The scored-retrieval result, typed once: what :func:`~.score_retrieval.score_retrieval_log` returns.

A :class:`ScoredRetrieval` holds the scoring profile's name and official equivalence, the granularity
scored, every question's metrics (``per_question[question_id][level][metric]``, level ``session`` /
``turn``, metric e.g. ``recall_all@5``; ``None`` where a metric has no value), the question facts the
averaging rules need (:class:`QuestionFacts`: question_type, has_user_target) and both upstream
averages (:class:`RuleAverage`, rules of :mod:`.retrieval_averaging`: ``exclude_abs`` from
src/evaluation/print_retrieval_metrics.py, ``exclude_abs_and_no_user_target`` from
src/retrieval/run_retrieval.py main(), xiaowu0162/LongMemEval @ 9e0b455f).

``to_record()`` gives the JSON layout ``{profile, official_equivalence, granularity, per_question,
questions, aggregate: {exclude_abs, exclude_abs_and_no_user_target}}``; ``from_record(raw, file=...)``
reads it back, validating every field and naming file, record and field on a problem.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mnemetric.errors import InputError
from mnemetric.longmemeval.rules import GRANULARITIES
from mnemetric.longmemeval.scoring.retrieval_averaging import (
    average_exclude_abs,
    average_exclude_abs_and_no_user_target,
)

Metrics = Mapping[str, Mapping[str, float | None]]
"""One question's metrics: level ("session" / "turn") -> metric name -> value (None: no value)."""
RULE_NAMES = ("exclude_abs", "exclude_abs_and_no_user_target")


def _number(v: Any) -> bool:
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))


def levels_from_record(raw: Mapping[str, Any], skip: tuple[str, ...], file: str, record: str,
                       where: str) -> dict[str, dict]:
    """{level: {metric: number | None}} from ``raw`` minus ``skip`` keys; InputError on a bad entry."""
    out: dict[str, dict] = {}
    for level, metrics in raw.items():
        if level in skip:
            continue
        if level not in GRANULARITIES or not isinstance(metrics, Mapping):
            raise InputError(file, record, f"{where}.{level}",
                             "expected a level (session or turn) mapping metric names to numbers")
        for name, value in metrics.items():
            if not _number(value):
                raise InputError(file, record, f"{where}.{level}.{name}", f"expected a number or null, got {value!r}")
        out[level] = dict(metrics)
    return out


def mapping_from_record(raw: Any, file: str, record: str, field: str) -> Mapping[str, Any]:
    """``raw`` when it is a JSON object, else InputError naming file, record and field."""
    if not isinstance(raw, Mapping):
        raise InputError(file, record, field, f"expected a JSON object, got {type(raw).__name__}")
    return raw


@dataclass(frozen=True)
class QuestionFacts:
    """What the averaging rules and the per-type blocks need to know about one question."""

    question_type: str
    """The question's type as the log names it (upstream ``question_type``)."""
    has_user_target: bool
    """Whether its haystack holds a has_answer=true user turn (longmemeval.corpus.has_user_target)."""

    def to_record(self) -> dict[str, Any]:
        return {"question_type": self.question_type, "has_user_target": self.has_user_target}

    @classmethod
    def from_record(cls, raw: Any, *, file: str, record: str) -> QuestionFacts:
        raw = mapping_from_record(raw, file, record, "questions")
        if not isinstance(raw.get("question_type"), str):
            raise InputError(file, record, "questions.question_type", "expected a string")
        if not isinstance(raw.get("has_user_target"), bool):
            raise InputError(file, record, "questions.has_user_target", "expected true or false")
        return cls(raw["question_type"], raw["has_user_target"])


@dataclass(frozen=True)
class RuleAverage:
    """One averaging rule's result: questions kept (n), left out (excluded), mean per level and metric."""

    n: int
    excluded: int
    levels: Mapping[str, Mapping[str, float | None]]
    """level -> metric -> mean over the kept questions that have a value (None: none has)."""

    def to_record(self) -> dict[str, Any]:
        return {"n": self.n, "excluded": self.excluded, **{lv: dict(m) for lv, m in self.levels.items()}}

    @classmethod
    def from_record(cls, raw: Any, *, file: str, record: str, field: str) -> RuleAverage:
        raw = mapping_from_record(raw, file, record, field)
        for key in ("n", "excluded"):
            if not isinstance(raw.get(key), int) or isinstance(raw.get(key), bool) or raw[key] < 0:
                raise InputError(file, record, f"{field}.{key}", f"expected an integer >= 0, got {raw.get(key)!r}")
        return cls(raw["n"], raw["excluded"], levels_from_record(raw, ("n", "excluded"), file, record, field))


@dataclass(frozen=True)
class ScoredRetrieval:
    """A retrieval log scored under one profile (module docstring)."""

    profile: str
    official_equivalence: bool
    """The profile's claim: its numbers are upstream's (False for the historical profile)."""
    granularity: str
    """session or turn: the corpus every line ranks (``auto`` stays only for an empty log)."""
    per_question: Mapping[str, Metrics]
    """question_id -> level -> metric -> value, in log order."""
    questions: Mapping[str, QuestionFacts]
    """question_id -> its facts; the same ids, in the same order, as ``per_question``."""
    exclude_abs: RuleAverage
    exclude_abs_and_no_user_target: RuleAverage

    @classmethod
    def build(cls, profile: str, official_equivalence: bool, granularity: str,
              per_question: Mapping[str, Metrics], questions: Mapping[str, QuestionFacts]) -> ScoredRetrieval:
        """The result with both averages computed from ``per_question`` (retrieval_averaging's rules)."""
        targets = {q: f.has_user_target for q, f in questions.items()}
        return cls(profile, official_equivalence, granularity, per_question, questions,
                   _average(average_exclude_abs(per_question)),
                   _average(average_exclude_abs_and_no_user_target(per_question, targets)))

    def average(self, rule: str) -> RuleAverage:
        """The average under ``rule`` (one of RULE_NAMES)."""
        if rule not in RULE_NAMES:
            raise KeyError(rule)
        return self.exclude_abs if rule == "exclude_abs" else self.exclude_abs_and_no_user_target

    def question_types(self) -> dict[str, str]:
        return {q: f.question_type for q, f in self.questions.items()}

    def to_record(self) -> dict[str, Any]:
        return {
            "profile": self.profile, "official_equivalence": self.official_equivalence,
            "granularity": self.granularity,
            "per_question": {q: {lv: dict(m) for lv, m in per.items()} for q, per in self.per_question.items()},
            "questions": {q: f.to_record() for q, f in self.questions.items()},
            "aggregate": {rule: self.average(rule).to_record() for rule in RULE_NAMES},
        }

    @classmethod
    def from_record(cls, raw: Any, *, file: str, line: int | None = None) -> ScoredRetrieval:
        """Read :meth:`to_record`'s layout back; InputError naming file, record and field."""
        where = f"line {line}" if line is not None else "<root>"
        raw = mapping_from_record(raw, file, where, "<root>")
        if not isinstance(raw.get("profile"), str):
            raise InputError(file, where, "profile", "expected the scoring profile's name (a string)")
        if not isinstance(raw.get("official_equivalence"), bool):
            raise InputError(file, where, "official_equivalence", "expected true or false")
        if raw.get("granularity") not in (*GRANULARITIES, "auto"):
            raise InputError(file, where, "granularity",
                             f"expected session, turn (or auto: an empty log), got {raw.get('granularity')!r}")
        per_q = mapping_from_record(raw.get("per_question"), file, where, "per_question")
        facts = mapping_from_record(raw.get("questions"), file, where, "questions")
        if list(per_q) != list(facts):
            raise InputError(file, where, "questions", "expected the same question ids, in the same order, as per_question")
        agg = mapping_from_record(raw.get("aggregate"), file, where, "aggregate")
        return cls(raw["profile"], raw["official_equivalence"], raw["granularity"],
                   {q: levels_from_record(mapping_from_record(v, file, q, "per_question"), (), file, q, "per_question")
                    for q, v in per_q.items()},
                   {q: QuestionFacts.from_record(v, file=file, record=q) for q, v in facts.items()},
                   *(RuleAverage.from_record(agg.get(r), file=file, record=where, field=f"aggregate.{r}")
                     for r in RULE_NAMES))


def _average(raw: Mapping[str, Any]) -> RuleAverage:
    return RuleAverage(raw["n"], raw["excluded"], {k: v for k, v in raw.items() if k not in ("n", "excluded")})
