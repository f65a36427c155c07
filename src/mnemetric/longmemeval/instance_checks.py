"""LongMemEval (V1) instance checks: the validation rules of one raw instance and its dates (pure).

Split from :mod:`mnemetric.longmemeval.instance` (which streams files); import these names from here.
Schema facts (shared/docs/upstream-protocol.md §1.2): the keys and types of an instance; dates use
strftime "%Y/%m/%d (%a) %H:%M". Evidence rules (upstream src/retrieval/run_retrieval.py @ 9e0b455f):
a session is evidence iff its id contains "answer", and each user turn of it carries has_answer
true/false (upstream asserts it). A label that cannot mean what it says under those rules is an
**error** (a :class:`mnemetric.errors.Problem`); odd but usable data that real upstream files have
is a **warning** (:class:`DataWarning`; see :mod:`mnemetric.longmemeval.instance` for the list).
An empty question (or only whitespace), an empty haystack (no sessions) and an empty session (no
turns) are errors, a Mnemetric rule: upstream never checks, none of its published facts
(upstream-protocol.md) nor the bundled or real 2-question samples has such a case, and an empty
haystack would score a vacuous recall_all of 1.0.
"""

from __future__ import annotations

import calendar
import re
from itertools import repeat
from dataclasses import dataclass
from datetime import date
from typing import Any, ClassVar

from mnemetric.errors import Finding, Problem
from mnemetric.jsonstrict import SURROGATE
from mnemetric.longmemeval.rules import QUESTION_TYPES

DATE_FORMAT = "%Y/%m/%d (%a) %H:%M"
_DATE_RE = re.compile(r"^(\d{4})/(\d{2})/(\d{2}) \(([A-Za-z]{3})\) (\d{2}):(\d{2})$")
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
"""English abbreviations, as upstream's strftime("%a") writes them (C locale)."""

ROLES = ("user", "assistant")
EVIDENCE_MARK = "answer"
"""Upstream rule (run_retrieval.py): a session is evidence iff "answer" is a substring of its id."""


# ---------------------------------------------------------------- dates (pure)


def date_problem(text: Any) -> str | None:
    """Why ``text`` is not an upstream date, or None. Upstream writes every date with
    strftime("%Y/%m/%d (%a) %H:%M") (data/custom_history/sample_haystack_and_timestamp.py @ 9e0b455f),
    so a valid one matches that format, names a real minute and carries that day's weekday."""
    m = _DATE_RE.match(text) if isinstance(text, str) else None
    if m is None:
        return f"{text!r} is not in the format {DATE_FORMAT!r} (e.g. '2023/05/20 (Sat) 02:21')"
    y, mo, d, weekday, h, mi = m.groups()
    y, mo, d, h, mi = int(y), int(mo), int(d), int(h), int(mi)
    if y >= 1 and 1 <= mo <= 12 and d >= 1 and h <= 23 and mi <= 59:  # the common case, one date() call
        try:
            actual = WEEKDAYS[date(y, mo, d).weekday()]
        except ValueError:  # a day past the month's end: named below
            pass
        else:
            return None if weekday == actual else \
                f"{text!r}: wrong weekday {weekday!r}: {m.group(1)}/{m.group(2)}/{m.group(3)} is a {actual}"
    real = f"{text!r} is not a real date:"
    if y < 1:
        return f"{real} year 0000 does not exist"
    if not 1 <= mo <= 12:
        return f"{real} month {m.group(2)} does not exist"
    days = calendar.monthrange(y, mo)[1]
    if not 1 <= d <= days:
        return f"{real} day {m.group(3)} does not exist in {m.group(1)}/{m.group(2)} ({days} days)"
    if h > 23 or mi > 59:
        return f"{real} hour {m.group(5)} is out of range (00-23)" if h > 23 else \
            f"{real} minute {m.group(6)} is out of range (00-59)"
    actual = WEEKDAYS[date(y, mo, d).weekday()]
    if weekday != actual:
        return f"{text!r}: wrong weekday {weekday!r}: {m.group(1)}/{m.group(2)}/{m.group(3)} is a {actual}"
    return None


def is_valid_date(text: Any) -> bool:
    return date_problem(text) is None


# ---------------------------------------------------------------- findings


@dataclass(frozen=True)
class DataWarning(Finding):
    """Odd but usable data (real upstream files have it): reported, never a reason to stop. Located and
    printed as a :class:`mnemetric.errors.Problem` is (the same fields), after "warning: "."""

    prefix: ClassVar[str] = "warning: "


# ---------------------------------------------------------------- one instance (pure)

_STR_FIELDS = ("question_id", "question_type", "question", "question_date")
_LIST_FIELDS = ("haystack_session_ids", "haystack_dates", "haystack_sessions", "answer_session_ids")


def record_name(raw: Any, index: int) -> str:
    """The question_id (lone surrogates escaped, so the name prints), else "index N"."""
    qid = raw.get("question_id") if isinstance(raw, dict) else None
    if not isinstance(qid, str) or not qid:
        return f"index {index}"
    return qid.encode("utf-8", "backslashreplace").decode("utf-8") if SURROGATE.search(qid) else qid


def check_instance(raw: Any, file: str, index: int) -> list[Problem]:
    """Every error of one raw instance (empty list = valid)."""
    rec = record_name(raw, index)
    p = lambda field, msg: Problem(file, rec, field, msg)  # noqa: E731
    if not isinstance(raw, dict):
        return [p("<instance>", f"expected a JSON object, got {type(raw).__name__}")]
    problems = [p(f, "missing") for f in (*_STR_FIELDS, "answer", *_LIST_FIELDS) if f not in raw]
    for f in _STR_FIELDS:
        if f in raw and not isinstance(raw[f], str):
            problems.append(p(f, f"expected a string, got {type(raw[f]).__name__}"))
    if raw.get("question_id") == "":
        problems.append(p("question_id", "is empty: every instance needs a unique, non-empty question_id"))
    if isinstance(raw.get("question"), str) and not raw["question"].strip():
        problems.append(p("question", "is empty (or only whitespace): there is nothing to ask the reader or retrieve for"))
    if "answer" in raw and (isinstance(raw["answer"], bool) or not isinstance(raw["answer"], (str, int, float))):
        problems.append(p("answer", f"expected a string or number, got {type(raw['answer']).__name__}"))
    if isinstance(raw.get("question_type"), str) and raw["question_type"] not in QUESTION_TYPES:
        problems.append(p("question_type", f"unknown type {raw['question_type']!r}; known: {', '.join(QUESTION_TYPES)}"))
    if isinstance(raw.get("question_date"), str) and (why := date_problem(raw["question_date"])):
        problems.append(p("question_date", why))
    for f in _LIST_FIELDS:
        if f in raw and not isinstance(raw[f], list):
            problems.append(p(f, f"expected a list, got {type(raw[f]).__name__}"))
    if all(isinstance(raw.get(f), list) for f in _LIST_FIELDS):
        problems += _check_haystack(raw, p)
    return problems


def _check_haystack(raw: dict, p) -> list[Problem]:
    ids, dates, sessions = raw["haystack_session_ids"], raw["haystack_dates"], raw["haystack_sessions"]
    problems: list[Problem] = []
    if not sessions:
        problems.append(p("haystack_sessions", "is empty: no sessions, so there is no history to remember (retrieval "
                          "would score a vacuous recall_all 1.0 and the reader sees nothing)"))
    parallel = len(ids) == len(dates) == len(sessions)
    if not parallel:
        problems.append(p("haystack_sessions", f"parallel lists differ in length: haystack_session_ids {len(ids)}, "
                          f"haystack_dates {len(dates)}, haystack_sessions {len(sessions)}"))
    problems += _check_ids(ids, sessions if parallel else None, p)
    for i, d in enumerate(dates):
        if why := date_problem(d):
            problems.append(p(f"haystack_dates[{i}]", why))
    for i, session in enumerate(sessions):
        sid = ids[i] if parallel else None
        problems += _check_session(session, i, p, EVIDENCE_MARK in sid if isinstance(sid, str) else None)
    problems += _check_answer_ids(raw["answer_session_ids"], {s for s in ids if isinstance(s, str)}, p)
    return problems


def _check_ids(ids: list, sessions: list | None, p) -> list[Problem]:
    """Non-empty string ids; a repeated id is an error unless it is filler with identical content
    (then :func:`instance_warnings` reports it: upstream S has 13 such pairs, issue #54)."""
    problems, first = [], {}
    for i, sid in enumerate(ids):
        if not isinstance(sid, str) or not sid:
            problems.append(p(f"haystack_session_ids[{i}]", f"expected a non-empty string, got {sid!r}"))
        elif sid in first:
            j = first[sid]
            if EVIDENCE_MARK in sid or sessions is None or sessions[i] != sessions[j]:
                what = "an answer session must appear once" if EVIDENCE_MARK in sid else \
                    "the two sessions differ, so the id does not name one session"
                problems.append(p(f"haystack_session_ids[{i}]",
                                  f"duplicate session id {sid!r} (also haystack_session_ids[{j}]): {what}"))
        else:
            first[sid] = i
    return problems


def _check_answer_ids(answer_ids: list, known: set[str], p) -> list[Problem]:
    problems = []
    for i, aid in enumerate(answer_ids):
        where = f"answer_session_ids[{i}]"
        if not isinstance(aid, str):
            problems.append(p(where, f"expected a string, got {type(aid).__name__}"))
        elif aid not in known:
            problems.append(p(where, f"{aid!r} is not in haystack_session_ids"))
        elif EVIDENCE_MARK not in aid:
            problems.append(p(where, f"{aid!r} does not contain 'answer': upstream scoring (run_retrieval.py) "
                              "knows evidence sessions only by that substring, so this label would be ignored; "
                              "give the session an id containing 'answer'"))
    return problems


def _check_session(session: Any, i: int, p, is_answer: bool | None) -> list[Problem]:
    """Turn shapes; with ``is_answer`` known, the has_answer rules of upstream run_retrieval.py."""
    where = f"haystack_sessions[{i}]"
    if not isinstance(session, list):
        return [p(where, f"expected a list of turns, got {type(session).__name__}")]
    if not session:
        return [p(where, "is empty: a session needs at least one turn (an empty one has nothing to index or show)")]
    if _plain_session(session, is_answer):
        return []
    problems = []
    for j, turn in enumerate(session):  # once per turn of the file: field names are built only for a problem
        if not isinstance(turn, dict):
            problems.append(p(f"{where}[{j}]", f"expected a turn object, got {type(turn).__name__}"))
            continue
        role = turn.get("role")
        if role not in ROLES:
            problems.append(p(f"{where}[{j}].role", f"expected 'user' or 'assistant', got {role!r}"))
        if not isinstance(turn.get("content"), str):
            problems.append(p(f"{where}[{j}].content", "missing" if "content" not in turn else
                              f"expected a string, got {type(turn['content']).__name__}"))
        if "has_answer" in turn:
            flag = turn["has_answer"]
            if not isinstance(flag, bool):
                problems.append(p(f"{where}[{j}].has_answer", f"expected true/false, got {flag!r}"))
            elif is_answer is False and flag is True:
                problems.append(p(f"{where}[{j}].has_answer", "true in a session whose id does not contain 'answer': "
                                  "upstream scoring never counts it as evidence; rename the session or drop the flag"))
        elif is_answer and role == "user":
            problems.append(p(f"{where}[{j}].has_answer", "missing: every user turn of an answer session (id "
                              "containing 'answer') needs has_answer true/false; upstream run_retrieval.py stops "
                              "without it"))
    return problems


_ROLE_SET = frozenset(ROLES)


def _plain_session(session: list, is_answer: bool | None) -> bool:
    """True when every turn is an object with a known role and string content and no turn has has_answer,
    in a session that does not need it (a filler session: nearly all of an S or M haystack) — so the turn
    loop of :func:`_check_session` would find nothing. C-level passes over the turns (``map``), about three
    times faster than the loop; False sends the session through the loop, which names each problem."""
    if not all(map(isinstance, session, repeat(dict))) or any(map(dict.__contains__, session, repeat("has_answer"))):
        return False
    try:
        roles = set(map(dict.get, session, repeat("role")))
    except TypeError:  # an unhashable role (a list, an object): the loop names it
        return False
    return roles <= _ROLE_SET and not (is_answer and "user" in roles) and \
        set(map(type, map(dict.get, session, repeat("content")))) == {str}


def instance_warnings(raw: dict, file: str, index: int) -> list[DataWarning]:
    """Odd-but-usable facts of one *valid* instance (see the module docstring)."""
    w = lambda field, msg: DataWarning(file, record_name(raw, index), field, msg)  # noqa: E731
    ids, dates, sessions = raw["haystack_session_ids"], raw["haystack_dates"], raw["haystack_sessions"]
    out, first = [], {}
    for i, sid in enumerate(ids):
        if sid in first:
            out.append(w(f"haystack_session_ids[{i}]", f"duplicate session id {sid!r} (also haystack_session_ids"
                         f"[{first[sid]}]) with identical content: kept twice, as upstream does (real S data has "
                         "13 such filler pairs, LongMemEval issue #54)"))
        first.setdefault(sid, i)
    listed = set(raw["answer_session_ids"])
    out += [w(f"haystack_session_ids[{i}]", f"{sid!r} contains 'answer', so upstream scoring counts it as evidence, "
              "but it is not in answer_session_ids") for i, sid in enumerate(ids)
            if EVIDENCE_MARK in sid and sid not in listed and first[sid] == i]
    _day = lambda text: date(int(text[:4]), int(text[5:7]), int(text[8:10]))  # noqa: E731
    late = max(range(len(dates)), key=dates.__getitem__, default=None)  # zero-padded: text order = time order
    if late is not None and raw["question_date"] < dates[late]:
        q = raw["question_date"]
        when = ("on the same day (a known upstream quirk: 77 S questions, LongMemEval issue #8)" if q[:10] == dates[late][:10]
                else f"{(_day(dates[late]) - _day(q)).days} day(s) later")
        out.append(w("question_date", f"{q!r} is earlier than the latest session, haystack_dates[{late}] = "
                     f"{dates[late]!r}, {when}: a dated replay shows the system sessions from after the question"))
    return out
