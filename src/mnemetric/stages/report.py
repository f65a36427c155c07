"""Stage report FAMILY...: the offline HTML report reports/index.html of the headline family.

``python -m mnemetric.stages.report longmemeval longmemeval-v2`` (dvc.yaml) draws the headline family
(params ``benchmark``, built with :func:`mnemetric.family.build_family`) when it is one of the families
named on the command line, else the first of them. A new family adds its own stage, drawing its page
elsewhere: ``python -m mnemetric.stages.report --out reports/quiz.html quiz``. The family's
``report(params, card)`` fills the report model from its own files (LongMemEval:
metrics/detail/qa.json, metrics/detail/retrieval.json, metrics/detail/attribution.json (when present),
metrics/data.json and metrics/run.json;
LongMemEval-V2: metrics/v2.json and metrics/run-v2.json) and
:func:`mnemetric.report.page.write_family_report` renders it (inline SVG, no script, no network)
with the family's result card and writes it atomically. The declared params are ``benchmark`` and
the named families' ``report_params`` (:func:`params_for`), as dvc.yaml lists them. No baseline here
(a stage has one revision): `mnemetric report --baseline REV` adds the flips.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from mnemetric.family import Family, build_family, families_from_args
from mnemetric.params import stage_params
from mnemetric.report.page import write_family_report
from mnemetric.stages import option, run

OUT = "reports/index.html"


def report_params(families: Sequence[Family]) -> list[str]:
    """``benchmark`` and the families' report params, in family order."""
    return ["benchmark", *dict.fromkeys(k for f in families for k in f.report_params)]


def params_for(args: Sequence[str]) -> list[str]:
    """The stage's declared params for its command-line arguments (``--out PATH``, family names)."""
    return report_params(families_from_args(option(args, "--out", OUT)[0]))


def main(argv: Sequence[str] | None = None) -> None:
    names, out = option(sys.argv[1:] if argv is None else argv, "--out", OUT)
    families = families_from_args(names)
    p = stage_params(report_params(families))
    headline = build_family(p["benchmark"])
    family = headline if headline.name in {f.name for f in families} else families[0]
    write_family_report(family, p, Path(out))
    print(f"report: {out} ({family.display_name}; offline: inline SVG, no script)")


if __name__ == "__main__":
    run(main)
