"""The publishability gate: may a run's QA numbers be called its family's official protocol?

``official_equivalence`` is true only when every condition holds; otherwise false with one reason
per failed condition (never silent). The values come from the family's
:class:`mnemetric.family.OfficialProtocol` (``protocol`` below; for LongMemEval, from
:data:`mnemetric.longmemeval.family.OFFICIAL`: upstream evaluate_qa.py @ 9e0b455f — gpt-4o-2024-08-06,
temperature 0, max_tokens 10, n 1, the official OpenAI API; the official files are the pinned
Hugging Face files):

1. the dataset is an official pinned file (variant ``source`` = ``protocol.source``) verified by sha256;
2. the suite is ``protocol.suite``;
3. the scoring profile is ``protocol.profile``;
4. the judge model requested and every model the server returned is ``protocol.judge_model``;
5. the judge's prompt set hashes to the pinned ``protocol.prompt_set_sha256``;
6. every judge request sent had exactly ``protocol.judge_params`` (as each judged line records them; a
   line that records none cannot show what was sent, which is a reason);
7. every question was judged and none failed;
8. the judge endpoint is ``protocol.endpoint`` (a proxy or local server serving the same model
   name is a reason).

The gate reads the run-manifest layout of :mod:`mnemetric.custody.manifest` (pure; no I/O) and
imports no family: the door passes the family's protocol.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mnemetric.family import OfficialProtocol


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
        out.append(f"parameters of {sent['not_in_cache']} of {sent.get('requests')} judge request(s): not recorded "
                   "in the judged lines (what was sent cannot be shown; rejudge to record it)")
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


def official_equivalence(manifest: Mapping[str, Any], protocol: OfficialProtocol) -> tuple[bool, list[str]]:
    """(value, reasons): true only when no condition of the module docstring fails under ``protocol``."""
    reasons = (_dataset_reasons(manifest, protocol) + _judge_reasons(manifest["judge"], protocol)
               + _count_reasons(manifest["counts"]))
    return not reasons, reasons
