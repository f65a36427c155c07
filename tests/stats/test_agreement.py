"""Cohen's kappa and its asymptotic SE: a hand-computed 2x2 example, an independent reference (the
delta-method variance of kappa computed numerically from the multinomial covariance, numpy only — no
closed formula shared with the code under test), and the degenerate cases stated."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from mnemetric.stats.agreement import METHOD, Z95, agreement, cohen_kappa, kappa_se


def labels(table: dict[tuple, int]) -> tuple[list, list]:
    a, b = [], []
    for (x, y), k in table.items():
        a += [x] * k
        b += [y] * k
    return a, b


# Worked by hand (n = 50): both yes 20, A yes/B no 5, A no/B yes 10, both no 15.
#   p_o = 35/50 = 0.7; margins A: yes .5, no .5; B: yes .6, no .4; p_e = .5*.6 + .5*.4 = 0.5
#   kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4
#   diagonal: .4 (1 - (.5+.6)(.6))^2 + .3 (1 - (.5+.4)(.6))^2 = .4 * .1156 + .3 * .2116 = .10972
#   off-diagonal: .6^2 [ .1 (.6+.5)^2 + .2 (.4+.5)^2 ] = .36 * .283 = .10188
#   var = (.10972 + .10188 - (.4 - .5*.6)^2) / (50 * .5^2) = .2016 / 12.5 = .016128; SE = .1269961
HAND = {(True, True): 20, (True, False): 5, (False, True): 10, (False, False): 15}


def test_a_hand_computed_example():
    a, b = labels(HAND)
    r = agreement(a, b)
    assert r.n == 50 and r.agreement == pytest.approx(0.7, abs=1e-12)
    assert r.kappa == pytest.approx(0.4, abs=1e-12)
    assert r.se == pytest.approx(math.sqrt(0.016128), abs=1e-12)
    assert (r.low, r.high) == pytest.approx((0.4 - Z95 * math.sqrt(0.016128), 0.4 + Z95 * math.sqrt(0.016128)))
    assert r.to_record()["kappa_ci95"]["method"] == METHOD


def _kappa_of_cells(p: np.ndarray) -> float:
    po = np.trace(p)
    pe = float(p.sum(axis=1) @ p.sum(axis=0))
    return (po - pe) / (1 - pe)


def reference_se(table: dict[tuple, int], cats: list) -> float:
    """Delta method: var(kappa) ≈ g' Σ g / n, Σ = diag(p) − p p' (multinomial), g the numerical gradient
    of kappa with respect to the cell probabilities (central differences)."""
    n = sum(table.values())
    p = np.array([[table.get((x, y), 0) / n for y in cats] for x in cats], dtype=float)
    flat = p.ravel()
    g = np.zeros_like(flat)
    h = 1e-6
    for i in range(flat.size):
        up, down = flat.copy(), flat.copy()
        up[i] += h
        down[i] -= h
        g[i] = (_kappa_of_cells(up.reshape(p.shape)) - _kappa_of_cells(down.reshape(p.shape))) / (2 * h)
    sigma = np.diag(flat) - np.outer(flat, flat)
    return math.sqrt(float(g @ sigma @ g) / n)


@pytest.mark.parametrize("table", [
    HAND,
    {(True, True): 3, (True, False): 1, (False, True): 2, (False, False): 9},
    {(True, True): 40, (True, False): 1, (False, True): 0, (False, False): 2},
    {("a", "a"): 5, ("a", "b"): 2, ("b", "b"): 7, ("c", "c"): 4, ("c", "a"): 1, ("b", "c"): 3},
])
def test_the_se_equals_the_delta_method_computed_independently(table):
    a, b = labels(table)
    cats = sorted(set(a) | set(b), key=repr)
    assert kappa_se(a, b) == pytest.approx(reference_se(table, cats), rel=1e-6)


def test_kappa_equals_the_textbook_definition_on_every_small_table():
    for cells in itertools.product(range(3), repeat=4):
        table = dict(zip([(1, 1), (1, 0), (0, 1), (0, 0)], cells))
        a, b = labels(table)
        if not a:
            continue
        n = len(a)
        po = sum(x == y for x, y in zip(a, b)) / n
        pe = (sum(a) / n) * (sum(b) / n) + (1 - sum(a) / n) * (1 - sum(b) / n)
        expected = None if pe == 1 else (po - pe) / (1 - pe)
        got = cohen_kappa(a, b)
        assert (got is None) == (expected is None) and (got is None or got == pytest.approx(expected))


def test_degenerate_cases_are_stated_not_hidden():
    assert agreement([], []).kappa is None and agreement([], []).agreement is None
    one = agreement([True] * 5, [True] * 5)  # one category: chance agreement 1, kappa undefined
    assert one.agreement == 1.0 and one.kappa is None and one.low is None
    perfect = agreement([True, False, True], [True, False, True])  # SE 0: no (degenerate) interval
    assert perfect.kappa == 1.0 and perfect.se == 0.0 and perfect.low is None and perfect.to_record()["kappa_ci95"] is None
    opposite = agreement([True, False] * 10, [False, True] * 10)
    assert opposite.kappa == pytest.approx(-1.0) and opposite.se == pytest.approx(0.0) and opposite.low is None
    some = agreement([True, False, True, True], [True, True, False, False])
    assert -1.0 <= some.low <= some.kappa <= some.high <= 1.0
    with pytest.raises(ValueError):
        agreement([True], [True, False])
