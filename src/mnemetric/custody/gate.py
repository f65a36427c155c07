"""The publishability gate: may a run's QA numbers be called the official LongMemEval protocol?

``official_equivalence`` is true only when every condition holds; otherwise false with one reason
per failed condition (never silent). Conditions (upstream facts: xiaowu0162/LongMemEval
src/evaluation/evaluate_qa.py @ 9e0b455f — gpt-4o-2024-08-06, temperature 0, max_tokens 10, n 1,
the official OpenAI API; the official files are the pinned Hugging Face files):

1. the dataset is an official pinned file (variant ``source`` huggingface) verified by sha256;
2. the suite is ``full``;
3. the scoring profile is ``longmemeval-session-upstream-v1``;
4. the judge model requested and every model the server returned is ``gpt-4o-2024-08-06``;
5. the judge's prompt set hashes to the pinned
   :data:`mnemetric.longmemeval.judge.upstream_prompts.PROMPT_SET_SHA256`;
6. every judge request sent had exactly the upstream parameters (read back from the cache; a
   request not in the cache cannot show what was sent, which is a reason);
7. every question was judged and none failed;
8. the judge endpoint is the official API ``https://api.openai.com/v1`` (a proxy or local server
   serving the same model name is a reason).

The gate reads the run-manifest layout of :mod:`mnemetric.custody.manifest` (pure; no I/O).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

OFFICIAL_SOURCE = "huggingface"
OFFICIAL_SUITE = "full"
OFFICIAL_PROFILE = "longmemeval-session-upstream-v1"
OFFICIAL_JUDGE_MODEL = "gpt-4o-2024-08-06"
OFFICIAL_PARAMS = {"temperature": 0, "max_tokens": 10, "n": 1}
OFFICIAL_ENDPOINT = "https://api.openai.com/v1"


def _pinned_prompt_set() -> str | None:
    from mnemetric.longmemeval.judge.upstream_prompts import PROMPT_SET_SHA256
    return PROMPT_SET_SHA256


def _dataset_reasons(m: Mapping[str, Any]) -> list[str]:
    v, out = m["variant"], []
    if v.get("source") != OFFICIAL_SOURCE:
        out.append(f"dataset variant {v.get('name')!r} is not an official pinned file (source {v.get('source')!r}, "
                   f"not {OFFICIAL_SOURCE!r})")
    if not v.get("sha256_verified"):
        out.append(f"dataset variant {v.get('name')!r} was not verified by sha256")
    if m["suite"].get("name") != OFFICIAL_SUITE:
        out.append(f"suite {m['suite'].get('name')!r} is not the full suite")
    if m["scoring"].get("profile") != OFFICIAL_PROFILE:
        out.append(f"scoring profile {m['scoring'].get('profile')!r} is not {OFFICIAL_PROFILE!r}")
    return out


def _params_reasons(sent: Mapping[str, Any] | None) -> list[str]:
    if sent is None:
        return ["no judge request was sent (no parameters to check)"]
    out = []
    if sent.get("not_in_cache"):
        out.append(f"parameters of {sent['not_in_cache']} of {sent.get('requests')} judge request(s): not in cache "
                   "(what was sent cannot be shown)")
    wrong = [v for v in sent.get("values", []) if dict(v) != OFFICIAL_PARAMS]
    if wrong:
        out.append(f"judge parameters sent {wrong} differ from upstream's {OFFICIAL_PARAMS}")
    return out


def _judge_reasons(j: Mapping[str, Any]) -> list[str]:
    out = []
    if j.get("requested_model") != OFFICIAL_JUDGE_MODEL:
        out.append(f"judge model requested {j.get('requested_model')!r} is not {OFFICIAL_JUDGE_MODEL!r}")
    resolved = list(j.get("resolved_models") or [])
    if resolved != [OFFICIAL_JUDGE_MODEL]:
        out.append(f"judge model(s) returned {resolved} are not [{OFFICIAL_JUDGE_MODEL!r}]")
    pinned = _pinned_prompt_set()
    if len(j.get("prompt_set_sha256s") or []) > 1:
        out.append(f"the judgments name {len(j['prompt_set_sha256s'])} different prompt sets")
    if pinned is None or j.get("prompt_set_sha256") != pinned:
        out.append(f"judge prompt set sha256 {j.get('prompt_set_sha256')} is not the pinned upstream set {pinned}")
    out += _params_reasons(j.get("params_sent"))
    endpoints = list(j.get("endpoints") or [])
    if endpoints != [OFFICIAL_ENDPOINT]:
        out.append(f"judge endpoint(s) {endpoints} are not the official API {OFFICIAL_ENDPOINT} "
                   "(another server may serve the same model name)")
    return out


def _count_reasons(c: Mapping[str, Any]) -> list[str]:
    out = []
    if c.get("questions", 0) == 0:
        out.append("the run has no questions")
    if c.get("judged") != c.get("questions"):
        out.append(f"{c.get('judged')} of {c.get('questions')} question(s) judged")
    if c.get("failed"):
        out.append(f"{c['failed']} question(s) failed")
    return out


def official_equivalence(manifest: Mapping[str, Any]) -> tuple[bool, list[str]]:
    """(value, reasons): true only when no condition of the module docstring fails."""
    reasons = _dataset_reasons(manifest) + _judge_reasons(manifest["judge"]) + _count_reasons(manifest["counts"])
    return not reasons, reasons
