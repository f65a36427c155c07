"""LongMemEval's publishability gate: may a run's QA numbers be called the official upstream protocol?

The family's rules (``LongMemEvalFamily.official_reasons``); custody frames them
(:func:`mnemetric.custody.gate.gate`: official exactly when there is no reason). One reason per
failed condition (never silent), under :data:`OFFICIAL` (``protocol`` below: upstream evaluate_qa.py
@ 9e0b455f — gpt-4o-2024-08-06, temperature 0, max_tokens 10, n 1, the official OpenAI API; the
official files are the pinned Hugging Face files s, m and oracle):

1. the dataset is an official pinned file (variant ``source`` = ``protocol.source``) verified by sha256;
2. the suite is ``protocol.suite``;
3. the scoring profile is ``protocol.profile``;
4. the judge model requested and every model the server returned is ``protocol.judge_model``;
5. the judge's prompt set hashes to the pinned ``protocol.prompt_set_sha256``;
6. every judge request sent had exactly ``protocol.judge_params`` (read back from the cache; a
   request not in the cache cannot show what was sent, which is a reason);
7. every question was judged and none failed;
8. the judge endpoint is ``protocol.endpoint`` (a proxy or local server serving the same model
   name is a reason).

The gate reads the manifest sections of :data:`REQUIRED_SECTIONS` (V1's layout,
:mod:`mnemetric.longmemeval.family`; pure, no I/O).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from mnemetric.longmemeval.judge.upstream_prompts import PROMPT_SET_SHA256
from mnemetric.longmemeval.rules import OFFICIAL_JUDGE_MODEL, OFFICIAL_JUDGE_PARAMS

REQUIRED_SECTIONS = ("variant", "suite", "scoring", "judge", "counts")
"""The manifest sections the gate reads."""
PROFILE = "longmemeval-session-upstream-v1"


@dataclass(frozen=True)
class OfficialProtocol:
    """The conditions of LongMemEval's publishability gate (values from upstream's facts)."""

    source: str
    """The variant ``source`` of an official pinned dataset file."""
    suite: str
    profile: str
    judge_model: str
    judge_params: Mapping[str, Any]
    endpoint: str
    prompt_set_sha256: str | None
    """The pinned judge prompt set (None: not recorded, so no prompt set can match)."""
    official_variants: frozenset[str]
    """Variant names that are official files (the inventory's full held-out rule)."""


OFFICIAL = OfficialProtocol(
    source="huggingface", suite="full", profile=PROFILE, judge_model=OFFICIAL_JUDGE_MODEL,
    judge_params=MappingProxyType(dict(OFFICIAL_JUDGE_PARAMS)), endpoint="https://api.openai.com/v1",
    prompt_set_sha256=PROMPT_SET_SHA256, official_variants=frozenset({"s", "m", "oracle"}))


def _dataset_reasons(m: Mapping[str, Any], p: OfficialProtocol) -> list[str]:
    v, out = m["variant"], []
    if v.get("source") != p.source:
        out.append(f"dataset variant {v.get('name')!r} is not an official pinned file (source {v.get('source')!r}, "
                   f"not {p.source!r})")
    if not v.get("sha256_verified"):
        out.append(f"dataset variant {v.get('name')!r} was not verified by sha256")
    if m["suite"].get("name") != p.suite:
        out.append(f"suite {m['suite'].get('name')!r} is not the {p.suite} suite")
    if m["scoring"].get("profile") != p.profile:
        out.append(f"scoring profile {m['scoring'].get('profile')!r} is not {p.profile!r}")
    return out


def _params_reasons(sent: Mapping[str, Any] | None, p: OfficialProtocol) -> list[str]:
    if sent is None:
        return ["no judge request was sent (no parameters to check)"]
    out = []
    if sent.get("not_in_cache"):
        out.append(f"parameters of {sent['not_in_cache']} of {sent.get('requests')} judge request(s): not in cache "
                   "(what was sent cannot be shown)")
    official = dict(p.judge_params)
    wrong = [v for v in sent.get("values", []) if dict(v) != official]
    if wrong:
        out.append(f"judge parameters sent {wrong} differ from upstream's {official}")
    return out


def _judge_reasons(j: Mapping[str, Any], p: OfficialProtocol) -> list[str]:
    out = []
    if j.get("requested_model") != p.judge_model:
        out.append(f"judge model requested {j.get('requested_model')!r} is not {p.judge_model!r}")
    resolved = list(j.get("resolved_models") or [])
    if resolved != [p.judge_model]:
        out.append(f"judge model(s) returned {resolved} are not [{p.judge_model!r}]")
    pinned = p.prompt_set_sha256
    if len(j.get("prompt_set_sha256s") or []) > 1:
        out.append(f"the judgments name {len(j['prompt_set_sha256s'])} different prompt sets")
    if pinned is None or j.get("prompt_set_sha256") != pinned:
        out.append(f"judge prompt set sha256 {j.get('prompt_set_sha256')} is not the pinned upstream set {pinned}")
    out += _params_reasons(j.get("params_sent"), p)
    endpoints = list(j.get("endpoints") or [])
    if endpoints != [p.endpoint]:
        out.append(f"judge endpoint(s) {endpoints} are not the official API {p.endpoint} "
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


def official_reasons(manifest: Mapping[str, Any], protocol: OfficialProtocol = OFFICIAL) -> list[str]:
    """One reason per condition of the module docstring that fails under ``protocol`` (empty: official)."""
    return (_dataset_reasons(manifest, protocol) + _judge_reasons(manifest["judge"], protocol)
            + _count_reasons(manifest["counts"]))
