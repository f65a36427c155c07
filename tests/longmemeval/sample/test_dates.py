"""Dates: the upstream date text (worked examples) and the timestamp rules of a haystack (properties)."""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from mnemetric.longmemeval.instance_checks import is_valid_date
from mnemetric.longmemeval.sample.dates import FIRST_DAY, format_date, pick_moment, schedule


def test_format_date_worked_examples():
    # Calendar facts: 2023-05-20 was a Saturday, 2024-02-29 a Thursday, 2023-01-02 a Monday.
    assert format_date(datetime(2023, 5, 20, 2, 21)) == "2023/05/20 (Sat) 02:21"
    assert format_date(datetime(2024, 2, 29, 23, 59)) == "2024/02/29 (Thu) 23:59"
    assert format_date(datetime(2023, 1, 2, 0, 0)) == "2023/01/02 (Mon) 00:00"
    assert FIRST_DAY.isoweekday() == 1


@given(st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2099, 12, 31)))
def test_format_date_is_the_upstream_strftime_form(moment):
    names = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    naive = (f"{moment.year:04d}/{moment.month:02d}/{moment.day:02d} ({names[moment.weekday()]}) "
             f"{moment.hour:02d}:{moment.minute:02d}")
    assert format_date(moment) == naive
    assert is_valid_date(format_date(moment))


def test_pick_moment_skips_taken_minutes():
    day = date(2023, 3, 1)
    taken = {datetime(2023, 3, 1, 0, 0)}
    # Only minutes 0 and 1 are allowed and minute 0 is taken: the result must be 00:01.
    assert pick_moment(random.Random(1), day, taken, 0, 1) == datetime(2023, 3, 1, 0, 1)
    assert taken == {datetime(2023, 3, 1, 0, 0), datetime(2023, 3, 1, 0, 1)}


@settings(max_examples=200)
@given(seed=st.integers(0, 2**32), n=st.integers(1, 20), quirk=st.booleans())
def test_schedule_rules(seed, n, quirk):
    rng = random.Random(seed)
    days = [FIRST_DAY + timedelta(days=rng.randint(0, 30)) for _ in range(n)]
    qday = FIRST_DAY + timedelta(days=33)
    question, moments = schedule(random.Random(seed), qday, days, quirk)
    assert question.date() == qday
    plain = moments[:-1] if quirk else moments
    assert [m.date() for m in plain] == days[: len(plain)]
    assert len(set(plain) | {question}) == len(plain) + 1  # distinct minutes
    if quirk:
        assert 6 * 60 <= question.hour * 60 + question.minute <= 22 * 60
        assert timedelta(minutes=5) <= moments[-1] - question <= timedelta(minutes=45)
    else:
        assert all(m < question for m in moments)
