"""The publishability gate's frame: a family's reasons become the one official-equivalence record.

The rules are the family's (``Family.official_reasons(manifest)``: one reason per failed condition
of its official protocol; LongMemEval's are in :mod:`mnemetric.longmemeval.gate`); custody makes
them an :class:`mnemetric.official.OfficialEquivalence` — official exactly when there is no reason
(never silent). This module imports no family.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mnemetric.errors import PluginError
from mnemetric.family import Family
from mnemetric.official import OfficialEquivalence


def gate(manifest: Mapping[str, Any], family: Family) -> OfficialEquivalence:
    """The family's verdict on ``manifest``; a family whose reasons are not strings is its error."""
    reasons = family.official_reasons(manifest)
    if isinstance(reasons, str) or not all(isinstance(r, str) and r for r in reasons):
        raise PluginError(family.name, "official_reasons", f"returned {reasons!r:.120}",
                          fix="return a list of non-empty strings, one per failed condition")
    return OfficialEquivalence.of(reasons)
