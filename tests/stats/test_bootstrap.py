"""The bootstrap engine: hand-worked cases, naive re-implementations written here, equality with
the intervals of the metrics files before this engine (reference implementations kept in the tests), input errors, and a seeded coverage
simulation of the paired bootstrap."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mnemetric.errors import ConfigError, InputError
from mnemetric.longmemeval.scoring import qa
from tests.stats import reference_qa_bootstrap
from mnemetric.stats import (
    BootstrapResult,
    bootstrap_mean,
    paired_bootstrap_diff,
    percentile_interval,
    pooled_bootstrap,
    stratified_bootstrap,
)

Q95 = [(1 - 0.95) / 2, (1 + 0.95) / 2]
"""The documented quantile positions (0.025000000000000022, 0.975): not the literal 0.025."""

# ------------------------------------------------------------------------------------------
# percentile_interval
# ------------------------------------------------------------------------------------------


def test_percentile_interval_hand_worked():
    # 101 values 0..100: linear-interpolation quantiles 0.025 and 0.975 sit at 2.5 and 97.5
    assert percentile_interval(np.arange(101.0)) == (pytest.approx(2.5, abs=1e-9), pytest.approx(97.5, abs=1e-9))
    # level 0.5 on 0..4: quantiles 0.25 and 0.75 -> positions 1 and 3
    assert percentile_interval([4.0, 0.0, 2.0, 1.0, 3.0], level=0.5) == (1.0, 3.0)


def test_percentile_interval_leaves_out_undefined():
    assert percentile_interval([math.nan, 1.0, 1.0, math.nan]) == (1.0, 1.0)
    assert percentile_interval([math.nan, math.nan]) is None
    assert percentile_interval([]) is None


# ------------------------------------------------------------------------------------------
# bootstrap_mean: reproducible, equal to the earlier retrieval bootstrap_ci (kept here as the reference), naive loop


def bootstrap_ci(values, resamples, seed, level=0.95):
    """The retrieval interval the metrics files used before mnemetric.stats existed, written out plainly:
    one (resamples x n) index draw from Generator(PCG64(seed)), the means, numpy's linear quantiles."""
    data = np.asarray(values, dtype=np.float64)
    if data.size == 0:
        return None
    rng = np.random.Generator(np.random.PCG64(seed))
    means = data[rng.integers(0, data.size, size=(resamples, data.size))].mean(axis=1)
    low, high = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return [float(low), float(high)]
# ------------------------------------------------------------------------------------------

CASES = [([0.25], 10, 0), ([0.0, 1.0, 1.0, 0.5, 0.2, 0.9, 1.0], 1000, 3), ([1.0] * 5 + [0.0] * 25, 500, 11)]


@pytest.mark.parametrize("values, resamples, seed", CASES)
def test_bootstrap_mean_equals_retrieval_bootstrap_ci(values, resamples, seed):
    ours = bootstrap_mean(values, resamples, seed)
    assert ours.interval == tuple(bootstrap_ci(values, resamples, seed))
    assert bootstrap_mean(values, resamples, seed, level=0.9).interval == tuple(bootstrap_ci(values, resamples, seed, 0.9))


def test_bootstrap_mean_equals_retrieval_bootstrap_ci_across_chunks():
    # 2,000 values x 1,000 resamples = 2e6 indices: more than one chunk of CHUNK_ELEMENTS (2^20)
    values = np.random.Generator(np.random.PCG64(5)).random(2000).tolist()
    ours = bootstrap_mean(values, 1000, 1)
    assert ours.interval == tuple(bootstrap_ci(values, 1000, 1))
    assert bootstrap_mean(values, 1000, 1, chunk_elements=3001) == ours       # chunk size changes nothing


def test_bootstrap_mean_naive_loop():
    values = np.array([0.3, 0.9, 0.1, 0.75, 0.5, 0.0])
    rng = np.random.Generator(np.random.PCG64(42))
    means = [values[rng.integers(0, values.size, size=values.size)].mean() for _ in range(300)]
    expected = tuple(float(q) for q in np.quantile(means, Q95))
    result = bootstrap_mean(values, 300, 42)
    assert result.interval == expected
    assert result.point == pytest.approx(2.55 / 6, abs=1e-15)
    assert (result.n, result.statistic, result.resampling, result.undefined) == (6, "micro", "pooled", 0)


def test_fixed_seed_reproducible_other_seed_differs():
    values = [0.1, 0.4, 0.35, 0.8, 0.05, 0.6, 0.7]
    assert bootstrap_mean(values, 400, 9) == bootstrap_mean(values, 400, 9)
    assert bootstrap_mean(values, 400, 9).interval != bootstrap_mean(values, 400, 10).interval
    strata = list("aabbbcc")
    first = stratified_bootstrap(values, strata, resamples=400, seed=9)
    assert stratified_bootstrap(values, strata, resamples=400, seed=9) == first


def test_tiny_hand_worked_cases():
    assert bootstrap_mean([3.0, 3.0, 3.0], 50, 0).interval == (3.0, 3.0)
    assert bootstrap_mean([0.4], 50, 0).interval == (0.4, 0.4)
    # [0, 1]: a replicate mean is 0, 1/2 or 1 with probabilities 1/4, 1/2, 1/4, so with 2,000
    # replicates the 2.5% and 97.5% quantiles are 0 and 1
    result = bootstrap_mean([0, 1], 2000, 0)
    assert result.interval == (0.0, 1.0) and result.point == 0.5


def test_empty_and_no_resamples():
    empty = bootstrap_mean([], 100, 0)
    assert (empty.n, empty.point, empty.interval, empty.undefined) == (0, None, None, 0)
    none = bootstrap_mean([1, 0, 1], 0, 0)
    assert none.interval is None and none.point == pytest.approx(2 / 3)


# ------------------------------------------------------------------------------------------
# stratified and pooled
# ------------------------------------------------------------------------------------------


def test_stratified_resampling_keeps_stratum_sizes():
    # value = 1 for stratum "a" items: any replicate that keeps the sizes has micro mean 3/8 exactly
    strata = ["a", "b", "a", "c", "b", "b", "a", "c"]
    indicator = [1.0 if s == "a" else 0.0 for s in strata]
    kept = stratified_bootstrap(indicator, strata, "micro", 500, 1)
    assert kept.interval == (3 / 8, 3 / 8) and kept.n_strata == 3
    pooled = pooled_bootstrap(indicator, strata, "micro", 500, 1)
    assert pooled.interval[0] < 3 / 8 < pooled.interval[1]   # pooled lets the stratum mix vary


def _naive_stratified(values, strata, resamples, seed, macro=True):
    """Loop version of the documented scheme: stratum j (sorted labels) draws from its own stream
    SeedSequence(seed).spawn(K)[j], n_j indices per replicate."""
    labels = sorted(set(strata))
    groups = [np.array([v for v, s in zip(values, strata) if s == label]) for label in labels]
    rngs = [np.random.Generator(np.random.PCG64(ss)) for ss in np.random.SeedSequence(seed).spawn(len(labels))]
    reps = []
    for _ in range(resamples):
        draws = [g[rng.integers(0, g.size, size=g.size)] for g, rng in zip(groups, rngs)]
        reps.append(sum(d.sum() / d.size for d in draws) / len(draws) if macro else np.concatenate(draws).mean())
    return reps


def test_stratified_macro_equals_naive_loop():
    values = [1, 0, 1, 1, 0, 0, 1, 1, 1, 0, 1]
    strata = ["x", "y", "x", "z", "y", "y", "z", "x", "y", "z", "z"]
    result = stratified_bootstrap(values, strata, "macro", 400, 7)
    expected = np.quantile(_naive_stratified(values, strata, 400, 7), Q95)
    assert result.interval == (float(expected[0]), float(expected[1]))
    # point: stratum means x 3/3, y 1/4, z 3/4 -> (1 + 1/4 + 3/4) / 3 = 2/3
    assert result.point == pytest.approx(2 / 3, abs=1e-15)
    assert result.undefined == 0 and result.resampling == "stratified"


def test_stratified_float_values_naive_loop_and_chunking():
    rng = np.random.Generator(np.random.PCG64(3))
    values = rng.random(40).tolist()
    strata = [int(s) for s in rng.integers(0, 4, size=40)]
    result = stratified_bootstrap(values, strata, "macro", 300, 2)
    expected = np.quantile(_naive_stratified(values, strata, 300, 2), Q95)
    assert result.interval == (pytest.approx(expected[0], abs=1e-12), pytest.approx(expected[1], abs=1e-12))
    assert stratified_bootstrap(values, strata, "macro", 300, 2, chunk_elements=7) == result


def test_pooled_macro_counts_undefined_replicates():
    # two items in two strata: a replicate is undefined when both draws hit the same item (p = 1/2);
    # the count follows from the documented stream, re-drawn here; defined replicates are all 1/2
    result = pooled_bootstrap([1.0, 0.0], ["A", "B"], "macro", 1000, 4)
    draws = np.random.Generator(np.random.PCG64(4)).integers(0, 2, size=(1000, 2))
    assert result.undefined == int(np.sum(draws[:, 0] == draws[:, 1]))
    assert 440 <= result.undefined <= 560
    assert result.interval == (0.5, 0.5) and result.point == 0.5


def test_declared_labels_order_and_empty_stratum():
    values, strata = [1, 0, 1], ["b", "a", "b"]
    declared = stratified_bootstrap(values, strata, resamples=100, seed=0, labels=["a", "b", "c"])
    assert declared.point is None and declared.interval is None and declared.undefined == 100
    assert declared.n_strata == 3
    micro = stratified_bootstrap(values, strata, "micro", 100, 0, labels=["a", "b", "c"])
    assert micro.point == pytest.approx(2 / 3) and micro.undefined == 0
    with pytest.raises(InputError) as err:
        stratified_bootstrap(values, strata, labels=["a"])
    assert err.value.problem.record == "index 0" and err.value.problem.field == "strata"


def _qa_items(n: int, seed: int) -> list[tuple[str, str, bool]]:
    rng = np.random.Generator(np.random.PCG64(seed))
    return [(f"q{i}" + ("_abs" if i % 7 == 0 else ""), qa.QUESTION_TYPES[i % 6], bool(rng.random() < 0.6))
            for i in range(n)]


@pytest.mark.parametrize("n, resamples, seed", [(40, 2000, 4), (13, 500, 0)])
def test_pooled_reproduces_todays_qa_bootstrap_ci(n, resamples, seed):
    items = _qa_items(n, seed)
    today = reference_qa_bootstrap.bootstrap_ci(items, resamples, seed)
    labels = [label for _, _, label in items]
    types = [t for _, t, _ in items]
    overall = pooled_bootstrap(labels, types, "micro", resamples, seed, labels=qa.QUESTION_TYPES)
    task_averaged = pooled_bootstrap(labels, types, "macro", resamples, seed, labels=qa.QUESTION_TYPES)
    assert list(overall.interval) == today["overall"]
    assert list(task_averaged.interval) == today["task_averaged"]


# ------------------------------------------------------------------------------------------
# paired_bootstrap_diff
# ------------------------------------------------------------------------------------------


def test_paired_hand_worked():
    a, b = [1, 0, 1, 0], [1, 1, 1, 0]
    result = paired_bootstrap_diff(a, b, resamples=200, seed=1)
    assert result.point == 0.25 and result.resampling == "paired pooled"
    same = paired_bootstrap_diff(a, a, resamples=200, seed=1)
    assert same.point == 0.0 and same.interval == (0.0, 0.0)


def test_paired_against_zero_run_is_the_plain_bootstrap():
    # the same indices pick a and b, and b - 0 = b: the paired interval is bootstrap_mean(b)'s
    b = [0.2, 0.9, 0.4, 1.0, 0.0, 0.65]
    assert paired_bootstrap_diff([0.0] * 6, b, resamples=700, seed=5).interval == bootstrap_mean(b, 700, 5).interval


def test_paired_uses_the_same_indices_for_both_runs():
    # b = a + 0.1 on every item: every replicate difference is 0.1 (independent draws would vary)
    a = [0.1, 0.5, 0.3, 0.8, 0.2]
    b = [x + 0.1 for x in a]
    result = paired_bootstrap_diff(a, b, resamples=300, seed=0)
    assert result.interval == (pytest.approx(0.1, abs=1e-12), pytest.approx(0.1, abs=1e-12))


def test_paired_stratified_macro_naive_loop():
    a = [1, 0, 1, 1, 0, 0, 1, 0, 1]
    b = [1, 1, 1, 0, 1, 0, 1, 1, 1]
    strata = ["p", "p", "q", "q", "q", "r", "r", "r", "r"]
    result = paired_bootstrap_diff(a, b, strata, "macro", 300, 8)
    diffs = [y - x for x, y in zip(a, b)]   # macro(b) - macro(a) = macro(b - a) (same strata, same counts)
    expected = np.quantile(_naive_stratified(diffs, strata, 300, 8), Q95)
    assert result.interval == (pytest.approx(expected[0], abs=1e-12), pytest.approx(expected[1], abs=1e-12))
    # point: p: (1 - 1/2) = 1/2; q: (2/3 - 2/3) = 0; r: (3/4 - 2/4) = 1/4 -> (1/2 + 0 + 1/4) / 3 = 1/4
    assert result.point == pytest.approx(0.25, abs=1e-15) and result.resampling == "paired stratified"


# ------------------------------------------------------------------------------------------
# Records and errors
# ------------------------------------------------------------------------------------------


def test_record_round_trip():
    result = stratified_bootstrap([1, 0, 1, 1], ["a", "a", "b", "b"], resamples=50, seed=3)
    record = result.to_record()
    assert record["method"] == "percentile bootstrap" and record["low"] == result.low
    assert BootstrapResult.from_record(record, file="m.json", line=1) == result
    broken = dict(record, resamples="50")
    with pytest.raises(InputError) as err:
        BootstrapResult.from_record(broken, file="m.json", line=3)
    assert (err.value.problem.file, err.value.problem.record, err.value.problem.field) == ("m.json", "line 3", "resamples")
    with pytest.raises(InputError):
        BootstrapResult.from_record({k: v for k, v in record.items() if k != "point"}, file="m.json", line=1)


@pytest.mark.parametrize("values, record", [([1, None, 0], "index 1"), ([0.5, math.nan], "index 1"),
                                            ([1, "1"], "index 1"), ([math.inf], "index 0")])
def test_bad_values_name_the_index(values, record):
    with pytest.raises(InputError) as err:
        bootstrap_mean(values, 10, 0, source="run.jsonl")
    assert (err.value.problem.file, err.value.problem.record, err.value.problem.field) == ("run.jsonl", record, "values")


def test_bad_shapes_and_labels():
    with pytest.raises(InputError):
        bootstrap_mean([[1, 2], [3, 4]], 10, 0)
    with pytest.raises(InputError) as err:
        paired_bootstrap_diff([1, 0], [1, 0, 1])
    assert err.value.problem.field == "b"
    with pytest.raises(InputError):
        stratified_bootstrap([1, 0], ["a"])
    with pytest.raises(InputError):
        stratified_bootstrap([1, 0], ["a", 1])            # labels not comparable
    with pytest.raises(InputError):
        stratified_bootstrap([1, 0], ["a", "b"], labels=["a", "a", "b"])


@pytest.mark.parametrize("kwargs, key", [({"statistic": "median"}, "statistic"), ({"resamples": -1}, "resamples"),
                                         ({"resamples": 2.5}, "resamples"), ({"seed": -3}, "seed"),
                                         ({"seed": None}, "seed"), ({"level": 1.0}, "level")])
def test_bad_settings_are_config_errors(kwargs, key):
    with pytest.raises(ConfigError) as err:
        stratified_bootstrap([1, 0, 1], ["a", "b", "a"], **kwargs)
    assert err.value.key == key


def test_macro_without_strata_is_a_config_error():
    with pytest.raises(ConfigError) as err:
        paired_bootstrap_diff([1, 0], [0, 1], statistic="macro")
    assert err.value.key == "statistic"


# ------------------------------------------------------------------------------------------
# Coverage simulation (seeded, deterministic)
#
# Two runs on n items with known cell probabilities (p11, p10, p01, p00); the true difference is
# p01 - p10 (micro) or the mean of the per-stratum differences (macro). Each simulated pair of
# runs gets a 95% paired percentile interval from 200 resamples; coverage = share containing the
# true difference. Band 0.90-0.98: nominal 0.95, Monte-Carlo standard error
# sqrt(.95 * .05 / 1000) = 0.007 (so +-3 SE = +-0.021), and the percentile bootstrap is known to
# undercover by O(1/n) at small n (its variance uses divisor n, not n - 1), which shifts the centre
# down by about a point at these sizes. Measured with these seeds: see the prints (-s) and the report.
# ------------------------------------------------------------------------------------------

SIMS = 1000


def _simulate_runs(cells: tuple[float, float, float], n: int, sims: int, rng: np.random.Generator):
    """(a, b) boolean arrays of shape (sims, n): cell 0 = both right, 1 = only A, 2 = only B, 3 = neither."""
    cell = np.searchsorted(np.cumsum(cells), rng.random((sims, n)), side="right")
    return (cell == 0) | (cell == 1), (cell == 0) | (cell == 2)


def _coverage(design: list[tuple[tuple[float, float, float], int]], statistic: str, seed: int) -> float:
    rng = np.random.Generator(np.random.PCG64(seed))
    parts = [_simulate_runs(cells, n, SIMS, rng) for cells, n in design]
    a = np.concatenate([p[0] for p in parts], axis=1).astype(float)
    b = np.concatenate([p[1] for p in parts], axis=1).astype(float)
    strata = [j for j, (_, n) in enumerate(design) for _ in range(n)] if len(design) > 1 else None
    diffs = [cells[2] - cells[1] for cells, _ in design]
    true = float(np.mean(diffs)) if statistic == "macro" else diffs[0]
    hits = 0
    for s in range(SIMS):
        result = paired_bootstrap_diff(a[s], b[s], strata, statistic, resamples=200, seed=s)
        hits += result.low <= true <= result.high
    return hits / SIMS


def test_coverage_paired_bootstrap_micro():
    # p11 .50, p10 .10, p01 .15 (p00 .25): accuracies 0.60 and 0.65, true difference +0.05
    coverage = _coverage([((0.50, 0.10, 0.15), 100)], "micro", seed=1)
    print(f"paired bootstrap, micro, n = 100: coverage {coverage:.3f}")
    assert 0.90 <= coverage <= 0.98


def test_coverage_paired_bootstrap_stratified_macro():
    # three strata of 30, 60 and 133 items (LongMemEval-like type sizes), true macro difference +0.05
    design = [((0.40, 0.10, 0.20), 30), ((0.60, 0.05, 0.10), 60), ((0.20, 0.15, 0.15), 133)]
    coverage = _coverage(design, "macro", seed=3)
    print(f"paired stratified bootstrap, macro, strata 30/60/133: coverage {coverage:.3f}")
    assert 0.90 <= coverage <= 0.98
