"""LongMemEval (V1) instances: typed records, validation and the streaming loader.

Schema facts (shared/docs/upstream-protocol.md §1.2): a file is one JSON list of instances with
question_id, question_type, question, answer (str, or a bare number in real data), question_date,
the parallel lists haystack_session_ids / haystack_dates / haystack_sessions, and
answer_session_ids. A turn is {role, content} plus has_answer (bool) inside answer sessions.
Dates use strftime "%Y/%m/%d (%a) %H:%M". Abstention = "_abs" in question_id (never a type).

Evidence rules (upstream src/retrieval/run_retrieval.py @ 9e0b455f): a session is evidence iff its
id contains "answer", and each user turn of it carries has_answer true/false (upstream asserts it).
A label that cannot mean what it says under those rules is an **error** (an answer_session_ids
entry without "answer"; has_answer true outside an answer session; an answer session's user turn
without has_answer). Odd but usable data that real upstream files have is a **warning**
(:class:`DataWarning`): a question_date before the last session (77 S questions, same day; issue
#8), a filler session listed twice with identical content (13 S questions; issue #54), an
"answer" session missing from answer_session_ids (upstream scoring still counts it).

The checks of one instance (pure) are in :mod:`mnemetric.longmemeval.instance_checks` (import them
from there). Only these two modules know the upstream key spellings; the rest of Mnemetric uses the attributes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mnemetric.errors import InputError, Problem, ValidationFailed
from mnemetric.io import require_file
from mnemetric.jsonstream import iter_json_items
from mnemetric.jsonstrict import Flaw
from mnemetric.longmemeval.instance_checks import DataWarning, check_instance, instance_warnings, record_name
from mnemetric.longmemeval.rules import ABSTENTION_MARK
from mnemetric.longmemeval.rules import QUESTION_TYPES  # noqa: F401 (re-exported: suite.py, data_stats.py)

LISTED = 50
"""Problems kept in memory (and listed) when loading fails; the rest are only counted."""


@dataclass(frozen=True)
class Turn:
    role: str
    """"user" or "assistant"."""
    content: str
    has_answer: bool | None
    """Evidence flag; present (True/False) only inside answer sessions, else None."""


@dataclass(frozen=True)
class Session:
    session_id: str
    """Upstream id; answer sessions contain the word "answer" (never shown to a memory system)."""
    date: str
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Instance:
    question_id: str
    question_type: str
    question: str
    answer: str | int | float
    question_date: str
    sessions: tuple[Session, ...]
    """Haystack in file order (S/M files are chronological; oracle is not)."""
    answer_session_ids: tuple[str, ...]

    @property
    def is_abstention(self) -> bool:
        """Upstream rule: the substring "_abs" in question_id marks an abstention question."""
        return ABSTENTION_MARK in self.question_id

    def to_record(self) -> dict[str, Any]:
        """Back to the upstream JSON shape (used for upstream-format logs)."""
        return {
            "question_id": self.question_id,
            "question_type": self.question_type,
            "question": self.question,
            "answer": self.answer,
            "question_date": self.question_date,
            "haystack_session_ids": [s.session_id for s in self.sessions],
            "haystack_dates": [s.date for s in self.sessions],
            "haystack_sessions": [[_turn_record(t) for t in s.turns] for s in self.sessions],
            "answer_session_ids": list(self.answer_session_ids),
        }


def _turn_record(t: Turn) -> dict[str, Any]:
    return {"role": t.role, "content": t.content} | ({} if t.has_answer is None else {"has_answer": t.has_answer})


# ---------------------------------------------------------------- one instance, typed


def parse_instance(raw: dict[str, Any]) -> Instance:
    """Raw (already validated) dict → typed Instance."""
    sessions = tuple(
        Session(sid, date_, tuple(Turn(t["role"], t["content"], t.get("has_answer")) for t in turns))
        for sid, date_, turns in zip(raw["haystack_session_ids"], raw["haystack_dates"], raw["haystack_sessions"])
    )
    return Instance(raw["question_id"], raw["question_type"], raw["question"], raw["answer"],
                    raw["question_date"], sessions, tuple(raw["answer_session_ids"]))


# ---------------------------------------------------------------- a whole file (streaming)


@dataclass
class _FileCheck:
    """What carries from one instance to the next: question ids seen and the count."""

    file: str
    first_index: dict[str, int] = field(default_factory=dict)
    count: int = 0

    def item(self, index: int, raw: Any, flaws: tuple[Flaw, ...]) -> tuple[list[Problem], list[DataWarning]]:
        self.count += 1
        rec = record_name(raw, index)
        problems = [Problem(self.file, rec, f.path or "<instance>", f.message) for f in flaws]
        flawed = {f.path for f in flaws}  # a NaN "content" is not also "expected a string"
        problems += [x for x in check_instance(raw, self.file, index) if x.field not in flawed]
        qid = raw.get("question_id") if isinstance(raw, dict) else None
        if isinstance(qid, str) and qid:
            if qid in self.first_index:
                problems.append(Problem(self.file, qid, "question_id",
                                        f"duplicate question_id (index {self.first_index[qid]} and index {index})"))
            else:
                self.first_index[qid] = index
        return problems, ([] if problems else instance_warnings(raw, self.file, index))

    def end(self) -> list[Problem]:
        return [] if self.count else [Problem(self.file, "<file>", "<list>", "the JSON list is empty: no instances "
                                              "(a LongMemEval file holds one object per question)")]


def _checked(path: str | Path, check: _FileCheck, *, locate_warnings: bool = True
             ) -> Iterator[tuple[Any, list[Problem], list[DataWarning]]]:
    """(raw, errors, warnings) per instance, then (None, [empty-list error], []) if there was none.
    Each finding names its record's index and the byte offset of the record's first byte (a warning's
    offset only with ``locate_warnings``). A file-level problem (encoding, JSON syntax) raises
    InputError: reading cannot go on."""
    items = iter_json_items(path)
    for index, (raw, flaws) in enumerate(items):
        problems, warnings = check.item(index, raw, flaws)
        if problems or warnings:  # the offset is asked only here: free for a clean file
            offset = items.offset(index) if problems or locate_warnings else None
            problems = [replace(p, index=index, offset=offset) for p in problems]
            warnings = [replace(w, index=index, offset=offset) for w in warnings]
        yield raw, problems, warnings
    if end := check.end():
        yield None, end, []


class ProblemsFound(ValidationFailed):
    """Several problems: the first :data:`LISTED` are kept and listed, the others counted."""

    def __init__(self, file: str, listed: list[Problem], total: int):
        super().__init__(file, listed)
        self.total, more = total, f"\n  ... and {total - len(listed)} more" * (total > len(listed))
        self.args = (f"{file}: {total} problem(s) found\n" + "\n".join(f"  - {p}" for p in listed) +
                     f"{more}\n  fix: run `mnemetric validate {file}` to list every problem",)


def iter_instances(path: str | Path, on_warning: Callable[[DataWarning], None] | None = None) -> Iterator[Instance]:
    """Stream typed instances. After the first problem nothing more is yielded but the file is read
    to its end; then every problem is raised at once (InputError for one, ProblemsFound for more).
    Problems name their record's index and byte offset; a warning passed to ``on_warning`` names the
    index only (the adapt stage only counts warnings, and real S files have them throughout: locating
    each could cost a second pass over the file; `mnemetric validate` locates them)."""
    file = str(_existing(path))
    listed: list[Problem] = []
    total = 0  # problems found; only the first LISTED are kept
    try:
        for raw, problems, warnings in _checked(path, _FileCheck(file), locate_warnings=False):
            total += len(problems)
            listed += problems[: LISTED - len(listed)]
            if total == 0:
                for warning in warnings if on_warning else ():
                    on_warning(warning)
                yield parse_instance(raw)
    except InputError as exc:
        if total == 0:
            raise  # the only problem: keep its own fix
        total += 1
        listed += [exc.problem][: LISTED - len(listed)]
    if total == 1:
        (only,) = listed
        raise InputError(only.file, only.record, only.field, only.message, fix=f"run `mnemetric validate {file}` "
                         "to list every problem", index=only.index, offset=only.offset)
    if total:
        raise ProblemsFound(file, listed, total)


def load_instances(path: str | Path) -> list[Instance]:
    return list(iter_instances(path))


def scan_file(path: str | Path, on_finding: Callable[[Problem | DataWarning], None], *,
              locate_warnings: bool = True) -> tuple[int, InputError | None]:
    """Pass every problem and warning to ``on_finding`` in file order, as found (streaming), each naming
    its record's index and byte offset (a warning's offset only with ``locate_warnings``); return
    (instances read, the file-level error that stopped reading, if any). Raises for a missing file."""
    check = _FileCheck(str(_existing(path)))
    try:
        for _, problems, warnings in _checked(path, check, locate_warnings=locate_warnings):
            for finding in (*problems, *warnings):
                on_finding(finding)
    except InputError as exc:
        return check.count, exc
    return check.count, None


def validate_file(path: str | Path) -> tuple[int, list[Problem]]:
    """Check every instance; return (number of instances, all problems). Warnings are left out."""
    problems: list[Problem] = []
    n, fatal = scan_file(path, lambda f: problems.append(f) if isinstance(f, Problem) else None, locate_warnings=False)
    return n, problems + ([fatal.problem] if fatal else [])


def _existing(path: str | Path) -> Path:
    return require_file(path, fix="check the path; for pipeline variants run `dvc repro` (stage prepare) first")
