"""LAFS: the latency-aware frontier score of the LongMemEval-V2 leaderboard.

Definitions from upstream ``leaderboard/compute_lafs.py`` at be15ea6e995462f3391c1a610892df3f67dfa7bd
(sha256 ``UPSTREAM_SHA256``); the code is ours. A point is (accuracy in percentage points =
overall_full_set × 100, latency = the combined memory_query avg_seconds); latency must be > 0.

* Frontier F(P): sort P by (latency ascending, accuracy descending; stable), keep a point iff its accuracy
  exceeds every point kept before it.
* A_F(T) = max{acc(p) : p ∈ F, latency(p) ≤ T}, else the floor (0.0). A negative accuracy is not raised to
  the floor; a point under T_MIN counts from T_MIN; a point at ≥ T_MAX never counts.
* LAFS(P) = (1 / ln(T_MAX/T_MIN)) ∫ A_F(T) d ln T over [T_MIN, T_MAX] (T_MIN 1 s, T_MAX 200 s), computed
  exactly: breakpoints b₀ < … < b_k = {T_MIN, T_MAX} ∪ {frontier latencies strictly inside}, and
  LAFS = (Σᵢ A_F(bᵢ) · ln(bᵢ₊₁/bᵢ)) / ln(T_MAX/T_MIN), summed left to right from 0.0 — the same
  floating-point operations as upstream, so results are bit-identical. LAFS(∅) = floor.
* Gain(S, tier) = LAFS(R_tier ∪ S) − LAFS(R_tier), R_tier the released reference points (the paper's
  main table). Reference LAFS: small 55.76484693638005, medium 51.0740894823051.

NaN accuracies or latencies are refused (upstream's result would depend on sort order); ±inf pass as upstream.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Union

from mnemetric.errors import ConfigError, InputError

UPSTREAM_FILE = "leaderboard/compute_lafs.py"
UPSTREAM_SHA256 = "4670ea92ab87600e344bca7f387076b2a43f28b506d036950c10443ce2c8b8c2"
T_MIN = 1.0
T_MAX = 200.0
FLOOR_ACCURACY = 0.0


@dataclass(frozen=True)
class OperatingPoint:
    accuracy: float
    """Percentage points (74.9, not 0.749)."""
    latency_seconds: float
    """Mean memory-query latency in seconds; > 0."""
    name: str = ""


PointLike = Union[OperatingPoint, tuple[float, float], tuple[float, float, str]]

REFERENCE_POINTS: dict[str, tuple[OperatingPoint, ...]] = {
    "small": (OperatingPoint(51.0, 0.2, "RAG: query -> slice + notes"), OperatingPoint(69.9, 177.2, "Codex"),
              OperatingPoint(58.6, 26.9, "AgentRunbook-R"), OperatingPoint(74.9, 108.3, "AgentRunbook-C")),
    "medium": (OperatingPoint(45.9, 0.3, "RAG: query -> slice + notes"), OperatingPoint(68.7, 185.8, "Codex"),
               OperatingPoint(57.0, 25.8, "AgentRunbook-R"), OperatingPoint(70.1, 139.9, "AgentRunbook-C")),
}
"""The released reference points per tier, in upstream's order (Codex is dominated in both tiers)."""
TIERS = tuple(REFERENCE_POINTS)


def _number(value: Any, index: int, field: str, source: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise InputError(source, f"index {index}", field, f"expected a number, got {value!r}")
    return value


def as_points(points: Iterable[PointLike], *, source: str = "operating points") -> list[OperatingPoint]:
    """OperatingPoints from points or (accuracy, latency[, name]) tuples; latency ≤ 0 or NaN is an InputError."""
    out = []
    for i, p in enumerate(points):
        if not isinstance(p, OperatingPoint):
            if not isinstance(p, (tuple, list)) or len(p) not in (2, 3):
                raise InputError(source, f"index {i}", "<point>", f"expected (accuracy, latency[, name]), got {p!r}")
            p = OperatingPoint(p[0], p[1], str(p[2]) if len(p) == 3 else "")
        acc = _number(p.accuracy, i, "accuracy", source)
        lat = _number(p.latency_seconds, i, "latency_seconds", source)
        if lat <= 0:
            raise InputError(source, f"index {i}" + (f" ({p.name})" if p.name else ""), "latency_seconds",
                             f"latency must be positive, got {lat!r}")
        out.append(OperatingPoint(acc, lat, p.name))
    return out


def frontier(points: Iterable[PointLike]) -> list[OperatingPoint]:
    """The non-dominated points sorted by latency (module docstring)."""
    best = -math.inf
    kept = []
    for p in sorted(as_points(points), key=lambda q: (q.latency_seconds, -q.accuracy)):
        if p.accuracy > best:
            kept.append(p)
            best = p.accuracy
    return kept


def _check_window(t_min: float, t_max: float) -> None:
    if not (0 < t_min < t_max):
        raise ConfigError("lafs.t_min/t_max", f"need 0 < t_min < t_max, got {t_min!r} and {t_max!r}")


def lafs(points: Iterable[PointLike], *, t_min: float = T_MIN, t_max: float = T_MAX,
         floor: float = FLOOR_ACCURACY) -> float:
    """LAFS of ``points``: the exact step integral of the module docstring."""
    _check_window(t_min, t_max)
    front = frontier(points)
    cuts = sorted({t_min, t_max} | {p.latency_seconds for p in front if t_min < p.latency_seconds < t_max})
    area = 0.0
    for left, right in zip(cuts[:-1], cuts[1:]):
        reachable = [p.accuracy for p in front if p.latency_seconds <= left]
        area += (max(reachable) if reachable else floor) * math.log(right / left)
    return area / math.log(t_max / t_min)


def _tier(tier: str) -> tuple[OperatingPoint, ...]:
    if tier not in REFERENCE_POINTS:
        raise ConfigError("tier", f"unknown tier {tier!r}", fix="one of: " + ", ".join(TIERS))
    return REFERENCE_POINTS[tier]


def reference_frontier(tier: str) -> list[OperatingPoint]:
    """The frontier of the tier's released reference points (3 of the 4: Codex is dominated)."""
    return frontier(_tier(tier))


def reference_lafs(tier: str) -> float:
    """LAFS of the tier's reference points."""
    return lafs(_tier(tier))


def lafs_gain(points: Iterable[PointLike], tier: str) -> float:
    """LAFS(reference ∪ points) − LAFS(reference) for the tier."""
    reference = list(_tier(tier))
    return lafs(reference + as_points(points)) - lafs(reference)


def _listing(points: Sequence[OperatingPoint]) -> list[dict[str, Any]]:
    return [{"name": p.name, "accuracy": p.accuracy, "latency_seconds": p.latency_seconds} for p in points]


def lafs_summary(tier: str, points: Iterable[PointLike]) -> dict[str, Any]:
    """The ``lafs`` object of upstream's submission_overview.json (same keys, same order)."""
    reference = list(_tier(tier))
    both = reference + as_points(points)
    ref_lafs, sub_lafs = lafs(reference), lafs(both)
    return {"tier": tier, "t_min_seconds": T_MIN, "t_max_seconds": T_MAX, "floor_accuracy": FLOOR_ACCURACY,
            "accuracy_unit": "percentage_points", "reference_lafs": ref_lafs, "submission_lafs": sub_lafs,
            "lafs_gain": sub_lafs - ref_lafs, "reference_frontier": _listing(frontier(reference)),
            "submission_frontier": _listing(frontier(both))}
