"""Stage report: the offline HTML report reports/index.html from the metric files.

Reads metrics/detail/qa.json, metrics/detail/retrieval.json (written next to ``paths.metrics_qa``
/ ``paths.metrics_retrieval`` under detail/), ``paths.metrics_data`` and, when it exists, the run
manifest metrics/run.json (next to ``paths.metrics_qa``); fills the report model
(mnemetric.longmemeval.report) and writes ``render_report`` (inline SVG, no script, no network)
atomically. No baseline here (a stage has one revision): `mnemetric report --baseline REV` adds
the flips. The result card is the headline family's (params ``benchmark``, built with
:func:`mnemetric.family.build_family`): :func:`mnemetric.custody.card.card_from_files` of its run
manifest, its card's metrics files and data/custody/outputs.sha256.json (next to the custody
files); without its run manifest the card is left empty.
"""

from __future__ import annotations

from pathlib import Path

from mnemetric.custody.card import card_from_files
from mnemetric.family import build_family
from mnemetric.longmemeval.report import REPORT_PARAMS, write_report
from mnemetric.params import stage_params
from mnemetric.stages import run

PARAMS = ["benchmark", *REPORT_PARAMS]
OUT = Path("reports/index.html")


def main() -> None:
    p = stage_params(PARAMS)
    card = card_from_files(build_family(p["benchmark"]), p["paths.judged"],
                           outputs=Path(p["paths.custody_dir"]) / "outputs.sha256.json")
    write_report(p, OUT, card=card or "")
    print(f"report: {OUT} (offline: inline SVG, no script)")


if __name__ == "__main__":
    run(main)
