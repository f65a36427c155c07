"""The LongMemEval (V1) family object: the V1 facts custody needs, in one place (:mod:`mnemetric.family`).

Built by ``conf/benchmark/longmemeval.yaml`` (``_target_: mnemetric.longmemeval.family.LongMemEvalFamily``);
:data:`FAMILY` is the same object for code that names the family directly (the V1 stage doors).

Facts (xiaowu0162/LongMemEval @ 9e0b455f4ef0e2ab8f2e582289761153549043fc; shared/docs/upstream-protocol.md
§1.2, §2.5, §3.2-3.4): the six question types and the ``_abs`` overlay are the tasks; the official judge
is gpt-4o-2024-08-06 with temperature 0, max_tokens 10, n 1 on the official API, its five prompt
templates read from src/evaluation/evaluate_qa.py (sha256 pinned); the official files are the pinned
Hugging Face files s, m and oracle; the cross-check runs src/evaluation/print_retrieval_metrics.py and
print_qa_metrics.py (and evaluate_qa.py) unchanged.

What custody draws around V1's facts (the generic frames of :mod:`mnemetric.custody.manifest` and
:mod:`mnemetric.custody.card`) is filled here:

* the run manifest's sections (:func:`run_sections` over :class:`RunInputs`, read by
  :func:`gather_inputs`), in this order: ``mnemetric_version``; ``variant`` (name, source, repo,
  revision, file, sha256 from conf, ``sha256_verified`` from the custody record
  ``data/custody/<variant>.json``); ``suite`` (name, kind, size, ``ids_sha256``); ``adapter`` (name,
  schema); ``memory`` (name, ``config_sha256`` of the ``memory`` params section,
  ``fingerprint_sha256`` of ``data/fingerprints/memory.json``); ``reader`` / ``judge`` (name, kind,
  requested model, ``resolved_models`` — hypotheses' ``model``, judged lines'
  ``autoeval_label.model`` —, ``prompt_set_sha256``: a model reader's is the fingerprint of
  :data:`READER_PROMPT_MODULE`, the judge's is the one set every judgment names, else null, all of
  them in ``prompt_set_sha256s``; ``endpoints``; ``params_sent`` read from the hypothesis lines'
  and the judged lines' ``mnemetric_judge`` ``params_sent``, next to each request sha256: no cache is read);
  ``retrieval`` (requested granularity, context_k, context_tokens; delivered items and tokens per
  question, min/mean/max, from the contexts file); ``scoring.profile``; ``packages``; ``counts``
  (questions in the suite, judged lines, failed = lines of ``<judged>.failures.jsonl``);
* the card's rows (:func:`card_rows`): overall, task-averaged and abstention accuracy
  (``ci95.<key>.low|high``; the detail layout's ``{accuracy}`` blocks or the headline's plain
  numbers), each question type (``per_type.<type>``), then the retrieval metrics
  print_retrieval_metrics.py prints, ``exclude_abs.<granularity>.<metric>`` over ``exclude_abs.n``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from mnemetric.custody.manifest import (
    PACKAGES,
    config_sha256,
    distinct,
    package_versions,
    params_sent,
    read_json_file,
    read_lines,
    spread,
)
from mnemetric.family import CardRow, CardSpec, CrosscheckSpec, OfficialProtocol, TaskMetric
from mnemetric.longmemeval.hypotheses import read_judged
from mnemetric.longmemeval.judge.upstream_file import REVISION, SHA256, UPSTREAM_REPO
from mnemetric.longmemeval.judge.upstream_prompts import PROMPT_SET_SHA256
from mnemetric.longmemeval.reference import reference_types  # question_id -> question_type
from mnemetric.longmemeval.scoring.score_retrieval import score_retrieval_log
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
    """The log's metrics recomputed from its rankings under the upstream profile (both averaging rules),
    as the record the generic cross-check reads (``ScoredRetrieval.to_record()``: granularity, aggregate)."""
    return score_retrieval_log(log, granularity, PROFILE).to_record()


def judged_labels(path: Path) -> list[tuple[str, bool, str | None]]:
    """(question_id, label, judge model) of each line of an upstream ``.eval-results-*`` file."""
    return [(j.question_id, j.label, j.model) for j in read_judged(path)]


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


# ---------------------------------------------------------------------------------------------
# The run manifest's sections (metrics/run.json)

RUN_MANIFEST = "metrics/run.json"
READER_PROMPT_MODULE = "mnemetric.longmemeval.reader.prompt"
"""The module whose fingerprint names a model reader's prompt set."""
NOT_INSTALLED = "not installed"


@dataclass(frozen=True)
class RunInputs:
    """Everything V1's manifest sections are built from (already read; see :func:`gather_inputs`)."""

    params: Mapping[str, Any]
    """The composed params (params.yaml)."""
    custody: Mapping[str, Any]
    suite: Mapping[str, Any]
    memory_fingerprint: Mapping[str, Any]
    reader_fingerprint: Mapping[str, Any]
    hypotheses: Sequence[Mapping[str, Any]]
    judged: Sequence[Mapping[str, Any]]
    judged_failures: int
    contexts: Sequence[Mapping[str, Any]]
    versions: Mapping[str, str] = field(default_factory=dict)


def delivered_budget(contexts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Per question: the number of context items and their tokens (contexts file ``items``, ``tokens``)."""
    return {"questions": len(contexts), "items": spread([len(c.get("items") or []) for c in contexts]),
            "tokens": spread([c.get("tokens", 0) for c in contexts])}


def reader_block(p: Mapping[str, Any], fingerprint: Mapping[str, Any], hyps: Sequence[Mapping[str, Any]]
                 ) -> dict[str, Any]:
    """The reader: ``prompt_set_sha256`` is the fingerprint of the prompt module for a model reader."""
    spec = p["reader"]
    llm = spec.get("kind") != "extractive"
    prompt = (fingerprint.get("modules") or {}).get(READER_PROMPT_MODULE) if llm else None
    return {"name": spec["name"], "kind": spec.get("kind"), "requested_model": spec.get("model"),
            "resolved_models": distinct(h.get("model") for h in hyps), "prompt_set_sha256": prompt,
            "fingerprint_sha256": fingerprint.get("sha256"),
            "params_sent": params_sent((h.get("request_sha256"), h.get("params_sent")) for h in hyps)}


def judge_block(p: Mapping[str, Any], judged: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    spec = p["judge"]
    traces = [j.get("mnemetric_judge") or {} for j in judged]
    prompt_sets = distinct(t.get("prompt_set_sha256") for t in traces)
    return {"name": spec["name"], "kind": spec.get("kind"), "requested_model": spec.get("model"),
            "resolved_models": distinct((j.get("autoeval_label") or {}).get("model") for j in judged),
            "prompt_set_sha256": prompt_sets[0] if len(prompt_sets) == 1 else None,
            "prompt_set_sha256s": prompt_sets,
            "endpoints": distinct(t.get("endpoint") for t in traces),
            "params_sent": params_sent((t.get("request_sha256"), t.get("params_sent")) for t in traces)}


def run_sections(inp: RunInputs) -> dict[str, Any]:
    """V1's sections of the run manifest (module docstring), in their order. Pure."""
    p, v = inp.params, inp.params["variant"]
    return {
        "mnemetric_version": inp.versions.get("mnemetric", NOT_INSTALLED),
        "variant": {"name": v["name"], "source": v.get("source"), "repo": v.get("repo"), "revision": v.get("revision"),
                    "file": v.get("file"), "sha256": v.get("sha256"),
                    "sha256_verified": inp.custody.get("verified") is True and inp.custody.get("sha256") == v.get("sha256")},
        "suite": {"name": p["suite"]["name"], "kind": p["suite"].get("kind"), "size": inp.suite.get("size"),
                  "ids_sha256": inp.suite.get("ids_sha256")},
        "adapter": {"name": p["adapter"]["name"], "schema": p["adapter"].get("schema")},
        "memory": {"name": p["memory"]["name"], "config_sha256": config_sha256(p["memory"]),
                   "fingerprint_sha256": inp.memory_fingerprint.get("sha256")},
        "reader": reader_block(p, inp.reader_fingerprint, inp.hypotheses),
        "judge": judge_block(p, inp.judged),
        "retrieval": {"requested": {k: p["retrieval"].get(k) for k in ("granularity", "context_k", "context_tokens")},
                      "delivered": delivered_budget(inp.contexts)},
        "scoring": {"profile": p["scoring"]["name"]},
        "packages": {name: inp.versions.get(name, NOT_INSTALLED) for name in PACKAGES},
        "counts": {"questions": len(inp.suite.get("question_ids") or []), "judged": len(inp.judged),
                   "failed": inp.judged_failures},
    }


def gather_inputs(params: Mapping[str, Any]) -> RunInputs:
    """Read every file V1's sections are built from (paths from params; tracked files only)."""
    paths, variant = params["paths"], params["variant"]
    judged = paths["judged"]
    return RunInputs(
        params=params, custody=read_json_file(f"{paths['custody_dir']}/{variant['name']}.json"),
        suite=read_json_file(paths["suite"]),
        memory_fingerprint=read_json_file(f"{paths['fingerprints']}/memory.json"),
        reader_fingerprint=read_json_file(f"{paths['fingerprints']}/reader.json"),
        hypotheses=read_lines(paths["hypotheses"]), judged=read_lines(judged),
        judged_failures=len(read_lines(f"{judged}.failures.jsonl", optional=True)),
        contexts=read_lines(paths["contexts"]), versions=package_versions())


def output_files(params: Mapping[str, Any]) -> list[str]:
    """The run's files whose sha256 custody keeps (nested params): the raw dataset, the adapted data, the
    retrieval log, the contexts, the hypotheses and the judgments, with their failures sidecars."""
    paths, hyp, judged = params["paths"], params["paths"]["hypotheses"], params["paths"]["judged"]
    return [f"{paths['raw_dir']}/{params['variant']['file']}", paths["adapted"], paths["retrieval_log"],
            paths["contexts"], hyp, f"{hyp}.failures.jsonl", judged, f"{judged}.failures.jsonl"]


def manifest_sections(params: Mapping[str, Any]) -> dict[str, Any]:
    """The family's ``manifest_sections``: :func:`run_sections` of the run files ``params`` name."""
    return run_sections(gather_inputs(params))


# ---------------------------------------------------------------------------------------------
# The result card's rows

QA_ROWS = (("overall", "overall accuracy"), ("task_averaged", "task-averaged accuracy"),
           ("abstention", "abstention accuracy"))
RETRIEVAL_KEYS = ("recall_all@5", "ndcg_any@5", "recall_all@10", "ndcg_any@10")
CARD_INPUTS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "qa": (QA_DETAIL, "metrics/qa.json"),
    "retrieval": ("metrics/detail/retrieval.json", "metrics/retrieval.json"),
})
"""The QA numbers: the detail file (intervals, n) when the pipeline writes one, else the headline;
the retrieval numbers likewise (both hold the same ``exclude_abs`` means and n)."""


def _get(doc: Any, *path: str) -> Any:
    for part in path:
        if not isinstance(doc, Mapping):
            return None
        doc = doc.get(part)
    return doc


def _value(node: Any) -> float | None:
    """A number, or the ``accuracy`` of a block (detail layout)."""
    if isinstance(node, Mapping):
        node = node.get("accuracy")
    return node if isinstance(node, (int, float)) and not isinstance(node, bool) else None


def qa_rows(qa: Mapping[str, Any]) -> list[CardRow]:
    """overall, task_averaged, abstention (``ci95.<key>.low|high``), then each type (``per_type.<type>``)."""
    n_of = {"overall": _get(qa, "n"), "task_averaged": _get(qa, "n"), "abstention": _get(qa, "abstention", "n")}
    rows = [CardRow(label, _value(qa.get(key)), _get(qa, "ci95", key, "low"), _get(qa, "ci95", key, "high"),
                    n_of[key]) for key, label in QA_ROWS]
    for t, block in (qa.get("per_type") or {}).items():
        rows.append(CardRow(t, _value(block), _get(block, "ci95", "low"), _get(block, "ci95", "high"),
                            _get(block, "n")))
    return rows


def retrieval_rows(retrieval: Mapping[str, Any]) -> list[CardRow]:
    """``exclude_abs.<granularity>.<metric>`` over ``exclude_abs.n`` (print_retrieval_metrics.py's set)."""
    gran = retrieval.get("granularity") or "session"
    block, n = _get(retrieval, "exclude_abs", gran) or {}, _get(retrieval, "exclude_abs", "n")
    return [CardRow(f"{gran} {k}", block.get(k), n=n) for k in RETRIEVAL_KEYS if _value(block.get(k)) is not None]


def card_rows(docs: Mapping[str, Mapping[str, Any] | None]) -> list[CardRow]:
    """The QA rows, then the retrieval rows; no QA metrics: no rows."""
    qa, retrieval = docs.get("qa"), docs.get("retrieval")
    if not qa:
        return []
    return qa_rows(qa) + (retrieval_rows(retrieval) if retrieval else [])


CARD = CardSpec(inputs=CARD_INPUTS, rows=card_rows, empty="(no QA metrics)")


@dataclass(frozen=True)
class LongMemEvalFamily:
    """The V1 family (a :class:`mnemetric.family.Family`); ``name`` and ``metrics`` come from its conf option."""

    name: str = "longmemeval"
    metrics: str = "metrics/qa.json"
    display_name: str = "LongMemEval"
    task_metrics: Mapping[str, TaskMetric] = field(default_factory=lambda: TASK_METRICS)
    official: OfficialProtocol | None = OFFICIAL
    crosscheck: CrosscheckSpec | None = CROSSCHECK
    run_manifest: str | None = RUN_MANIFEST
    manifest_sections: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = manifest_sections
    card: CardSpec | None = CARD
    output_files: Callable[[Mapping[str, Any]], Sequence[str]] | None = output_files


FAMILY = LongMemEvalFamily()
