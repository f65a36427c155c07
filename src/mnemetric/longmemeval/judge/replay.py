"""Replaying stored verdicts: re-score a judged file from what its lines hold, sending nothing.

A judged file (``<hyp>.eval-results-<alias>``, a DVC output whose sha256 custody records in
data/custody/outputs.sha256.json) is the parity record: each line keeps the label and, in
``mnemetric_judge``, the judge's reply (``response``) and the request sha256. Replay checks every verdict
against what it needs, then the caller scores the file as stage qa_metrics does:

* a model verdict: the reply must be there and give the stored label under upstream's rule
  (:func:`~mnemetric.longmemeval.judge.upstream_prompts.parse_label`); given the judge's prompt set, the
  request is built again from the line's hypothesis, the reference and the trace's model, parameters and
  endpoint, and its sha256 must be the stored one (same question, hypothesis, prompt and parameters);
* an offline (lexical) verdict: recomputed from the hypothesis and the reference (it sends nothing either);
* a line without a trace (judged elsewhere, e.g. by upstream's own script) cannot be replayed.

A verdict that lacks what replay needs, or disagrees with it, is an InputError naming the file, the
question_id and the field. No executor, no cache, no request: replay costs nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from mnemetric.errors import InputError
from mnemetric.execute import ModelCall
from mnemetric.longmemeval.hypotheses import JudgedHypothesis, read_judged
from mnemetric.longmemeval.judge.lexical import LexicalJudge
from mnemetric.longmemeval.judge.upstream_prompts import PromptSet, parse_label
from mnemetric.longmemeval.reference import Reference

FIX = "judge these hypotheses with Mnemetric (`mnemetric judge`, `dvc repro judge`): its lines keep what replay needs"


@dataclass(frozen=True)
class Replayed:
    """The judged lines, every one checked; how many by a rebuilt request sha256 and how many recomputed."""

    judged: list[JudgedHypothesis]
    requests_matched: int
    recomputed: int


def _request_key(j: JudgedHypothesis, ref: Reference, prompts: PromptSet) -> str:
    call = j.judge_trace.call
    params = {"temperature": call.params.temperature, "max_tokens": call.params.max_tokens, "n": call.params.n}
    content = prompts.render(ref.question_id, ref.question_type, ref.question, ref.answer, j.hypothesis)
    return ModelCall.chat(role="judge", model=call.requested_model, params=params, base_url=call.endpoint,
                          tag=ref.question_id, messages=[{"role": "user", "content": content}]).key


def replay_judged(path: str | Path, refs: Mapping[str, Reference], prompts: PromptSet | None = None) -> Replayed:
    """Check every verdict of ``path`` (module docstring); ``prompts``: the judge's prompt set (None: the
    request sha256 is not rebuilt, only the reply re-read)."""
    file, judged = str(path), read_judged(path)
    matched = recomputed = 0
    for j in judged:
        ref = refs.get(j.question_id)
        if ref is None:
            raise InputError(file, j.question_id, "question_id", "not in the reference file",
                             fix="replay against the dataset the hypotheses answer")
        trace = j.judge_trace
        if trace is None:
            raise InputError(file, j.question_id, "mnemetric_judge", "no stored verdict trace (judged elsewhere?): "
                             "replay needs the judge's reply and its request sha256", fix=FIX)
        if trace.call is None:  # an offline judge: recompute it
            if j.hypothesis is None:
                raise InputError(file, j.question_id, "hypothesis", "missing: the lexical verdict is recomputed from it",
                                 fix=FIX)
            label = LexicalJudge().autoeval_label(ref.question_id, ref.question_type, ref.question, ref.answer,
                                                  j.hypothesis)["label"]
            recomputed += 1
            source = "the lexical judge recomputed"
        else:
            if not trace.call.response.strip():
                raise InputError(file, j.question_id, "mnemetric_judge.response",
                                 "empty: there is no stored reply to read the label from", fix=FIX)
            label, source = parse_label(trace.call.response), f"its stored reply {trace.call.response!r:.60}"
            if prompts is not None:
                if j.hypothesis is None:
                    raise InputError(file, j.question_id, "hypothesis", "missing: the request is rebuilt from it",
                                     fix=FIX)
                key = _request_key(j, ref, prompts)
                if key != trace.call.request_sha256:
                    raise InputError(file, j.question_id, "mnemetric_judge.request_sha256",
                                     f"{trace.call.request_sha256[:12]}… is not the request this judge builds for the "
                                     f"line ({key[:12]}…): another hypothesis, reference, prompt set or parameters",
                                     fix="judge the file again with the judge it is replayed with")
                matched += 1
        if label != j.label:
            raise InputError(file, j.question_id, "autoeval_label.label",
                             f"stored {str(j.label).lower()}, but {source} gives {str(label).lower()}", fix=FIX)
    return Replayed(judged, matched, recomputed)
