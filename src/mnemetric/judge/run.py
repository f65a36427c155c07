"""Judging hypotheses: the upstream LLM judge or the offline lexical one → upstream judged records.

Each output line is the hypothesis record plus ``autoeval_label`` {model, label} — what upstream
print_qa_metrics.py reads — and our custody fields under ``mnemetric_judge`` (judge name, prompt-set
sha256, request sha256, cached, usage). Output order = hypothesis order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError, InputError
from .lexical import LexicalJudge
from .upstream_prompts import PromptSet, parse_label

KINDS = ("upstream", "lexical")


@dataclass(frozen=True)
class Reference:
    question_id: str
    question_type: str
    question: str
    answer: str | int | float


def _refs_for(hyps: Sequence[Mapping[str, Any]], refs: Mapping[str, Reference], file: str) -> list[Reference]:
    out = []
    for i, h in enumerate(hyps, start=1):
        ref = refs.get(h["question_id"])
        if ref is None:
            raise InputError(file, f"line {i} ({h['question_id']})", "question_id", "not in the reference file",
                             fix="judge hypotheses against the dataset they answer")
        out.append(ref)
    return out


def judge_lexical(hyps: Sequence[Mapping[str, Any]], refs: Mapping[str, Reference], file: str) -> list[dict]:
    judge = LexicalJudge()
    out = []
    for h, r in zip(hyps, _refs_for(hyps, refs, file)):
        label = judge.autoeval_label(r.question_id, r.question_type, r.question, r.answer, h["hypothesis"])
        out.append(dict(h) | {"autoeval_label": label,
                              "mnemetric_judge": {"judge": "lexical", "official_equivalence": False}})
    return out


def upstream_requests(hyps: Sequence[Mapping[str, Any]], refs: Mapping[str, Reference], prompts: PromptSet,
                      spec: Mapping[str, Any], file: str) -> list[dict]:
    """One chat request per hypothesis, exactly as upstream evaluate_qa.py sends it."""
    params = {"temperature": spec["temperature"], "max_tokens": spec["max_tokens"], "n": spec["n"]}
    return [{"model": spec["model"], "params": params,
             "messages": [{"role": "user", "content": prompts.render(r.question_id, r.question_type, r.question,
                                                                     r.answer, h["hypothesis"])}]}
            for h, r in zip(hyps, _refs_for(hyps, refs, file))]


def judge_upstream(hyps: Sequence[Mapping[str, Any]], refs: Mapping[str, Reference], prompts: PromptSet,
                   spec: Mapping[str, Any], client, file: str, progress: bool = True) -> list[dict]:
    """Send (or take from cache) one request per hypothesis; label = "yes" in the reply."""
    results = client.run_chat_batch(upstream_requests(hyps, refs, prompts, spec, file), progress=progress)
    out = []
    for h, res in zip(hyps, results):
        out.append(dict(h) | {
            "autoeval_label": {"model": res.model, "label": parse_label(res.text)},
            "mnemetric_judge": {"judge": spec["name"], "prompt_set_sha256": prompts.prompt_set_sha256,
                                "source_sha256": prompts.source_sha256, "requested_model": spec["model"],
                                "params": {k: spec[k] for k in ("temperature", "max_tokens", "n")},
                                "endpoint": client.base_url, "request_sha256": res.request_sha256,
                                "cached": res.cached, "response": res.text,
                                "usage": {"prompt_tokens": res.usage.prompt_tokens,
                                          "completion_tokens": res.usage.completion_tokens},
                                "cost_usd": res.cost_usd},
        })
    return out


def check_kind(spec: Mapping[str, Any]) -> str:
    kind = spec.get("kind")
    if kind not in KINDS:
        raise ConfigError(f"judge.kind: {kind!r} is not one of {KINDS} (see conf/judge/)")
    return kind
