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
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mnemetric.errors import InputError

_FIX = "rejudge the hypotheses (`dvc repro judge` or `mnemetric judge`)"
_STR, _OPT_STR = ((str,), "a string"), ((str, type(None)), "a string or null")
_NUM, _OPT_NUM = ((int, float), "a number"), ((int, float, type(None)), "a number or null")
_INT = ((int,), "an integer")
CALL_KEYS = ("prompt_set_sha256", "source_sha256", "requested_model", "params", "endpoint", "request_sha256",
             "response", "usage", "cost_usd")
OFFLINE_KEYS = ("judge", "official_equivalence")


def _get(raw: Mapping[str, Any], name: str, kind: tuple[tuple[type, ...], str], file: str, where: str,
         prefix: str) -> Any:
    kinds, what = kind
    if name not in raw:
        raise InputError(file, where, prefix + name, "missing", fix=_FIX)
    value = raw[name]
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise InputError(file, where, prefix + name, f"expected {what}, got {type(value).__name__} {value!r:.60}",
                         fix=_FIX)
    return value


def _object(raw: Any, file: str, where: str, field: str) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise InputError(file, where, field, f"expected a JSON object, got {type(raw).__name__}", fix=_FIX)
    return raw


@dataclass(frozen=True)
class JudgeParams:
    """The sampling parameters sent (upstream evaluate_qa.py: temperature 0, max_tokens 10, n 1)."""

    temperature: float
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
        where = f"line {line}" if isinstance(line, int) else line

        def get(name: str, kind: tuple[tuple[type, ...], str], into: Mapping[str, Any] = raw, sub: str = "") -> Any:
            return _get(into, name, kind, file, where, prefix + sub)

        params = _object(get("params", ((dict,), "an object")), file, where, prefix + "params")
        usage = _object(get("usage", ((dict,), "an object")), file, where, prefix + "usage")
        return cls(get("prompt_set_sha256", _STR), get("source_sha256", _STR), get("requested_model", _STR),
                   JudgeParams(get("temperature", _NUM, params, "params."), get("max_tokens", _INT, params, "params."),
                               get("n", _INT, params, "params.")),
                   get("endpoint", _OPT_STR), get("request_sha256", _STR), get("response", _STR),
                   get("prompt_tokens", _INT, usage, "usage."), get("completion_tokens", _INT, usage, "usage."),
                   get("cost_usd", _OPT_NUM))

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
        where = f"line {line}" if isinstance(line, int) else line
        raw = _object(raw, file, where, prefix.rstrip("."))
        judge = _get(raw, "judge", _STR, file, where, prefix)
        allowed = ("judge", *CALL_KEYS) if "official_equivalence" not in raw else OFFLINE_KEYS
        extra = [k for k in raw if k not in allowed]
        if extra:
            raise InputError(file, where, prefix + extra[0], f"unexpected field (a trace has {', '.join(allowed)})",
                             fix=_FIX)
        if "official_equivalence" in raw:
            if raw["official_equivalence"] is not False:
                raise InputError(file, where, prefix + "official_equivalence",
                                 f"an offline judge is never official (expected false, got {raw['official_equivalence']!r})",
                                 fix=_FIX)
            return cls.offline(judge)
        return cls(judge, JudgeCall.from_record(raw, file=file, line=line, prefix=prefix))

    def to_record(self) -> dict[str, Any]:
        if self.call is None:
            return {"judge": self.judge, "official_equivalence": self.official_equivalence}
        return {"judge": self.judge, **self.call.to_record()}
