"""The one record of whether numbers may be called a family's official upstream protocol.

``official_equivalence`` has ONE shape in every metrics file and manifest (qa.json, retrieval.json,
v2.json, run.json, run-v2.json)::

    "official_equivalence": {"value": <bool>, "reasons": [<str>, ...]}

``value`` is true only when ``reasons`` is empty; each reason names one failed condition (never
silent). Reader and writer side by side; a file holding another shape is an InputError naming it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from mnemetric.errors import InputError

KEY: Final = "official_equivalence"


@dataclass(frozen=True)
class OfficialEquivalence:
    value: bool
    reasons: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.value and self.reasons:
            raise ValueError("an official result has no reasons against it")
        if not self.value and not self.reasons:
            raise ValueError("a result that is not official says why (at least one reason)")

    @classmethod
    def of(cls, reasons: Iterable[str]) -> OfficialEquivalence:
        """Official exactly when there is no reason against it."""
        reasons = tuple(str(r) for r in reasons)
        return cls(not reasons, reasons)

    @classmethod
    def from_record(cls, raw: Any, *, file: str, record: str = "<file>") -> OfficialEquivalence:
        field = KEY
        if not isinstance(raw, dict) or set(raw) != {"value", "reasons"}:
            raise InputError(file, record, field, f"expected {{'value': bool, 'reasons': [str]}}, got {raw!r}"[:200],
                             fix="regenerate the file with this version of Mnemetric")
        value, reasons = raw["value"], raw["reasons"]
        if not isinstance(value, bool):
            raise InputError(file, record, f"{field}.value", f"expected true or false, got {value!r}")
        if not isinstance(reasons, list) or not all(isinstance(r, str) for r in reasons):
            raise InputError(file, record, f"{field}.reasons", "expected a list of strings")
        try:
            return cls(value, tuple(reasons))
        except ValueError as exc:
            raise InputError(file, record, field, str(exc)) from None

    def to_record(self) -> dict[str, Any]:
        return {"value": self.value, "reasons": list(self.reasons)}
