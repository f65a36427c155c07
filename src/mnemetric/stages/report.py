"""Stage report: the offline HTML report reports/index.html from the metric files.

Reads metrics/detail/qa.json, metrics/detail/retrieval.json (written next to ``paths.metrics_qa``
/ ``paths.metrics_retrieval`` under detail/), ``paths.metrics_data`` and, when it exists, the run
manifest metrics/run.json (next to ``paths.metrics_qa``); fills the report model
(mnemetric.longmemeval.report) and writes ``render_report`` (inline SVG, no script, no network)
atomically. No baseline here (a stage has one revision): `mnemetric report --baseline REV` adds
the flips. The result card is ``mnemetric.custody.card.render_card`` of the run manifest, the QA
and retrieval detail and data/custody/outputs.sha256.json (next to the custody files); without a
run manifest the card is left empty.
"""

from __future__ import annotations

from pathlib import Path

from mnemetric.custody.card import render_card
from mnemetric.io import atomic_open, sha256_file
from mnemetric.longmemeval.report import build_report, check_layout, read_inputs, read_json
from mnemetric.params import stage_params
from mnemetric.report import render_report
from mnemetric.stages import run

PARAMS = ["paths.metrics_qa", "paths.metrics_retrieval", "paths.metrics_data", "paths.judged", "paths.custody_dir"]
OUT = Path("reports/index.html")


def detail(path: str | Path) -> Path:
    """metrics/qa.json → metrics/detail/qa.json (the layout of the qa_metrics / retrieval_metrics stages)."""
    return Path(path).parent / "detail" / Path(path).name


def write_report(p: dict, out: Path, flips=None) -> str:
    """Read the inputs named by ``p`` (stage params), render, write ``out``; returns the page text."""
    inputs = read_inputs(detail(p["paths.metrics_qa"]), detail(p["paths.metrics_retrieval"]), p["paths.metrics_data"],
                         Path(p["paths.metrics_qa"]).parent / "run.json")
    check_layout(inputs["qa"], str(detail(p["paths.metrics_qa"])))
    judged = Path(p["paths.judged"])
    card = ""
    if inputs["run"] is not None:
        outputs = Path(p["paths.custody_dir"]) / "outputs.sha256.json"
        card = render_card(inputs["run"], inputs["qa"], inputs["retrieval"],
                           read_json(outputs, fix="run `dvc repro`") if outputs.is_file() else None, p["paths.judged"])
    model = build_report(inputs["qa"], inputs["retrieval"], inputs["data"], run=inputs["run"],
                         judged_sha256=sha256_file(judged) if judged.is_file() else None, flips=flips,
                         result_card=card)
    page = render_report(model)
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_open(out, "w") as fh:
        fh.write(page)
    return page


def main() -> None:
    p = stage_params(PARAMS)
    write_report(p, OUT)
    print(f"report: {OUT} (offline: inline SVG, no script)")


if __name__ == "__main__":
    run(main)
