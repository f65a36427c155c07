"""The numbers of a judge audit, from the verdicts (pure functions; :mod:`.run` collects the verdicts).

Per judge (:func:`judge_row`):

* ``controls.positive`` / ``controls.negative``: ``n`` items with a verdict, ``accepted`` (label
  yes), ``acceptance`` = accepted / n, ``failed`` (no verdict); a valid judge accepts every positive
  and no negative control;
* ``adversarial.<rule>``: the same over the items whose expected verdict is no (``graded``), and
  ``tolerated`` {n, accepted} over the items that are not graded (:func:`.adversarial.expected`);
* ``agreement_with_run``: :func:`.bridge.compare_verdicts` of its verdicts on the run's hypotheses
  against the run's own (the judged file's labels);
* ``repeat``: the flip rate (:mod:`.run`), or null.

Pairwise (:func:`pairwise_rows`): every pair of {the run's verdicts, each matrix judge} on the run's
hypotheses: raw agreement and Cohen's kappa with its interval, on the questions both labelled.

Disputed (:func:`disputed_questions`): question id → why its verdict is in doubt: a matrix judge
disagrees with the run's verdict on the run's answer, a judge rejected the question's gold answer
(positive control), or accepted another question's gold (negative control).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

from mnemetric.longmemeval.judge_audit.adversarial import RULES
from mnemetric.longmemeval.judge_audit.bridge import compare_verdicts
from mnemetric.longmemeval.judge_audit.items import ADVERSARIAL, NEGATIVE, POSITIVE, RUN, Item
from mnemetric.longmemeval.reference import Reference
from mnemetric.stats.agreement import agreement

RUN_JUDGE = "run verdicts"
"""The name of the judged file's own labels in the pairwise table."""


def acceptance(items: Sequence[Item], labels: Mapping[str, bool | None]) -> dict[str, Any]:
    """{n, accepted, acceptance, failed} of ``items`` (acceptance null when no item got a verdict)."""
    got = [labels.get(i.question_id) for i in items]
    judged = [g for g in got if g is not None]
    accepted = sum(judged)
    return {"n": len(judged), "accepted": accepted, "acceptance": accepted / len(judged) if judged else None,
            "failed": len(got) - len(judged)}


def judge_row(name: str, judge: Any, sets: Mapping[str, Sequence[Item]], labels: Mapping[str, Mapping[str, bool | None]],
              official: Mapping[str, bool], refs: Mapping[str, Reference], repeat: Mapping[str, Any] | None,
              failed: int) -> dict[str, Any]:
    adversarial = {}
    for rule in RULES:
        items = sets.get(f"{ADVERSARIAL}:{rule}", [])
        got = labels.get(f"{ADVERSARIAL}:{rule}", {})
        graded = acceptance([i for i in items if i.expected is False], got)
        tolerated = acceptance([i for i in items if i.expected is None], got)
        adversarial[rule] = graded | {"tolerated": {"n": tolerated["n"], "accepted": tolerated["accepted"]}}
    types = {q: r.question_type for q, r in refs.items()}
    return {"name": name, "judge": judge.name, "model": getattr(judge, "model", None),
            "kind": getattr(judge, "kind", None),
            "controls": {POSITIVE: acceptance(sets[POSITIVE], labels[POSITIVE]),
                         NEGATIVE: acceptance(sets[NEGATIVE], labels[NEGATIVE])},
            "adversarial": adversarial,
            "agreement_with_run": compare_verdicts(official, labels[RUN], types).to_record(),
            "repeat": None if repeat is None else dict(repeat), "failed": failed}


def pairwise_rows(official: Mapping[str, bool], run_labels: Mapping[str, Mapping[str, bool | None]],
                  refs: Mapping[str, Reference]) -> list[dict[str, Any]]:
    raters = {RUN_JUDGE: dict(official), **{n: dict(v) for n, v in run_labels.items()}}
    rows = []
    for a, b in combinations(raters, 2):
        ids = sorted(q for q in refs if raters[a].get(q) is not None and raters[b].get(q) is not None)
        rows.append({"a": a, "b": b, **agreement([raters[a][q] for q in ids], [raters[b][q] for q in ids]).to_record()})
    return rows


def disputed_questions(official: Mapping[str, bool], labels: Mapping[str, Mapping[str, Mapping[str, bool | None]]],
                       sets: Mapping[str, Sequence[Item]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    yes = {True: "yes", False: "no"}
    for name, by_set in labels.items():
        for q, label in sorted(by_set[RUN].items()):
            if label is not None and q in official and label != official[q]:
                out.setdefault(q, []).append(f"{name} says {yes[label]} to the run's answer; the run's verdict is "
                                             f"{yes[official[q]]}")
        for item in sets[POSITIVE]:
            if by_set[POSITIVE].get(item.question_id) is False:
                out.setdefault(item.question_id, []).append(f"{name} rejected the gold answer (positive control)")
        for item in sets[NEGATIVE]:
            if by_set[NEGATIVE].get(item.question_id) is True:
                out.setdefault(item.question_id, []).append(
                    f"{name} accepted the gold answer of {item.donor} (negative control)")
    return {q: out[q] for q in sorted(out)}
