"""`mnemetric v2 package`: the LongMemEval-V2 leaderboard package from V2 run folders, and `--check TARBALL`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mnemetric.cli.registry import Handler, subcommand
from mnemetric.errors import ConfigError, ValidationFailed


def _point(text: str) -> tuple[str, Path]:
    name, sep, path = text.partition("=")
    return (name, Path(path)) if sep else (Path(text).resolve().name, Path(text))


@subcommand("v2", "package", "build (or --check) a LongMemEval-V2 leaderboard package: <submission>.tar.gz",
            "Build the package upstream's leaderboard wants (xiaowu0162/LongMemEval-V2 at be15ea6, leaderboard/ steps "
            "1 and 2) from Mnemetric V2 run folders, one per latency operating point, each written by `mnemetric v2 "
            "run --out` or stage v2_metrics (.mnemetric/v2-run): OUT/SUBMISSION/operating_points/<op>/ (web/ and "
            "enterprise/ runs, metric_overview.json, operating_point_metadata.json), SYSTEM_DESCRIPTION.md, the code "
            "file, submission_overview.json (LAFS against the tier's reference frontier), and OUT/SUBMISSION.tar.gz "
            "(deterministic: the same inputs give the same bytes). Fails closed, naming each reason and its file: "
            "besides upstream's checks, the question set must be the official tier's (against --data-root, default "
            "the runs' data root, whose questions.jsonl and haystack must match the dataset pins), the runs official "
            "(v2.json's gate: verified data, official reader, checker and token counter, no failed question), the "
            "operating points the same method, tier, question ids and haystack, SYSTEM_DESCRIPTION.md filled in. "
            "--unofficial writes the package anyway with NOT_SUBMITTABLE.txt listing every reason (for trying the "
            "path on the bundled sample; never submit it). --check TARBALL validates any package (ours or "
            "hand-made) the same way, refusing unsafe tarball members first. --template FILE writes a "
            "SYSTEM_DESCRIPTION.md to fill. Examples: mnemetric v2 package fast=runs/v2-fast accurate=runs/v2-slow "
            "--submission my_sub --code my_memory.py --system-description SYSTEM_DESCRIPTION.md --out submissions; "
            "mnemetric v2 package --check submissions/my_sub.tar.gz --data-root data/longmemeval-v2")
def _package(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("points", nargs="*", metavar="[OP=]RUN_DIR",
                   help="an operating point: its name and a V2 run folder (default name: the folder's)")
    p.add_argument("--submission", help="the submission name (letters, digits, '.', '_', '-')")
    p.add_argument("--code", type=Path, help="the one code file of the submission")
    p.add_argument("--system-description", type=Path, help="SYSTEM_DESCRIPTION.md (see --template)")
    p.add_argument("--method", default=None, help="method name recorded (default: each run's memory name)")
    p.add_argument("--out", type=Path, default=Path("submissions"), help="where SUBMISSION/ and its tarball go")
    p.add_argument("--data-root", type=Path, default=None,
                   help="the official data (questions.jsonl, haystacks/) the question set is checked against "
                        "(default for a build: the runs' own data root)")
    p.add_argument("--unofficial", action="store_true",
                   help="write a package that fails the checks anyway, marked NOT_SUBMITTABLE.txt")
    p.add_argument("--force", action="store_true", help="replace an existing SUBMISSION/ and tarball")
    p.add_argument("--generated-at-utc", default=None,
                   help="generated_at_utc value (default: the latest started_at_utc of the runs, else null)")
    p.add_argument("--export-runs", type=Path, default=None,
                   help="also copy each run as DIR/<op>/<method>_<domain>_<tier>/ (upstream's step-1 input names)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--check", type=Path, default=None, metavar="TARBALL", help="validate a package and exit")
    mode.add_argument("--template", type=Path, default=None, metavar="FILE",
                      help="write a SYSTEM_DESCRIPTION.md template to fill and exit")

    def run(a: argparse.Namespace) -> int:
        from mnemetric.longmemeval_v2 import package

        if a.template is not None:
            print(package.write_template(a.template))
            return 0
        if a.check is not None:
            overview, problems = package.check_tarball(a.check, data_root=a.data_root)
            if problems:
                raise ValidationFailed(f"{a.check} (not submittable)", problems)
            print(f"{a.check}: submittable package {overview['submission_name']} ({overview['method']}, "
                  f"{overview['tier']}, {len(overview['operating_points'])} operating point(s), LAFS gain "
                  f"{overview['lafs']['lafs_gain']!r})")
            return 0
        for flag in ("submission", "code", "system_description"):
            if getattr(a, flag) is None:
                raise ConfigError(f"--{flag.replace('_', '-')}", "required to build a package",
                                  fix="mnemetric v2 package --template SYSTEM_DESCRIPTION.md writes one to fill"
                                  if flag == "system_description" else None)
        if not a.points:
            raise ConfigError("v2 package", "no run folder given", fix="name one per operating point: OP=RUN_DIR")
        points = [_point(t) for t in a.points]
        if a.export_runs is not None:
            for path in package.export_runs(points, a.export_runs, method=a.method):
                print(path)
        built = package.build_package(points, submission=a.submission, code_file=a.code,
                                      system_description=a.system_description, output_root=a.out, method=a.method,
                                      data_root=a.data_root, unofficial=a.unofficial, force=a.force,
                                      generated_at_utc=a.generated_at_utc)
        for prob in built.problems:
            print(f"not submittable: {prob}", file=sys.stderr)
        print(built.folder)
        print(built.tarball)
        gain = built.overview["lafs"]["lafs_gain"]
        status = f"NOT SUBMITTABLE ({len(built.problems)} reason(s), see NOT_SUBMITTABLE.txt)" if built.problems \
            else "submittable"
        print(f"{built.overview['submission_name']}: {status}; LAFS gain {gain!r}", file=sys.stderr)
        return 0
    return run
