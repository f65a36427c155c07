"""LAFS (upstream-v2-protocol.md §7): the published worked numbers (==), the same numbers from closed forms
written here (within 1e-12: a different float order), frontier rules, and random point sets against a naive
integral that never builds a frontier."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemetric.errors import ConfigError, InputError
from mnemetric.longmemeval_v2.lafs import (REFERENCE_POINTS, OperatingPoint, frontier, lafs, lafs_gain,
                                           lafs_summary, reference_frontier, reference_lafs)

LN200 = math.log(200.0)


def test_published_reference_lafs_exactly():
    assert reference_lafs("small") == 55.76484693638005
    assert reference_lafs("medium") == 51.0740894823051
    assert lafs([(50.0, 10.0)]) == 28.27060051619532


def test_reference_lafs_from_closed_forms():
    # small frontier: 51.0 from 1 s (its 0.2 s counts from T_MIN), 58.6 from 26.9 s, 74.9 from 108.3 s
    small = (51.0 * math.log(26.9) + 58.6 * math.log(108.3 / 26.9) + 74.9 * math.log(200 / 108.3)) / LN200
    medium = (45.9 * math.log(25.8) + 57.0 * math.log(139.9 / 25.8) + 70.1 * math.log(200 / 139.9)) / LN200
    assert abs(reference_lafs("small") - small) < 1e-12
    assert abs(reference_lafs("medium") - medium) < 1e-12
    assert abs(lafs([(50, 10)]) - 50 * math.log(20) / LN200) < 1e-12


@pytest.mark.parametrize("points, published", [
    ([(62, 15)], 2.106382898),
    ([(73.5, 70)], 1.227277876),
    ([(78, 190)], 0.030011266),
    ([(70, 150)], 0.0),
    ([(60, 10), (73, 55)], 3.711404091),
    ([(60, 8), (72, 45), (76, 100)], 4.604604954),
])
def test_published_gains(points, published):
    gain = lafs_gain(points, "small")
    assert abs(gain - published) < 1e-9            # the facts give 9-10 significant digits
    if published == 0.0:
        assert gain == 0.0                          # a dominated point changes nothing, exactly


def test_gains_from_closed_forms():
    ref = reference_lafs("small")
    # 62 @ 15 replaces 51 on [15, 26.9) and 58.6 on [26.9, 108.3)
    fast = ((62 - 51) * math.log(26.9 / 15) + (62 - 58.6) * math.log(108.3 / 26.9)) / LN200
    assert abs(lafs_gain([(62, 15)], "small") - fast) < 1e-12
    # 78 @ 190 replaces 74.9 on [190, 200)
    assert abs(lafs_gain([(78, 190)], "small") - (78 - 74.9) * math.log(200 / 190) / LN200) < 1e-12
    # 73.5 @ 70 replaces 58.6 on [70, 108.3)
    assert abs(lafs_gain([(73.5, 70)], "small") - (73.5 - 58.6) * math.log(108.3 / 70) / LN200) < 1e-12
    # {60 @ 10, 73 @ 55}: 51 on [1, 10), 60 on [10, 55) (60 > 58.6), 73 on [55, 108.3), 74.9 after
    two = (51 * math.log(10) + 60 * math.log(26.9 / 10) + 60 * math.log(55 / 26.9)
           + 73 * math.log(108.3 / 55) + 74.9 * math.log(200 / 108.3)) / LN200
    assert abs(lafs_gain([(60, 10), (73, 55)], "small") - (two - ref)) < 1e-12


def test_frontier_rules():
    pts = [OperatingPoint(60, 5, "slow-low"), OperatingPoint(70, 5, "same-latency-better"),
           OperatingPoint(65, 2, "fast"), OperatingPoint(65, 3, "not better"), OperatingPoint(80, 50, "top"),
           OperatingPoint(80, 60, "equal, slower")]
    assert [p.name for p in frontier(pts)] == ["fast", "same-latency-better", "top"]
    twins = frontier([(50, 1, "first"), (50, 1, "second")])
    assert [p.name for p in twins] == ["first"]                       # stable sort keeps the first
    assert frontier([]) == []
    assert [p.name for p in reference_frontier("small")] == ["RAG: query -> slice + notes", "AgentRunbook-R",
                                                             "AgentRunbook-C"]   # Codex is dominated
    assert [p.name for p in reference_frontier("medium")][-1] == "AgentRunbook-C"
    assert [(p.accuracy, p.latency_seconds) for p in REFERENCE_POINTS["medium"]] == [
        (45.9, 0.3), (68.7, 185.8), (57.0, 25.8), (70.1, 139.9)]


def test_window_edges():
    assert lafs([]) == 0.0
    assert lafs([(90, 200)]) == 0.0 and lafs([(90, 250)]) == 0.0      # at or after T_MAX never counts
    assert lafs([(40, 0.01)]) == 40.0                                  # before T_MIN counts from T_MIN
    assert lafs([(-10, 0.5)]) == -10.0                                 # not raised to the floor
    assert lafs([(40, 1.0)]) == 40.0
    assert lafs([(10, 2)], t_min=2, t_max=4) == 10.0


def test_bad_points_and_settings():
    with pytest.raises(InputError, match="index 1 \\(b\\): field 'latency_seconds': latency must be positive"):
        lafs([(1, 1, "a"), (2, 0, "b")])
    with pytest.raises(InputError, match="field 'latency_seconds'"):
        frontier([(1, -3)])
    with pytest.raises(InputError, match="field 'accuracy': expected a number"):
        lafs([(float("nan"), 3)])
    with pytest.raises(InputError, match="field 'accuracy'"):
        lafs([(True, 3)])
    with pytest.raises(InputError, match="expected \\(accuracy, latency"):
        lafs([(1,)])
    with pytest.raises(ConfigError, match="unknown tier 'large'"):
        lafs_gain([], "large")
    with pytest.raises(ConfigError, match="0 < t_min < t_max"):
        lafs([], t_min=5, t_max=5)


def test_summary_layout():
    s = lafs_summary("small", [(62, 15, "fast rag")])
    assert list(s) == ["tier", "t_min_seconds", "t_max_seconds", "floor_accuracy", "accuracy_unit",
                       "reference_lafs", "submission_lafs", "lafs_gain", "reference_frontier",
                       "submission_frontier"]
    assert s["reference_lafs"] == 55.76484693638005 and s["accuracy_unit"] == "percentage_points"
    assert s["lafs_gain"] == s["submission_lafs"] - s["reference_lafs"]
    assert [p["name"] for p in s["submission_frontier"]] == ["RAG: query -> slice + notes", "fast rag",
                                                            "AgentRunbook-C"]
    assert s["reference_frontier"][0] == {"name": "RAG: query -> slice + notes", "accuracy": 51.0,
                                          "latency_seconds": 0.2}


# ------------------------------------------------------------------ naive integral without a frontier

def naive_lafs(points, t_min=1.0, t_max=200.0):
    cuts = sorted({t_min, t_max} | {lat for _, lat in points if t_min < lat < t_max})
    area = 0.0
    for left, right in zip(cuts, cuts[1:]):
        best = max([acc for acc, lat in points if lat <= left], default=0.0)   # all points, no frontier
        area += best * (math.log(right) - math.log(left))
    return area / (math.log(t_max) - math.log(t_min))


POINTS = st.lists(st.tuples(st.floats(-5, 100), st.floats(0.01, 400)), max_size=8)


@settings(max_examples=400, deadline=None)
@given(POINTS)
def test_lafs_equals_naive(points):
    assert math.isclose(lafs(points), naive_lafs(points), rel_tol=1e-9, abs_tol=1e-9)


@settings(max_examples=200, deadline=None)
@given(POINTS, st.sampled_from(["small", "medium"]))
def test_gain_is_never_negative_and_dominated_points_change_nothing(points, tier):
    assert lafs_gain(points, tier) >= -1e-12
    dominated = [(acc - 1, lat + 1) for acc, lat in points]
    assert lafs(points + dominated) == lafs(points)
