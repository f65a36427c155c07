"""Running a judge audit: judges (Judge components) over item sets through the run's executor.

No client loop here: each judge builds its :class:`~mnemetric.execute.ModelCall` records and hands
them to the executor it is given (:meth:`Judge.judge`). Two jobs:

* :func:`run_bridge` — the successor bridge (:mod:`.bridge`): one candidate judge on the frozen
  hypotheses of a judged file;
* :func:`run_validity` — the judge matrix on the same answers (:mod:`.items`: the run's, controls,
  adversarial), the pairwise agreement, and the repeat-judging flip rate.

The flip rate: each judge that calls a model (a component with a ``model``) judges the run's
hypotheses again ``repeats`` times, each time through an executor made by ``repeat_executor(r)``
(:func:`repeat_executors` builds that factory for both doors, the stage and `mnemetric judge-audit`),
whose response cache is a SEPARATE file (:func:`isolated_executor`: reads of the main cache are
bypassed, its rows never overwritten; every fresh reply is committed to the repeat's own cache the
moment it arrives, so a crash loses no paid reply and a rerun of the audit reproduces its numbers).
flip rate = (fresh verdicts that differ from the judge's matrix verdict) / (fresh verdicts compared);
``unstable`` lists the questions with at least one such flip. Offline judges are deterministic: no
repeats (null).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, Iterator

from mnemetric.errors import ConfigError, InputError
from mnemetric.execute import Executor, build_executor
from mnemetric.longmemeval.judge_audit.bridge import bridge_record, compare_verdicts
from mnemetric.longmemeval.judge_audit.items import NEGATIVE, POSITIVE, RUN, Item, item_sets
from mnemetric.longmemeval.judge_audit.summary import judge_row, pairwise_rows, disputed_questions
from mnemetric.longmemeval.reference import Reference

Verdicts = dict[str, "bool | None"]


def judge_label(judge: Any) -> str:
    """How a judge is named in the matrix: its name, and its model when it calls one."""
    model = getattr(judge, "model", None)
    return f"{judge.name} ({model})" if model else str(judge.name)


def verdicts(judge: Any, items: Sequence[Item], refs: Mapping[str, Reference], file: str,
             executor: Executor) -> tuple[Verdicts, list[dict[str, Any]]]:
    """question_id → the judge's label on ``items`` (None: no verdict), and its failures as records."""
    if not items:
        return {}, []
    judged = judge.judge([i.hypothesis_record() for i in items], refs, file, executor)
    labels = {line["question_id"]: bool(line["autoeval_label"]["label"]) for line in judged.lines}
    return {i.question_id: labels.get(i.question_id) for i in items}, [f.to_record() for f in judged.failures]


def official_verdicts(judged_file: str | Path) -> tuple[list[dict[str, str]], dict[str, bool]]:
    """The frozen hypotheses of a judged file and its labels (the verdicts of record)."""
    from mnemetric.longmemeval.hypotheses import read_judged

    hyps, labels = [], {}
    for i, j in enumerate(read_judged(judged_file), start=1):
        if j.hypothesis is None:
            raise InputError(str(judged_file), f"line {i} ({j.question_id})", "hypothesis",
                             "missing: a judged file to re-judge must echo each hypothesis (as upstream's does)")
        hyps.append({"question_id": j.question_id, "hypothesis": j.hypothesis})
        labels[j.question_id] = j.label
    return hyps, labels


def _file_record(path: str | Path) -> dict[str, str]:
    from mnemetric.io import sha256_file

    return {"path": str(path), "sha256": sha256_file(path)}


def _refs_for(hyps: Sequence[Mapping[str, str]], refs: Mapping[str, Reference], file: str) -> dict[str, Reference]:
    out = {}
    for i, h in enumerate(hyps, start=1):
        if h["question_id"] not in refs:
            raise InputError(file, f"line {i} ({h['question_id']})", "question_id", "not in the reference file",
                             fix="audit a judged file against the dataset it answers")
        out[h["question_id"]] = refs[h["question_id"]]
    return out


def run_bridge(judge: Any, judged_file: str | Path, refs: Mapping[str, Reference], executor: Executor, *,
               min_kappa: float) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Re-judge the judged file's hypotheses with ``judge``; the bridge record and the candidate's judged lines."""
    hyps, official = official_verdicts(judged_file)
    mine = _refs_for(hyps, refs, str(judged_file))
    judged = judge.judge(hyps, mine, str(judged_file), executor)
    labels = {line["question_id"]: bool(line["autoeval_label"]["label"]) for line in judged.lines}
    comparison = compare_verdicts(official, labels, {q: r.question_type for q, r in mine.items()})
    candidate = {"name": judge_label(judge), "judge": judge.name, "model": getattr(judge, "model", None)}
    record = bridge_record(candidate, comparison, min_kappa=min_kappa, official_file=_file_record(judged_file),
                           failures=[f.to_record() for f in judged.failures])
    return record, judged.lines


@contextmanager
def isolated_executor(section: Mapping[str, Any] | None, llm: Mapping[str, Any] | None, cache_path: Path,
                      main: Executor) -> Iterator[Executor]:
    """An executor like the run's (same option, ``llm`` settings, usage ledger and budget) whose
    response cache is the separate file ``cache_path``: it never reads or writes the main cache."""
    from mnemetric.llm.cache import ResponseCache

    cache = ResponseCache(cache_path)
    extra: dict[str, Any] = {"cache": cache, "usage": main.usage, "progress": False}
    if getattr(main, "budget", None) is not None:
        extra["budget"] = main.budget
    try:
        try:
            ex = build_executor(section, llm, where="executor (judge-audit repeats)", **extra)
        except TypeError as exc:  # an executor option that takes no cache of its own
            raise ConfigError("executor", f"this executor cannot run the repeats over a separate cache ({exc})",
                              fix="run `mnemetric judge-audit validity --repeats` with --executor immediate") from None
        try:
            yield ex
        finally:
            ex.close()
    finally:
        cache.close()


def default_repeat_folder() -> Path:
    """Where the repeats' caches go unless told: ``<MNEMETRIC_CACHE_DIR>/judge-audit`` (never the main cache)."""
    from mnemetric.llm.cache import default_cache_dir

    return default_cache_dir() / "judge-audit"


def repeat_executors(section: Mapping[str, Any] | None, llm: Mapping[str, Any] | None, folder: Path,
                     main: Executor) -> Callable[[int], AbstractContextManager[Executor]]:
    """The ``repeat_executor`` of :func:`run_validity`: repeat ``r`` runs through an :func:`isolated_executor`
    whose cache is ``folder/repeat-<r>/llm-cache.sqlite3`` — one folder per repeat, so an executor that keeps
    state beside its cache (the batch ledger) keeps it apart too."""
    from mnemetric.llm.cache import CACHE_FILENAME

    def repeat_executor(r: int) -> AbstractContextManager[Executor]:
        return isolated_executor(section, llm, Path(folder) / f"repeat-{r}" / CACHE_FILENAME, main)
    return repeat_executor


def _repeat(judge: Any, run_set: Sequence[Item], base: Verdicts, refs: Mapping[str, Reference], file: str,
            repeats: int, repeat_executor: Callable[[int], Any]) -> dict[str, Any]:
    flips, compared, unstable = 0, 0, set()
    for r in range(1, repeats + 1):
        with repeat_executor(r) as ex:
            fresh, _ = verdicts(judge, run_set, refs, file, ex)
        for q, label in fresh.items():
            if label is not None and base.get(q) is not None:
                compared += 1
                if label != base[q]:
                    flips += 1
                    unstable.add(q)
    return {"repeats": repeats, "compared": compared, "flips": flips,
            "flip_rate": flips / compared if compared else None, "unstable": sorted(unstable)}


def run_validity(judges: Sequence[Any], judged_file: str | Path, refs: Mapping[str, Reference], executor: Executor,
                 *, repeats: int = 0, repeat_executor: Callable[[int], Any] | None = None,
                 reference_file: str | Path | None = None) -> dict[str, Any]:
    """The judge matrix, controls, adversarial acceptance, pairwise agreement and flip rate (module
    docstring) → the validity record (:mod:`.files`)."""
    names = [judge_label(j) for j in judges]
    if len(set(names)) != len(names) or not names:
        raise ConfigError("--judge", f"the judge matrix needs distinct judges (got {names})")
    if repeats and repeat_executor is None:
        raise ConfigError("--repeats", "repeats need an executor with a separate cache")
    hyps, official = official_verdicts(judged_file)
    mine = _refs_for(hyps, refs, str(judged_file))
    sets = item_sets(hyps, mine)
    file = str(judged_file)
    labels: dict[str, dict[str, Verdicts]] = {}
    rows = []
    for judge, name in zip(judges, names):
        labels[name], failed = {}, 0
        for set_name, items in sets.items():
            labels[name][set_name], failures = verdicts(judge, items, mine, file, executor)
            failed += len(failures)
        repeat = None
        if repeats and getattr(judge, "model", None):
            repeat = _repeat(judge, sets[RUN], labels[name][RUN], mine, file, repeats, repeat_executor)
        rows.append(judge_row(name, judge, sets, labels[name], official, mine, repeat, failed))
    record = {"official_equivalence": {"value": False, "reasons": [
                  "a judge audit measures the judges: none of its numbers is a LongMemEval score"]},
              "judged_file": _file_record(judged_file),
              "reference_file": _file_record(reference_file) if reference_file else None,
              "judges": rows, "pairwise": pairwise_rows(official, {n: labels[n][RUN] for n in names}, mine),
              "disputed": disputed_questions(official, labels, sets),
              "items": [item_record(i, {n: labels[n][s].get(i.question_id) for n in names})
                        for s, items in sets.items() for i in items]}
    return record


def item_record(item: Item, labels: Mapping[str, bool | None]) -> dict[str, Any]:
    return {"set": item.set_name, "question_id": item.question_id, "question_type": item.question_type,
            "hypothesis": item.hypothesis, "expected": item.expected, "donor": item.donor, "labels": dict(labels)}


__all__ = ["NEGATIVE", "POSITIVE", "RUN", "default_repeat_folder", "isolated_executor", "judge_label",
           "official_verdicts", "repeat_executors", "run_bridge", "run_validity", "verdicts"]
