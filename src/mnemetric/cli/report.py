"""Command `mnemetric report`: the headline family's offline HTML report (params.yaml ``benchmark``),
optionally with flips against a baseline (LongMemEval)."""

from __future__ import annotations

import argparse
from pathlib import Path

from mnemetric.cli.registry import Handler, command
from mnemetric.cli.types import count, positive_int


@command("report", "write the offline HTML report (reports/index.html) from the metric files",
         "Fill the report (custody, headline numbers with their intervals and methods, per-type bars, "
         "retrieval curves, failure attribution, cost) from metrics/detail/qa.json, metrics/detail/retrieval.json, "
         "metrics/detail/attribution.json (when it exists), "
         "metrics/data.json and metrics/run.json when it exists, and write one self-contained page "
         "(inline SVG, no script, no network). With --baseline REV (a git revision, branch, tag or DVC "
         "experiment) the page also lists the questions whose judge label flipped against REV, with the "
         "paired difference of overall accuracy and the exact McNemar p-value. With --judge-audit FILE it also shows "
         "the judge's validity: controls, adversarial acceptance, judge-matrix agreement and flip rate.")
def _report(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("--params", type=Path, default=Path("params.yaml"), help="params.yaml naming the metric paths")
    p.add_argument("--out", type=Path, default=Path("reports/index.html"), help="the HTML page to write")
    p.add_argument("--baseline", default=None, metavar="REV", help="revision or experiment to list flips against")
    p.add_argument("--resamples", type=positive_int, default=1000, help="paired bootstrap resamples for the flips' interval")
    p.add_argument("--seed", type=count, default=0)
    p.add_argument("--judge-audit", type=Path, default=None, metavar="FILE",
                   help="a judge-audit file (`mnemetric judge-audit validity`): the page adds its Judge validity "
                        "section (controls, adversarial acceptance, judge-matrix agreement, flip rate; LongMemEval)")
    return _run


def _run(args: argparse.Namespace) -> int:
    from mnemetric.family import headline_family
    from mnemetric.params import load_params, stage_params
    from mnemetric.report.page import write_family_report

    family = headline_family(load_params(args.params))
    p = stage_params(["benchmark", *family.report_params], args.params)
    options: dict = {"resamples": args.resamples, "seed": args.seed} if args.baseline else {}
    if args.judge_audit is not None:
        options["judge_audit"] = args.judge_audit
    model = write_family_report(family, p, args.out, baseline=args.baseline, **options)
    flips = model.flips
    print(f"report: {args.out}" + (f" ({len(flips.rows)} flip(s) against {args.baseline})" if flips else ""))
    return 0
