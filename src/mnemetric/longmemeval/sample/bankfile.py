"""Reading one bank file field by field: every failure is an InputError naming file, entry and field.

A template is text for ``str.format``; each placeholder's root name (``pet`` of ``{pet[0]}``) must be
one of the names the caller allows (the entry's slots, or what a builder supplies).
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from typing import Any

from mnemetric.errors import InputError

_ROOT = re.compile(r"[A-Za-z_]\w*")


def bank_path(name: str) -> str:
    """How errors name a bank file: its path inside the installed package."""
    return f"mnemetric/sample/banks/{name}"


class BankObject:
    """One JSON object of a bank file, read field by field; every failure names file, record, field."""

    def __init__(self, raw: Any, file: str, record: str):
        self.raw, self.file, self.record = raw, file, record
        if not isinstance(raw, dict):
            raise self.error("<object>", f"expected a JSON object, got {type(raw).__name__}")

    @classmethod
    def of_file(cls, raw: Mapping[str, Any], file: str) -> BankObject:
        """The top-level object of ``file`` in ``{file name: decoded JSON}``."""
        if file not in raw:
            raise InputError(bank_path(file), "<file>", "<file>", "missing from the package")
        return cls(raw[file], file, "<file>")

    def only(self, *keys: str, within: str | None = None) -> BankObject:
        """Refuse keys other than ``keys`` (of this object, or of its mapping field ``within``): a typo
        such as "abs_questoin" must not be skipped silently."""
        mapping = self.raw if within is None else self.obj(within)
        unknown = [k for k in mapping if k not in keys]
        if unknown:
            raise self.error(within or unknown[0], f"unknown key(s) {unknown}; expected some of {list(keys)}")
        return self

    def error(self, field: str, message: str) -> InputError:
        return InputError(bank_path(self.file), self.record, field, message)

    def get(self, key: str, kind: type, default: Any = ...) -> Any:
        if key not in self.raw:
            if default is not ...:
                return default
            raise self.error(key, "missing")
        value = self.raw[key]
        if not isinstance(value, kind) or isinstance(value, bool):
            raise self.error(key, f"expected a JSON {kind.__name__}, got {type(value).__name__}")
        return value

    def text(self, key: str, *, strip: bool = True) -> str:
        value = self.get(key, str)
        if not value.strip() or (strip and value != value.strip()):
            raise self.error(key, f"expected non-empty text without surrounding blanks, got {value!r}")
        return value

    def integer(self, key: str) -> int:
        return self.get(key, int)

    def obj(self, key: str, default: Any = ...) -> dict[str, Any]:
        return self.get(key, dict, default)

    def array(self, key: str, default: Any = ...) -> list[Any]:
        return self.get(key, list, default)

    def texts(self, key: str, default: Any = ...) -> list[str]:
        values = self.array(key, default)
        if not all(isinstance(v, str) and v.strip() for v in values):
            raise self.error(key, "expected a list of non-empty strings")
        return values

    def sub(self, key: str, name: str) -> BankObject:
        mapping = self.obj(key)
        if name not in mapping:
            raise self.error(f"{key}.{name}", "missing")
        return BankObject(mapping[name], self.file, self._child(f"{key}.{name}"))

    def items(self, key: str, *, optional: bool = False) -> list[BankObject]:
        values = self.array(key, [] if optional else ...)
        return [BankObject(v, self.file, self._child(f"{key}[{i}]")) for i, v in enumerate(values)]

    def _child(self, name: str) -> str:
        return name if self.record == "<file>" else f"{self.record}.{name}"

    def topic(self, topics: Mapping[str, object]) -> str:
        name = self.text("topic")
        if name not in topics:
            raise self.error("topic", f"unknown topic {name!r}; known: {', '.join(topics)}")
        return name

    def template(self, key: str, names: set[str]) -> str:
        return self.template_of(self.text(key), names, key)

    def template_of(self, text: Any, names: set[str], field: str) -> str:
        """``text`` if it is a str.format template whose placeholders all name one of ``names``."""
        if not isinstance(text, str):
            raise self.error(field, f"expected a string, got {type(text).__name__}")
        try:
            fields = [f for _, f, _, _ in string.Formatter().parse(text) if f is not None]
        except ValueError as exc:
            raise self.error(field, f"not a valid template ({exc}): {text!r}") from None
        unknown = {m.group(0) if (m := _ROOT.match(f)) else f for f in fields} - names
        if unknown:
            raise self.error(field, f"placeholder(s) {sorted(unknown)} not among {sorted(names) or 'none'}")
        return text

    def abstention(self, names: set[str]) -> tuple[str | None, str | None]:
        has_q, has_a = "abs_question" in self.raw, "abs_answer" in self.raw
        if has_q != has_a:
            raise self.error("abs_answer" if has_q else "abs_question", "abs_question and abs_answer come together")
        if not has_q:
            return None, None
        return self.template("abs_question", names), self.template("abs_answer", names)
