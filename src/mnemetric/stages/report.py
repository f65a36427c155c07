"""Stage report: the offline HTML report reports/index.html of the headline family.

The family is params ``benchmark`` (built with :func:`mnemetric.family.build_family`); its
``report(params, card)`` fills the report model from its own files (LongMemEval:
metrics/detail/qa.json, metrics/detail/retrieval.json, metrics/detail/attribution.json (when present),
metrics/data.json and metrics/run.json;
LongMemEval-V2: metrics/v2.json and metrics/run-v2.json) and
:func:`mnemetric.report.page.write_family_report` renders it (inline SVG, no script, no network)
with the family's result card and writes it atomically. ``PARAMS`` are ``benchmark`` and every
family's ``report_params`` (the ``benchmark`` conf group), as dvc.yaml lists them. No baseline here
(a stage has one revision): `mnemetric report --baseline REV` adds the flips.
"""

from __future__ import annotations

from pathlib import Path

from mnemetric.family import Family, build_family, conf_families
from mnemetric.params import stage_params
from mnemetric.report.page import write_family_report
from mnemetric.stages import run

OUT = Path("reports/index.html")


def report_params(families: tuple[Family, ...] | None = None) -> list[str]:
    """``benchmark`` and every family's report params (the stage's declared params), in family order."""
    fams = conf_families() if families is None else families
    return ["benchmark", *dict.fromkeys(k for f in fams for k in f.report_params)]


PARAMS = report_params()


def main() -> None:
    p = stage_params(PARAMS)
    family = build_family(p["benchmark"])
    write_family_report(family, p, OUT)
    print(f"report: {OUT} ({family.display_name}; offline: inline SVG, no script)")


if __name__ == "__main__":
    run(main)
