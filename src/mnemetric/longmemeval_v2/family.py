"""The LongMemEval-V2 family object (:mod:`mnemetric.family`): the V2 facts custody needs.

Built by ``conf/benchmark/longmemeval-v2.yaml`` (``_target_: mnemetric.longmemeval_v2.family.LongMemEvalV2Family``);
:data:`FAMILY` is the same object for code that names the family directly.

Tasks: the five V2 abilities map to harness.py categories static, dynamic, procedure, gotchas and
the three ``-abs`` categories (upstream-v2-protocol.md §1; xiaowu0162/LongMemEval-V2
evaluation/harness.py CATEGORY_MAP @ be15ea6e995462f3391c1a610892df3f67dfa7bd), read from stage v2's
metrics/v2.json (``by_category``: upstream's aggregated_metrics breakdowns, web + enterprise). V2's
official_equivalence is decided by its own pipeline (stage v2), so custody's judge gate and the V1
cross-check do not apply (``official`` and ``crosscheck`` are None).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from mnemetric.family import CrosscheckSpec, OfficialProtocol, TaskMetric

V2_METRICS = "metrics/v2.json"
CATEGORY = "by_category.non_abstention_by_category"
TASK_METRICS: Mapping[str, TaskMetric] = MappingProxyType({
    **{task: TaskMetric(V2_METRICS, f"{CATEGORY}.{c}.pct_correct", f"{CATEGORY}.{c}.count")
       for task, c in (("Static state recall", "static"), ("Dynamic state tracking", "dynamic"),
                       ("Workflow knowledge", "procedure"), ("Environment gotchas", "gotchas"))},
    "Premise awareness": TaskMetric(V2_METRICS, "by_category.abstention_overall.pct_correct",
                                    "by_category.abstention_overall.count"),
})


@dataclass(frozen=True)
class LongMemEvalV2Family:
    """The V2 family (a :class:`mnemetric.family.Family`); ``name`` and ``metrics`` come from its conf option."""

    name: str = "longmemeval-v2"
    metrics: str = V2_METRICS
    display_name: str = "LongMemEval-V2"
    task_metrics: Mapping[str, TaskMetric] = field(default_factory=lambda: TASK_METRICS)
    official: OfficialProtocol | None = None
    crosscheck: CrosscheckSpec | None = None
    reader_prompt_module: str | None = None


FAMILY = LongMemEvalV2Family()
