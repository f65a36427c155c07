"""Retrieval metric kernels for LongMemEval (V1): upstream-exact ones plus a labelled historical pair.

Every function here is pure: plain lists in, numbers out, one question at a time. The upstream
reference for the ``longmemeval-session-upstream-v1`` kernels is xiaowu0162/LongMemEval @
9e0b455f4ef0e2ab8f2e582289761153549043fc ``src/retrieval/eval_utils.py``. The functions are
written from the facts in docs/upstream-protocol.md section 2; no upstream code is copied.
Beside this module: ``mnemetric.longmemeval.corpus`` (the corpus rules of run_retrieval.py: a question's
corpus ids and targets), ``retrieval_averaging`` (upstream's two averaging rules) and
``retrieval_profiles`` (the named profiles that pick a per-question function).

Notation used in the docstrings: ``R`` = ranked corpus ids, best first; ``R[:k]`` its top k;
``C`` = set of correct ids; ``ids`` = the corpus ids (duplicates allowed);
``rel(x) = 1 if x in C else 0``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from mnemetric.longmemeval.rules import GRANULARITIES
from mnemetric.longmemeval.scoring.retrieval_averaging import Metrics

UPSTREAM_REF = "xiaowu0162/LongMemEval src/retrieval/eval_utils.py @ 9e0b455f4ef0e2ab8f2e582289761153549043fc"
DEFAULT_KS: tuple[int, ...] = (1, 3, 5, 10, 30, 50)

# --------------------------------------------------------------------------------------------
# Upstream metric kernels (eval_utils.py)
# --------------------------------------------------------------------------------------------


def recall_any_at_k(ranked_ids: Sequence[str], correct: Iterable[str], k: int) -> float:
    """recall_any@k = 1 if some c in C is in R[:k], else 0.

    Empty-target rule: C empty -> 0.0 (nothing can be found).
    Source: eval_utils.py (UPSTREAM_REF).
    """
    top = set(ranked_ids[:k])
    return float(any(c in top for c in set(correct)))


def recall_all_at_k(ranked_ids: Sequence[str], correct: Iterable[str], k: int) -> float:
    """recall_all@k = 1 if every c in C is in R[:k], else 0.

    Empty-target rule: C empty -> 1.0 (vacuous truth; upstream keeps it, see issue #7).
    Source: eval_utils.py (UPSTREAM_REF).
    """
    top = set(ranked_ids[:k])
    return float(all(c in top for c in set(correct)))


def dcg_upstream(relevances: Sequence[float], k: int) -> float:
    """DCG@k in the Jarvelin-Kekalainen form used upstream: rel_1 + sum_{i=2..min(k,n)} rel_i / log2(i).

    Ranks 1 and 2 both weigh 1; rank i >= 3 weighs 1/log2(i). Empty list -> 0.0.
    Arithmetic mirrors the upstream NumPy order: float64 array cut to k, then
    ``rel[0] + sum(rel[1:] / log2(arange(2, n + 1)))``. Source: eval_utils.py (UPSTREAM_REF).
    """
    rel = np.asarray(relevances, dtype=np.float64)[:k]
    if rel.size == 0:
        return 0.0
    return float(rel[0] + np.sum(rel[1:] / np.log2(np.arange(2, rel.size + 1))))


def ndcg_any_at_k_upstream(
    ranked_ids: Sequence[str], corpus_ids: Sequence[str], correct: Iterable[str], k: int
) -> float:
    """ndcg_any@k = DCG@k(rel(R)) / DCG@k(sorted(rel(ids), descending)), DCG as in dcg_upstream.

    The ideal ranks **all** relevant corpus items first, duplicates included (every corpus item
    with an id in C counts), not only the retrieved ones.
    Empty-target rule: ideal DCG = 0 (no relevant corpus item) -> 0.0.
    Source: eval_utils.py (UPSTREAM_REF).
    """
    gold = set(correct)
    ideal = dcg_upstream(sorted((1 if x in gold else 0 for x in corpus_ids), reverse=True), k)
    if ideal == 0:
        return 0.0
    actual = dcg_upstream([1 if x in gold else 0 for x in ranked_ids], k)
    return float(actual / ideal)


# --------------------------------------------------------------------------------------------
# Turn -> session conversion (evaluate_retrieval_turn2session)
# --------------------------------------------------------------------------------------------


def turn_to_session_id(corpus_id: str) -> str:
    """Strip the last ``_<n>`` of a turn corpus id: ``answer_x_3`` -> ``answer_x``.

    ``noans_x_1`` -> ``noans_x`` (a different session from ``answer_x``, as upstream).
    Raises ValueError if the id does not end in ``_<digits>`` (not a turn corpus id).
    """
    head, sep, tail = corpus_id.rpartition("_")
    if not sep or not tail.isdigit():
        raise ValueError(f"not a turn corpus id (no trailing '_<n>'): {corpus_id!r}")
    return head


def effective_k(ranked_session_ids: Sequence[str], k: int, corpus_size: int | None = None) -> int:
    """Smallest k' >= k whose top k' holds >= k distinct session ids, or the corpus end.

    ``corpus_size`` defaults to ``len(ranked_session_ids)``; when the top k' never reaches k
    distinct ids the scan stops at max(k, corpus_size) (any cutoff >= the corpus length gives
    the same metric values). Source: eval_utils.py turn2session (UPSTREAM_REF).
    """
    n = len(ranked_session_ids) if corpus_size is None else corpus_size
    seen: set[str] = set()
    for pos, sid in enumerate(ranked_session_ids, start=1):
        seen.add(sid)
        if pos >= k and len(seen) >= k:
            return pos
        if pos >= n:
            break
    return max(k, n)


def evaluate_turn_as_session(
    ranked_ids: Sequence[str], corpus_ids: Sequence[str], correct: Iterable[str], k: int
) -> dict[str, float]:
    """Session-level metrics from a turn ranking: strip ``_<n>`` from R, ids and C, then score
    recall_any / recall_all / ndcg_any at ``effective_k`` (NDCG stays over turn items with
    session-label relevance). Keys ``recall_any@k`` etc. use the requested k, not effective_k.
    Source: eval_utils.py evaluate_retrieval_turn2session (UPSTREAM_REF).
    """
    ranked_s, corpus_s, correct_s = _as_sessions(ranked_ids, corpus_ids, correct)
    return _upstream_at(ranked_s, corpus_s, correct_s, effective_k(ranked_s, k, len(corpus_s)), k)


def _as_sessions(ranked_ids: Sequence[str], corpus_ids: Sequence[str], correct: Iterable[str]
                 ) -> tuple[list[str], list[str], set[str]]:
    """Turn ids -> session ids (strip the last ``_<n>``) for the ranking, the corpus and C."""
    return ([turn_to_session_id(x) for x in ranked_ids], [turn_to_session_id(x) for x in corpus_ids],
            {turn_to_session_id(x) for x in correct})


def _upstream_at(ranked: Sequence[str], corpus: Sequence[str], correct: set[str], cut: int, k: int) -> dict[str, float]:
    return {
        f"recall_any@{k}": recall_any_at_k(ranked, correct, cut),
        f"recall_all@{k}": recall_all_at_k(ranked, correct, cut),
        f"ndcg_any@{k}": ndcg_any_at_k_upstream(ranked, corpus, correct, cut),
    }


def _check_args(ks: Sequence[int], granularity: str) -> None:
    if granularity not in GRANULARITIES:
        raise ValueError(f"unknown granularity {granularity!r}; expected one of {GRANULARITIES}")
    bad = [k for k in ks if not isinstance(k, int) or isinstance(k, bool) or k < 1]
    if bad:
        raise ValueError(f"cutoffs must be integers >= 1, got {bad}")


def evaluate_question(
    ranked_ids: Sequence[str],
    corpus_ids: Sequence[str],
    correct: Iterable[str],
    ks: Sequence[int] = DEFAULT_KS,
    granularity: str = "turn",
) -> Metrics:
    """Upstream per-question metrics: {"session": {recall_any@k, recall_all@k, ndcg_any@k}, "turn": {...}}.

    Session granularity: ids are session ids, only the "session" level is filled.
    Turn granularity: "turn" = metrics on turn ids; "session" = evaluate_turn_as_session.
    Empty-target rules as in the kernels (any 0, all 1, ndcg 0). Source: eval_utils.py (UPSTREAM_REF).
    """
    return _evaluate_levels(ranked_ids, corpus_ids, correct, ks, granularity, _upstream_at)


def _evaluate_levels(ranked_ids: Sequence[str], corpus_ids: Sequence[str], correct: Iterable[str],
                     ks: Sequence[int], granularity: str, at: Callable[..., dict]) -> Metrics:
    """Shared level layout of both profiles: ``at(ranked, corpus, C, cutoff, k)`` per k; turn
    granularity adds the session level via turn->session conversion at ``effective_k``."""
    _check_args(ks, granularity)
    gold = set(correct)
    direct = _merge(at(ranked_ids, corpus_ids, gold, k, k) for k in ks)
    if granularity == "session":
        return {"session": direct}
    ranked_s, corpus_s, gold_s = _as_sessions(ranked_ids, corpus_ids, gold)
    return {
        "session": _merge(at(ranked_s, corpus_s, gold_s, effective_k(ranked_s, k, len(corpus_s)), k) for k in ks),
        "turn": direct,
    }


def _merge(parts: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for part in parts:
        out.update(part)
    return out


# --------------------------------------------------------------------------------------------
# Profile "mnemetric-historical" (NOT upstream; official_equivalence False)
# --------------------------------------------------------------------------------------------


def recall_fraction_at_k(ranked_ids: Sequence[str], correct: Iterable[str], k: int) -> float | None:
    """recall@k (historical) = |C ∩ R[:k]| / |C| — the share of targets retrieved.

    Mnemetric definition, not upstream. Empty-target rule: C empty -> None (undefined; the
    question is left out of that metric's mean).
    """
    gold = set(correct)
    if not gold:
        return None
    top = set(ranked_ids[:k])
    return len(gold & top) / len(gold)


def ndcg_at_k_standard(
    ranked_ids: Sequence[str], corpus_ids: Sequence[str], correct: Iterable[str], k: int
) -> float | None:
    """ndcg@k (historical) = sum_{i<=k} rel(R_i)/log2(i+1) / the same sum over sorted(rel(ids)).

    Standard (Burges-free, linear-gain) NDCG; the ideal is over all relevant corpus items,
    duplicates included. Mnemetric definition, not upstream.
    Empty-target rule: ideal = 0 (no relevant corpus item) -> None.
    """
    gold = set(correct)
    ideal = _dcg_standard(sorted((1 if x in gold else 0 for x in corpus_ids), reverse=True), k)
    if ideal == 0:
        return None
    return _dcg_standard([1 if x in gold else 0 for x in ranked_ids], k) / ideal


def _dcg_standard(relevances: Sequence[float], k: int) -> float:
    rel = np.asarray(relevances, dtype=np.float64)[:k]
    return float(np.sum(rel / np.log2(np.arange(2, rel.size + 2))))


def _historical_at(ranked: Sequence[str], corpus: Sequence[str], correct: set[str], cut: int, k: int) -> dict[str, float | None]:
    return {
        f"recall@{k}": recall_fraction_at_k(ranked, correct, cut),
        f"ndcg@{k}": ndcg_at_k_standard(ranked, corpus, correct, cut),
    }


def evaluate_question_historical(
    ranked_ids: Sequence[str],
    corpus_ids: Sequence[str],
    correct: Iterable[str],
    ks: Sequence[int] = DEFAULT_KS,
    granularity: str = "turn",
) -> Metrics:
    """Historical per-question metrics ``recall@k`` / ``ndcg@k`` with the same level layout and
    the same turn->session conversion (strip ``_<n>``, cutoff effective_k) as evaluate_question.
    """
    return _evaluate_levels(ranked_ids, corpus_ids, correct, ks, granularity, _historical_at)

