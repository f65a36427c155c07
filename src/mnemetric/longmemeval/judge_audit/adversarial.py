"""The adversarial answers: wrong (or doubtful) answers made from the gold by fixed, documented rules.

Each rule is a pure function ``rule(gold, question_type, question_id) -> str | None``: the answer it
makes, or None where the rule does not apply. No rule applies to abstention questions ("_abs": the
gold explains why there is no answer) or to single-session-preference (the gold is a rubric): there
is no fact to distort. :data:`RULES` lists them with the verdict a valid judge should give
(:func:`expected`). The text each rule adds is our own fixed wording.

* ``vague`` — a non-committal answer that names no fact at all: "It was one of the things you
  mentioned earlier; I remember it came up, but not the specifics." Expected: no.
* ``hedged`` — the gold offered as one possibility among others: "I am not sure. It might be
  <gold>, but it could just as well be something else." Expected: no (it does not commit).
* ``contradicted`` — the gold denied: "It was not <gold>." Expected: no.
* ``off_by_one_date`` — the first date-like phrase of the gold moved by one unit, alone as the
  answer: a count with a time unit ("24 days" → "25 days"), a day of the month next to a month name
  ("May 3" → "May 4"; days 28–31 move back: "May 31" → "May 30"), an ISO date's day
  ("2023-05-03" → "2023-05-04", same rule) or a weekday ("Friday" → "Saturday", "Sunday" →
  "Monday"). Applies only when the gold has such a phrase. Expected: no — except a count of days,
  weeks or months on a temporal-reasoning question, which upstream's temporal rubric tolerates
  (shared/docs/upstream-protocol.md §3.2): not graded (None).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from mnemetric.longmemeval.rules import ABSTENTION_MARK, PREFERENCE_TYPE

Rule = Callable[[object, str, str], "str | None"]

VAGUE_TEXT = "It was one of the things you mentioned earlier; I remember it came up, but not the specifics."
HEDGE = "I am not sure. It might be {}, but it could just as well be something else."
CONTRADICT = "It was not {}."

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december")
TOLERATED_UNITS = ("day", "week", "month")
"""Counts in these units may be off by one on temporal-reasoning questions (upstream's temporal rubric)."""
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTH = r"(?:" + "|".join(m.capitalize() + "|" + m[:3].capitalize() + r"\.?" for m in MONTHS) + r"|Sept\.?)"
_UNIT = re.compile(r"\b(\d+)(\s+(?:day|week|month|year|hour|minute)s?)\b", re.I)
_MONTH_DAY = re.compile(r"\b(" + _MONTH + r"\s+)(\d{1,2})(st|nd|rd|th)?\b", re.I)
_DAY_MONTH = re.compile(r"\b(\d{1,2})(st|nd|rd|th)?(\s+(?:of\s+)?" + _MONTH + r")\b", re.I)
_ISO = re.compile(r"\b(\d{4}[-/]\d{2}[-/])(\d{2})\b")
_WEEKDAY = re.compile(r"\b(" + "|".join(WEEKDAYS) + r")\b", re.I)


def _factual(question_type: str, question_id: str) -> bool:
    """The rules apply to questions with a fact as gold: not abstention, not preference."""
    return ABSTENTION_MARK not in question_id and question_type != PREFERENCE_TYPE


def _gold_text(gold: object) -> str | None:
    text = str(gold).strip()
    return text or None


def vague(gold: object, question_type: str, question_id: str) -> str | None:
    """A non-committal answer naming no fact (module docstring); None where no fact is asked."""
    return VAGUE_TEXT if _factual(question_type, question_id) and _gold_text(gold) else None


def hedged(gold: object, question_type: str, question_id: str) -> str | None:
    """The gold as one possibility among others."""
    text = _gold_text(gold)
    return HEDGE.format(text.rstrip(".")) if text and _factual(question_type, question_id) else None


def contradicted(gold: object, question_type: str, question_id: str) -> str | None:
    """The gold denied."""
    text = _gold_text(gold)
    return CONTRADICT.format(text.rstrip(".")) if text and _factual(question_type, question_id) else None


def _ordinal(day: int) -> str:
    return "th" if 10 <= day % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")


def _move_day(day: int) -> int:
    """Day of the month moved by one: forward, but days 28-31 move back (never an impossible date)."""
    return day - 1 if day >= 28 else day + 1


def date_phrase(gold: object) -> tuple[str, str, bool] | None:
    """(the first date-like phrase of ``gold``, it moved by one, whether it is a count of days, weeks or
    months), or None."""
    text = str(gold)
    found = []
    if m := _UNIT.search(text):
        n = int(m.group(1))
        found.append((m.start(), m.group(0), f"{n + 1}{m.group(2)}", m.group(2).strip().lower().rstrip("s") in TOLERATED_UNITS))
    if m := _MONTH_DAY.search(text):
        day = _move_day(int(m.group(2)))
        suffix = _ordinal(day) if m.group(3) else ""
        found.append((m.start(), m.group(0), f"{m.group(1)}{day}{suffix}", False))
    if m := _DAY_MONTH.search(text):
        day = _move_day(int(m.group(1)))
        suffix = _ordinal(day) if m.group(2) else ""
        found.append((m.start(), m.group(0), f"{day}{suffix}{m.group(3)}", False))
    if m := _ISO.search(text):
        found.append((m.start(), m.group(0), f"{m.group(1)}{_move_day(int(m.group(2))):02d}", False))
    if m := _WEEKDAY.search(text):
        nxt = WEEKDAYS[(WEEKDAYS.index(m.group(1).capitalize()) + 1) % 7]
        found.append((m.start(), m.group(0), nxt, False))
    if not found:
        return None
    _, phrase, moved, days = min(found, key=lambda f: f[0])
    return phrase, moved, days


def off_by_one_date(gold: object, question_type: str, question_id: str) -> str | None:
    """The gold's first date-like phrase moved by one unit, alone (module docstring); None without one."""
    if not _factual(question_type, question_id):
        return None
    found = date_phrase(gold)
    return None if found is None else found[1]


RULES: Mapping[str, Rule] = {"vague": vague, "hedged": hedged, "contradicted": contradicted,
                             "off_by_one_date": off_by_one_date}
"""The adversarial rules by name, in report order."""

DESCRIPTIONS: Mapping[str, str] = {
    "vague": "a non-committal answer naming no fact",
    "hedged": "the gold offered as one possibility among others",
    "contradicted": "the gold denied",
    "off_by_one_date": "the gold's first date, weekday or time count moved by one unit",
}


def expected(rule: str, gold: object, question_type: str) -> bool | None:
    """The verdict a valid judge should give the rule's answer: False, or None where it is not graded
    (an off-by-one count of days/weeks/months on a temporal-reasoning question: upstream's rubric tolerates it)."""
    if rule == "off_by_one_date" and question_type == "temporal-reasoning":
        found = date_phrase(gold)
        if found is not None and found[2]:
            return None
    return False
