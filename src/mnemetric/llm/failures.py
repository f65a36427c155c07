"""Questions the model gave no usable answer for: the ``<file>.failures.jsonl`` sidecar format.

A failed question is never written as a hypothesis or a judged line (judged files must stay
readable by upstream print_qa_metrics.py, which needs ``autoeval_label`` on every line). It goes
to a sidecar next to the file it is missing from:

* ``<hypotheses>.failures.jsonl`` (stage answer): the reader got a non-answer;
* ``<judged>.failures.jsonl`` (stage judge): the judge got a non-answer, plus every reader
  failure carried over (the judge never judges a question the reader failed).

One JSON object per line: ``{"question_id", "stage", "reason", "request_sha256", "model",
"attempts"}``, in question order. The sidecar is always written (empty when nothing failed), so
it can be a DVC output. A missing sidecar reads as "no failures" (files made elsewhere).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mnemetric.errors import InputError, MnemetricError
from mnemetric.io import write_jsonl_atomic

STAGES = ("answer", "judge")
SUFFIX = ".failures.jsonl"
SHOW = 20


def failures_path(path: str | Path) -> Path:
    """The sidecar of ``path``: ``<path>.failures.jsonl``."""
    return Path(f"{path}{SUFFIX}")


@dataclass(frozen=True)
class QuestionFailure:
    """One question without a usable model answer."""

    question_id: str
    stage: str
    """Where it failed: "answer" (the reader) or "judge"."""
    reason: str
    """The non-answer, e.g. "content is null", "refusal: ...", "finish_reason 'content_filter'"."""
    request_sha256: str | None
    """The cache key of the request that got the non-answer (never cached)."""
    model: str
    """The requested model."""
    attempts: int = 1
    """Non-answers received for the request (bounded retries)."""

    @classmethod
    def from_record(cls, raw: Any, *, file: str, line: int) -> QuestionFailure:
        """Validate one sidecar line; errors name the file, the line and the field."""
        where = f"line {line}"
        if not isinstance(raw, Mapping):
            raise InputError(file, where, "<record>", f"expected a JSON object, got {type(raw).__name__}")
        for name, kinds in (("question_id", str), ("stage", str), ("reason", str), ("model", str)):
            if not isinstance(raw.get(name), kinds) or not raw.get(name):
                raise InputError(file, where, name, f"expected a non-empty string, got {raw.get(name)!r:.60}")
        if raw["stage"] not in STAGES:
            raise InputError(file, where, "stage", f"expected one of {list(STAGES)}, got {raw['stage']!r}")
        sha = raw.get("request_sha256")
        if sha is not None and not isinstance(sha, str):
            raise InputError(file, where, "request_sha256", f"expected a string or null, got {sha!r:.60}")
        attempts = raw.get("attempts", 1)
        if not isinstance(attempts, int) or isinstance(attempts, bool) or attempts < 0:
            raise InputError(file, where, "attempts", f"expected a non-negative integer, got {attempts!r}")
        return cls(raw["question_id"], raw["stage"], raw["reason"], sha, raw["model"], attempts)

    def to_record(self) -> dict[str, Any]:
        """The sidecar line."""
        return {"question_id": self.question_id, "stage": self.stage, "reason": self.reason,
                "request_sha256": self.request_sha256, "model": self.model, "attempts": self.attempts}


def read_failures(path: str | Path) -> list[QuestionFailure]:
    """Every failure in a sidecar (``[]`` if the file does not exist); duplicate ids are an error."""
    import json

    p = Path(path)
    if not p.exists():
        return []
    out, seen = [], set()
    for n, text in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1):
        if not text.strip():
            continue
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(str(p), f"line {n}", "<json>", f"not valid JSON ({exc.msg})") from None
        failure = QuestionFailure.from_record(raw, file=str(p), line=n)
        if failure.question_id in seen:
            raise InputError(str(p), f"line {n} ({failure.question_id})", "question_id", "duplicate question_id")
        seen.add(failure.question_id)
        out.append(failure)
    return out


def write_failures(path: str | Path, failures: Iterable[QuestionFailure]) -> int:
    """Write the sidecar atomically (an empty file when there are none)."""
    return write_jsonl_atomic(path, (f.to_record() for f in failures))


def describe(failures: Sequence[QuestionFailure], limit: int = SHOW) -> str:
    """One line per failed question (at most ``limit``): ``<question_id> (<stage>): <reason>``."""
    lines = [f"  {f.question_id} ({f.stage}, {f.model}): {f.reason}" for f in failures[:limit]]
    if len(failures) > limit:
        lines.append(f"  ... and {len(failures) - limit} more")
    return "\n".join(lines)


class AllQuestionsFailed(MnemetricError):
    """Every question of a stage got a non-answer: nothing to write, nothing to score."""

    def __init__(self, stage: str, failures: Sequence[QuestionFailure]):
        self.failures = list(failures)
        super().__init__(
            f"{stage}: every question failed ({len(failures)} of {len(failures)}): the model gave no usable "
            f"answer, so nothing was written.\n{describe(failures)}\n  fix: check the model, the endpoint and "
            "the prompt (a refusal or content filter repeats); nothing was cached, so a rerun asks again")


class PartialFailure(MnemetricError):
    """Some (not all) questions failed: the outputs are written (what succeeded is cached), and the run exits
    non-zero unless partial results were allowed (``--allow-partial`` / ``llm.allow_partial``).

    The message names the failed count, the failed questions, the accuracies when known (``scores``) and the
    ONE command that re-asks only the failed ones (``rerun``): the answered ones come from the response
    cache, and failures are never cached, so that command sends exactly the failed requests."""

    exit_code = 3
    restore_hint = False  # the experiment's settings are what the re-ask must run with

    def __init__(self, stage: str, failures: Sequence[QuestionFailure], total: int, rerun: str,
                 scores: str = "", keep: str = ""):
        self.failures, self.total, self.rerun = list(failures), total, rerun
        n = len(self.failures)
        lines = [f"{stage}: {n} of {total} question(s) FAILED (no usable model answer; not cached; not official)"
                 + (f"; {scores}" if scores else ""), describe(self.failures),
                 f"  re-ask only the {n} failed (the {total - n} answered come from the cache): {rerun}"]
        if keep:
            lines.append(f"  or keep this partial result (never official): {keep}")
        super().__init__("\n".join(lines))


def partial_message(stage: str, failures: Sequence[QuestionFailure], total: int, rerun: str, scores: str = "") -> str:
    """The warning printed when a partial result is kept (``allow_partial``): count, scores, the one command."""
    n = len(failures)
    return (f"{stage}: PARTIAL result kept (allow_partial): {n} of {total} question(s) failed, not official"
            + (f"; {scores}" if scores else "") + f"\n  re-ask only the {n} failed: {rerun}")


def accuracy_pair(correct: int, judged: int, failed: int) -> str:
    """``accuracy a over the judged (failed excluded), b with the failed counted wrong`` (4 decimals)."""
    excluded = f"{correct / judged:.4f}" if judged else "null"
    wrong = f"{correct / (judged + failed):.4f}" if judged + failed else "null"
    return f"accuracy {excluded} over the {judged} judged (failed excluded), {wrong} with the {failed} failed counted wrong"
