"""The fast path of :mod:`mnemetric.jsonstream`: ijson's ``yajl2_c`` backend, with a guard for every
place where yajl accepts what strict JSON refuses (or reads it differently).

ijson builds each item of the top-level list in C from the bytes (64 KiB to 1 MiB at a time), so
memory stays at about one item and a 2.7 GB file reads at yajl's speed. yajl differs from the strict
reader (:mod:`mnemetric.jsonstream`, measured in ``make bench``) in these ways, each guarded:

==============================================  =================================================
yajl / ijson                                     guard
==============================================  =================================================
a key twice in one object: the last value kept   objects are :class:`_Object`, which notes it
a lone high surrogate escape (``"\\ud800"``):    the bytes are scanned for lone surrogate escapes
  silently read as ``"?"``                         before yajl sees them
form feed and vertical tab accepted as space     the bytes are scanned for them
a non-list top level yields no item, no error    the first byte must be ``[``
memory growing with the square of the depth      > 1,000 unclosed brackets so far, or 64 in a row
==============================================  =================================================

Everything yajl refuses (NaN, Infinity, ``1e999``, integers beyond 64 bits, trailing data, bytes that
are not UTF-8, a lone low surrogate, any syntax error) raises. On a guard or an error the fast path
stops with :class:`Suspect` before handing out the item concerned; the caller then reads the file again
with the strict reader, skipping the items already handed out, so every diagnosis (line, column,
character and byte offset, the flawed field) is the strict reader's, and a file the strict reader
accepts yields exactly the same items either way.
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Iterator
from typing import Any, BinaryIO

import ijson

try:
    _YAJL: Any = ijson.get_backend("yajl2_c")
except ImportError:  # an ijson built without its C extension: the guards above are yajl's, so no fast path
    _YAJL = None
BACKEND: str | None = "yajl2_c" if _YAJL is not None else None
"""The backend of the fast path (``yajl2_c``, named, never ijson's pick of the best available); None without
it: every file is then read by the strict reader (the same items, slower), said once on stderr."""
_said: list[bool] = []

_local = threading.local()
_WS = b" \t\r\n"
_SPACES = (b"\x0b", b"\x0c")
"""Whitespace to yajl, not to JSON (RFC 8259 allows space, tab, CR and LF only)."""
_HIGH, _LOW = rb"\\u[dD][89abAB][0-9a-fA-F]{2}", rb"\\u[dD][c-fC-F][0-9a-fA-F]{2}"
_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_IS_HIGH, _IS_LOW = re.compile(_HIGH), re.compile(_LOW)
MAX_DEPTH = 1000
"""Open brackets less closed ones read so far (those in strings too: a bound, not the depth) beyond
which the strict reader takes over: ijson keeps a path per level, so its memory grows with the square
of the depth (100,000 levels would take gigabytes); the strict reader names the item instead."""
_RUNS = (b"[" * 64, b"{" * 64)
"""Deep nesting inside one read (where the balance above can be back to 0 at its end)."""
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
PAIR = 12
"""Bytes of a surrogate pair's two escapes; a backslash this close to a read's end may start a cut one."""


class Suspect(Exception):
    """The fast path met something only the strict reader can judge (or describe)."""


class _Object(dict):
    """A JSON object as ijson builds it (``map_type``): notes a key stored twice (ijson stores keys
    in file order, so a second store of a key is a repeated key). Called once per key of the file, so
    the common path (a new key) is one ``setdefault`` and two ``len``, C calls that are cheaper than
    ``key in self`` plus ``dict.__setitem__``; a key already there is then overwritten, as a dict does."""

    __slots__ = ()

    def __setitem__(self, key: str, value: Any, _new=dict.setdefault, _len=len, _set=dict.__setitem__) -> None:
        size = _len(self)
        _new(self, key, value)
        if _len(self) == size:  # the key was there: store the new value, note the repeat
            _set(self, key, value)
            _local.repeated = True


_Object.__name__ = _Object.__qualname__ = "dict"
"""Messages that name a value's type (``got dict``) read the same whichever reader built the item."""


class _Scanned:
    """A binary file whose reads are checked for what yajl would accept but strict JSON refuses, and
    never end inside an escape: yajl decodes a surrogate pair cut between two reads as two lone
    halves (bytes that are not UTF-8), so a read's last escape (pair) is held back for the next read."""

    def __init__(self, fh: BinaryIO, head: bytes):
        self.fh, self.pending, self.suspect, self.depth = fh, head, "", 0

    def read(self, size: int = -1) -> bytes:
        if size == 0:  # ijson's probe for bytes or text
            return b""
        data, self.pending = self.pending + self.fh.read(size), b""
        while (cut := _cut(data)) < len(data):
            if cut > 0:
                data, self.pending = data[:cut], data[cut:]
                break
            more = self.fh.read(size)
            if not more:
                break  # the end of the file: nothing to wait for
            data += more
        brackets = data.translate(None, _NOT_BRACKETS)  # one pass; the counts then run over the brackets alone
        self.depth += brackets.count(b"[") + brackets.count(b"{") - brackets.count(b"]") - brackets.count(b"}")
        if self.depth > MAX_DEPTH or any(run in data for run in _RUNS):
            self.suspect = "deep nesting"
            return b""  # never given to yajl: ijson ends with an error, the strict reader takes over
        if any(s in data for s in _SPACES):
            self.suspect = "a form feed or vertical tab"
        elif b"\\" in data and b"\\u" in data and _lone_surrogate(data):  # memchr first: most text has no escape
            self.suspect = "a lone surrogate escape"
        return data


def _cut(data: bytes) -> int:
    """Where to end a read so that it cuts no escape and no surrogate pair: before the last backslash
    if it is in the last 12 bytes, and before the high half of a pair whose low half starts there."""
    cut = data.rfind(b"\\", max(len(data) - PAIR, 0))
    if cut < 0:
        return len(data)
    return cut - 6 if cut >= 6 and _IS_HIGH.match(data, cut - 6) else cut


def _lone_surrogate(data: bytes) -> bool:
    """Any surrogate escape in ``data`` that is not half of a pair? (A read never cuts a pair.) An
    escaped backslash before ``u`` is a false hit: the strict reader then says it is fine, slower."""
    for m in _SURROGATE.finditer(data):
        at = m.start()
        if _IS_HIGH.match(data, at):
            if not _IS_LOW.match(data, at + 6):
                return True
        elif not (at >= 6 and _IS_HIGH.match(data, at - 6)):
            return True
    return False


def fast_items(fh: BinaryIO, chunk: int) -> Iterator[Any]:
    """Yield the items of the JSON list read from ``fh`` (opened in binary, at its start, BOM already
    checked); raise :class:`Suspect` (or ijson's error) where only the strict reader can tell."""
    if _YAJL is None:
        if not _said:
            _said.append(True)
            print("mnemetric: ijson's C backend (yajl2_c) is not installed: big JSON files are read by the "
                  "pure-Python strict reader (the same items, slower). Fix: pip install --force-reinstall ijson "
                  "(a build with its C extension)", file=sys.stderr)
        raise Suspect("ijson's yajl2_c backend is not installed")
    size = max(chunk, 16)
    head = fh.read(size)
    while head and not head.lstrip(_WS):
        head = fh.read(size)
    if head.lstrip(_WS)[:1] != b"[":
        raise Suspect("not a list")
    scanned = _Scanned(fh, head)
    items = _YAJL.items(scanned, "item", use_float=True, map_type=_Object, buf_size=size)
    while True:
        _local.repeated = False
        try:
            item = next(items)
        except StopIteration:
            break
        if scanned.suspect or _local.repeated:
            raise Suspect(scanned.suspect or "a repeated key")
        yield item
    if scanned.suspect:
        raise Suspect(scanned.suspect)
