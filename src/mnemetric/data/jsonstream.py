"""Stream the items of a top-level JSON list without loading the whole file.

The official LongMemEval files are one JSON list (the M variant is ~2.7 GB). ``iter_json_list``
decodes one item at a time with :meth:`json.JSONDecoder.raw_decode`, reading more of the file
only when an item is not yet complete, so memory stays at about one item.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import InputError

CHUNK = 1 << 20
_WS = " \t\n\r"
NEAR_END = 16
"""A decode error this close to the end of the buffer may just mean the item goes on in the next
chunk (a cut-off ``tru``, ``1.5e``, ``\\u12`` or missing delimiter); farther back it is a real error."""


class _Reader:
    def __init__(self, fh, path: str):
        self.fh, self.path = fh, path
        self.buf, self.pos, self.eof = "", 0, False
        self.offset = 0
        """Characters of the file dropped from the front of ``buf`` so far (``buf[0]``'s file offset)."""

    def fill(self, min_more: int = CHUNK) -> bool:
        """Append at least ``min_more`` characters (fewer at EOF). Return False at EOF."""
        if self.eof:
            return False
        data = self.fh.read(max(min_more, CHUNK))
        if not data:
            self.eof = True
            return False
        self.offset += self.pos
        self.buf = self.buf[self.pos :] + data
        self.pos = 0
        return True

    def peek(self) -> str:
        """Next non-whitespace character ('' at EOF), without consuming it."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in _WS:
                self.pos += 1
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.fill():
                return ""

    def error(self, message: str) -> InputError:
        return InputError(self.path, "<file>", "<json>", message, fix="the file must be one JSON list of objects")


def iter_json_list(path: str | Path) -> Iterator[Any]:
    """Yield each item of the top-level JSON list stored in ``path``."""
    decoder = json.JSONDecoder()
    with open(path, encoding="utf-8") as fh:
        r = _Reader(fh, str(path))
        if r.peek() != "[":
            raise r.error("does not start with '[' (not a JSON list)")
        r.pos += 1
        if r.peek() == "]":
            return
        index = 0
        while True:
            yield _decode_item(r, decoder, index)
            index += 1
            ch = r.peek()
            if ch == ",":
                r.pos += 1
            elif ch == "]":
                return
            else:
                raise r.error(f"expected ',' or ']' after item {index - 1}, found {ch or 'end of file'!r}")


def _decode_item(r: _Reader, decoder: json.JSONDecoder, index: int) -> Any:
    if r.peek() == "":
        raise r.error(f"file ends inside the list (after {index} items)")
    while True:
        try:
            obj, end = decoder.raw_decode(r.buf, r.pos)
        except json.JSONDecodeError as exc:
            # Maybe the item is not complete yet: read more (doubling) and retry. An error well
            # inside the buffer, or any error at EOF, is a broken item: report it without reading on.
            if not (_maybe_incomplete(exc, r.buf) and r.fill(len(r.buf))):
                raise r.error(f"item {index} is not valid JSON ({exc.msg} at character {r.offset + exc.pos} "
                              f"of the file, {exc.pos - r.pos} into the item)") from None
            continue
        if end == len(r.buf) and not r.eof and not isinstance(obj, (dict, list, str)):
            # a bare number at the buffer edge may continue in the next chunk
            if r.fill():
                continue
        r.pos = end
        return obj


def _maybe_incomplete(exc: json.JSONDecodeError, buf: str) -> bool:
    """Could more input fix ``exc``? Only if it is at the buffer's end, or an unterminated string
    (whose position is the string's start, however long the string is)."""
    return exc.pos >= len(buf) - NEAR_END or exc.msg.startswith("Unterminated string")
