"""Combine the web and enterprise aggregated_metrics of one method at one tier, as the leaderboard does.

Rules from upstream ``leaderboard/combine_aggregated_metrics.py`` at
be15ea6e995462f3391c1a610892df3f67dfa7bd (sha256 ``UPSTREAM_SHA256``); the code is ours. Sides are
combined in argument order (web, then enterprise):

* weighted mean w(v₁,c₁; v₂,c₂) = Σ vᵢ·cᵢ / Σ cᵢ over the sides whose value is not None and whose count is
  not 0 (accumulated from 0.0); None when no side is left. Every value is checked (a number, never a
  bool) even on a zero-count side.
* ``overall``: each score weighted by its own count key; counts summed (a missing count is 0).
* breakdowns (``abstention_overall``, each key of ``non_abstention_by_category`` and ``abstention_by_category``
  in the order of the web side then new enterprise keys): counts summed, pct_* weighted by ``count``. A side's
  ``combined_abstention_by_category`` is used when it is a non-empty object, else rebuilt from its two other
  sections (pair by pair) before the two sides are combined.
* ``tokens``: a side's total is its ``*_tokens`` value, else ``avg_* × count_all_questions``; totals summed over
  the sides that have one; total_tokens falls back to prompt + completion; the three totals are written as ints
  when integral; avg_* = total / (count_all₁ + count_all₂).
* ``memory_context``: both averages weighted by count_all_questions; num_truncated_sequences summed.
* ``memory_query`` / ``memory_post_query``: only {avg_seconds, max_seconds, total_seconds} — p50/p95 are
  dropped; a side's total is total_seconds, else avg_seconds × count; avg = Σ totals / (count_all₁ + count_all₂);
  max of the present maxima.
* ``combined_from``: the two paths as given; ``combined_at_utc`` — upstream writes the wall clock; we write
  it only when the caller passes it (pure outputs).

Errors (upstream raises): a side without an ``overall`` object, count_all_questions not a positive integer,
any count not a non-negative integer, any value not a number (bools refused), a breakdown that is not an
object. Ours name the file, the section and the field. These rules hold for dicts passed in; a file read
through :func:`mnemetric.longmemeval_v2.aggregated.read_aggregated` (``mnemetric v2 combine``, the package
builder) has already passed the stricter typed reader (the whole harness layout).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mnemetric.errors import InputError
from mnemetric.longmemeval_v2.aggregated import AggregatedMetrics, CombinedMetrics

UPSTREAM_FILE = "leaderboard/combine_aggregated_metrics.py"
UPSTREAM_SHA256 = "b3b0a6af707aeb60fe985368aa2986968a4a9a266c2fff84b21f7e3d075d26cb"
OVERALL_SCORES = {"overall_full_set": "count_all_questions",
                  "overall_non_abstention_only": "count_non_abstention",
                  "overall_abstention_only": "count_abstention"}
OVERALL_COUNTS = ("count_all_questions", "count_non_abstention", "count_abstention")
BREAKDOWN_VALUES = ("pct_correct", "pct_answered_wrong", "pct_unknown")
PAIRS = {"static": ("static", "static-abs"), "dynamic": ("dynamic", "dynamic-abs"),
         "procedure": ("procedure", "procedure-abs")}
Side = tuple[str, Mapping[str, Any]]
"""(file name for errors, one aggregated_metrics object)."""


def _number(value: Any, file: str, record: str, field: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(file, record, field, f"expected a number, got {value!r}")
    return float(value)


def _count(value: Any, file: str, record: str, field: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(file, record, field, f"expected a non-negative integer count, got {value!r}")
    return value


def _weighted(items: list[tuple[float | None, int]]) -> float | None:
    """Σ v·c / Σ c over items with v not None and c ≠ 0; None if none (values already checked)."""
    weighted, total = 0.0, 0
    for value, count in items:
        if value is None or count == 0:
            continue
        weighted += value * count
        total += count
    return weighted / total if total else None


def _object(value: Any, file: str, record: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InputError(file, record, "<section>", f"expected an object, got {value!r}")
    return value


def question_count(file: str, metrics: Mapping[str, Any]) -> int:
    """overall.count_all_questions, which must be a positive integer (upstream lines 120-127)."""
    overall = metrics.get("overall")
    if not isinstance(overall, Mapping):
        raise InputError(file, "overall", "<section>", "missing overall metrics (an object)")
    count = _count(overall.get("count_all_questions"), file, "overall", "count_all_questions")
    if count == 0:
        raise InputError(file, "overall", "count_all_questions", "must be a positive integer")
    return count


def _overall(a: Side, b: Side) -> dict[str, Any]:
    (fa, la), (fb, lb) = (a[0], a[1]["overall"]), (b[0], b[1]["overall"])
    counts = {k: _count(la.get(k), fa, "overall", k) + _count(lb.get(k), fb, "overall", k) for k in OVERALL_COUNTS}
    out: dict[str, Any] = {}
    for key, count_key in OVERALL_SCORES.items():
        out[key] = _weighted([(_number(la.get(key), fa, "overall", key), _count(la.get(count_key), fa, "overall",
                                                                                count_key)),
                              (_number(lb.get(key), fb, "overall", key), _count(lb.get(count_key), fb, "overall",
                                                                                count_key))])
    return out | counts


def _breakdown(fa: str, left: Any, fb: str, right: Any, record: str) -> dict[str, Any]:
    left, right = _object(left, fa, record), _object(right, fb, record)
    lc, rc = _count(left.get("count"), fa, record, "count"), _count(right.get("count"), fb, record, "count")
    out: dict[str, Any] = {"count": lc + rc}
    for key in BREAKDOWN_VALUES:
        out[key] = _weighted([(_number(left.get(key), fa, record, key), lc),
                              (_number(right.get(key), fb, record, key), rc)])
    return out


def _section(fa: str, left: Any, fb: str, right: Any, name: str) -> dict[str, Any]:
    left = left if isinstance(left, Mapping) else {}
    right = right if isinstance(right, Mapping) else {}
    keys = list(left) + [k for k in right if k not in left]
    empty = {"count": 0}
    return {k: _breakdown(fa, left.get(k, empty), fb, right.get(k, empty), f"{name}.{k}") for k in keys}


def _combined_abstention(file: str, metrics: Mapping[str, Any]) -> Mapping[str, Any]:
    section = metrics.get("combined_abstention_by_category")
    if isinstance(section, Mapping) and section:
        return section
    regular = metrics.get("non_abstention_by_category")
    abstention = metrics.get("abstention_by_category")
    regular = regular if isinstance(regular, Mapping) else {}
    abstention = abstention if isinstance(abstention, Mapping) else {}
    empty = {"count": 0}
    return {cat: _breakdown(file, regular.get(r, empty), file, abstention.get(x, empty), f"combined_abstention.{cat}")
            for cat, (r, x) in PAIRS.items() if r in regular or x in abstention}


def _integral(value: float | None) -> float | int | None:
    return int(value) if value is not None and value.is_integer() else value


def _present_sum(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def _side_total(file: str, summary: Mapping, record: str, total_key: str, avg_key: str, count: int) -> float | None:
    total = _number(summary.get(total_key), file, record, total_key)
    if total is not None:
        return total
    avg = _number(summary.get(avg_key), file, record, avg_key)
    return None if avg is None else avg * count


def _summary(metrics: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = metrics.get(key, {})
    return value if isinstance(value, Mapping) else {}


def _tokens(a: Side, b: Side, ca: int, cb: int) -> dict[str, Any]:
    sa, sb = _summary(a[1], "tokens"), _summary(b[1], "tokens")
    totals = {}
    for kind in ("prompt", "completion", "total"):
        totals[kind] = _present_sum([_side_total(a[0], sa, "tokens", f"{kind}_tokens", f"avg_{kind}_tokens", ca),
                                     _side_total(b[0], sb, "tokens", f"{kind}_tokens", f"avg_{kind}_tokens", cb)])
    if totals["total"] is None and totals["prompt"] is not None and totals["completion"] is not None:
        totals["total"] = totals["prompt"] + totals["completion"]
    out: dict[str, Any] = {f"{k}_tokens": _integral(v) for k, v in totals.items()}
    for kind, value in totals.items():
        out[f"avg_{kind}_tokens"] = value / (ca + cb) if value is not None else None
    return out


def _memory_context(a: Side, b: Side, ca: int, cb: int) -> dict[str, Any]:
    sa, sb = _summary(a[1], "memory_context"), _summary(b[1], "memory_context")
    out: dict[str, Any] = {}
    for key in ("avg_original_tokens", "avg_final_tokens"):
        out[key] = _weighted([(_number(sa.get(key), a[0], "memory_context", key), ca),
                              (_number(sb.get(key), b[0], "memory_context", key), cb)])
    k = "num_truncated_sequences"
    out[k] = _count(sa.get(k), a[0], "memory_context", k) + _count(sb.get(k), b[0], "memory_context", k)
    return out


def _timing(a: Side, b: Side, ca: int, cb: int, name: str) -> dict[str, Any]:
    sa, sb = _summary(a[1], name), _summary(b[1], name)
    totals = [t for t in (_side_total(a[0], sa, name, "total_seconds", "avg_seconds", ca),
                          _side_total(b[0], sb, name, "total_seconds", "avg_seconds", cb)) if t is not None]
    total = sum(totals) if totals else None
    maxima = [m for m in (_number(sa.get("max_seconds"), a[0], name, "max_seconds"),
                          _number(sb.get("max_seconds"), b[0], name, "max_seconds")) if m is not None]
    return {"avg_seconds": total / (ca + cb) if total is not None else None,
            "max_seconds": max(maxima) if maxima else None, "total_seconds": total}


def combine_metrics(web: Mapping[str, Any] | AggregatedMetrics, enterprise: Mapping[str, Any] | AggregatedMetrics,
                    *, sources: tuple[str, str] = ("web", "enterprise"),
                    combined_at_utc: str | None = None) -> CombinedMetrics:
    """:func:`combine_aggregates` as the typed record (what ``combined_aggregated_metrics.json`` holds)."""
    out = combine_aggregates(web, enterprise, sources=sources, combined_at_utc=combined_at_utc)
    return CombinedMetrics.from_record(out, file="<combined " + " + ".join(str(s) for s in sources) + ">")


def combine_aggregates(web: Mapping[str, Any] | AggregatedMetrics,
                       enterprise: Mapping[str, Any] | AggregatedMetrics, *,
                       sources: tuple[str, str] = ("web", "enterprise"), combined_at_utc: str | None = None) -> dict[str, Any]:
    """The combined aggregated_metrics of ``web`` and ``enterprise``, in upstream's key order.

    ``sources`` are the two paths (they name errors and become ``combined_from``); ``combined_at_utc`` is
    written only when given. Each side is a typed record (:class:`AggregatedMetrics`, as read from a file) or a
    plain dict, checked as upstream checks it (module docstring).
    """
    web, enterprise = (s.to_record() if isinstance(s, AggregatedMetrics) else s for s in (web, enterprise))
    a, b = (str(sources[0]), web), (str(sources[1]), enterprise)
    ca, cb = question_count(*a), question_count(*b)
    empty = {"count": 0}
    out: dict[str, Any] = {
        "overall": _overall(a, b),
        "abstention_overall": _breakdown(a[0], web.get("abstention_overall", empty), b[0],
                                         enterprise.get("abstention_overall", empty), "abstention_overall"),
        "tokens": _tokens(a, b, ca, cb),
        "memory_context": _memory_context(a, b, ca, cb),
        "memory_query": _timing(a, b, ca, cb, "memory_query"),
        "memory_post_query": _timing(a, b, ca, cb, "memory_post_query"),
        "combined_from": [a[0], b[0]],
    }
    if combined_at_utc is not None:
        out["combined_at_utc"] = combined_at_utc
    for name in ("non_abstention_by_category", "abstention_by_category"):
        out[name] = _section(a[0], web.get(name), b[0], enterprise.get(name), name)
    out["combined_abstention_by_category"] = _section(a[0], _combined_abstention(*a), b[0],
                                                      _combined_abstention(*b), "combined_abstention_by_category")
    return out
