"""Upstream retrieval logs (``*_retrievallog_<granularity>_<retriever>``): typed reading and scoring.

Format (docs/upstream-protocol.md section 2.3): JSONL, one question per line, line order not
meaningful. Only the fields needed for scoring are read: question_id, question_type,
haystack_session_ids, haystack_sessions (turns with role, content, optional has_answer) and
retrieval_results.ranked_items[].corpus_id. The metrics stored in the log are ignored: scores are
recomputed from the ranking and the corpus rebuilt from the line's own haystack (section 2.1).

:func:`write_retrieval_scores` is the one path from a log to its metric files (metrics/retrieval.json's
layout, metrics/detail/retrieval.json's, the recall plot rows), taken by stage ``retrieval_metrics``
and by ``mnemetric score-retrieval``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mnemetric.errors import InputError
from mnemetric.io import read_jsonl, require_file, write_json_atomic
from mnemetric.longmemeval.rules import GRANULARITIES
from mnemetric.longmemeval.scoring.retrieval import DEFAULT_KS
from mnemetric.longmemeval.scoring.retrieval_averaging import (
    average_exclude_abs,
    average_exclude_abs_and_no_user_target,
)
from mnemetric.longmemeval.scoring.retrieval_corpus import has_user_target, haystack_corpus, targets
from mnemetric.longmemeval.scoring.retrieval_profiles import RetrievalProfile, get_profile
from mnemetric.longmemeval.scoring.retrieval_report import RetrievalMetricFiles, retrieval_metric_files

AUTO = "auto"


@dataclass(frozen=True)
class LogTurn:
    role: str
    """"user" or "assistant" (other values are kept and never indexed)."""
    content: str
    has_answer: bool | None
    """None when the turn carries no has_answer key (filler sessions in S/M)."""


@dataclass(frozen=True)
class RetrievalLogRecord:
    """One line of a retrieval log, reduced to what scoring needs."""

    line: int
    question_id: str
    question_type: str
    haystack_session_ids: tuple[str, ...]
    haystack_sessions: tuple[tuple[LogTurn, ...], ...]
    ranked_ids: tuple[str, ...]
    """retrieval_results.ranked_items[].corpus_id, best first."""

    @property
    def record(self) -> str:
        return f"line {self.line} (question_id {self.question_id!r})"

    @classmethod
    def from_record(cls, raw: Any, *, file: str, line: int) -> RetrievalLogRecord:
        """Check and convert one parsed JSON line; any problem raises InputError(file, line, field)."""
        where = f"line {line}"
        if not isinstance(raw, dict):
            raise InputError(file, where, "<line>", f"expected a JSON object, got {type(raw).__name__}")
        qid = _field(raw, "question_id", str, file, where)
        where = f"line {line} (question_id {qid!r})"
        qtype = _field(raw, "question_type", str, file, where)
        sids = _str_list(_field(raw, "haystack_session_ids", list, file, where), "haystack_session_ids", file, where)
        sessions = _sessions(_field(raw, "haystack_sessions", list, file, where), file, where)
        if len(sids) != len(sessions):
            raise InputError(file, where, "haystack_sessions",
                             f"{len(sessions)} sessions but {len(sids)} haystack_session_ids")
        ranked = _ranked_ids(raw, file, where)
        return cls(line, qid, qtype, tuple(sids), sessions, ranked)


def _field(raw: dict, key: str, typ: type, file: str, where: str) -> Any:
    if key not in raw:
        raise InputError(file, where, key, "missing", fix=f"every log line needs '{key}' (upstream format)")
    value = raw[key]
    if not isinstance(value, typ):
        raise InputError(file, where, key, f"expected {typ.__name__}, got {type(value).__name__}")
    return value


def _str_list(values: list, name: str, file: str, where: str) -> list[str]:
    for i, v in enumerate(values):
        if not isinstance(v, str):
            raise InputError(file, where, f"{name}[{i}]", f"expected str, got {type(v).__name__}")
    return values


def _sessions(raw: list, file: str, where: str) -> tuple[tuple[LogTurn, ...], ...]:
    out = []
    for i, session in enumerate(raw):
        if not isinstance(session, list):
            raise InputError(file, where, f"haystack_sessions[{i}]", f"expected a list of turns, got {type(session).__name__}")
        out.append(tuple(_turn(t, f"haystack_sessions[{i}][{j}]", file, where) for j, t in enumerate(session)))
    return tuple(out)


def _turn(raw: Any, name: str, file: str, where: str) -> LogTurn:
    if not isinstance(raw, dict):
        raise InputError(file, where, name, f"expected a turn object, got {type(raw).__name__}")
    role, content = raw.get("role"), raw.get("content")
    for key, value in (("role", role), ("content", content)):
        if not isinstance(value, str):
            raise InputError(file, where, f"{name}.{key}", "missing or not a string")
    has_answer = raw.get("has_answer")
    if has_answer is not None and not isinstance(has_answer, bool):
        raise InputError(file, where, f"{name}.has_answer", f"expected true/false, got {has_answer!r}")
    return LogTurn(role, content, has_answer)


def _ranked_ids(raw: dict, file: str, where: str) -> tuple[str, ...]:
    results = _field(raw, "retrieval_results", dict, file, where)
    if "ranked_items" not in results:
        raise InputError(file, where, "retrieval_results.ranked_items", "missing",
                         fix="write the full ranking as a list of {corpus_id, text, timestamp}")
    items = results["ranked_items"]
    if not isinstance(items, list):
        raise InputError(file, where, "retrieval_results.ranked_items", f"expected a list, got {type(items).__name__}")
    ids: list[str] = []
    first: dict[str, int] = {}
    for j, item in enumerate(items):
        name = f"retrieval_results.ranked_items[{j}].corpus_id"
        cid = item.get("corpus_id") if isinstance(item, dict) else None
        if not isinstance(cid, str):
            raise InputError(file, where, name, "missing or not a string")
        if cid in first:
            raise InputError(file, where, name, f"duplicate corpus id {cid!r} (also at ranked_items[{first[cid]}])")
        first[cid] = j
        ids.append(cid)
    return tuple(ids)


def read_retrieval_log(path: str | Path) -> Iterator[RetrievalLogRecord]:
    """Yield typed records, one per non-empty line; a bad line raises InputError naming it."""
    require_file(path, fix="check the path of the retrieval log")
    for line, raw in read_jsonl(path):
        yield RetrievalLogRecord.from_record(raw, file=str(path), line=line)


def load_reference_ids(path: str | Path) -> set[str]:
    """question_ids of a LongMemEval reference file (a JSON list of instances)."""
    file = require_file(path, fix="pass the LongMemEval dataset file (JSON list) the log was produced from")
    try:
        with open(file, encoding="utf-8") as fh:
            data = json.load(fh)
    except json.JSONDecodeError as exc:
        raise InputError(str(path), "<file>", "<json>", f"not valid JSON ({exc.msg})") from None
    if not isinstance(data, list):
        raise InputError(str(path), "<file>", "<root>", "expected a JSON list of LongMemEval instances")
    ids: set[str] = set()
    for i, inst in enumerate(data):
        qid = inst.get("question_id") if isinstance(inst, dict) else None
        if not isinstance(qid, str):
            raise InputError(str(path), f"index {i}", "question_id", "missing or not a string")
        ids.add(qid)
    return ids


def corpus_ids_for(rec: RetrievalLogRecord, granularity: str, file: str) -> tuple[str, list[str]]:
    """(granularity, corpus ids) for a record; ``auto`` picks the granularity whose corpus
    (built from the line's haystack) contains every ranked id. Unknown ids raise InputError."""
    candidates = GRANULARITIES if granularity == AUTO else (granularity,)
    built = {g: [cid for cid, _ in haystack_corpus(rec.haystack_session_ids, rec.haystack_sessions, g)]
             for g in candidates}
    fits = [g for g in candidates if set(rec.ranked_ids) <= set(built[g])]
    if granularity == AUTO and len(fits) != 1:
        raise InputError(file, rec.record, "retrieval_results.ranked_items",
                         "unknown granularity: the ranked ids match " + ("both" if fits else "neither")
                         + " the session and the turn corpus built from the haystack",
                         fix="pass the granularity explicitly (session or turn)")
    if not fits:
        j, bad = next((j, c) for j, c in enumerate(rec.ranked_ids) if c not in set(built[granularity]))
        raise InputError(file, rec.record, f"retrieval_results.ranked_items[{j}].corpus_id",
                         f"{bad!r} is not in the {granularity} corpus built from the haystack",
                         fix="check the granularity, or that the log was written for this haystack")
    return fits[0], built[fits[0]]


def _check_granularity(granularity: str, file: str) -> None:
    if granularity not in (*GRANULARITIES, AUTO):
        raise InputError(file, "every line", "granularity",
                         f"unknown granularity {granularity!r}; expected one of session, turn, auto")


def score_retrieval_log(
    path: str | Path,
    granularity: str,
    profile: str | RetrievalProfile,
    reference_path: str | Path | None = None,
    ks: Sequence[int] = DEFAULT_KS,
) -> dict[str, Any]:
    """Score every line of a retrieval log under a profile; returns per-question metrics and
    both averaging rules (aggregate.exclude_abs, aggregate.exclude_abs_and_no_user_target)."""
    file = str(path)
    _check_granularity(granularity, file)
    prof = get_profile(profile) if isinstance(profile, str) else profile
    known = load_reference_ids(reference_path) if reference_path is not None else None
    per_question: dict[str, Any] = {}
    user_target: dict[str, bool] = {}
    types: dict[str, str] = {}
    seen: set[str] = set()
    detected: str | None = None
    for rec in read_retrieval_log(path):
        _check_question_id(rec, file, seen, known, reference_path)
        gran, corpus = corpus_ids_for(rec, granularity, file)
        detected = _same_granularity(detected, gran, rec, file)
        per_question[rec.question_id] = prof.evaluate(list(rec.ranked_ids), corpus, targets(corpus), ks, gran)
        user_target[rec.question_id] = has_user_target(rec.haystack_sessions)
        types[rec.question_id] = rec.question_type
    return {
        "profile": prof.name,
        "official_equivalence": prof.official_equivalence,
        "granularity": detected or granularity,
        "per_question": per_question,
        "questions": {q: {"question_type": types[q], "has_user_target": user_target[q]} for q in per_question},
        "aggregate": {
            "exclude_abs": average_exclude_abs(per_question),
            "exclude_abs_and_no_user_target": average_exclude_abs_and_no_user_target(per_question, user_target),
        },
    }


def _check_question_id(
    rec: RetrievalLogRecord, file: str, seen: set[str], known: set[str] | None, reference: Any
) -> None:
    if rec.question_id in seen:
        raise InputError(file, rec.record, "question_id", "duplicate question_id (already scored on an earlier line)")
    seen.add(rec.question_id)
    if known is not None and rec.question_id not in known:
        raise InputError(file, rec.record, "question_id", f"not found in reference file {reference}",
                         fix="score the log against the dataset file it was produced from")


def _same_granularity(before: str | None, now: str, rec: RetrievalLogRecord, file: str) -> str:
    if before is not None and now != before:
        raise InputError(file, rec.record, "retrieval_results.ranked_items",
                         f"this line ranks a {now} corpus but earlier lines rank a {before} corpus",
                         fix="one log file holds one granularity; split the file")
    return now


def detail_path(headline: str | Path) -> Path:
    """metrics/retrieval.json → metrics/detail/retrieval.json (the detail sits under detail/)."""
    path = Path(headline)
    return path.parent / "detail" / path.name


def write_retrieval_scores(log: str | Path, *, granularity: str, profile: str, ks: Sequence[int],
                           headline: str | Path, detail: str | Path | None = None, plot: str | Path | None = None,
                           reference: str | Path | None = None, memory: str | None = None,
                           variant: str | None = None, suite: str | None = None,
                           memory_fingerprint: str | None = None, resamples: int = 1000, seed: int = 0,
                           per_question: bool = False) -> RetrievalMetricFiles:
    """Score ``log`` under ``profile`` and write the headline (``headline``), the detail (``detail``,
    default :func:`detail_path` of the headline) and, when given, the plot rows (``plot``).

    ``memory`` / ``variant`` / ``suite`` / ``memory_fingerprint`` are recorded as given (None when
    unknown). A bad log line raises InputError naming file, line and field; nothing is written then."""
    scored = score_retrieval_log(log, granularity, profile, reference, ks=ks)
    files = retrieval_metric_files(scored, memory=memory, variant=variant, suite=suite,
                                   memory_fingerprint=memory_fingerprint, resamples=resamples, seed=seed,
                                   per_question=per_question)
    write_json_atomic(detail if detail is not None else detail_path(headline), files.detail)
    write_json_atomic(headline, files.headline)
    if plot is not None:
        write_json_atomic(plot, files.plot)
    return files
