"""The judge as a measured instrument (issue 19 items 3-4): the successor bridge and judge validity.

* :mod:`.bridge` — a candidate judge's verdicts on a frozen judged file against the official ones
  (per-type Cohen's kappa with an interval, raw agreement, flip lists; "bridged" above a threshold,
  never official);
* :mod:`.adversarial` — wrong answers made from the gold by fixed rules (pure functions);
* :mod:`.items` — the answers every judge sees: the run's, positive and negative controls, adversarial;
* :mod:`.summary` — acceptance, agreement, disputed questions (pure);
* :mod:`.run` — judging the item sets through the run's executor, and the repeat-judging flip rate
  through executors with a separate cache;
* :mod:`.files` — the audit file's writer and typed reader (:func:`read_judge_audit`);
* :mod:`.report` — the report page's "Judge validity" section.

The doors: `mnemetric judge-audit bridge` and `mnemetric judge-audit validity` (mnemetric.cli.judge_audit);
`mnemetric report --judge-audit FILE` shows the section.
"""

from mnemetric.longmemeval.judge_audit.bridge import DEFAULT_MIN_KAPPA, compare_verdicts, is_bridged
from mnemetric.longmemeval.judge_audit.files import DEFAULT_PATH, JudgeAudit, JudgeSummary, read_judge_audit

__all__ = ["DEFAULT_MIN_KAPPA", "DEFAULT_PATH", "JudgeAudit", "JudgeSummary", "compare_verdicts", "is_bridged",
           "read_judge_audit"]
