"""The LongMemEval-V2 family object (:mod:`mnemetric.family`): the V2 facts custody needs.

Built by ``conf/benchmark/longmemeval-v2.yaml`` (``_target_: mnemetric.longmemeval_v2.family.LongMemEvalV2Family``);
:data:`FAMILY` is the same object for code that names the family directly.

Tasks: the five V2 abilities map to harness.py categories static, dynamic, procedure, gotchas and
the three ``-abs`` categories (upstream-v2-protocol.md §1; xiaowu0162/LongMemEval-V2
evaluation/harness.py CATEGORY_MAP @ be15ea6e995462f3391c1a610892df3f67dfa7bd), read from stage v2_metrics's
metrics/v2.json (``by_category``: upstream's aggregated_metrics breakdowns, web + enterprise). V2's
gate is :mod:`mnemetric.longmemeval_v2.gate` (its rules, over the typed facts it reads): stage v2_metrics
decides the run's official_equivalence with it and writes the run manifest metrics/run-v2.json itself
(``manifest_sections`` is None), keeping those facts as its ``protocol`` section, so ``official_reasons(manifest)``
decides again from the manifest alone. It has no cross-check and no
inventory review blocks. Its doors (card custody, report, `mnemetric runs` row) are in
:mod:`mnemetric.longmemeval_v2.doors`; its params section ``v2`` in
:mod:`mnemetric.longmemeval_v2.params_schema`; the fingerprint stage fingerprints its ``v2.memory``
(data/fingerprints/v2-memory.json). Its result card (:func:`card_rows`) shows metrics/v2.json's
``combined.accuracy`` blocks (full set, non-abstention, abstention: value, Clopper-Pearson
``ci95_low|high``, n), each domain's full-set accuracy
(``domains.<domain>.accuracy.overall_full_set``) and each category's ``pct_correct`` over
``count`` (``by_category.non_abstention_by_category``, then ``by_category.abstention_overall``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from mnemetric.family import CardRow, CardSpec, CrosscheckScripts, RunSummary, TaskMetric
from mnemetric.longmemeval_v2 import doors
from mnemetric.longmemeval_v2.params_schema import SECTIONS

V2_METRICS = "metrics/v2.json"
CATEGORY = "by_category.non_abstention_by_category"
TASK_METRICS: Mapping[str, TaskMetric] = MappingProxyType({
    **{task: TaskMetric(V2_METRICS, f"{CATEGORY}.{c}.pct_correct", f"{CATEGORY}.{c}.count")
       for task, c in (("Static state recall", "static"), ("Dynamic state tracking", "dynamic"),
                       ("Workflow knowledge", "procedure"), ("Environment gotchas", "gotchas"))},
    "Premise awareness": TaskMetric(V2_METRICS, "by_category.abstention_overall.pct_correct",
                                    "by_category.abstention_overall.count"),
})


ACCURACY_ROWS = (("overall_full_set", "overall accuracy (full set)"),
                 ("non_abstention_only", "non-abstention accuracy"), ("abstention_only", "abstention accuracy"))


def _num(x: Any) -> float | None:
    return x if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def card_rows(docs: Mapping[str, Mapping[str, Any] | None]) -> list[CardRow]:
    """The combined accuracy blocks, then each category (module docstring); no metrics/v2.json: no rows."""
    doc = docs.get("v2")
    if not isinstance(doc, Mapping):
        return []
    acc = (doc.get("combined") or {}).get("accuracy") or {}
    rows = [CardRow(label, _num(b.get("value")), _num(b.get("ci95_low")), _num(b.get("ci95_high")), b.get("n"))
            for key, label in ACCURACY_ROWS if isinstance(b := acc.get(key), Mapping)]
    for domain, block in (doc.get("domains") or {}).items():  # each domain's full-set accuracy
        b = ((block or {}).get("accuracy") or {}).get("overall_full_set")
        if isinstance(b, Mapping):
            rows.append(CardRow(f"overall accuracy ({domain})", _num(b.get("value")), _num(b.get("ci95_low")),
                                _num(b.get("ci95_high")), b.get("n")))
    by = doc.get("by_category") or {}
    blocks = [*((by.get("non_abstention_by_category") or {}).items()), ("abstention_overall", by.get("abstention_overall"))]
    rows += [CardRow(name, _num(b.get("pct_correct")), n=b.get("count")) for name, b in blocks if isinstance(b, Mapping)]
    return rows


CARD = CardSpec(inputs=MappingProxyType({"v2": (V2_METRICS,)}), rows=card_rows, empty="(no LongMemEval-V2 metrics)",
                custody=doors.card_custody)


def _merge_run(out: Any, parts: Any, latency: Any = (), latency_out: Any = None) -> dict[str, Any]:
    """`mnemetric merge` of `v2 run --shard` parts (:func:`mnemetric.longmemeval_v2.shards.merge_parts`)."""
    from mnemetric.errors import ConfigError
    from mnemetric.longmemeval_v2.shards import merge_parts

    if latency:
        raise ConfigError("--latency", "given for `v2 run` folders: their per_question rows carry each shard's "
                          "measured seconds already", fix="leave --latency out")
    return merge_parts(out, parts)


def _merge_step(out: Any, parts: Any, latency: Any = (), latency_out: Any = None) -> dict[str, Any]:
    """`mnemetric merge` of the V2 stages' sharded step files
    (:func:`mnemetric.longmemeval_v2.step_shards.merge_step`; ``latency``: the memory parts' latency sidecars)."""
    from mnemetric.longmemeval_v2.step_shards import merge_step

    return merge_step(out, parts, latency=latency, latency_out=latency_out)


@dataclass(frozen=True)
class LongMemEvalV2Family:
    """The V2 family (a :class:`mnemetric.family.Family`); ``name`` and ``metrics`` come from its conf option."""

    name: str = "longmemeval-v2"
    metrics: str = V2_METRICS
    display_name: str = "LongMemEval-V2"
    task_metrics: Mapping[str, TaskMetric] = field(default_factory=lambda: TASK_METRICS)
    required_sections: Sequence[str] = ()
    crosscheck: CrosscheckScripts | None = None
    inventory_review: Callable[..., Any] | None = None
    run_manifest: str | None = "metrics/run-v2.json"
    manifest_sections: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None
    card: CardSpec | None = CARD
    output_files: Callable[[Mapping[str, Any]], Sequence[str]] | None = None
    params_sections: Mapping[str, Any] = field(default_factory=lambda: dict(SECTIONS))
    conf_groups: Mapping[str, str] = field(default_factory=lambda: {"v2": "sample"})
    manifest_params: Sequence[str] = ()
    output_params: Sequence[str] = ()
    fingerprints: Mapping[str, str] = field(default_factory=lambda: {"v2.memory": "v2-memory"})
    report_params: Sequence[str] = doors.REPORT_PARAMS
    report: Callable[..., Any] | None = doors.report
    shard_mergers: Mapping[str, Callable[..., Any]] = field(default_factory=lambda: {
        "v2 run": _merge_run, "v2_memory": _merge_step, "v2_read": _merge_step, "v2_check": _merge_step})

    def official_reasons(self, manifest: Mapping[str, Any]) -> list[str]:
        """LongMemEval-V2's gate (:mod:`mnemetric.longmemeval_v2.gate`) over the manifest's ``protocol`` section."""
        from mnemetric.longmemeval_v2.gate import official_reasons

        return official_reasons(manifest)

    def summary(self, params: Mapping[str, Any], read: Callable[[str], Any]) -> RunSummary:
        return doors.summary(params, read)


FAMILY = LongMemEvalV2Family()
