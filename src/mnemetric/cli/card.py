"""`mnemetric card`: print the result card (Markdown) of the run in this repository."""

from __future__ import annotations

import argparse
from pathlib import Path

from mnemetric.cli.registry import Handler, command

RUN = "metrics/run.json"
QA_FILES = ("metrics/detail/qa.json", "metrics/qa.json")
"""The QA numbers: the detail file (intervals, n) when the pipeline writes one, else the headline."""
RETRIEVAL = "metrics/retrieval.json"
OUTPUTS = "data/custody/outputs.sha256.json"


@command("card", "print the run's result card (Markdown, ready to paste into an issue or an appendix)",
         "Reads metrics/run.json (the run manifest), the QA metrics (metrics/detail/qa.json, else "
         "metrics/qa.json), metrics/retrieval.json and data/custody/outputs.sha256.json, and prints the "
         "headline numbers with intervals, the dataset and its sha256, suite, memory system and fingerprint, "
         "reader, judge snapshot and prompt-set sha256, the judged file's sha256 and official_equivalence "
         "with its reasons.")
def _card(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("--run", type=Path, default=Path(RUN), help="the run manifest")
    p.add_argument("--qa", type=Path, default=None, help=f"the QA metrics (default: the first of {', '.join(QA_FILES)})")
    p.add_argument("--retrieval", type=Path, default=Path(RETRIEVAL), help="the retrieval metrics (optional)")
    p.add_argument("--outputs", type=Path, default=Path(OUTPUTS), help="the sha256 custody manifest (optional)")
    p.add_argument("--judged", default=None, help="the judged file's repo path (default: params.yaml paths.judged)")

    def run(a: argparse.Namespace) -> int:
        from mnemetric.cli.inventory import read_json
        from mnemetric.custody.card import render_card
        qa = a.qa if a.qa is not None else next((Path(q) for q in QA_FILES if Path(q).is_file()), None)
        optional = lambda path: read_json(path) if path is not None and Path(path).is_file() else None  # noqa: E731
        print(render_card(read_json(a.run), optional(qa), optional(a.retrieval), optional(a.outputs),
                          a.judged or _judged_path()), end="")
        return 0
    return run


def _judged_path() -> str:
    from mnemetric.params import PARAMS_FILE, load_params
    if not PARAMS_FILE.is_file():
        return "<judged file>"
    return str((load_params().get("paths") or {}).get("judged", "<judged file>"))
