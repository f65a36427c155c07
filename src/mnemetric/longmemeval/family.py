"""The LongMemEval (V1) family object: the V1 facts custody needs, in one place (:mod:`mnemetric.family`).

Built by ``conf/benchmark/longmemeval.yaml`` (``_target_: mnemetric.longmemeval.family.LongMemEvalFamily``);
:data:`FAMILY` is the same object for code that names the family directly (the V1 stage doors).

Facts (xiaowu0162/LongMemEval @ 9e0b455f4ef0e2ab8f2e582289761153549043fc; shared/docs/upstream-protocol.md
§1.2, §2.5, §3.2-3.4): the six question types and the ``_abs`` overlay are the tasks; the official judge
is gpt-4o-2024-08-06 with temperature 0, max_tokens 10, n 1 on the official API, its five prompt
templates read from src/evaluation/evaluate_qa.py (sha256 pinned); the official files are the pinned
Hugging Face files s, m and oracle; the cross-check runs src/evaluation/print_retrieval_metrics.py and
print_qa_metrics.py (and evaluate_qa.py) unchanged.

V1's rules live in the family, the generic layers draw the frames: the gate
(:mod:`mnemetric.longmemeval.gate`, ``official_reasons``), the cross-check scripts and their print
parsers (:mod:`mnemetric.longmemeval.crosscheck`), the inventory review blocks
(:mod:`mnemetric.longmemeval.inventory_review`), the params sections
(:mod:`mnemetric.longmemeval.params_schema`), the card and `mnemetric runs` row
(:mod:`mnemetric.longmemeval.doors`) and the report (:mod:`mnemetric.longmemeval.report`). Here:

* the run manifest's sections (:func:`run_sections` over :class:`RunInputs`, read by
  :func:`gather_inputs`), in this order: ``mnemetric_version``; ``variant`` (name, source, repo,
  revision, file, sha256 from conf, ``sha256_verified`` from the custody record
  ``data/custody/<variant>.json``); ``suite`` (name, kind, size, ``ids_sha256``); ``adapter`` (name,
  schema); ``memory`` (name, ``config_sha256`` of the ``memory`` params section,
  ``fingerprint_sha256`` of ``data/fingerprints/memory.json``, and for a system wrapping a third-party
  library its ``libraries``: distribution → version); ``reader`` / ``judge`` (name, kind,
  requested model, ``resolved_models`` — hypotheses' ``model``, judged lines'
  ``autoeval_label.model`` —, ``prompt_set_sha256``: a model reader's is the fingerprint of
  the module its component names (``prompt_module``), the judge's is the one set every judgment names, else null,
  all of them in ``prompt_set_sha256s``; ``endpoints``; ``params_sent`` read from the hypothesis lines'
  and the judged lines' ``mnemetric_judge`` ``params_sent``, next to each request sha256: no cache is read);
  ``retrieval`` (requested granularity, context_k, context_tokens; delivered items and tokens per
  question, min/mean/max, from the contexts file); ``scoring.profile``; ``packages``; ``counts``
  (questions in the suite, judged lines, failed = lines of ``<judged>.failures.jsonl``; where any failed, both
  accuracies: ``accuracy.failed_excluded`` and ``accuracy.failed_as_wrong``);
* the components the fingerprint stage fingerprints (:data:`FINGERPRINTS`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
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
from mnemetric.family import CardSpec, TaskMetric
from mnemetric.longmemeval import gate
from mnemetric.longmemeval.crosscheck import CROSSCHECK, CrosscheckSpec
from mnemetric.longmemeval.doors import CARD
from mnemetric.longmemeval.gate import REQUIRED_SECTIONS
from mnemetric.longmemeval.params_schema import GROUP_SECTIONS, SELF_SECTIONS
from mnemetric.longmemeval.rules import QUESTION_TYPES
from mnemetric.records import BOOLEAN, Fields

REPORT_PARAMS = ("paths.metrics_qa", "paths.metrics_retrieval", "paths.metrics_data", "paths.judged",
                 "paths.custody_dir", "paths.questions")
"""The params V1's report reads (stage report and `mnemetric report` alike; ``paths.questions``: the
question types of flips against a baseline)."""

CONF_GROUPS: Mapping[str, str] = MappingProxyType({
    "variant": "sample", "adapter": "session-v3", "scoring": "longmemeval-session-upstream-v1", "suite": "full",
    "memory": "bm25", "reader": "extractive", "judge": "lexical"})
"""V1's conf groups (:data:`GROUP_SECTIONS`' order) and their default options (conf/config.yaml lists the same)."""
MANIFEST_PARAMS = ("variant", "suite", "adapter", "memory", "reader", "judge", "retrieval", "scoring.name",
                   "paths.custody_dir", "paths.suite", "paths.fingerprints", "paths.contexts", "paths.hypotheses",
                   "paths.judged")
"""What :func:`sections` (metrics/run.json, stage ``run_manifest longmemeval``) reads."""
OUTPUT_PARAMS = ("variant.file", "paths.raw_dir", "paths.adapted", "paths.retrieval_log", "paths.contexts",
                 "paths.hypotheses", "paths.judged")
"""What :func:`output_files` (stage ``custody_manifest longmemeval``) reads."""

QA_DETAIL = "metrics/detail/qa.json"
"""Where the per-type accuracies and their counts are (the qa_metrics stage's detail file)."""
PROFILE = gate.PROFILE

TASK_METRICS: Mapping[str, TaskMetric] = MappingProxyType({
    **{t: TaskMetric(QA_DETAIL, f"per_type.{t}.accuracy", f"per_type.{t}.n") for t in QUESTION_TYPES},
    "abstention": TaskMetric(QA_DETAIL, "abstention.accuracy", "abstention.n"),
})

OFFICIAL = gate.OFFICIAL


# ---------------------------------------------------------------------------------------------
# The run manifest's sections (metrics/run.json)

RUN_MANIFEST = "metrics/run.json"
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


def reader_prompt_module(spec: Mapping[str, Any]) -> str | None:
    """The reader component's ``prompt_module`` (the component is built from its conf section)."""
    from mnemetric.config import build

    return getattr(build(dict(spec), "reader"), "prompt_module", None)


def reader_block(p: Mapping[str, Any], fingerprint: Mapping[str, Any], hyps: Sequence[Mapping[str, Any]]
                 ) -> dict[str, Any]:
    """The reader: ``prompt_set_sha256`` is the fingerprint of the module the component names as its
    prompt set (``prompt_module``; None for a reader that sends no prompts)."""
    spec = p["reader"]
    module = reader_prompt_module(spec)
    prompt = (fingerprint.get("modules") or {}).get(module) if module else None
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


def memory_block(spec: Mapping[str, Any], fp: Mapping[str, Any]) -> dict[str, Any]:
    """name, config and code fingerprint; plus ``libraries`` (distribution → version) for a system that wraps
    a third-party library (the fingerprint's ``libraries``, mnemetric.fingerprint)."""
    libraries = {"libraries": dict(fp["libraries"])} if fp.get("libraries") else {}
    return {"name": spec["name"], "config_sha256": config_sha256(spec), "fingerprint_sha256": fp.get("sha256"),
            **libraries}


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
        "memory": memory_block(p["memory"], inp.memory_fingerprint),
        "reader": reader_block(p, inp.reader_fingerprint, inp.hypotheses),
        "judge": judge_block(p, inp.judged),
        "retrieval": {"requested": {k: p["retrieval"].get(k) for k in ("granularity", "context_k", "context_tokens")},
                      "delivered": delivered_budget(inp.contexts)},
        "scoring": {"profile": p["scoring"]["name"]},
        "packages": {name: inp.versions.get(name, NOT_INSTALLED) for name in PACKAGES},
        "counts": counts_block(len(inp.suite.get("question_ids") or []), inp.judged, inp.judged_failures),
    }


def counts_block(questions: int, judged: Sequence[Mapping[str, Any]], failed: int) -> dict[str, Any]:
    """``{questions, judged, failed}``; where questions failed, also both accuracies (``accuracy``:
    ``failed_excluded`` over the judged lines, ``failed_as_wrong`` over judged + failed)."""
    out: dict[str, Any] = {"questions": questions, "judged": len(judged), "failed": failed}
    if failed:
        correct = sum(1 for j in judged if (j.get("autoeval_label") or {}).get("label") is True)
        out["accuracy"] = {"failed_excluded": correct / len(judged) if judged else None,
                           "failed_as_wrong": correct / (len(judged) + failed)}
    return out


_TEXT = ((str,), "a string")
_COUNT = ((int,), "an integer")
SHOWN: Mapping[str, tuple[str, str, Any]] = MappingProxyType({
    "mnemetric_version": ("", "mnemetric_version", _TEXT),
    **{f"variant_{k}": ("variant", k, _TEXT) for k in ("name", "source", "repo", "revision", "file", "sha256")},
    "variant_sha256_verified": ("variant", "sha256_verified", BOOLEAN),
    "suite_name": ("suite", "name", _TEXT), "suite_size": ("suite", "size", _COUNT),
    "suite_ids_sha256": ("suite", "ids_sha256", _TEXT),
    **{f"memory_{k}": ("memory", k, _TEXT) for k in ("name", "fingerprint_sha256", "config_sha256")},
    "reader_name": ("reader", "name", _TEXT), "reader_requested_model": ("reader", "requested_model", _TEXT),
    "reader_resolved_models": ("reader", "resolved_models", None),
    "judge_name": ("judge", "name", _TEXT), "judge_resolved_models": ("judge", "resolved_models", None),
    "judge_prompt_set_sha256": ("judge", "prompt_set_sha256", _TEXT), "judge_endpoints": ("judge", "endpoints", None),
    "scoring_profile": ("scoring", "profile", _TEXT),
    **{f"counts_{k}": ("counts", k, _COUNT) for k in ("questions", "judged", "failed")},
})
"""What the doors read of metrics/run.json: attribute -> (section, key, kind; None: a list of strings)."""


@dataclass(frozen=True)
class RunShown:
    """What the doors (the card's custody bullets) read of metrics/run.json (:func:`run_sections`' layout),
    typed: :data:`SHOWN`. A key the manifest lacks (an older or partial one) is None and shows as "—" (or
    as the card words it); a key of the wrong type is an InputError naming the file and the key."""

    mnemetric_version: str | None = None
    variant_name: str | None = None
    variant_source: str | None = None
    variant_repo: str | None = None
    variant_revision: str | None = None
    variant_file: str | None = None
    variant_sha256: str | None = None
    variant_sha256_verified: bool | None = None
    suite_name: str | None = None
    suite_size: int | None = None
    suite_ids_sha256: str | None = None
    memory_name: str | None = None
    memory_fingerprint_sha256: str | None = None
    memory_config_sha256: str | None = None
    reader_name: str | None = None
    reader_requested_model: str | None = None
    reader_resolved_models: tuple[str, ...] | None = None
    judge_name: str | None = None
    judge_resolved_models: tuple[str, ...] | None = None
    judge_prompt_set_sha256: str | None = None
    judge_endpoints: tuple[str, ...] | None = None
    scoring_profile: str | None = None
    counts_questions: int | None = None
    counts_judged: int | None = None
    counts_failed: int | None = None

    @classmethod
    def from_record(cls, raw: Any, *, file: str = RUN_MANIFEST) -> RunShown:
        f = Fields.shown(raw, file=file, fix="regenerate it (dvc repro run_manifest)")
        values = {}
        for attr, (section, key, kind) in SHOWN.items():
            view = f.within(section) if section else f
            values[attr] = view.maybe_strings(key) if kind is None else view.maybe(key, kind)
        return cls(**values)


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


FINGERPRINTS: Mapping[str, str] = MappingProxyType({"adapter": "adapter", "memory": "memory", "reader": "reader",
                                                    "judge": "judge"})
"""The components whose code fingerprint the fingerprint stage writes (section -> data/fingerprints/<stem>.json)."""


def _review(inv: Any, manifests: Sequence[Mapping[str, Any]], crosscheck: Mapping[str, Any] | None) -> Any:
    from mnemetric.longmemeval.inventory_review import review

    return review(inv, manifests, crosscheck)


def _report(params: Mapping[str, Any], card: str, baseline: str | None = None, **options: Any) -> Any:
    from mnemetric.longmemeval.report import report_model

    return report_model(params, card, baseline, **options)


def _summary(params: Mapping[str, Any], read: Callable[[str], Any]) -> Any:
    from mnemetric.longmemeval.doors import summary

    return summary(params, read)


@dataclass(frozen=True)
class LongMemEvalFamily:
    """The V1 family (a :class:`mnemetric.family.Family`); ``name`` and ``metrics`` come from its conf option."""

    name: str = "longmemeval"
    metrics: str = "metrics/qa.json"
    display_name: str = "LongMemEval"
    task_metrics: Mapping[str, TaskMetric] = field(default_factory=lambda: TASK_METRICS)
    required_sections: Sequence[str] = REQUIRED_SECTIONS
    crosscheck: CrosscheckSpec | None = CROSSCHECK
    inventory_review: Callable[..., Any] | None = _review
    run_manifest: str | None = RUN_MANIFEST
    manifest_sections: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = manifest_sections
    card: CardSpec | None = CARD
    output_files: Callable[[Mapping[str, Any]], Sequence[str]] | None = output_files
    params_sections: Mapping[str, Any] = field(default_factory=lambda: {**GROUP_SECTIONS, **SELF_SECTIONS})
    conf_groups: Mapping[str, str] = field(default_factory=lambda: dict(CONF_GROUPS))
    manifest_params: Sequence[str] = MANIFEST_PARAMS
    output_params: Sequence[str] = OUTPUT_PARAMS
    fingerprints: Mapping[str, str] = field(default_factory=lambda: FINGERPRINTS)
    report_params: Sequence[str] = REPORT_PARAMS
    report: Callable[..., Any] | None = _report

    def official_reasons(self, manifest: Mapping[str, Any]) -> list[str]:
        """LongMemEval's gate (:mod:`mnemetric.longmemeval.gate`, under :data:`OFFICIAL`)."""
        return gate.official_reasons(manifest)

    def summary(self, params: Mapping[str, Any], read: Callable[[str], Any]) -> Any:
        """Its row of `mnemetric runs` (:func:`mnemetric.longmemeval.doors.summary`)."""
        return _summary(params, read)


FAMILY = LongMemEvalFamily()
