"""The answers a judge audit shows every judge: the run's own, controls, and adversarial ones.

Item sets (each holds at most one answer per question, so a judge sees each set as one hypothesis file):

* ``run`` — the run's hypotheses as judged (their labels in the judged file are the run's verdicts);
* ``positive`` — the gold answer as the answer (expected: yes);
* ``negative`` — another question's gold answer (expected: no), the donor chosen by :func:`donor_of`;
* ``adversarial:<rule>`` — one per rule of :mod:`.adversarial`, where the rule applies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mnemetric.longmemeval.judge.lexical import normalize
from mnemetric.longmemeval.judge_audit.adversarial import RULES, expected
from mnemetric.longmemeval.reference import Reference
from mnemetric.longmemeval.rules import ABSTENTION_MARK

RUN, POSITIVE, NEGATIVE, ADVERSARIAL = "run", "positive", "negative", "adversarial"


@dataclass(frozen=True)
class Item:
    """One answer to one question, and the verdict a valid judge should give (None: not graded)."""

    kind: str
    """run | positive | negative | adversarial."""
    rule: str | None
    """The adversarial rule (None for the other kinds)."""
    question_id: str
    question_type: str
    hypothesis: str
    expected: bool | None
    donor: str | None = None
    """The question whose gold a negative control borrows."""

    @property
    def set_name(self) -> str:
        return f"{ADVERSARIAL}:{self.rule}" if self.kind == ADVERSARIAL else self.kind

    def hypothesis_record(self) -> dict[str, str]:
        return {"question_id": self.question_id, "hypothesis": self.hypothesis}


def donor_of(question_id: str, refs: Mapping[str, Reference]) -> str | None:
    """The question whose gold answer is ``question_id``'s negative control, deterministically.

    Walk the question ids in sorted order, cyclically, starting after ``question_id``. An abstention
    question takes the first non-abstention question (a confident answer where it should decline);
    any other question takes the first non-abstention question of its own type whose normalized gold
    differs from its own, else the first non-abstention question of any type whose gold differs.
    None when there is none.
    """
    ids = sorted(refs)
    i = ids.index(question_id)
    order = ids[i + 1:] + ids[:i]
    me = refs[question_id]
    answers = [q for q in order if ABSTENTION_MARK not in q]
    if ABSTENTION_MARK in question_id:
        return answers[0] if answers else None
    differ = [q for q in answers if normalize(refs[q].answer) != normalize(me.answer)]
    same_type = [q for q in differ if refs[q].question_type == me.question_type]
    return (same_type or differ or [None])[0]


def positive_controls(refs: Mapping[str, Reference]) -> list[Item]:
    return [Item(POSITIVE, None, q, r.question_type, str(r.answer), True) for q, r in sorted(refs.items())]


def negative_controls(refs: Mapping[str, Reference]) -> list[Item]:
    out = []
    for q, r in sorted(refs.items()):
        d = donor_of(q, refs)
        if d is not None:
            out.append(Item(NEGATIVE, None, q, r.question_type, str(refs[d].answer), False, d))
    return out


def adversarial_items(refs: Mapping[str, Reference]) -> list[Item]:
    out = []
    for name, rule in RULES.items():
        for q, r in sorted(refs.items()):
            text = rule(r.answer, r.question_type, q)
            if text is not None:
                out.append(Item(ADVERSARIAL, name, q, r.question_type, text, expected(name, r.answer, r.question_type)))
    return out


def run_items(hypotheses: Sequence[Mapping[str, str]], refs: Mapping[str, Reference]) -> list[Item]:
    """The run's hypotheses (no expected verdict: the run's own labels are what is measured)."""
    return [Item(RUN, None, h["question_id"], refs[h["question_id"]].question_type, h["hypothesis"], None)
            for h in hypotheses]


def item_sets(hypotheses: Sequence[Mapping[str, str]], refs: Mapping[str, Reference]) -> dict[str, list[Item]]:
    """Every item set by name, in report order (run, positive, negative, adversarial:<rule>...)."""
    sets: dict[str, list[Item]] = {RUN: run_items(hypotheses, refs), POSITIVE: positive_controls(refs),
                                   NEGATIVE: negative_controls(refs)}
    for item in adversarial_items(refs):
        sets.setdefault(item.set_name, []).append(item)
    return sets
