"""The LongMemEval (V1) family object: the V1 facts custody needs, in one place (:mod:`mnemetric.family`).

Built by ``conf/benchmark/longmemeval.yaml`` (``_target_: mnemetric.longmemeval.family.LongMemEvalFamily``);
:data:`FAMILY` is the same object for code that names the family directly (the V1 stage doors).

Facts (xiaowu0162/LongMemEval @ 9e0b455f4ef0e2ab8f2e582289761153549043fc; shared/docs/upstream-protocol.md
§1.2, §2.5, §3.2-3.4): the six question types and the ``_abs`` overlay are the tasks; the official judge
is gpt-4o-2024-08-06 with temperature 0, max_tokens 10, n 1 on the official API, its five prompt
templates read from src/evaluation/evaluate_qa.py (sha256 pinned); the official files are the pinned
Hugging Face files s, m and oracle; the cross-check runs src/evaluation/print_retrieval_metrics.py and
print_qa_metrics.py (and evaluate_qa.py) unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from mnemetric.family import CrosscheckSpec, OfficialProtocol, TaskMetric
from mnemetric.longmemeval.hypotheses import read_judged, read_reference_minimal
from mnemetric.longmemeval.judge.upstream_file import REVISION, SHA256, UPSTREAM_REPO
from mnemetric.longmemeval.judge.upstream_prompts import PROMPT_SET_SHA256
from mnemetric.longmemeval.retrieval_log import score_retrieval_log
from mnemetric.longmemeval.rules import OFFICIAL_JUDGE_MODEL, OFFICIAL_JUDGE_PARAMS, QUESTION_TYPES
from mnemetric.longmemeval.scoring.qa import QUESTION_TYPES as PRINT_ORDER
from mnemetric.longmemeval.scoring.qa import check_items, join_with_reference, point_estimates

QA_DETAIL = "metrics/detail/qa.json"
"""Where the per-type accuracies and their counts are (the qa_metrics stage's detail file)."""
PROFILE = "longmemeval-session-upstream-v1"
RETRIEVAL_SCRIPT = "src/evaluation/print_retrieval_metrics.py"
QA_SCRIPT = "src/evaluation/print_qa_metrics.py"
EVALUATE_QA = "src/evaluation/evaluate_qa.py"
LOCK = Path(__file__).resolve().parents[3] / "crosscheck" / "upstream-v1.lock"

TASK_METRICS: Mapping[str, TaskMetric] = MappingProxyType({
    **{t: TaskMetric(QA_DETAIL, f"per_type.{t}.accuracy", f"per_type.{t}.n") for t in QUESTION_TYPES},
    "abstention": TaskMetric(QA_DETAIL, "abstention.accuracy", "abstention.n"),
})

OFFICIAL = OfficialProtocol(
    source="huggingface", suite="full", profile=PROFILE, judge_model=OFFICIAL_JUDGE_MODEL,
    judge_params=MappingProxyType(dict(OFFICIAL_JUDGE_PARAMS)), endpoint="https://api.openai.com/v1",
    prompt_set_sha256=PROMPT_SET_SHA256, official_variants=frozenset({"s", "m", "oracle"}), judge_kind="upstream")


def score_retrieval(log: Path, granularity: str) -> Mapping[str, Any]:
    """The log's metrics recomputed from its rankings under the upstream profile (both averaging rules)."""
    return score_retrieval_log(log, granularity, PROFILE)


def judged_labels(path: Path) -> list[tuple[str, bool, str | None]]:
    """(question_id, label, judge model) of each line of an upstream ``.eval-results-*`` file."""
    return [(j.question_id, j.label, j.model) for j in read_judged(path)]


def reference_types(path: Path) -> dict[str, str]:
    """question_id -> question_type of a reference file."""
    return {r.question_id: r.question_type for r in read_reference_minimal(path)}


def qa_estimates(pairs: Sequence[tuple[str, bool]], types: Mapping[str, str], file: str) -> dict[str, Any]:
    """print_qa_metrics.py's numbers from our side: per type, task-averaged, overall, abstention."""
    items, _ = join_with_reference(pairs, types, allow_partial=True, file=file)
    return point_estimates(check_items(items, file))


CROSSCHECK = CrosscheckSpec(
    repo=UPSTREAM_REPO, revision=REVISION, retrieval_script=RETRIEVAL_SCRIPT, qa_script=QA_SCRIPT,
    judge_script=EVALUATE_QA,
    pinned_sha256=MappingProxyType({
        RETRIEVAL_SCRIPT: "58b70c0b562ea57372a7774a554c347cd908e901b77ac0149fc90b097b6f1b8f",
        QA_SCRIPT: "e9283933a0cefb7a0ded7365e436ae3d1be5aac41853325e6155d83bf07607f0",
        "src/retrieval/eval_utils.py": "c98b8d1096877a15aa755c9de44fe33c195298466a2eb6f3c0f9f6bde8c72349",
        EVALUATE_QA: SHA256,
    }),
    lock=LOCK,
    printed=MappingProxyType({
        "session": ("recall_all@5", "ndcg_any@5", "recall_all@10", "ndcg_any@10"),
        "turn": ("recall_all@5", "ndcg_any@5", "recall_all@10", "ndcg_any@10", "recall_all@50", "ndcg_any@50"),
    }),
    question_types=PRINT_ORDER, judge_model=OFFICIAL_JUDGE_MODEL, judge_alias="gpt-4o", score_retrieval=score_retrieval,
    judged_labels=judged_labels, reference_types=reference_types, qa_estimates=qa_estimates,
)


@dataclass(frozen=True)
class LongMemEvalFamily:
    """The V1 family (a :class:`mnemetric.family.Family`); ``name`` and ``metrics`` come from its conf option."""

    name: str = "longmemeval"
    metrics: str = "metrics/qa.json"
    display_name: str = "LongMemEval"
    task_metrics: Mapping[str, TaskMetric] = field(default_factory=lambda: TASK_METRICS)
    official: OfficialProtocol | None = OFFICIAL
    crosscheck: CrosscheckSpec | None = CROSSCHECK
    reader_prompt_module: str | None = "mnemetric.longmemeval.reader.prompt"


FAMILY = LongMemEvalFamily()
