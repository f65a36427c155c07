"""The judge trace: Mnemetric's custody fields (``mnemetric_judge``) on each judged line, typed once.

A judged line (upstream evaluate_qa.py @ 9e0b455f writes the hypothesis line plus
``autoeval_label`` {model, label}; hypotheses.py reads that part) also carries, when Mnemetric
judged it, ``mnemetric_judge`` in one of two shapes, keys in this order:

* an offline judge (the lexical one): ``{"judge": name, "official_equivalence": false}``;
* a model judge (one call): ``{"judge", "prompt_set_sha256", "source_sha256", "requested_model",
  "params": {"temperature", "max_tokens", "n"}, "endpoint", "request_sha256", "response",
  "usage": {"prompt_tokens", "completion_tokens"}, "cost_usd"}``.

Files judged elsewhere (upstream's own script) have no trace. Nothing in a trace depends on the
run (no "cached" flag), so a cold and a warm run write the same bytes.

:func:`judge_provenance` says, from the labels and their traces, which judge produced them and
whether it is upstream's official judge (the ``official_equivalence`` of the QA metrics).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from mnemetric.longmemeval.rules import OFFICIAL_JUDGE_MODEL, OFFICIAL_JUDGE_PARAMS
from mnemetric.records import OBJECT, Fields, record_name

_FIX: Final = "rejudge the hypotheses (`dvc repro judge` or `mnemetric judge`)"
CALL_KEYS: Final = ("prompt_set_sha256", "source_sha256", "requested_model", "params", "endpoint",
                    "request_sha256", "response", "usage", "cost_usd")
"""A model judge's trace keys after ``judge``, in file order."""
OFFLINE_KEYS: Final = ("judge", "official_equivalence")
"""An offline judge's trace keys, in file order."""


@dataclass(frozen=True)
class JudgeParams:
    """The sampling parameters sent (upstream evaluate_qa.py: temperature 0, max_tokens 10, n 1)."""

    temperature: float
    """A number as sent (upstream: 0)."""
    max_tokens: int
    n: int

    def to_record(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "max_tokens": self.max_tokens, "n": self.n}


@dataclass(frozen=True)
class JudgeCall:
    """One model call behind a label: prompt provenance, request key, reply and its cost."""

    prompt_set_sha256: str
    source_sha256: str
    """sha256 of the upstream file the prompts were read from."""
    requested_model: str
    params: JudgeParams
    endpoint: str | None
    request_sha256: str
    response: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None

    @classmethod
    def from_record(cls, raw: Mapping[str, Any], *, file: str, line: int | str, prefix: str = "") -> JudgeCall:
        f = Fields.of(raw, file=file, record=record_name(line), prefix=prefix, fix=_FIX)
        params, usage = f.at("params", OBJECT), f.at("usage", OBJECT)
        return cls(f.string("prompt_set_sha256"), f.string("source_sha256"), f.string("requested_model"),
                   JudgeParams(params.number("temperature"), params.integer("max_tokens"), params.integer("n")),
                   f.optional_string("endpoint"), f.string("request_sha256"), f.string("response"),
                   usage.integer("prompt_tokens"), usage.integer("completion_tokens"), f.optional_number("cost_usd"))

    def to_record(self) -> dict[str, Any]:
        return {"prompt_set_sha256": self.prompt_set_sha256, "source_sha256": self.source_sha256,
                "requested_model": self.requested_model, "params": self.params.to_record(),
                "endpoint": self.endpoint, "request_sha256": self.request_sha256, "response": self.response,
                "usage": {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens},
                "cost_usd": self.cost_usd}


@dataclass(frozen=True)
class JudgeTrace:
    """``mnemetric_judge`` of one judged line: the judge's name and either its model call or, for an
    offline judge, its stated ``official_equivalence`` (always false)."""

    judge: str
    call: JudgeCall | None = None
    official_equivalence: bool | None = None

    def __post_init__(self) -> None:
        if (self.call is None) == (self.official_equivalence is None):
            raise ValueError("a JudgeTrace holds either a model call or an offline judge's official_equivalence")

    @classmethod
    def offline(cls, judge: str) -> JudgeTrace:
        return cls(judge, official_equivalence=False)

    @classmethod
    def from_record(cls, raw: Any, *, file: str, line: int | str, prefix: str = "mnemetric_judge.") -> JudgeTrace:
        """Validate a trace (either shape; no other keys); errors name file, line and field."""
        f = Fields.of(raw, file=file, record=record_name(line), prefix=prefix, fix=_FIX)
        judge = f.string("judge")
        allowed = ("judge", *CALL_KEYS) if "official_equivalence" not in f.raw else OFFLINE_KEYS
        extra = [k for k in f.raw if k not in allowed]
        if extra:
            raise f.error(extra[0], f"unexpected field (a trace has {', '.join(allowed)})")
        if "official_equivalence" in f.raw:
            if f.raw["official_equivalence"] is not False:
                raise f.error("official_equivalence", "an offline judge is never official "
                              f"(expected false, got {f.raw['official_equivalence']!r})")
            return cls.offline(judge)
        return cls(judge, JudgeCall.from_record(raw, file=file, line=line, prefix=prefix))

    def to_record(self) -> dict[str, Any]:
        if self.call is None:
            return {"judge": self.judge, "official_equivalence": self.official_equivalence}
        return {"judge": self.judge, **self.call.to_record()}


def judge_provenance(models: Iterable[str], prompt_set_sha256: str | None,
                     source_sha256: str | None = None, *, requested_models: Iterable[str] | None = None,
                     params: Iterable[Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """Record which judge produced the labels and whether it is the official upstream judge.

    Upstream (print_qa_metrics.py @ 9e0b455f) asserts every autoeval_label.model equals
    "gpt-4o-2024-08-06". We do not raise: ``official_equivalence`` is True only if every label's
    model (the id the server resolved) is that id, every request asked for that id (when known),
    every request used upstream's parameters (temperature 0, max_tokens 10, n 1; when known), and
    the prompt set is the pinned one (prompt-set sha256 equal to the recorded pin, or, while that
    pin is not recorded, templates extracted from the sha256-pinned upstream file). A server that
    merely names itself gpt-4o-2024-08-06 is not detectable here; the endpoint is recorded with
    each judgment for that reason.
    """
    from mnemetric.longmemeval.judge.upstream_prompts import PROMPT_SET_SHA256, SHA256

    model_list = list(models)
    reasons = []
    if not model_list:
        reasons.append("no judged labels")
    others = sorted({m for m in model_list if m != OFFICIAL_JUDGE_MODEL})
    if others:
        reasons.append(f"judge model(s) {others} differ from {OFFICIAL_JUDGE_MODEL}")
    asked = sorted({m for m in (requested_models or []) if m != OFFICIAL_JUDGE_MODEL})
    if asked:
        reasons.append(f"requested judge model(s) {asked} differ from {OFFICIAL_JUDGE_MODEL}")
    bad_params = [dict(p) for p in (params or []) if {k: p.get(k) for k in OFFICIAL_JUDGE_PARAMS} != OFFICIAL_JUDGE_PARAMS]
    if bad_params:
        reasons.append(f"judge request parameters {bad_params[0]} differ from upstream's {OFFICIAL_JUDGE_PARAMS}")
    if PROMPT_SET_SHA256 is not None and prompt_set_sha256 != PROMPT_SET_SHA256:
        reasons.append(f"prompt set sha256 {prompt_set_sha256} differs from the pinned {PROMPT_SET_SHA256}")
    if PROMPT_SET_SHA256 is None and source_sha256 != SHA256:
        reasons.append(f"prompts not extracted from the pinned upstream evaluate_qa.py (sha256 {SHA256})")
    return {"official_equivalence": not reasons, "judge_models": sorted(set(model_list)),
            "prompt_set_sha256": prompt_set_sha256, "reasons": reasons}


def official_equivalence(models: Iterable[str], prompt_set_sha256: str | None, source_sha256: str | None = None) -> bool:
    """Shorthand for ``judge_provenance(...)["official_equivalence"]``."""
    return judge_provenance(models, prompt_set_sha256, source_sha256)["official_equivalence"]
