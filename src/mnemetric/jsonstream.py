"""Stream the items of a top-level JSON list without loading the whole file, strictly.

The official LongMemEval files are one JSON list (the M variant is ~2.7 GB). ``iter_json_items``
parses it through ijson's C parser (:mod:`mnemetric.jsonfast`) as long as the bytes are plain strict
JSON; at the first thing that parser reads differently or refuses, the rest of the file (from the
first item not yet handed out) goes through the strict reader (:mod:`mnemetric.jsonstrict`, run by :func:`strict_items`), which
names every flaw. The strict reader reads bytes in chunks, decodes them as UTF-8 incrementally and
decodes one item at a time with :meth:`json.JSONDecoder.raw_decode`, reading more only when an item
is not yet complete. Either way memory stays at about one item.

Strict means RFC 8259 JSON in UTF-8, nothing Python's ``json`` adds or forgives:

* no byte order mark (UTF-8, UTF-16 or UTF-32), no bytes that are not UTF-8 (named by byte offset);
* nothing but whitespace after the list's closing ``]``;
* no ``NaN``, ``Infinity``, ``-Infinity``, nor a number so large it becomes infinity (``1e999``);
* no lone UTF-16 surrogate escape (``"\\ud800"``): it decodes, but no UTF-8 file can hold it, so
  the first write of that text would crash;
* no key twice in one object (``json`` keeps the last value silently, other readers the first:
  a repeated ``answer`` would change the gold answer).

Before reading, the path must be a regular, uncompressed file (:func:`mnemetric.io.require_file`:
a FIFO would block the reader, a gzip file would fail as "UTF-16").

File-level problems name ``line N`` (with column, character and byte offset); a broken item names
``index N``. Value flaws (the last three rules) come back with the item as :class:`~mnemetric.jsonstrict.Flaw` records
(JSON path + message) so a validator can name the field and go on with the next item. Where an item
starts (its first byte) comes from :meth:`JsonItems.offset`, asked only for a message.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import islice
from pathlib import Path
from typing import Any

from mnemetric import jsonstrict
from mnemetric.errors import InputError, MnemetricError, interrupt_of
from mnemetric.jsonfast import fast_items
from mnemetric.jsonstrict import (SURROGATE, Flaw, _maybe_incomplete, _open, _open_list, _Reader, _StrictDecoder,
                                  _items)


def iter_json_list(path: str | Path) -> Iterator[Any]:
    """Yield each item of the top-level JSON list in ``path``; any flaw raises InputError (``index N``,
    plus the item's question_id when it has one)."""
    items = iter_json_items(path)
    for index, (item, flaws) in enumerate(items):
        if flaws:
            f = flaws[0]
            raise InputError(str(path), record_of(item, index), f.path or "<item>", f.message, fix=f.fix,
                             index=index, offset=items.offset(index))
        yield item


def record_of(item: Any, index: int) -> str:
    """How an item of a list file is named in a message: its question_id (a printable string), else
    ``index N``; pass ``index`` and the item's offset along (:class:`mnemetric.errors.Problem`)."""
    qid = item.get("question_id") if isinstance(item, dict) else None
    return qid if isinstance(qid, str) and qid and not SURROGATE.search(qid) else f"index {index}"


def iter_json_items(path: str | Path) -> JsonItems:
    """(item, flaws) for each item of the top-level JSON list in ``path`` (see module doc): through
    ijson's C parser (:mod:`mnemetric.jsonfast`) while the bytes are plain strict JSON; from the first
    item it cannot vouch for (or any error) on, through the strict reader, which names every flaw.
    An iterator; its :meth:`JsonItems.offset` gives the byte offset where an item starts."""
    return JsonItems(path)


class _Items:
    """An iterator of (item, flaws) that can say where an item starts in the file (:meth:`offset`).

    :meth:`offset` is meant for messages about the item just handed out and costs nothing until it is
    asked: an item of the strict reader's is still in its buffer (exact, at once); yajl's events carry
    no byte offsets and ijson builds items in C from whole reads (64 KiB to 1 MiB), so for an item of
    the fast path a second reader (:func:`_item_starts`: the C ``json`` scanner, one item in memory)
    walks the file to it, resuming where it stopped for the next item asked: at most one more pass
    over the file, and only when there is something to report."""

    def __init__(self, path: str | Path):
        self.path = path
        self.index = -1
        """The index of the item last handed out."""
        self._gen = self._run()
        self._starts: Iterator[int] | None = None
        self._located = (-1, 0)
        """(index, byte offset) of the last item :func:`_item_starts` reached."""

    def __iter__(self) -> Iterator[tuple[Any, tuple[Flaw, ...]]]:
        return self

    def __next__(self) -> tuple[Any, tuple[Flaw, ...]]:
        pair = next(self._gen)
        self.index += 1
        return pair

    def _run(self) -> Iterator[tuple[Any, tuple[Flaw, ...]]]:
        raise NotImplementedError

    def _in_hand(self, index: int) -> int | None:
        """The offset of item ``index`` if it is still in a reader's buffer (no reading), else None."""
        return None

    def offset(self, index: int) -> int | None:
        """The byte offset (0-based) of the first byte of item ``index`` in the file; None if it cannot
        be found (the file changed under us)."""
        if (at := self._in_hand(index)) is not None:
            return at
        if self._starts is None or index < self._located[0]:
            self._starts, self._located = _item_starts(self.path), (-1, 0)
        try:
            while self._located[0] < index:
                self._located = (self._located[0] + 1, next(self._starts))
        except (StopIteration, MnemetricError, OSError):
            self._starts = None
            return None
        return self._located[1]


class JsonItems(_Items):
    """:func:`iter_json_items`: the fast path, then (from the first item it cannot vouch for) the strict reader."""

    _strict: Iterator[tuple[Any, tuple[Flaw, ...]]] | None = None

    def _run(self) -> Iterator[tuple[Any, tuple[Flaw, ...]]]:
        given = 0
        with _open(self.path) as fh:
            try:
                for item in fast_items(fh, jsonstrict.CHUNK):
                    yield item, ()
                    given += 1
                return
            except Exception as exc:  # noqa: BLE001 - whatever it is, the strict reader says what and where
                stop = interrupt_of(exc)  # a signal raised inside the C parser: stop, do not re-read
                if stop is not None:
                    raise stop from None
        self._strict = strict_items(self.path)
        yield from islice(self._strict, given, None)

    def _in_hand(self, index: int) -> int | None:
        return self._strict._in_hand(index) if isinstance(self._strict, StrictItems) else None


def strict_items(path: str | Path) -> StrictItems:
    """:func:`iter_json_items` by the pure-Python strict reader alone (the fast path's fallback)."""
    return StrictItems(path)


class StrictItems(_Items):
    """:func:`strict_items`: the strict reader, which knows where each item starts as it reads it."""

    _reader: _Reader | None = None

    def _in_hand(self, index: int) -> int | None:
        r = self._reader
        return r.byte_at(r.item_start) if r is not None and index == self.index else None

    def _run(self) -> Iterator[tuple[Any, tuple[Flaw, ...]]]:
        with _open(self.path) as fh:
            self._reader = r = _Reader(fh, str(self.path))
            decoder = _StrictDecoder()
            _open_list(r)
            if r.peek() == "]":
                r.pos += 1
            else:
                yield from _items(r, decoder)
            if r.peek() != "":
                raise r.error(f"unexpected {r.buf[r.pos]!r} after the closing ']' of the list",
                              fix="a file holds exactly one JSON list: remove what follows its closing ']' "
                                  "(two lists joined together?)")


def _item_starts(path: str | Path) -> Iterator[int]:
    """The byte offset of each item of the JSON list in ``path``, in order, by the C ``json`` scanner
    (no hooks: the items were read once already; here only their ends count). Stops at the first
    thing it cannot read."""
    with _open(path) as fh:
        r = _Reader(fh, str(path))
        decoder = json.JSONDecoder()
        _open_list(r)
        if r.peek() == "]":
            return
        char, byte = 0, 0  # the last offset given, in characters and bytes of the file
        while r.peek():
            at = r.offset + r.pos
            byte = byte + len(r.buf[char - r.offset : r.pos].encode("utf-8")) if char >= r.offset else r.byte_at(r.pos)
            char = at
            yield byte
            while True:
                try:
                    obj, end = decoder.raw_decode(r.buf, r.pos)
                except json.JSONDecodeError as exc:
                    if _maybe_incomplete(exc, r.buf) and r.fill(len(r.buf)):
                        continue
                    return
                except (RecursionError, ValueError):
                    return
                if end == len(r.buf) and not r.eof and not isinstance(obj, (dict, list, str)) and r.fill():
                    continue
                break
            r.pos = end
            if r.peek() != ",":
                return
            r.pos += 1
