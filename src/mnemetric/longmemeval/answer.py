"""The answer job: contexts → hypotheses with a reader (one path for stage ``answer`` and `mnemetric answer`).

Inputs are the contexts file (:mod:`mnemetric.longmemeval.contexts`, one line per question, as the
retrieve stage writes it) and each question's query (text and date, from its memory view), as
:class:`Queries`: from the questions file (stage answer) or an adapted file (`mnemetric answer
--adapted`). Every context must name a question of those queries (else an
:class:`~mnemetric.errors.InputError` naming the contexts file, the line and ``question_id``).

Outputs, all written atomically and only after the reader has finished:

* the hypotheses JSONL (upstream's ``{question_id, hypothesis}`` plus the reader's trace fields), in
  contexts order;
* ``<hypotheses>.failures.jsonl``: the questions whose reply was a non-answer (always written);
* the usage sidecar (:mod:`mnemetric.llm.usage`): the cost of the work.

Upstream has no such job file (its generation script expands the retrieval log itself,
LongMemEval src/generation/run_generation.py @ 9e0b455f); the reader prompt wording is Mnemetric's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mnemetric.errors import ConfigError, InputError
from mnemetric.io import write_jsonl_atomic
from mnemetric.llm.failures import failures_path, write_failures
from mnemetric.llm.usage import UsageRecord, write_usage
from mnemetric.longmemeval.adapted import Query, read_adapted
from mnemetric.longmemeval.components import LLMFactory, Reader
from mnemetric.longmemeval.contexts import Context, read_contexts
from mnemetric.longmemeval.questions import read_questions
from mnemetric.longmemeval.reader.run import Answered

_FIX = "rerun `dvc repro retrieve` (or `mnemetric retrieve ... --contexts FILE` on the same data)"


@dataclass(frozen=True)
class Queries:
    """Each question's query (what the reader answers) by question id, and the file it was read from."""

    file: str
    by_id: Mapping[str, Query]

    @classmethod
    def of_questions(cls, path: str | Path) -> Queries:
        """From the questions file (:mod:`mnemetric.longmemeval.questions`): the suite's questions."""
        return cls(str(path), {q.question_id: q.query for q in read_questions(path)})

    @classmethod
    def of_adapted(cls, path: str | Path) -> Queries:
        """From an adapted file: every question of the variant."""
        return cls(str(path), {r.eval.question_id: r.memory.query for r in read_adapted(path)})


def answer_inputs(contexts_file: str | Path, queries: Queries) -> tuple[list[Query], list[Context]]:
    """The contexts of ``contexts_file`` (validated: file, line, field) and, in the same order, each
    one's query."""
    contexts = read_contexts(contexts_file)
    for n, c in enumerate(contexts, start=1):
        if c.question_id not in queries.by_id:
            raise InputError(str(contexts_file), f"line {n} ({c.question_id})", "question_id",
                             f"not a question of {queries.file}", fix=_FIX)
    return [queries.by_id[c.question_id] for c in contexts], contexts


def answer_file(reader: Reader, contexts_file: str | Path, queries: Queries, llm: LLMFactory) -> Answered:
    """Answer every question of ``contexts_file`` with ``reader``: hypotheses and failures, in contexts
    order. Writes nothing (see :func:`write_answered`)."""
    contexts_queries, contexts = answer_inputs(contexts_file, queries)
    return reader.answer(contexts_queries, contexts, llm)


def write_answered(hypotheses: str | Path, usage: str | Path, answered: Answered, work: Any) -> UsageRecord:
    """The hypotheses file, its ``.failures.jsonl`` sidecar and the usage sidecar (``work``: the
    UsageStats' cost of the work), each atomically."""
    write_jsonl_atomic(hypotheses, answered.hypotheses)
    write_failures(failures_path(hypotheses), answered.failures)
    return write_usage(usage, work)


def plan_answers(reader: Reader, contexts_file: str | Path, queries: Queries, llm: LLMFactory) -> dict[str, Any]:
    """Dry run: how many reader requests are cached, how many would be sent, estimated $ (reads the
    cache only; sends nothing): the reader's own ``plan``; a plugged-in reader without one is refused."""
    contexts_queries, contexts = answer_inputs(contexts_file, queries)
    if callable(getattr(reader, "plan", None)):
        return reader.plan(contexts_queries, contexts, llm)
    raise ConfigError("--dry-run", f"reader {getattr(reader, 'name', type(reader).__name__)!r} does not say which "
                      "requests it would send", fix="run without --dry-run (a budget: --max-requests/--max-usd)")


def default_usage_path(hypotheses: str | Path) -> Path:
    """HYP.jsonl → HYP.jsonl.usage.json (the CLI's default usage sidecar)."""
    return Path(f"{hypotheses}.usage.json")


__all__: Sequence[str] = ["Queries", "answer_file", "answer_inputs", "default_usage_path", "plan_answers", "write_answered"]
