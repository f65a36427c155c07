"""The two LLM checkers of LongMemEval-V2 (llm_abstention_checker, llm_gotchas_checker) and an offline stand-in.

Rules from github.com/xiaowu0162/LongMemEval-V2 at be15ea6e995462f3391c1a610892df3f67dfa7bd,
evaluation/qa_eval_metrics.py llm_abstention_checker / llm_gotchas_checker as harness.py
score_prediction calls them, with run_eval.py's judge defaults (code ours; prompt texts read at run time
from the pinned file — :mod:`.upstream_text`, :mod:`.requests`):

* precheck (:func:`~.requests.checker_precheck`): an empty stripped raw response or gold answer scores
  False with no call.
* request: ``[system rubric, user filled template]`` (:func:`~.requests.checker_messages`), text only;
  model gpt-5.2, reasoning_effort medium, max_completion_tokens 4096 (:func:`~.requests.checker_params`);
  a :class:`mnemetric.execute.ModelCall` (:meth:`LLMCheckers.calls`) that the run's executor sends (cache,
  budget, retries; a rerun sends nothing); :meth:`LLMCheckers.read` reads its outcome. Each verdict keeps
  the request sha256 and the parameters sent.
* the reply text (:data:`CHECKER_TEXT_FROM`): the client's ``text_from="content_or_parts"``
  rule (:mod:`mnemetric.llm.replies`; _call_chat_completion's: the content string stripped, or its text
  parts joined, never ``reasoning``). Upstream returns "" for a blank content string (and its label
  parser then aborts); we make any blank text a non-answer, so the question is failed, never scored.
* the verdict = ``parse_judge_label(reply) == 1`` (:mod:`.judge_label`). The judge is asked even for an
  UNKNOWN answer; the harness then scores it 0 anyway.
* llm_abstention_checker on a question type without "-abs" aborts upstream.

Where upstream aborts the run (an empty / non-answer judge reply, an unparseable label, the -abs rule) we
mark the QUESTION failed with the reason and go on; the run is then not official.

:class:`OfflineChecker` is ours, a lexical stand-in for the offline sample (never official): abstention
→ True iff the parsed answer contains a negation word (:data:`NEGATIONS`) — the answer rejects the
premise; gotchas → True iff at least half of the gold answer's content words occur in the raw response.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from mnemetric.errors import PluginError
from mnemetric.execute import ANSWER, NO_REPLY, CallOutcome, Executor, ModelCall
from mnemetric.longmemeval_v2.checkers import ABSTENTION_CHECKER, LLM_CHECKERS
from mnemetric.longmemeval_v2.judge_label import UnparseableJudgeReply, parse_judge_label, reply_reason
from mnemetric.longmemeval_v2.requests import (
    CHECKER_MAX_COMPLETION_TOKENS,
    CHECKER_MAX_RETRIES,
    CHECKER_MODEL,
    CHECKER_REASONING_EFFORT,
    CHECKER_TIMEOUT,
    checker_messages,
    checker_params,
    checker_precheck,
)
from mnemetric.longmemeval_v2.upstream_text import CheckerTexts

CHECKER_TEXT_FROM = "content_or_parts"
"""The client's reply-text rule for the judge (module docstring); not the reader's "content_or_reasoning"."""

__all__ = ["CHECKER_TEXT_FROM", "CheckCase", "CheckOutcome", "LLMCheckers", "OfflineChecker", "llm_checkers"]


@dataclass(frozen=True)
class CheckCase:
    name: str
    """llm_abstention_checker or llm_gotchas_checker."""
    question_type: str
    question_text: str
    gold: str
    response_raw: str
    response_parsed: str


@dataclass(frozen=True)
class CheckOutcome:
    """A verdict, or ``failed`` (where upstream aborts); ``called`` = a judge reply was needed."""

    verdict: bool | None
    failed: str | None = None
    called: bool = False
    request_sha256: str | None = None
    """The judge request's sha256 (the response cache's key); None when no call was made."""
    params_sent: Mapping[str, Any] | None = field(default=None, compare=False)
    """The output parameters of the judge request as sent; None when no call was made."""
    reason: str | None = None
    """The judge's own reason (the reply's JSON ``reason``, :func:`.judge_label.reply_reason`), kept for the
    failure attribution; upstream drops it. None when the reply has none or no call was made."""


def _rule_failure(case: CheckCase) -> str | None:
    if case.name not in LLM_CHECKERS:
        return f"{case.name!r} is not an LLM checker"
    if case.name == ABSTENTION_CHECKER and "-abs" not in case.question_type:
        return f"llm_abstention_checker on question type {case.question_type!r} (needs '-abs'; upstream aborts)"
    return None


JUDGE_ROLE = "judge"


@dataclass
class LLMCheckers:
    """Both LLM checkers, with the pinned texts: builds the judge calls, the run's executor sends them."""

    texts: CheckerTexts
    model: str = CHECKER_MODEL
    base_url: str | None = None
    """The judge server (None: ``$OPENAI_BASE_URL``, else the OpenAI default)."""
    reasoning_effort: str | None = CHECKER_REASONING_EFFORT
    max_completion_tokens: int = CHECKER_MAX_COMPLETION_TOKENS
    name: str = "llm"
    timeout: float | None = None
    """Seconds per attempt (transport, not in the key); None: the run's ``llm.timeout``."""
    max_retries: int | None = None
    """Retries after the first attempt (transport); None: the run's ``llm.max_attempts``."""
    calls_model: ClassVar[bool] = True

    @property
    def official(self) -> bool:
        """run_eval's judge: gpt-5.2, reasoning effort medium, 4096 completion tokens, pinned prompts."""
        return (self.model == CHECKER_MODEL and self.reasoning_effort == CHECKER_REASONING_EFFORT
                and self.max_completion_tokens == CHECKER_MAX_COMPLETION_TOKENS and self.texts.is_pinned)

    def precheck(self, case: CheckCase) -> CheckOutcome | None:
        """The verdict without a call (the -abs rule, upstream's precheck), or None: the judge is needed."""
        problem = _rule_failure(case)
        if problem:
            return CheckOutcome(None, problem)
        if not checker_precheck(case.response_raw, case.gold):
            return CheckOutcome(False)
        return None

    def calls(self, cases: Sequence[CheckCase]) -> list[ModelCall | None]:
        """One judge call per case that needs one (None where :meth:`precheck` decides); a call that gets no reply
        after every attempt (a timeout) fails its question, never the run."""
        params = checker_params(self.model, self.reasoning_effort, self.max_completion_tokens)
        params.pop("model")
        params |= {k: v for k, v in (("timeout", self.timeout), ("max_retries", self.max_retries)) if v is not None}
        return [None if self.precheck(case) is not None else
                ModelCall.chat(role=JUDGE_ROLE, model=self.model, base_url=self.base_url, params=params,
                               text_from=CHECKER_TEXT_FROM, tolerate=(NO_REPLY,),
                               messages=checker_messages(case.name, case.question_text, case.gold, case.response_raw,
                                                         case.response_parsed, self.texts))
                for case in cases]

    def read(self, outcome: CallOutcome) -> CheckOutcome:
        return read_verdict(outcome)

    def check_all(self, cases: Sequence[CheckCase], executor: Executor) -> list[CheckOutcome]:
        """Every case's verdict; the judge calls sent by the run's ``executor``."""
        calls = self.calls(cases)
        sent = [c for c in calls if c is not None]
        outcomes = iter(executor.run(sent, desc="v2 checker") if sent else [])
        return [self.precheck(case) if call is None else self.read(next(outcomes)) for case, call in zip(cases, calls)]


def read_verdict(outcome: CallOutcome) -> CheckOutcome:
    """The verdict of one judge outcome: ``parse_judge_label(text) == 1``; a non-answer or a reply without a
    label → failed (upstream aborts)."""
    evidence = {"called": True, "request_sha256": outcome.key, "params_sent": dict(outcome.params_sent)}
    if outcome.kind not in (ANSWER, "non_answer", "failure"):
        raise PluginError("executor", f"judge request {outcome.key[:12]}…", f"no result yet ({outcome.kind})",
                          fix="rerun when the executor has it")
    if not outcome.ok:
        return CheckOutcome(None, f"judge gave no answer: {outcome.reason}", **evidence)
    try:
        return CheckOutcome(parse_judge_label(outcome.text) == 1, reason=reply_reason(outcome.text), **evidence)
    except UnparseableJudgeReply as exc:
        return CheckOutcome(None, f"judge reply has no 0/1 label: {exc}", **evidence)


NEGATIONS = frozenset({"not", "no", "never", "none", "cannot", "didn't", "doesn't", "isn't", "wasn't",
                       "aren't", "weren't", "don't", "won't", "nothing", "neither", "nor"})
_TOKEN = re.compile(r"[a-z0-9']+")
_STOP = frozenset("a an and are as at be by for from in is it of on or the to was with".split())


@dataclass
class OfflineChecker:
    """Lexical stand-in for the two LLM checkers (module docstring); never official."""

    name: str = "offline"
    official: bool = False
    calls_model: ClassVar[bool] = False

    def check_all(self, cases: Sequence[CheckCase], executor: Executor | None = None) -> list[CheckOutcome]:
        """Every case's verdict (no call: ``executor`` is not used)."""
        return [self.check(c) for c in cases]

    def check(self, case: CheckCase) -> CheckOutcome:
        problem = _rule_failure(case)
        if problem:
            return CheckOutcome(None, problem)
        if not checker_precheck(case.response_raw, case.gold):
            return CheckOutcome(False)
        if case.name == ABSTENTION_CHECKER:
            answer = case.response_parsed.strip() or case.response_raw.strip()
            return CheckOutcome(bool(set(_TOKEN.findall(answer.lower())) & NEGATIONS))
        gold = {w for w in _TOKEN.findall(case.gold.lower()) if w not in _STOP}
        said = set(_TOKEN.findall(case.response_raw.lower()))
        return CheckOutcome(bool(gold) and 2 * len(gold & said) >= len(gold))


def llm_checkers(*, model: str = CHECKER_MODEL, base_url: str | None = None,
                 reasoning_effort: str | None = CHECKER_REASONING_EFFORT,
                 max_completion_tokens: int = CHECKER_MAX_COMPLETION_TOKENS, timeout: float | None = CHECKER_TIMEOUT,
                 max_retries: int | None = CHECKER_MAX_RETRIES, name: str = "llm",
                 texts: CheckerTexts | None = None) -> LLMCheckers:
    """conf/v2/checker/llm.yaml: both LLM checkers with the pinned prompts (checkout
    ``$MNEMETRIC_LONGMEMEVAL_V2_DIR``, else the cache, else a download); the run's executor sends their calls.
    ``timeout`` / ``max_retries``: upstream's evaluator transport (43,200 s, 10 retries). ``texts``: other
    checker texts (tests' stand-ins; never official), else the pinned ones."""
    import os

    from mnemetric.llm.cache import default_cache_dir
    from mnemetric.longmemeval_v2.upstream_text import load_checker_texts

    texts = texts or load_checker_texts(os.environ.get("MNEMETRIC_LONGMEMEVAL_V2_DIR"), default_cache_dir())
    return LLMCheckers(texts, model=model, base_url=base_url, reasoning_effort=reasoning_effort,
                       max_completion_tokens=max_completion_tokens, name=name,
                       timeout=None if timeout is None else float(timeout),
                       max_retries=None if max_retries is None else int(max_retries))
