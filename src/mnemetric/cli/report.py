"""Command `mnemetric report`: the offline HTML report, optionally with flips against a baseline."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from mnemetric.cli.registry import Handler, command


def baseline_labels(path: str, rev: str, repo: str = ".") -> dict[str, bool]:
    """The judged labels of ``path`` at git revision / DVC experiment ``rev`` (dvc.api.open, no checkout)."""
    import dvc.api

    from mnemetric.errors import InputError
    from mnemetric.longmemeval.hypotheses import read_judged
    from mnemetric.longmemeval.report import labels_by_id

    try:
        with dvc.api.open(path, repo=repo, rev=rev, encoding="utf-8") as fh:
            text = fh.read()
    except Exception as exc:  # dvc raises many types (unknown rev, missing file, no cache): one message
        raise InputError(path, f"revision {rev}", "(file)", f"cannot read the judged file at {rev}: {exc}",
                         fix="name a revision or experiment whose pipeline ran (`git log`, `dvc exp show`), "
                             "and make sure its outputs are in the DVC cache") from None
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / Path(path).name
        copy.write_text(text, encoding="utf-8")
        return labels_by_id(read_judged(copy))


@command("report", "write the offline HTML report (reports/index.html) from the metric files",
         "Fill the report (custody, headline numbers with their intervals and methods, per-type bars, "
         "retrieval curves, cost) from metrics/detail/qa.json, metrics/detail/retrieval.json, "
         "metrics/data.json and metrics/run.json when it exists, and write one self-contained page "
         "(inline SVG, no script, no network). With --baseline REV (a git revision, branch, tag or DVC "
         "experiment) the page also lists the questions whose judge label flipped against REV, with the "
         "paired difference of overall accuracy and the exact McNemar p-value.")
def _report(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("--params", type=Path, default=Path("params.yaml"), help="params.yaml naming the metric paths")
    p.add_argument("--out", type=Path, default=Path("reports/index.html"), help="the HTML page to write")
    p.add_argument("--baseline", default=None, metavar="REV", help="revision or experiment to list flips against")
    p.add_argument("--resamples", type=int, default=1000, help="paired bootstrap resamples for the flips' interval")
    p.add_argument("--seed", type=int, default=0)
    return _run


def _run(args: argparse.Namespace) -> int:
    from mnemetric.custody.card import card_from_files
    from mnemetric.family import headline_family
    from mnemetric.longmemeval.hypotheses import read_judged
    from mnemetric.longmemeval.questions import read_questions
    from mnemetric.longmemeval.report import flips_between, labels_by_id
    from mnemetric.params import load_params, stage_params
    from mnemetric.longmemeval.report import REPORT_PARAMS as PARAMS, write_report

    p = stage_params([*PARAMS, "paths.questions"], args.params)
    params = load_params(args.params)
    flips = None
    if args.baseline:
        current = labels_by_id(read_judged(p["paths.judged"]))
        types = {q.question_id: q.question_type for q in read_questions(p["paths.questions"])}
        flips = flips_between(baseline_labels(p["paths.judged"], args.baseline), current, types, args.baseline,
                              resamples=args.resamples, seed=args.seed)
    card = card_from_files(headline_family(params), p["paths.judged"],
                           outputs=Path(p["paths.custody_dir"]) / "outputs.sha256.json")
    write_report({k: p[k] for k in PARAMS}, args.out, flips, card=card or "")
    print(f"report: {args.out}" + (f" ({len(flips.rows)} flip(s) against {args.baseline})" if flips else ""))
    return 0
