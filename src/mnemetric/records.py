"""The record-checking kit: "field X of type T from a raw JSON record, or InputError(file, record, field)".

Every typed format (``from_record(raw, *, file, line)``) reads its fields through one :class:`Fields`
view, so they all word their errors alike (a Mnemetric rule, no upstream source):

* a field that is not there: ``missing``;
* a field of the wrong type: ``expected <what>, got <type name> <repr, cut at 60 characters>``;
* a value that is not a JSON object where one is due: ``expected a JSON object, got <type name>``.

A JSON ``true`` is never an integer or a number (Python's ``bool`` is an ``int``; JSON's is not).
The field an error names is the view's ``prefix`` plus the key (``items[0].messages[1].role``).
Generic: it knows no benchmark family.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mnemetric.errors import InputError
from mnemetric.io import DuplicateKey, duplicate_key_error, require_file, unique_object

Kind = tuple[tuple[type, ...], str]
"""Accepted Python types of a JSON value and the words for them (``((str,), "a string")``)."""

STRING: Kind = ((str,), "a string")
OPTIONAL_STRING: Kind = ((str, type(None)), "a string or null")
INTEGER: Kind = ((int,), "an integer")
OPTIONAL_INTEGER: Kind = ((int, type(None)), "an integer or null")
NUMBER: Kind = ((int, float), "a number")
OPTIONAL_NUMBER: Kind = ((int, float, type(None)), "a number or null")
BOOLEAN: Kind = ((bool,), "true or false")
LIST: Kind = ((list,), "a list")
OBJECT: Kind = ((Mapping,), "an object")


def record_name(line: int | str) -> str:
    """The record part of an error: ``line N`` for a line number, else the text as given."""
    return f"line {line}" if isinstance(line, int) else line


def read_json_file(path: str | os.PathLike[str], *, missing_fix: str, fix: str | None = None) -> Any:
    """The parsed JSON of a whole (small) file: InputError when it is absent (suggesting ``missing_fix``),
    not valid JSON (``line N``, field ``<json>``, ``not valid JSON (<decoder message>)``) or holds a key
    twice in one object (field: the key)."""
    text = require_file(path, fix=missing_fix).read_text(encoding="utf-8")
    try:
        return json.loads(text, object_pairs_hook=unique_object)
    except json.JSONDecodeError as exc:
        raise InputError(str(path), f"line {exc.lineno}", "<json>", f"not valid JSON ({exc.msg})", fix=fix) from None
    except DuplicateKey as exc:
        raise duplicate_key_error(str(path), "<file>", exc) from None


def type_error(value: Any, what: str) -> str:
    """The wrong-type wording: ``expected <what>, got <type name> <repr cut at 60>``."""
    return f"expected {what}, got {type(value).__name__} {value!r:.60}"


def is_kind(value: Any, kinds: tuple[type, ...]) -> bool:
    """``isinstance`` where a bool passes only when ``bool`` itself is accepted."""
    return isinstance(value, kinds) and (not isinstance(value, bool) or bool in kinds)


@dataclass(frozen=True)
class Fields:
    """A checked JSON object and where it stands (file, record, field prefix, the fix to suggest)."""

    raw: Mapping[str, Any]
    file: str
    record: str
    prefix: str = ""
    fix: str | None = None

    @classmethod
    def of(cls, raw: Any, *, file: str, record: str, prefix: str = "", fix: str | None = None,
           field: str | None = None) -> Fields:
        """The view of ``raw`` if it is a JSON object; else InputError naming ``field`` (default: the
        prefix without its dot, or ``<record>`` at the top)."""
        if not isinstance(raw, Mapping):
            name = field if field is not None else (prefix.rstrip(".") or "<record>")
            raise InputError(file, record, name, f"expected a JSON object, got {type(raw).__name__}", fix=fix)
        return cls(raw, str(file), record, prefix, fix)

    def error(self, name: str, message: str, fix: str | None = None) -> InputError:
        """The InputError for field ``name`` of this view (``fix`` defaults to the view's)."""
        return InputError(self.file, self.record, self.prefix + name, message, fix=fix or self.fix)

    def only(self, allowed: tuple[str, ...]) -> Fields:
        """This view, if it has no key outside ``allowed``; else InputError naming the first other key."""
        extra = [k for k in self.raw if k not in allowed]
        if extra:
            raise self.error(extra[0], f"unexpected field (expected only {', '.join(allowed)})")
        return self

    def identified(self, name: str = "question_id") -> tuple[str, Fields]:
        """(the record's non-empty id in field ``name``, this view with the record named ``<record> (<id>)``)."""
        ident = self.string(name)
        if not ident:
            raise self.error(name, "empty")
        return ident, Fields(self.raw, self.file, f"{self.record} ({ident})", self.prefix, self.fix)

    def get(self, name: str, kind: Kind) -> Any:
        """``raw[name]`` if present and of an accepted type (see :func:`is_kind`)."""
        kinds, what = kind
        if name not in self.raw:
            raise self.error(name, "missing")
        value = self.raw[name]
        if not is_kind(value, kinds):
            raise self.error(name, type_error(value, what))
        return value

    def at(self, name: str, kind: Kind | None = None) -> Fields:
        """The view of the object in field ``name`` (its fields are named ``name.key``). With ``kind``
        a wrong type is worded as :meth:`get` words it, else as :meth:`of` does."""
        value = self.get(name, kind) if kind is not None else self.raw.get(name)
        if name not in self.raw:
            raise self.error(name, "missing")
        return Fields.of(value, file=self.file, record=self.record, prefix=f"{self.prefix}{name}.", fix=self.fix)

    def string(self, name: str) -> str:
        return self.get(name, STRING)

    # -- the display readers' rule: what a file lacks (absent or null) is None and shows as "—"; a value of
    # -- the wrong type is still an InputError naming the file and the field.

    @classmethod
    def shown(cls, raw: Any, *, file: str, record: str = "<file>", fix: str | None = None) -> Fields:
        """The view of a whole document read for display: None (no such file) is an empty view; a
        non-object is an InputError (field ``<record>``)."""
        return cls.of({} if raw is None else raw, file=file, record=record, fix=fix)

    def maybe(self, name: str, kind: Kind) -> Any:
        """``raw[name]`` if present and not null, of an accepted type; None when absent or null."""
        if self.raw.get(name) is None:
            return None
        return self.get(name, kind)

    def within(self, name: str) -> Fields:
        """The view of the object in field ``name``; an empty view when it is absent or null (its fields
        are then all absent); a value that is not an object is an InputError."""
        value = self.raw.get(name)
        return Fields.of({} if value is None else value, file=self.file, record=self.record,
                         prefix=f"{self.prefix}{name}.", fix=self.fix)

    def maybe_strings(self, name: str) -> tuple[str, ...] | None:
        """A list of strings as a tuple; None when absent or null."""
        return None if self.raw.get(name) is None else self.strings(name)

    def optional_string(self, name: str) -> str | None:
        return self.get(name, OPTIONAL_STRING)

    def integer(self, name: str) -> int:
        return self.get(name, INTEGER)

    def optional_integer(self, name: str) -> int | None:
        return self.get(name, OPTIONAL_INTEGER)

    def count(self, name: str) -> int:
        """An integer >= 0."""
        value = self.get(name, ((int,), "a non-negative integer"))
        if value < 0:
            raise self.error(name, type_error(value, "a non-negative integer"))
        return value

    def number(self, name: str) -> int | float:
        return self.get(name, NUMBER)

    def optional_number(self, name: str) -> int | float | None:
        return self.get(name, OPTIONAL_NUMBER)

    def amount(self, name: str) -> int | float:
        """A finite number >= 0 (money, seconds)."""
        value = self.get(name, ((int, float), "a non-negative number"))
        if not math.isfinite(value) or value < 0:
            raise self.error(name, type_error(value, "a non-negative number"))
        return value

    def boolean(self, name: str) -> bool:
        return self.get(name, BOOLEAN)

    def array(self, name: str, what: str = "a list") -> list[Any]:
        return self.get(name, ((list,), what))

    def strings(self, name: str) -> tuple[str, ...]:
        """A list whose every element is a string, as a tuple."""
        value = self.get(name, ((list,), "a list of strings"))
        if not all(isinstance(v, str) for v in value):
            raise self.error(name, type_error(value, "a list of strings"))
        return tuple(value)
