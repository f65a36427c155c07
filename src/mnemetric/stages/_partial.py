"""The end of a model-calling stage where some questions failed (stages answer, judge, v2_read, v2_check).

How a partial failure resumes under DVC (README "Failures, resume and replay"): by default the stage writes
its outputs, then exits 3 (:class:`~mnemetric.llm.failures.PartialFailure`). DVC commits no stage that
exited non-zero (dvc.lock keeps no entry for this run, the run cache none either) and runs nothing after it,
so the next plain `dvc repro` runs the stage again: the response cache answers every question that
succeeded with 0 requests, and failures are never cached, so exactly the failed requests are sent again.
With ``llm.allow_partial: true`` the stage exits 0: DVC records the partial result as the stage's output
(the metrics say so: both accuracies, ``official_equivalence`` false with the failed count); DVC has no way
to rerun a stage that exited 0 while its inputs stay the same, so the warning names the one command that
re-asks them (``dvc repro -f -s <stage> && dvc repro``).
"""

from __future__ import annotations

import os

from mnemetric.stages import in_workspace_experiment


def rerun_command() -> str:
    """The ONE command that re-asks only a stage's failed questions after it exited non-zero: a plain
    `dvc repro` (DVC commits no stage that failed, so it runs again; the response cache answers what
    succeeded, and failures are never cached). A queued or --temp experiment ran elsewhere: run it again."""
    if os.environ.get("DVC_EXP_BASELINE_REV") and not in_workspace_experiment():
        return "the same `dvc exp run` again"
    return "dvc repro"


def end_partial(stage: str, failures: list, total: int, allow_partial: bool, scores: str = "") -> None:
    """After a stage wrote its outputs: when some (not all) questions failed, exit non-zero naming the count
    and :func:`rerun_command` (:class:`~mnemetric.llm.failures.PartialFailure`), unless ``allow_partial``
    (``llm.allow_partial``): then only a warning, with the command that re-asks them — DVC records a stage that
    exited 0 as done, so a partial result kept this way is re-asked by forcing the stage once."""
    import sys

    from mnemetric.llm.failures import PartialFailure, partial_message

    if not failures or len(failures) >= total:  # every question failed: AllQuestionsFailed, raised before writing
        return
    if allow_partial:
        print(partial_message(stage, failures, total, f"dvc repro -f -s {stage} && dvc repro", scores), file=sys.stderr)
        return
    raise PartialFailure(stage, failures, total, rerun_command(), scores,
                         keep="dvc exp run -S llm.allow_partial=true")
