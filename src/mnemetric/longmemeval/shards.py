"""Answer and judge on one question shard (``--shard K/N``, ``executor.shard``): the same jobs, on the shard's
questions only, each output with its ``.shard.json`` manifest (:mod:`mnemetric.shard`).

The shard is dealt from the question set the command is given (its universe: the adapted file or the
questions file for answer, the reference for judge) by question type, so it is the same shard whether
the input is the whole contexts / hypotheses file or already a shard of it (then its manifest carries
each line's position in the unsharded run, and its shard is the run's when none is asked for). The
keys written make `mnemetric merge` put every line where the unsharded run writes it: hypotheses and
judged lines in input order; a failures sidecar with the reader's failures first, then the judge's,
each in input order (:mod:`mnemetric.llm.failures`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mnemetric.execute import Executor
from mnemetric.llm.failures import STAGES, QuestionFailure, failures_path
from mnemetric.longmemeval.answer import Queries, answer_inputs
from mnemetric.longmemeval.components import Judge, Reader, judge_file
from mnemetric.longmemeval.judge.run import Judged
from mnemetric.longmemeval.reader.run import Answered
from mnemetric.longmemeval.reference import Reference
from mnemetric.shard import FileLines, Shard, ShardRun


def answer_shard_run(shard: Shard | None, reader_cfg: Mapping[str, Any], contexts_file: str | Path,
                     universe: Sequence[tuple[str, str]], data_file: str | Path) -> ShardRun:
    return ShardRun.start("answer", shard, universe, data_file=data_file, config={"reader": dict(reader_cfg)},
                          inputs=[contexts_file])


def judge_shard_run(shard: Shard | None, judge_cfg: Mapping[str, Any], hyp_file: str | Path,
                    refs: Mapping[str, Reference], data_file: str | Path) -> ShardRun:
    universe = [(r.question_id, r.question_type) for r in refs.values()]
    return ShardRun.start("judge", shard, universe, data_file=data_file, config={"judge": dict(judge_cfg)},
                          inputs=[hyp_file])


def _failure_lines(failures: Sequence[QuestionFailure], key_of: Mapping[tuple[str, str], list[int]]) -> FileLines:
    return FileLines([f.question_id for f in failures], [key_of[(f.stage, f.question_id)] for f in failures])


def answer_sharded(reader: Reader, contexts_file: str | Path, queries: Queries, executor: Executor,
                   run: ShardRun) -> tuple[Answered, FileLines, FileLines]:
    """The shard's hypotheses and failures, and their manifest lines (hypotheses, failures)."""
    contexts_queries, contexts = answer_inputs(contexts_file, queries)
    keys = run.input_keys(contexts_file, len(contexts))
    picked = [i for i, c in enumerate(contexts) if run.keep(c.question_id)]
    answered = reader.answer([contexts_queries[i] for i in picked], [contexts[i] for i in picked], executor)
    key_of = {contexts[i].question_id: keys[i] for i in picked}
    lines = FileLines([h["question_id"] for h in answered.hypotheses],
                      [key_of[h["question_id"]] for h in answered.hypotheses])
    group = STAGES.index("answer")
    fails = _failure_lines(answered.failures, {("answer", q): [group, *k] for q, k in key_of.items()})
    return answered, lines, fails


def judge_sharded(judge: Judge, hyps: Sequence[Mapping[str, Any]], refs: Mapping[str, Reference],
                  hyp_file: str | Path, executor: Executor, carried: Sequence[QuestionFailure],
                  run: ShardRun) -> tuple[Judged, FileLines, FileLines]:
    """The shard's judged lines and failures (the reader's carried first), and their manifest lines."""
    keys = run.input_keys(hyp_file, len(hyps))
    ckeys = run.input_keys(failures_path(hyp_file), len(carried), failures=True)
    picked = [i for i, h in enumerate(hyps) if run.keep(h["question_id"])]
    kept = [i for i, f in enumerate(carried) if run.keep(f.question_id)]
    judged = judge_file(judge, [hyps[i] for i in picked], refs, str(hyp_file), executor, [carried[i] for i in kept])
    key_of = {hyps[i]["question_id"]: keys[i] for i in picked}
    lines = FileLines([j["question_id"] for j in judged.lines], [key_of[j["question_id"]] for j in judged.lines])
    group = STAGES.index("judge")
    fkeys = {(carried[i].stage, carried[i].question_id): ckeys[i] for i in kept}
    fkeys |= {("judge", q): [group, *k] for q, k in key_of.items()}
    return judged, lines, _failure_lines(judged.failures, fkeys)
