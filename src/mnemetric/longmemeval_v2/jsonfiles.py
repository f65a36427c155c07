"""Strict reading of the LongMemEval-V2 data files: JSON Lines row by row, small JSON files whole.

Upstream (xiaowu0162/LongMemEval-V2 at be15ea6, ``data/public_data.py`` read_jsonl and
``evaluation/harness.py`` load_json_list) reads a whole file with ``read_text(encoding="utf-8")``,
splits it with ``str.splitlines`` and parses each non-blank line with ``json.loads``. Consequences
we keep (a file upstream refuses, we refuse) and tighten (the right-hand column is ours):

================================  =======================================  ===========================
input                             upstream                                 here
================================  =======================================  ===========================
UTF-8 byte order mark             json.loads refuses the first line         refused, named
bytes that are not UTF-8          UnicodeDecodeError for the whole file     refused, line named
raw U+0085 / U+2028 / U+2029      splitlines cuts the line: JSON error      refused, named
``NaN``, ``Infinity``, ``1e999``  accepted (a float nan / inf)              refused
a key twice in one object         the last one wins, silently               refused
empty file (no rows)              accepted (zero questions)                 refused
blank lines                       skipped                                   skipped (not records)
================================  =======================================  ===========================

``scan_jsonl`` never holds more than one line: trajectories.jsonl is large.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from mnemetric.errors import InputError, Problem
from mnemetric.io import file_problem, repeated_key

BOM = b"\xef\xbb\xbf"
UPSTREAM_LINE_BREAKS = {"\x85": "U+0085", "\u2028": "U+2028", "\u2029": "U+2029"}
"""Characters str.splitlines breaks at that JSON allows raw inside a string (the other
splitlines breaks — \\r, \\x0b, \\x0c, \\x1c-\\x1e — are refused by JSON itself inside strings)."""


class JsonProblem(ValueError):
    """A JSON text that strict decoding refuses (message says why)."""


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise JsonProblem(f"key {repeated_key(pairs)!r} appears twice in one object (upstream would keep the last "
                          "silently)")
    return out


def _constant(name: str) -> Any:
    raise JsonProblem(f"{name} is not a JSON number (NaN and Infinity are refused)")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JsonProblem(f"the number {text} overflows to infinity")
    return value


def decode_json(text: str) -> Any:
    """``json.loads`` that refuses NaN/Infinity, overflowing numbers and duplicate keys."""
    try:
        return json.loads(text, object_pairs_hook=_object, parse_constant=_constant, parse_float=_float)
    except json.JSONDecodeError as exc:
        raise JsonProblem(f"not valid JSON ({exc.msg} at column {exc.colno})") from None


@dataclass(frozen=True)
class Row:
    """One decoded, non-blank line of a JSON Lines file."""

    line: int
    """1-based line number."""
    value: Any


def _file_problem(path: Path) -> Problem | None:
    found = file_problem(path)  # missing, a folder, a FIFO or device, compressed
    return None if found is None else Problem(str(path), "<file>", "<file>",
                                                   found[0] + (f"; {found[1]}" if found[1] else ""))


def _decode_line(file: str, lineno: int, raw: bytes) -> Row | Problem | None:
    record = f"line {lineno}"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Problem(file, record, "<encoding>", f"not UTF-8: byte 0x{raw[exc.start]:02x} at byte {exc.start + 1} of the line")
    if not text.strip():
        return None
    for ch, name in UPSTREAM_LINE_BREAKS.items():
        if ch in text:
            return Problem(file, record, "<json>", f"contains a raw {name}, where upstream's str.splitlines cuts the "
                           f"line in two; write it as the escape \\u{ord(ch):04x}")
    try:
        return Row(lineno, decode_json(text))
    except JsonProblem as exc:
        return Problem(file, record, "<json>", str(exc))


def scan_jsonl(path: str | Path) -> Iterator[Row | Problem]:
    """Each non-blank line as a Row, or a Problem for a line (or the file) that cannot be read.

    Reading goes on after a broken line so that every problem is reported.
    """
    path = Path(path)
    file = str(path)
    if (problem := _file_problem(path)) is not None:
        yield problem
        return
    rows = 0
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if lineno == 1 and raw.startswith(BOM):
                yield Problem(file, "line 1", "<encoding>", "starts with a UTF-8 byte order mark, which upstream's "
                              "json.loads refuses; save the file as UTF-8 without BOM")
                raw = raw[len(BOM):]
            item = _decode_line(file, lineno, raw)
            if item is not None:
                rows += 1
                yield item
    if rows == 0:
        yield Problem(file, "<file>", "<file>", "is empty (no JSON lines)")


def iter_rows(path: str | Path) -> Iterator[Row]:
    """The rows of a JSON Lines file; the first unreadable line raises InputError."""
    for item in scan_jsonl(path):
        if isinstance(item, Problem):
            raise InputError(item.file, item.record, item.field, item.message)
        yield item


def load_json(path: str | Path) -> tuple[Any, list[Problem]]:
    """A whole (small) JSON file, strictly decoded: (value, []) or (None, problems)."""
    path = Path(path)
    file = str(path)
    if (problem := _file_problem(path)) is not None:
        return None, [problem]
    data = path.read_bytes()
    problems = []
    if data.startswith(BOM):
        problems.append(Problem(file, "<file>", "<encoding>", "starts with a UTF-8 byte order mark, which upstream's "
                                "json.loads refuses; save the file as UTF-8 without BOM"))
        data = data[len(BOM):]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, [*problems, Problem(file, "<file>", "<encoding>", f"not UTF-8: byte 0x{data[exc.start]:02x} at offset {exc.start}")]
    if not text.strip():
        return None, [*problems, Problem(file, "<file>", "<file>", "is empty")]
    try:
        value = decode_json(text)
    except JsonProblem as exc:
        return None, [*problems, Problem(file, "<file>", "<json>", str(exc))]
    return (None if problems else value), problems


def data_path_problem(value: str) -> str | None:
    """Why ``value`` is not a safe path inside the data root (None when it is).

    Upstream resolves relative paths against the data root and also accepts absolute ones
    (public_data.py resolve_question_image; trajectory_store.py resolve_screenshot_source); we refuse
    absolute paths and any ``..`` part, so nothing a data file names can point outside the root.
    """
    if "\x00" in value:
        return "contains a NUL character"
    if PurePosixPath(value).is_absolute() or PureWindowsPath(value).is_absolute() or PureWindowsPath(value).drive:
        return f"{value!r} is an absolute path; it must be relative to the data root"
    parts = value.replace("\\", "/").split("/")
    if ".." in parts:
        return f"{value!r} contains '..'; it must stay inside the data root"
    return None
