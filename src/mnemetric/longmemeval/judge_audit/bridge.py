"""The successor bridge: a candidate judge's verdicts on a frozen set of hypotheses against the official ones.

``official`` are the labels of a judged file (the verdicts of record; e.g. gpt-4o-2024-08-06 through
upstream's prompts); ``candidate`` are another judge's labels on the SAME hypotheses. Per question
type and overall: raw agreement, Cohen's kappa with its interval (:mod:`mnemetric.stats.agreement`:
the analytic asymptotic SE of Fleiss, Cohen & Everitt 1969, a Wald interval clipped to [-1, 1]) and
the flip lists (question ids the official judge said yes to and the candidate no, and the reverse).

A candidate is **bridged** when its overall kappa is at least ``min_kappa`` (default
:data:`DEFAULT_MIN_KAPPA` = 0.8, the lower edge of "almost perfect" agreement in Landis & Koch 1977)
and every question got a verdict from it. A bridged judge may stand in for the official one to
track a run over time; its numbers are never official: :func:`bridge_equivalence` always gives
``official_equivalence`` false, with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mnemetric.longmemeval.scoring.qa import QUESTION_TYPES
from mnemetric.official import OfficialEquivalence
from mnemetric.stats.agreement import Agreement, agreement

DEFAULT_MIN_KAPPA = 0.8
"""Overall Cohen's kappa a candidate judge needs against the official verdicts to be called bridged."""


@dataclass(frozen=True)
class VerdictComparison:
    """Two judges' verdicts on the same questions: agreement overall and per type, and the flips."""

    overall: Agreement
    per_type: Mapping[str, Agreement]
    yes_to_no: tuple[str, ...]
    """Question ids the reference judge (official) accepted and the other rejected."""
    no_to_yes: tuple[str, ...]
    missing: tuple[str, ...] = field(default=())
    """Question ids the reference judge labelled and the other did not (no verdict: a failure)."""

    def to_record(self) -> dict[str, Any]:
        return {"overall": self.overall.to_record(),
                "per_type": {t: a.to_record() for t, a in self.per_type.items()},
                "flips": {"yes_to_no": list(self.yes_to_no), "no_to_yes": list(self.no_to_yes)},
                "missing": list(self.missing)}


def compare_verdicts(reference: Mapping[str, bool], other: Mapping[str, bool | None],
                     types: Mapping[str, str]) -> VerdictComparison:
    """Compare ``other``'s verdicts with ``reference``'s on the questions both labelled (ids sorted);
    a question ``other`` did not label (absent or None) is listed in ``missing``, in no number."""
    ids = sorted(q for q in reference if other.get(q) is not None)
    missing = tuple(sorted(q for q in reference if other.get(q) is None))
    ref = [bool(reference[q]) for q in ids]
    oth = [bool(other[q]) for q in ids]
    per_type = {}
    for t in [*QUESTION_TYPES, *sorted({types[q] for q in ids} - set(QUESTION_TYPES))]:
        sub = [i for i, q in enumerate(ids) if types[q] == t]
        if sub:
            per_type[t] = agreement([ref[i] for i in sub], [oth[i] for i in sub])
    return VerdictComparison(agreement(ref, oth), per_type,
                             tuple(q for q, a, b in zip(ids, ref, oth) if a and not b),
                             tuple(q for q, a, b in zip(ids, ref, oth) if b and not a), missing)


def is_bridged(comparison: VerdictComparison, min_kappa: float = DEFAULT_MIN_KAPPA) -> bool:
    """Overall kappa ≥ ``min_kappa`` and no question without a verdict."""
    k = comparison.overall.kappa
    return k is not None and k >= min_kappa and not comparison.missing


def bridge_equivalence(candidate: str, comparison: VerdictComparison, min_kappa: float,
                       official_file: str) -> OfficialEquivalence:
    """Never official; the reasons say whether the candidate is bridged and against what."""
    k = comparison.overall.kappa
    shown = "undefined" if k is None else f"{k:.4f}"
    if is_bridged(comparison, min_kappa):
        first = (f"judged by the bridged candidate judge {candidate} (Cohen's kappa {shown} >= {min_kappa} "
                 f"against the official verdicts of {official_file}); a bridged judge is never official")
    else:
        first = (f"candidate judge {candidate} is NOT bridged (Cohen's kappa {shown} against the official "
                 f"verdicts of {official_file}; needs >= {min_kappa}"
                 + (f" and a verdict on every question: {len(comparison.missing)} without one" if comparison.missing
                    else "") + ")")
    return OfficialEquivalence.of([first])


def bridge_record(candidate: Mapping[str, Any], comparison: VerdictComparison, *, min_kappa: float,
                  official_file: Mapping[str, str], failures: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """The bridge output file (module docstring): candidate, threshold, bridged, official_equivalence,
    the comparison and the candidate's failed questions."""
    gate = bridge_equivalence(str(candidate.get("name")), comparison, min_kappa, official_file["path"])
    return {"official_equivalence": gate.to_record(), "bridged": is_bridged(comparison, min_kappa),
            "min_kappa": min_kappa, "candidate": dict(candidate), "official_verdicts": dict(official_file),
            **comparison.to_record(), "failures": [dict(f) for f in failures]}
