"""Stage report: the offline HTML report reports/index.html from the metric files.

Reads metrics/detail/qa.json, metrics/detail/retrieval.json (written next to ``paths.metrics_qa``
/ ``paths.metrics_retrieval`` under detail/), ``paths.metrics_data`` and, when it exists, the run
manifest metrics/run.json (next to ``paths.metrics_qa``); fills the report model
(mnemetric.longmemeval.report) and writes ``render_report`` (inline SVG, no script, no network)
atomically. No baseline here (a stage has one revision): `mnemetric report --baseline REV` adds
the flips. The result card is ``mnemetric.custody.card.render_card`` of the run manifest, the QA
and retrieval detail and data/custody/outputs.sha256.json (next to the custody files); without a
run manifest the card is left empty. This door passes the card renderer to the report library.
"""

from __future__ import annotations

from pathlib import Path

from mnemetric.custody.card import render_card
from mnemetric.longmemeval.report import REPORT_PARAMS, write_report
from mnemetric.params import stage_params
from mnemetric.stages import run

PARAMS = list(REPORT_PARAMS)
OUT = Path("reports/index.html")


def main() -> None:
    p = stage_params(PARAMS)
    write_report(p, OUT, render_card=render_card)
    print(f"report: {OUT} (offline: inline SVG, no script)")


if __name__ == "__main__":
    run(main)
