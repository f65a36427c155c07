"""Hand-written inputs for the inventory tests: a small seed, run manifests, metrics files."""

from __future__ import annotations

import copy
from typing import Any

V1_REPO = "https://github.com/xiaowu0162/LongMemEval"
V2_REPO = "https://github.com/xiaowu0162/LongMemEval-V2"
V1_REV = "9e0b455f4ef0e2ab8f2e582289761153549043fc"
V2_REV = "2cc8c540bdb87fe6761629b585e727e1c4704520"
V1_TYPES = ["single-session-user", "single-session-assistant", "single-session-preference",
            "temporal-reasoning", "knowledge-update", "multi-session"]
V2_TASKS = ["Static state recall", "Dynamic state tracking", "Workflow knowledge", "Environment gotchas",
            "Premise awareness"]
SHA_ABC = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"  # sha256(b"abc"), FIPS 180-2
SHA_EMPTY = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"  # sha256(b"")
PINNED_PROMPT_SET = "80a2a38e6c8aa82aaefb929f7b755d2bdfce9253c066f20174e0ab51cc358b53"  # recorded 2026-11-29
PINNED_EVALUATE_QA = "ecce9c4c79dc89d99534ac17b383a5cbb5b9f0c69ee98adaf0684742e3d95251"  # upstream-protocol.md §0.1


def _task(name: str, selector: str, classification: str | None) -> dict[str, Any]:
    t = {"coverage_status": "unmapped", "evidence_refs": [], "selector": selector, "task": name, "test_refs": []}
    return t if classification is None else {"classification": classification, **t}


def seed() -> dict[str, Any]:
    """The shape of the user's seed, with the asserted flags set to true (derivation must ignore them)."""
    v1_tasks = [_task(t, f"question_type = {t}", "question type") for t in V1_TYPES]
    v1_tasks.append(_task("abstention", "question_id suffix _abs", "cross-cutting overlay"))
    family = {"protocol_requirements": ["r"], "remaining_audit": ["a"], "review_scope": "s"}
    return copy.deepcopy({
        "complete": True,
        "date_transport_review": {"official_equivalence": True, "temporal_reasoning_measured": True, "method": "m"},
        "families": [
            {**family, "benchmark": "LongMemEval", "repository": V1_REPO, "revision": V1_REV,
             "implementation": {"full_held_out_run_completed": True, "full_protocol_equivalence": True, "adapter": "x"},
             "reviewed_sources": [{"path": "README.md", "sha256": SHA_ABC,
                                   "url": f"{V1_REPO}/blob/{V1_REV}/README.md"}],
             "tasks": v1_tasks},
            {**family, "benchmark": "LongMemEval-V2", "repository": V2_REPO, "revision": V2_REV,
             "reviewed_sources": [{"path": "README.md", "sha256": SHA_EMPTY,
                                   "url": f"{V2_REPO}/blob/{V2_REV}/README.md"}],
             "tasks": [_task(t, "requires scorer/schema audit", None) for t in V2_TASKS]},
        ],
        "official_qa_setup_review": {"actual_judge_requests_executed": True, "judge_model": "gpt-4o-2024-08-06",
                                     "revision": V1_REV},
        "qa_aggregation_review": {"judge_executed": True, "judge_prompt_parity_verified": True, "rules": []},
        "reviewed_date": "2026-10-04",
        "schema": "mnemetric.upstream-task-inventory/v1",
    })


def manifest(**changes: Any) -> dict[str, Any]:
    """A V1 run manifest of the bundled sample, lexical judge; ``changes`` by dotted key."""
    m: dict[str, Any] = {
        "path": "metrics/run.json",
        "variant": {"name": "sample", "revision": "bundled", "sha256_verified": True},
        "suite": {"name": "full", "ids_sha256": "0" * 64},
        "judge": {"name": "lexical", "kind": "lexical", "prompt_set_sha256": None},
        "counts": {"questions": 43, "judged": 43, "failed": 0},
        "official_equivalence": {"value": False, "reasons": ["judge is not gpt-4o-2024-08-06"]},
    }
    for dotted, value in changes.items():
        node = m
        *parents, last = dotted.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        if value is DELETE:
            del node[last]
        else:
            node[last] = value
    return m


DELETE = object()


def qa_metrics(n_by_type: dict[str, int], abstention_n: int = 2, variant: str = "sample",
               suite: str = "full") -> dict[str, Any]:
    """A metrics/qa.json: accuracy 0.5 where n > 0, null where n == 0 (as qa_metrics writes empty buckets)."""
    return {"variant": variant, "suite": suite,
            "per_type": {t: {"accuracy": 0.5 if n else None, "n": n} for t, n in n_by_type.items()},
            "abstention": {"accuracy": 0.5 if abstention_n else None, "n": abstention_n}}


def v2_metrics(count: int = 3) -> dict[str, Any]:
    """upstream aggregated_metrics.json layout (harness.py), the keys the inventory reads."""
    block = {"count": count, "pct_correct": 0.25 if count else None}
    return {"by_category": {"non_abstention_by_category": {c: dict(block) for c in ("static", "dynamic", "procedure",
                                                                                     "gotchas")},
                            "abstention_overall": dict(block)}}
