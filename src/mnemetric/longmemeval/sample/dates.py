"""Dates of the generated sample: the upstream date text, session and question timestamps.

Upstream LongMemEval writes dates as strftime "%Y/%m/%d (%a) %H:%M" with English weekday names
(shared/docs/upstream-protocol.md §1.2), e.g. "2023/05/20 (Sat) 02:21". We format them without the
locale so the bytes never depend on the machine.
"""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta

WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
WEEKDAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
FIRST_DAY = date(2023, 1, 2)
"""The earliest possible haystack start (a Monday); each instance starts 0–240 days later."""
MINUTES_PER_DAY = 1440


def format_date(moment: datetime) -> str:
    """Upstream date text, e.g. "2023/05/20 (Sat) 02:21" (English weekday, locale-independent)."""
    return f"{moment:%Y/%m/%d} ({WEEKDAYS[moment.weekday()]}) {moment:%H:%M}"


def pick_moment(rng: random.Random, day: date, taken: set[datetime], lo: int = 0,
                hi: int = MINUTES_PER_DAY - 1) -> datetime:
    """A minute of ``day`` between minute ``lo`` and ``hi`` (inclusive) not yet in ``taken``; adds it."""
    while True:
        moment = datetime.combine(day, datetime.min.time()) + timedelta(minutes=rng.randint(lo, hi))
        if moment not in taken:
            taken.add(moment)
            return moment


def schedule(rng: random.Random, question_day: date, session_days: list[date],
             quirk: bool) -> tuple[datetime, list[datetime]]:
    """The question's moment, then one moment per session (in the given order).

    Every moment is a distinct minute of its day. With ``quirk`` the question falls between 06:00
    and 22:00 and the last session lands 5–45 minutes after it on the same day: the same-day
    timestamp quirk of the upstream S file (LongMemEval issue #8: in 77 of 500 questions a haystack
    session is dated minutes after the question; shared/docs/upstream-protocol.md §1.2).
    """
    taken: set[datetime] = set()
    question = pick_moment(rng, question_day, taken, *((360, 1320) if quirk else (0, MINUTES_PER_DAY - 1)))
    moments = []
    for i, day in enumerate(session_days):
        if quirk and i == len(session_days) - 1:
            moments.append(question + timedelta(minutes=rng.randint(5, 45)))
        else:
            moments.append(pick_moment(rng, day, taken))
    return question, moments
