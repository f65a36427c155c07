"""Generic statistics for comparing runs: proportion intervals, bootstraps, paired tests, power.

No benchmark knowledge lives here: callers pass one value per item (0/1 or float) and, where
needed, one stratum label per item. Each module's docstring carries its formulas and sources:

* :mod:`.intervals`: Wilson and Clopper-Pearson intervals for k of n (no scipy at run time);
* :mod:`.bootstrap`: one percentile-bootstrap engine (pooled, stratified, paired; micro/macro);
* :mod:`.paired`: exact McNemar (and sign) test, discordant counts, :class:`PairedComparison`;
* :mod:`.score`: Tango's score interval for paired proportions, MOVER over strata, Holm's adjustment;
* :mod:`.power`: minimal detectable difference of a paired binary comparison (the exact McNemar
  test's power by enumeration; Connor 1987's normal approximation as an option).

All of it is a Mnemetric addition: upstream LongMemEval reports point estimates only.
"""

from __future__ import annotations

from mnemetric.stats.bootstrap import (
    CHUNK_ELEMENTS,
    STATISTICS,
    BootstrapResult,
    bootstrap_mean,
    paired_bootstrap_diff,
    percentile_interval,
    pooled_bootstrap,
    stratified_bootstrap,
)
from mnemetric.stats.intervals import clopper_pearson, normal_quantile, wilson
from mnemetric.stats.paired import Discordant, PairedComparison, compare_paired, discordant, mcnemar_exact
from mnemetric.stats.power import DetectableDifference, exact_mcnemar_power, minimal_detectable_difference, paired_power
from mnemetric.stats.score import familywise_rate, holm, mover_mean, tango_interval

__all__ = [
    "CHUNK_ELEMENTS",
    "STATISTICS",
    "BootstrapResult",
    "DetectableDifference",
    "Discordant",
    "PairedComparison",
    "bootstrap_mean",
    "clopper_pearson",
    "compare_paired",
    "discordant",
    "exact_mcnemar_power",
    "familywise_rate",
    "holm",
    "mcnemar_exact",
    "minimal_detectable_difference",
    "mover_mean",
    "normal_quantile",
    "paired_bootstrap_diff",
    "paired_power",
    "percentile_interval",
    "pooled_bootstrap",
    "stratified_bootstrap",
    "tango_interval",
    "wilson",
]
