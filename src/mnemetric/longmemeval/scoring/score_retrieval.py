"""Scoring an upstream retrieval log: the one path from a log to its numbers and metric files.

:func:`score_retrieval_log` recomputes every question's metrics from its ranking, with the corpus rebuilt
from the line's own haystack (docs/upstream-protocol.md sections 2.1-2.3), and averages them by both rules
(:mod:`.retrieval_averaging`). :func:`write_retrieval_scores` writes metrics/retrieval.json's layout,
metrics/detail/retrieval.json's and the recall plot rows (:mod:`.retrieval_report`); stage
``retrieval_metrics`` and ``mnemetric score-retrieval`` both call it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mnemetric.errors import InputError
from mnemetric.io import write_json_atomic
from mnemetric.longmemeval.reference import reference_ids
from mnemetric.longmemeval.retrieval_log import RetrievalLogRecord, read_retrieval_log
from mnemetric.longmemeval.rules import GRANULARITIES
from mnemetric.longmemeval.scoring.retrieval import DEFAULT_KS
from mnemetric.longmemeval.corpus import has_user_target, haystack_corpus, targets
from mnemetric.longmemeval.scoring.retrieval_profiles import RetrievalProfile, get_profile
from mnemetric.longmemeval.scoring.retrieval_report import RetrievalMetricFiles, retrieval_metric_files
from mnemetric.longmemeval.scoring.scored_retrieval import QuestionFacts, ScoredRetrieval

AUTO = "auto"


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
) -> ScoredRetrieval:
    """Score every line of a retrieval log under a profile: per-question metrics, the question facts
    and both averaging rules (:class:`~.scored_retrieval.ScoredRetrieval`)."""
    file = str(path)
    _check_granularity(granularity, file)
    prof = get_profile(profile) if isinstance(profile, str) else profile
    known = reference_ids(reference_path) if reference_path is not None else None
    per_question: dict[str, Any] = {}
    facts: dict[str, QuestionFacts] = {}
    seen: set[str] = set()
    detected: str | None = None
    for rec in read_retrieval_log(path):
        _check_question_id(rec, file, seen, known, reference_path)
        gran, corpus = corpus_ids_for(rec, granularity, file)
        detected = _same_granularity(detected, gran, rec, file)
        per_question[rec.question_id] = prof.evaluate(list(rec.ranked_ids), corpus, targets(corpus), ks, gran)
        facts[rec.question_id] = QuestionFacts(rec.question_type, has_user_target(rec.haystack_sessions))
    return ScoredRetrieval.build(prof.name, prof.official_equivalence, detected or granularity, per_question, facts)


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
