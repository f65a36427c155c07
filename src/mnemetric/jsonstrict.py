"""The strict reader of :mod:`mnemetric.jsonstream`: RFC 8259 JSON in UTF-8, every flaw named.

It reads bytes in chunks (:data:`CHUNK`), decodes them as UTF-8 incrementally and decodes one item at
a time with :meth:`json.JSONDecoder.raw_decode`, reading more only when an item is not yet complete.
Strict means nothing Python's ``json`` adds or forgives:

* no byte order mark (UTF-8, UTF-16 or UTF-32), no bytes that are not UTF-8 (named by byte offset);
* nothing but whitespace after the list's closing ``]``;
* no ``NaN``, ``Infinity``, ``-Infinity``, nor a number so large it becomes infinity (``1e999``);
* no lone UTF-16 surrogate escape (``"\\ud800"``): it decodes, but no UTF-8 file can hold it, so
  the first write of that text would crash;
* no key twice in one object (``json`` keeps the last value silently, other readers the first:
  a repeated ``answer`` would change the gold answer).

Value flaws (the last three rules) come back with the item as :class:`Flaw` records (JSON path +
message, :func:`find_flaws`); file-level problems and broken items raise InputError. The item loop
over a file (:class:`mnemetric.jsonstream.StrictItems`) is in :mod:`mnemetric.jsonstream`.
"""

from __future__ import annotations

import codecs
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from mnemetric.errors import InputError
from mnemetric.io import DUPLICATE_FIX, repeated_key, require_file

CHUNK = 1 << 20
_WS = " \t\n\r"
NEAR_END = 16
"""A decode error this close to the end of the buffer may just mean the item goes on in the next
chunk (a cut-off ``tru``, ``1.5e``, ``\\u12`` or missing delimiter); farther back it is a real error."""

_BOMS = ((codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"), (codecs.BOM_UTF8, "UTF-8"),
         (codecs.BOM_UTF16_LE, "UTF-16"), (codecs.BOM_UTF16_BE, "UTF-16"))
_H, _L = r"\\u[dD][89abAB][0-9a-fA-F]{2}", r"\\u[dD][c-fC-F][0-9a-fA-F]{2}"
_LONE_ESCAPE = re.compile(f"{_H}(?!{_L})|(?<!{_H}){_L}")
"""A surrogate escape that is not half of a pair (a rare false hit on ``\\\\ud800`` is re-checked)."""
SURROGATE = re.compile("[\ud800-\udfff]")
FIX_LIST = "the file must be one JSON list of objects"
FIX_VALUE = "write a finite number, null or a string instead"

@dataclass(frozen=True)
class Flaw:
    """A value strict JSON does not allow, found inside one decoded item."""

    path: str
    """Where in the item: ``answer``, ``haystack_sessions[0][1].content``; "" = the item itself."""
    message: str
    fix: str = FIX_VALUE


class NonFinite:
    """Stands in for NaN / Infinity / an overflowing number while an item is checked."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


class Repeated(dict):
    """A decoded object that had a key twice (the last value kept, as ``json`` does); ``key`` names it."""

    __slots__ = ("key",)

class _Reader:
    def __init__(self, fh, path: str):
        self.fh, self.path = fh, path
        self.decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self.buf, self.pos, self.eof = "", 0, False
        self.offset, self.byte_offset = 0, 0
        """Characters (bytes) of the file dropped from the front of ``buf`` so far: ``buf[0]``'s offset."""
        self.lines, self.line_start = 0, 0
        """Newlines in the dropped characters; file offset of the character after the last one."""
        self.bytes_read, self.byte_lines = 0, 0
        self.item_start = 0
        """``buf`` position of the first character of the item last decoded (:meth:`StrictItems.offset`)."""
        self.broken: InputError | None = None
        """Bytes that are not UTF-8 were read: the text before them is in ``buf``; this is raised
        when the parser asks for more, so the items before the bad bytes are still checked."""

    def fill(self, min_more: int = CHUNK) -> bool:
        """Append at least ``min_more`` characters (fewer at EOF). Return False at EOF."""
        if self.broken:
            raise self.broken
        text = ""
        while not text and not self.eof:
            data = self.fh.read(max(min_more, CHUNK))
            self.eof = not data
            text = self._decode(data)
        if not text:
            if self.broken:
                raise self.broken
            return False
        last = self.buf.rfind("\n", 0, self.pos)
        if last >= 0:
            self.lines += self.buf.count("\n", 0, self.pos)
            self.line_start = self.offset + last + 1
        self.offset += self.pos
        self.byte_offset += len(self.buf[: self.pos].encode("utf-8"))
        self.buf = self.buf[self.pos :] + text
        self.pos = 0
        return True

    def _decode(self, data: bytes) -> str:
        pending = len(self.decoder.getstate()[0])  # bytes of a character cut at the previous chunk's end
        try:
            text = self.decoder.decode(data, final=not data)
        except UnicodeDecodeError as exc:
            at = self.bytes_read - pending + exc.start
            line = self.byte_lines + data.count(b"\n", 0, max(exc.start - pending, 0)) + 1
            bad = " ".join(f"0x{b:02x}" for b in exc.object[exc.start : exc.end])
            self.broken = InputError(self.path, f"line {line}", "<encoding>",
                                     f"{bad} at byte offset {at} is not valid UTF-8 ({exc.reason})",
                                     fix="save the file as UTF-8 (e.g. `iconv -f latin1 -t utf-8 FILE > FILE.utf8`, "
                                         "choosing the encoding it was written in)")
            self.eof = True
            return exc.object[: exc.start].decode("utf-8")  # the valid text before the bad bytes
        self.bytes_read += len(data)
        self.byte_lines += data.count(b"\n")
        return text

    def peek(self) -> str:
        """Next non-whitespace character ('' at EOF), without consuming it."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in _WS:
                self.pos += 1
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.fill():
                return ""

    def where(self, pos: int) -> tuple[int, int, int]:
        """(line, column, character offset in the file) of ``buf[pos]``, all 1-based but the offset."""
        last = self.buf.rfind("\n", 0, pos)
        start = self.offset + last + 1 if last >= 0 else self.line_start
        line = self.lines + self.buf.count("\n", 0, pos) + 1
        return line, self.offset + pos - start + 1, self.offset + pos

    def byte_at(self, pos: int) -> int:
        """The byte offset in the file of ``buf[pos]`` (0-based; differs from the character offset
        after multi-byte characters)."""
        return self.byte_offset + len(self.buf[: min(pos, len(self.buf))].encode("utf-8"))

    def error(self, message: str, fix: str = FIX_LIST) -> InputError:
        """A file-level problem at the current position, named by its line."""
        line, column, char = self.where(self.pos)
        return InputError(self.path, f"line {line}", "<json>", f"{message} (line {line} column {column}, "
                          f"character {char} of the file, byte offset {self.byte_at(self.pos)})", fix=fix)

def _open(path: str | Path) -> BinaryIO:
    """``path`` opened in binary after the checks every reader makes first (regular file, no BOM)."""
    require_file(path)
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise InputError(str(path), "<file>", "<file>", f"cannot be read ({exc.strerror})") from None
    try:
        _check_encoding_mark(fh.peek(4)[:4], str(path))
    except InputError:
        fh.close()
        raise
    return fh


def _check_encoding_mark(head: bytes, path: str) -> None:
    for bom, name in _BOMS:
        if head.startswith(bom):
            fix = ("remove the 3 bytes, e.g. `tail -c +4 FILE > FIXED.json`" if name == "UTF-8" else
                   f"convert it to UTF-8, e.g. `iconv -f {name} -t UTF-8 FILE > FIXED.json`")
            raise InputError(path, "line 1", "<encoding>", f"starts with a {name} byte order mark (BOM, bytes "
                             f"{bom.hex(' ')}); a JSON file must be UTF-8 without one", fix=fix)
    if b"\x00" in head:
        raise InputError(path, "line 1", "<encoding>", "has NUL bytes at its start: it looks UTF-16 or UTF-32 "
                         "encoded, not UTF-8", fix="convert it, e.g. `iconv -f UTF-16 -t UTF-8 FILE > FIXED.json`")


def _open_list(r: _Reader) -> None:
    ch = r.peek()
    if ch == "[":
        r.pos += 1
    elif ch == "{":
        raise r.error("starts with '{': one JSON object or JSON Lines, not a JSON list")
    else:
        raise r.error(f"does not start with '[' (not a JSON list; {f'found {ch!r}' if ch else 'the file is empty'})")


def _items(r: _Reader, decoder: _StrictDecoder) -> Iterator[tuple[Any, tuple[Flaw, ...]]]:
    index = 0
    while True:
        yield _decode_item(r, decoder, index)
        index += 1
        ch = r.peek()
        if ch == ",":
            r.pos += 1
        elif ch == "]":
            r.pos += 1
            return
        else:
            raise r.error(f"expected ',' or ']' after item {index - 1}, found {ch or 'end of file'!r}")


class _StrictDecoder(json.JSONDecoder):
    """raw_decode that marks non-finite numbers (NonFinite) instead of returning nan / inf, and an
    object with a repeated key (Repeated) instead of keeping the last value silently."""

    def __init__(self) -> None:
        def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:  # the hot path: one call per object
            obj = dict(items)
            if len(obj) == len(items):
                return obj
            self.marked = True
            marked = Repeated(obj)
            marked.key = repeated_key(items)
            return marked

        super().__init__(parse_constant=self._constant, parse_float=self._float, object_pairs_hook=pairs)
        self.marked = False

    def _constant(self, text: str) -> NonFinite:
        self.marked = True
        return NonFinite(text)

    def _float(self, text: str) -> float | NonFinite:
        value = float(text)
        return value if math.isfinite(value) else self._constant(text)


def _decode_item(r: _Reader, decoder: _StrictDecoder, index: int) -> tuple[Any, tuple[Flaw, ...]]:
    if r.peek() == "":
        raise r.error(f"file ends inside the list (after {index} items)")
    while True:
        decoder.marked = False
        try:
            obj, end = decoder.raw_decode(r.buf, r.pos)
        except json.JSONDecodeError as exc:
            # Maybe the item is not complete yet: read more (doubling) and retry. An error well
            # inside the buffer, or any error at EOF, is a broken item: report it without reading on.
            if not (_maybe_incomplete(exc, r.buf) and r.fill(len(r.buf))):
                line, column, char = r.where(exc.pos)
                raise InputError(r.path, f"index {index}", "<json>", f"item {index} is not valid JSON ({exc.msg} at "
                                 f"character {char} of the file, {exc.pos - r.pos} into the item; line {line} "
                                 f"column {column}; byte offset {r.byte_at(exc.pos)})", fix=FIX_LIST,
                                 index=index, offset=r.byte_at(r.pos)) from None
            continue
        except (RecursionError, ValueError) as exc:
            raise InputError(r.path, f"index {index}", "<json>", _unreadable(index, exc), fix=FIX_LIST,
                             index=index, offset=r.byte_at(r.pos)) from None
        if end == len(r.buf) and not r.eof and not isinstance(obj, (dict, list, str)):
            # a bare number at the buffer edge may continue in the next chunk
            if r.fill():
                continue
        flaws = decoder.marked or _has_lone_escape(r.buf, r.pos, end)
        r.item_start, r.pos = r.pos, end
        return obj, tuple(find_flaws(obj)) if flaws else ()


def _has_lone_escape(buf: str, start: int, end: int) -> bool:
    """Any surrogate escape in ``buf[start:end]`` that is not half of a pair? (``str.find`` runs at
    memory speed; the regex only looks at each hit, so a clean 2.7 GB file costs almost nothing.)"""
    for probe in ("\\ud", "\\uD"):
        i = buf.find(probe, start, end)
        while i >= 0:
            if _LONE_ESCAPE.match(buf, i, end):
                return True
            i = buf.find(probe, i + 1, end)
    return False


def _unreadable(index: int, exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return f"item {index} is nested too deeply to decode (deeper than Python's recursion limit)"
    return f"item {index} holds a number Python will not read ({str(exc).split(';')[0]})"


def _maybe_incomplete(exc: json.JSONDecodeError, buf: str) -> bool:
    """Could more input fix ``exc``? Only if it is at the buffer's end, or an unterminated string
    (whose position is the string's start, however long the string is)."""
    return exc.pos >= len(buf) - NEAR_END or exc.msg.startswith("Unterminated string")


def find_flaws(obj: Any, path: str = "") -> Iterator[Flaw]:
    """Every NonFinite stand-in, every string with a lone surrogate and every repeated key inside
    ``obj``, by JSON path."""
    if isinstance(obj, NonFinite):
        yield Flaw(path, f"{obj.text} is not valid JSON: numbers must be finite (no NaN or Infinity, "
                         "nothing beyond the double range)")
    elif isinstance(obj, str):
        if m := SURROGATE.search(obj):
            yield Flaw(path, f"contains a lone UTF-16 surrogate (\\u{ord(m.group()):04x}) that no UTF-8 file can "
                             "hold: a broken \\uXXXX escape (a high surrogate \\ud800-\\udbff must be followed by a "
                             "low one \\udc00-\\udfff)")
    elif isinstance(obj, dict):
        if isinstance(obj, Repeated):
            yield Flaw(_key_path(path, obj.key), f"duplicate key: {obj.key!r} appears twice in one object (JSON "
                       "readers disagree on which value counts; Python keeps the last)", fix=DUPLICATE_FIX)
        for key, value in obj.items():
            where = _key_path(path, key)
            yield from find_flaws(key, where)
            yield from find_flaws(value, where)
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield from find_flaws(value, f"{path}[{i}]")


def _key_path(path: str, key: str) -> str:
    return (f"{path}.{key}" if path else key) if key.isidentifier() else f"{path}[{json.dumps(key)}]"
