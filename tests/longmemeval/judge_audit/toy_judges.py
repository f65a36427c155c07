"""Helpers of the judge-audit tests: a slice of the sample run, and scripted judges for the loopback OpenAI server
(they read the reference and the response out of the
prompt: our own strict/lenient wording, or the stand-in upstream templates) and answer yes/no by a rule
simple enough to predict, so tests can say which verdict each judge gives."""

from __future__ import annotations

import itertools
import json
import re
import threading
from pathlib import Path

from mnemetric.longmemeval.judge.lexical import content_words, normalize
from mnemetric.longmemeval.reference import reference_by_id
from tests.conftest import ROOT

SAMPLE = ROOT / "data" / "sample" / "longmemeval_sample.json"
JUDGED = "data/runs/hypotheses.jsonl.eval-results-lexical"
"""The sample run's judged file, relative to its workspace (tests/conftest.py ``sample_run_outputs``)."""

_REF = re.compile(r"^(?:Reference|Guide|Why): (.*)$", re.M)
_RESP = re.compile(r"^(?:Response to grade|Candidate): (.*)$", re.M)


def fields(prompt: str) -> tuple[str, str]:
    """(reference, response) of a judge prompt."""
    return _REF.search(prompt).group(1), _RESP.search(prompt).group(1)


def rule_reply(messages) -> str:
    """strict wording: yes iff the normalized reference is in the response and it has no "not"/"might";
    lenient wording: yes iff they share a content word; anything else (the upstream templates): yes iff the
    normalized reference is in the response."""
    prompt = messages[-1]["content"]
    ref, resp = fields(prompt)
    inside = f" {normalize(ref)} " in f" {normalize(resp)} "
    if "strictly" in prompt:
        return "yes" if inside and not {"not", "might"} & set(normalize(resp).split()) else "no"
    if "generously" in prompt or "any way" in prompt or "loosely" in prompt or "mentions the reference" in prompt \
            or "close to it" in prompt:
        return "yes" if content_words(ref) & content_words(resp) else "no"
    return "yes" if inside else "no"


class Coin:
    """A judge that answers yes, no, yes, no, ... whatever it is asked (thread-safe): re-judging flips."""

    def __init__(self) -> None:
        self._next = itertools.cycle(["Yes.", "No."])
        self._lock = threading.Lock()

    def __call__(self, messages) -> str:
        with self._lock:
            return next(self._next)


def sample_slice(sample_run_outputs: Path, folder: Path) -> Path:
    """The sample run's judged lines for its first question of each type and its first abstention question (7):
    every template and every rule in a few dozen items (loopback requests cost tens of milliseconds each)."""
    refs = reference_by_id(SAMPLE)
    kept, seen = [], set()
    for line in (sample_run_outputs / JUDGED).read_text().splitlines():
        q = json.loads(line)["question_id"]
        kind = "_abs" if "_abs" in q else refs[q].question_type
        if kind not in seen:
            seen.add(kind)
            kept.append(line)
    out = folder / "judged.jsonl"
    out.write_text("\n".join(kept) + "\n")
    return out
