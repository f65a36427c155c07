"""Editing one field of a parsed JSON document, for tests that break a good file one field at a time."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def set_at(doc: Any, path: str | Sequence[Any], value: Any) -> Any:
    """Set the field at ``path`` (dotted ``"a.b"`` or a sequence of keys and list indexes) of ``doc`` to ``value``,
    or delete it when ``value`` is ``KeyError``; returns ``doc`` (edited in place)."""
    *parents, last = path.split(".") if isinstance(path, str) else path
    node = doc
    for key in parents:
        node = node[key]
    if value is KeyError:
        del node[last]
    else:
        node[last] = value
    return doc
