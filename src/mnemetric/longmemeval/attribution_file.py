"""The attribution file (metrics/detail/attribution.json), the disputed-verdicts file, and the I/O edge.

The attribution file (schema ``mnemetric.longmemeval-attribution/v1``; ``json.dump(indent=2)``, keys in
this order): ``schema``, ``precedence`` (the causes in precedence order,
:data:`~mnemetric.longmemeval.attribution.CAUSES`), ``variant``, ``sources`` (the input paths:
``questions``, ``judged``, ``retrieval_log``, ``contexts``, ``errata``, ``disputed`` (null: none)),
``counts`` (questions per cause, then per outcome) and ``questions``: one row per question of the
suite, in the questions file's order (:class:`~mnemetric.longmemeval.attribution.QuestionAttribution`).
Deterministic: no clock, no counters of this run.

The disputed-verdicts file (``attribution.disputed``; the seam the judge-validity work fills): a
judge-audit file (`mnemetric judge-audit validity --out`, one JSON object whose ``disputed`` maps each
question id to its reasons), or JSONL, one ``{"question_id": str, "reason": str}`` per line (an optional
``source`` string names what disputes it; a question may have several lines, reasons kept in file order).

Every error names the file, the record and the field.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from mnemetric.errors import InputError
from mnemetric.io import require_file, unique_object, write_json_atomic
from mnemetric.longmemeval.attribution import (CAUSES, OUTCOMES, Evidence, QuestionAttribution, attribute_question,
                                               cause_counts)
from mnemetric.records import Fields, read_json_file, record_name

SCHEMA: Final = "mnemetric.longmemeval-attribution/v1"
PATH: Final = Path("metrics/detail/attribution.json")
SOURCE_KEYS: Final = ("questions", "judged", "retrieval_log", "contexts", "errata", "disputed")
ROW_KEYS: Final = ("question_id", "question_type", "outcome", "cause", "applies", "evidence_checked",
                   "evidence_sessions", "missing_sessions", "context_items", "evidence_items", "disputes")
_FIX: Final = "regenerate it with `dvc repro attribution`"


def row_from_record(raw: Any, *, file: str, line: int | str) -> QuestionAttribution:
    """One ``questions`` row, checked (outcome, cause = first of applies, known causes)."""
    f = Fields.of(raw, file=file, record=record_name(line), fix=_FIX)
    qid = f.string("question_id")
    f = Fields(f.raw, f.file, f"{f.record} ({qid})", fix=_FIX).only(ROW_KEYS)
    outcome, cause, applies = f.string("outcome"), f.optional_string("cause"), f.strings("applies")
    if outcome not in OUTCOMES:
        raise f.error("outcome", f"expected one of {list(OUTCOMES)}, got {outcome!r}")
    if bad := [c for c in applies if c not in CAUSES]:
        raise f.error("applies", f"unknown cause {bad[0]!r}; expected some of {list(CAUSES)}")
    if list(applies) != sorted(set(applies), key=CAUSES.index):
        raise f.error("applies", "expected distinct causes in precedence order")
    if (outcome == "wrong") != bool(applies) or cause != (applies[0] if applies else None):
        raise f.error("cause", f"{cause!r} with outcome {outcome!r} and applies {list(applies)}: a wrong question's "
                               "cause is the first of applies; other questions have none")
    return QuestionAttribution(qid, f.string("question_type"), outcome, cause, applies, f.boolean("evidence_checked"),
                               f.count("evidence_sessions"), f.strings("missing_sessions"), f.count("context_items"),
                               f.count("evidence_items"), f.strings("disputes"))


def row_to_record(row: QuestionAttribution) -> dict[str, Any]:
    return {"question_id": row.question_id, "question_type": row.question_type, "outcome": row.outcome,
            "cause": row.cause, "applies": list(row.applies), "evidence_checked": row.evidence_checked,
            "evidence_sessions": row.evidence_sessions, "missing_sessions": list(row.missing_sessions),
            "context_items": row.context_items, "evidence_items": row.evidence_items, "disputes": list(row.disputes)}


@dataclass(frozen=True)
class AttributionFile:
    variant: str
    sources: Mapping[str, str | None]
    questions: tuple[QuestionAttribution, ...]

    @property
    def counts(self) -> dict[str, int]:
        return cause_counts(self.questions)

    def by_id(self) -> dict[str, QuestionAttribution]:
        return {r.question_id: r for r in self.questions}

    @classmethod
    def from_record(cls, raw: Any, *, file: str) -> AttributionFile:
        f = Fields.of(raw, file=file, record="<file>", fix=_FIX)
        if f.string("schema") != SCHEMA:
            raise f.error("schema", f"expected {SCHEMA!r}, got {raw['schema']!r}")
        if list(f.strings("precedence")) != list(CAUSES):
            raise f.error("precedence", f"expected {list(CAUSES)} (this version's causes)")
        src = f.at("sources").only(SOURCE_KEYS)
        sources = {k: src.optional_string(k) for k in SOURCE_KEYS}
        rows = tuple(row_from_record(r, file=file, line=f"questions[{i}]")
                     for i, r in enumerate(f.array("questions", "a list of question rows")))
        ids = [r.question_id for r in rows]
        if len(set(ids)) != len(ids):
            raise f.error("questions", f"duplicate question_id {next(q for i, q in enumerate(ids) if q in ids[:i])!r}")
        out = cls(f.string("variant"), sources, rows)
        counts = f.at("counts").raw
        if dict(counts) != out.counts:
            raise f.error("counts", f"{dict(counts)} but the rows give {out.counts}")
        return out

    def to_record(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "precedence": list(CAUSES), "variant": self.variant,
                "sources": {k: self.sources.get(k) for k in SOURCE_KEYS}, "counts": self.counts,
                "questions": [row_to_record(r) for r in self.questions]}


def read_attribution(path: str | Path) -> AttributionFile:
    raw = read_json_file(path, missing_fix="run `dvc repro attribution` first", fix=_FIX)
    return AttributionFile.from_record(raw, file=str(path))


def write_attribution(path: str | Path, attribution: AttributionFile) -> None:
    write_json_atomic(path, attribution.to_record())


def read_disputed(path: str | Path) -> dict[str, tuple[str, ...]]:
    """question_id -> its dispute reasons (file order), from the disputed-verdicts JSONL (module docstring),
    or from a judge-audit file (one JSON object whose ``disputed`` is ``{question_id: [reason, ...]}``)."""
    require_file(path, fix="set attribution.disputed to the judge-validity output, or null")
    audit = _audit_disputes(path)
    if audit is not None:
        return audit
    out: dict[str, list[str]] = {}
    with open(path, encoding="utf-8") as fh:
        for lineno, text in enumerate(fh, start=1):
            if not text.strip():
                continue
            try:
                raw = json.loads(text, object_pairs_hook=unique_object)
            except (json.JSONDecodeError, ValueError) as exc:
                raise InputError(str(path), f"line {lineno}", "<json>", f"not valid JSON ({exc})") from None
            f = Fields.of(raw, file=str(path), record=f"line {lineno}").only(("question_id", "reason", "source"))
            qid, reason = f.string("question_id"), f.string("reason")
            if not qid or not reason.strip():
                raise f.error("question_id" if not qid else "reason", "empty")
            source = f.optional_string("source") if "source" in raw else None
            out.setdefault(qid, []).append(f"{source}: {reason}" if source else reason)
    return {q: tuple(r) for q, r in out.items()}


def _audit_disputes(path: str | Path) -> dict[str, tuple[str, ...]] | None:
    """The disputed questions of a judge-audit file (`mnemetric judge-audit validity --out`, read through its
    typed reader), None for the JSONL layout."""
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        return None  # several lines: the JSONL layout
    if not isinstance(raw, dict) or "disputed" not in raw:
        return None
    from mnemetric.longmemeval.judge_audit.files import read_judge_audit

    return dict(read_judge_audit(path).disputed)


def _evidence_maps(retrieval_log: str | Path, contexts: str | Path) -> tuple[dict, dict]:
    """Per question: (haystack ids, has_answer turns) from the log, context refs from the contexts file
    (both streamed: a line's haystack is dropped once reduced)."""
    from mnemetric.longmemeval.contexts import iter_contexts
    from mnemetric.longmemeval.retrieval_log import read_retrieval_log

    logs = {}
    for rec in read_retrieval_log(retrieval_log):
        turns = frozenset((sid, j) for sid, sess in zip(rec.haystack_session_ids, rec.haystack_sessions)
                          for j, t in enumerate(sess) if t.has_answer is True)
        logs[rec.question_id] = (frozenset(rec.haystack_session_ids), turns)
    refs = {c.question_id: tuple((i.upstream_session_id, i.turn_index) for i in c.items) for c in iter_contexts(contexts)}
    return logs, refs


def gold_disputes(errata: Any, variant: str) -> dict[str, tuple[str, ...]]:
    """question_id -> reason of each erratum that applies to ``variant`` (every entry for a variant
    the errata file does not name, as the errata sensitivity block does)."""
    from mnemetric.longmemeval.errata import VARIANTS

    return {e.question_id: (f"errata: {e.description} (upstream issue(s) "
                            f"{', '.join(f'#{i}' for i in e.issues)})",)
            for e in errata.entries if variant not in VARIANTS or variant in e.variants}


def attribute_all(questions: Sequence[Any], labels: Mapping[str, bool], logs: Mapping, refs: Mapping, *,
                  gold: Mapping[str, Sequence[str]], judge: Mapping[str, Sequence[str]]) -> tuple[QuestionAttribution, ...]:
    """Pure: one row per question (questions.Question), in order."""
    rows = []
    for q in questions:
        haystack, turns = logs.get(q.question_id, (None, frozenset()))
        ev = Evidence(q.answer_session_ids, turns, haystack, refs.get(q.question_id, ()), q.abstention)
        rows.append(attribute_question(q.question_id, q.question_type, labels.get(q.question_id), ev,
                                       gold_disputes=gold.get(q.question_id, ()),
                                       judge_disputes=judge.get(q.question_id, ())))
    return tuple(rows)


def attribute_run(sources: Mapping[str, str | None], variant: str) -> AttributionFile:
    """Read the run's files (``sources``: :data:`SOURCE_KEYS`; ``disputed`` may be None) and attribute."""
    from mnemetric.longmemeval.errata import read_errata
    from mnemetric.longmemeval.hypotheses import read_judged
    from mnemetric.longmemeval.questions import read_questions

    questions = read_questions(sources["questions"])
    labels = {j.question_id: j.label for j in read_judged(sources["judged"])}
    logs, refs = _evidence_maps(sources["retrieval_log"], sources["contexts"])
    gold = gold_disputes(read_errata(sources["errata"]), variant)
    judge = read_disputed(sources["disputed"]) if sources.get("disputed") else {}
    rows = attribute_all(questions, labels, logs, refs, gold=gold, judge=judge)
    return AttributionFile(variant, {k: sources.get(k) for k in SOURCE_KEYS}, rows)


def summary_rows(attribution: AttributionFile) -> list[tuple[str, int, str]]:
    """(cause, questions, share of the wrong ones as text) per cause, in precedence order."""
    counts = attribution.counts
    wrong = counts["wrong"]
    return [(c, counts[c], f"{counts[c] / wrong:.0%}" if wrong else "—") for c in CAUSES]


def iter_wrong(attribution: AttributionFile) -> Iterable[QuestionAttribution]:
    return (r for r in attribution.questions if r.outcome == "wrong")
