"""Judging hypotheses: the upstream LLM judge or the offline lexical one → upstream judged records.

Each output line is the hypothesis record plus ``autoeval_label`` {model, label} — what upstream
print_qa_metrics.py reads — and our custody fields under ``mnemetric_judge`` (judge name, prompt-set
sha256, endpoint, request sha256, the output parameters sent, usage, the cost of the work). Output
order = hypothesis order. The upstream judge builds one :class:`~mnemetric.execute.ModelCall` per
hypothesis (:func:`upstream_calls`) and hands them to the run's executor; it owns no client. Nothing in a
line depends on the run (no "cached" flag), so a cold and a warm run write the same bytes.

A judge reply that is a non-answer (mnemetric.llm.replies: no choices, null/empty content, a
refusal, finish_reason other than stop/length) is never turned into a label: the question is a
:class:`~mnemetric.llm.failures.QuestionFailure` (stage "judge") for the ``<judged>.failures.jsonl``
sidecar, next to the reader's failures carried over (stage "answer"; never judged).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mnemetric.errors import InputError
from mnemetric.execute import CallOutcome, Executor, ModelCall
from mnemetric.llm.failures import AllQuestionsFailed, QuestionFailure, describe
from mnemetric.llm.types import LLMRequestError
from mnemetric.longmemeval.judge.lexical import LexicalJudge
from mnemetric.longmemeval.judge.upstream_prompts import PromptSet, parse_label
from mnemetric.longmemeval.judgments import JudgeCall, JudgeParams, JudgeTrace
from mnemetric.longmemeval.reference import Reference



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
        out.append(dict(h) | {"autoeval_label": label, "mnemetric_judge": JudgeTrace.offline("lexical").to_record()})
    return out


def upstream_calls(hyps: Sequence[Mapping[str, Any]], refs: Mapping[str, Reference], prompts: PromptSet,
                   spec: Mapping[str, Any], file: str) -> list[ModelCall]:
    """One chat call per hypothesis, exactly as upstream evaluate_qa.py sends it (role ``judge``,
    tagged with the question id)."""
    params = {"temperature": spec["temperature"], "max_tokens": spec["max_tokens"], "n": spec["n"]}
    return [ModelCall.chat(role="judge", model=spec["model"], params=params, base_url=spec.get("base_url"),
                           tag=r.question_id,
                           messages=[{"role": "user", "content": prompts.render(
                               r.question_id, r.question_type, r.question, r.answer, h["hypothesis"])}])
            for h, r in zip(hyps, _refs_for(hyps, refs, file))]


@dataclass(frozen=True)
class Judged:
    """Judged lines (upstream format) and the questions without a verdict."""

    lines: list[dict] = field(default_factory=list)
    failures: list[QuestionFailure] = field(default_factory=list)


def _judged_line(h: Mapping[str, Any], call: ModelCall, res: CallOutcome, prompts: PromptSet,
                 spec: Mapping[str, Any]) -> dict:
    trace = JudgeCall(prompts.prompt_set_sha256, prompts.source_sha256, spec["model"],
                      JudgeParams(spec["temperature"], spec["max_tokens"], spec["n"]), call.base_url,
                      res.request_sha256, res.text, res.usage.prompt_tokens, res.usage.completion_tokens,
                      res.cost_usd, dict(res.params_sent))
    return dict(h) | {"autoeval_label": {"model": res.model, "label": parse_label(res.text)},
                      "mnemetric_judge": JudgeTrace(spec["name"], trace).to_record()}


def judge_upstream_outcome(hyps: Sequence[Mapping[str, Any]], refs: Mapping[str, Reference], prompts: PromptSet,
                           spec: Mapping[str, Any], executor: Executor, file: str) -> Judged:
    """Send (or take from cache) one request per hypothesis through ``executor``; label = "yes" in the
    reply. A non-answer gives a failure instead of a line (in hypothesis order both)."""
    calls = upstream_calls(hyps, refs, prompts, spec, file)
    out = Judged()
    for h, call, res in zip(hyps, calls, executor.run(calls, desc="judge"), strict=True):
        if res.ok:
            out.lines.append(_judged_line(h, call, res, prompts, spec))
        else:
            out.failures.append(QuestionFailure(h["question_id"], "judge", res.reason, res.request_sha256,
                                                spec["model"], res.attempts))
    return out


def judge_upstream(hyps: Sequence[Mapping[str, Any]], refs: Mapping[str, Reference], prompts: PromptSet,
                   spec: Mapping[str, Any], executor: Executor, file: str) -> list[dict]:
    """The judged lines of :func:`judge_upstream_outcome` when every question got a verdict;
    otherwise :class:`LLMRequestError` naming the failed questions (never a silent gap; callers
    that keep going on failures use :func:`judge_upstream_outcome`)."""
    judged = judge_upstream_outcome(hyps, refs, prompts, spec, executor, file)
    if judged.failures:
        raise LLMRequestError(f"judge: {len(judged.failures)} question(s) got no usable answer:\n"
                              f"{describe(judged.failures)}")
    return judged.lines


def carry_failures(carried: Sequence[QuestionFailure], judged: Judged, hyps: Sequence[Mapping[str, Any]],
                   refs: Mapping[str, Reference], file: str) -> Judged:
    """``judged`` with the reader's failures (``carried``) first: each must be a reference question
    that has no hypothesis (a question is answered or failed, never both)."""
    answered = {h["question_id"] for h in hyps}
    for f in carried:
        if f.question_id not in refs:
            raise InputError(file, f.question_id, "question_id", "failed question not in the reference file")
        if f.question_id in answered:
            raise InputError(file, f.question_id, "question_id", "both answered and failed",
                             fix="rerun the answer stage (the hypotheses and their failures sidecar disagree)")
    return Judged(judged.lines, [*carried, *judged.failures])


def check_not_all_failed(judged: Judged, stage: str = "judge") -> Judged:
    """Raise :class:`AllQuestionsFailed` when no question got a verdict but some failed."""
    if not judged.lines and judged.failures:
        raise AllQuestionsFailed(stage, judged.failures)
    return judged


class PromptSetJudge:
    """The judging half every prompt-set judge shares (upstream's prompts, our own strict/lenient ones): a
    dataclass component that says which :class:`PromptSet` it asks with (``prompts()``); its settings are its
    fields (``spec()``), and the calls, the outcome and the dry-run plan follow from those two."""

    def prompts(self) -> PromptSet:
        raise NotImplementedError

    def spec(self) -> dict[str, Any]:
        from dataclasses import asdict

        return asdict(self)  # type: ignore[call-overload]

    def judge(self, hyps, refs, file, executor) -> Judged:
        return judge_upstream_outcome(hyps, refs, self.prompts(), self.spec(), executor, file)

    def plan(self, hyps, refs, file, executor) -> dict[str, Any]:
        return executor.plan(upstream_calls(hyps, refs, self.prompts(), self.spec(), file))
