"""`mnemetric v2 package`: the LongMemEval-V2 leaderboard package, built from Mnemetric V2 run folders.

What upstream's leaderboard wants (leaderboard/README.md, build_submission_step_{1,2}_*.py and submission_utils.py
of github.com/xiaowu0162/LongMemEval-V2 at be15ea6e995462f3391c1a610892df3f67dfa7bd; read, not copied):

* step 1, per operating point: ``operating_points/<op>/`` with ``web/`` and ``enterprise/`` (each a run folder:
  aggregated_metrics.json, per_question.jsonl, run_args.json, runtime_inputs/), ``metric_overview.json``
  (overall_full_set, gotchas_accuracy, static/dynamic/procedure_accuracy, memory_query_avg_seconds of the two
  domains combined) and ``operating_point_metadata.json``;
* step 2: ``SYSTEM_DESCRIPTION.md``, one code file, ``submission_overview.json`` (method, tier, the LAFS block
  against the tier's reference frontier, per point lafs_accuracy_percentage_points and lafs_latency_seconds),
  packed as ``<submission>.tar.gz``.

An operating point here is one Mnemetric V2 run folder (``mnemetric v2 run --out`` or stage v2_metrics'
``paths.v2_runs``): ``<run>/web/`` and ``<run>/enterprise/`` carry upstream's files (:mod:`.run_folder`) and
``<run>/v2.json`` the run's tier, memory and official verdict. :func:`build_package` refuses (fails closed) what
:mod:`.package_check` refuses, and also every reason the runs are not official (v2.json's gate) or the package
not submittable; with ``unofficial=True`` it writes the package anyway, with ``NOT_SUBMITTABLE.txt`` at its
root listing every reason (``--check`` refuses such a package).

Deterministic: the same inputs give the same bytes — JSON as upstream writes it, ``generated_at_utc`` = the
latest ``started_at_utc`` of the runs (null when none is recorded) unless given, the tarball by
:mod:`.package_tar`. Nothing half-written: the package is built in a temporary sibling and renamed into place.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mnemetric.errors import ConfigError, InputError, Problem, ValidationFailed
from mnemetric.io import atomic_open
from mnemetric.longmemeval_v2.aggregated import read_aggregated
from mnemetric.longmemeval_v2.combine import combine_aggregates
from mnemetric.longmemeval_v2.haystacks import TIERS
from mnemetric.longmemeval_v2.lafs import lafs_summary
from mnemetric.longmemeval_v2.package_check import (NOT_SUBMITTABLE, ROOT_FILES, check_tree, overview_of,
                                                    read_json, read_run, require_run_files)
from mnemetric.longmemeval_v2.package_tar import extract_safely, write_tarball
from mnemetric.longmemeval_v2.pins import DataPins
from mnemetric.longmemeval_v2.questions import DOMAINS
from mnemetric.longmemeval_v2.run_folder import (RUN_FILES, RUNTIME_DIR, export_run, read_started_at,
                                                 write_upstream_file)
from mnemetric.longmemeval_v2.summary_file import read_summary

SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
INCLUDED_RUN_FILES = ["aggregated_metrics.json", "per_question.jsonl", "run_args.json", "runtime_inputs/"]
TEMPLATE = """# System description
<!-- mnemetric: fill in --> (delete this line when every section is filled)

## System
Name, version, authors, contact.

## Memory method
How trajectories are stored at insert time, what a query returns, and which models (if any) the memory
calls (name, version, provider, reasoning settings).

## Operating points
For each operating point of this package: what differs (budget, model, effort) and why its latency is
what it is.

## Hardware and environment
Where the memory ran (CPU/GPU, memory, region), whether any cache served timed calls, concurrency.

## Code
What the code file is and how to run it.

## Data and protocol
Dataset revision, tier, reader and checker as run; any deviation from the official protocol.
"""
"""SYSTEM_DESCRIPTION.md to fill (ours: upstream gives no template); `--check` refuses it unfilled."""


@dataclass(frozen=True)
class Point:
    name: str
    run_dir: Path
    method: str
    tier: str
    reasons: tuple[Problem, ...]


def safe_name(value: str, label: str) -> str:
    if not value or not set(value) <= SAFE:
        raise ConfigError(label, f"{value!r} may hold only letters, digits, '.', '_' and '-' (upstream's rule)")
    return value


def read_point(name: str, run_dir: Path, method: str | None = None) -> Point:
    """An operating point's run folder: its tier, method (the memory's name unless given) and gate reasons, from
    its v2.json (:func:`.summary_file.read_summary`, which refuses a malformed one naming file, record and field)."""
    summary_file = run_dir / "v2.json"
    summary = read_summary(summary_file)
    settings, file = summary.settings, str(summary_file)
    tier = settings["tier"]
    if tier not in TIERS:
        raise InputError(file, "settings", "tier", f"{tier!r}: the run's haystack is not an official "
                         "tier file, and a package is one method at one tier (small or medium)")
    missing = [d for d in DOMAINS if d not in settings["domains"]]
    if missing:
        raise InputError(file, "settings", "domains", f"no {', '.join(missing)} run: an operating "
                         "point is a web and an enterprise run")
    # OfficialEquivalence holds at least one reason whenever the run is not official
    reasons = tuple(Problem(file, "official_equivalence", "reasons", r) for r in summary.official_equivalence.reasons)
    method = safe_name(method or settings["memory"], f"method of {summary_file}")
    return Point(safe_name(name, "operating point name"), run_dir, method, tier, reasons)


def _run_metadata(folder: Path, domain: str) -> dict[str, Any]:
    view = read_run(folder, domain)
    return {"source_run_dir": str(folder.resolve()), "domain": domain, "question_count": len(view.questions),
            "question_type_counts": view.type_counts(), "model": view.run_args.get("model"),
            "evaluator_model": view.run_args.get("evaluator_model")}


def _generated_at(points: Sequence[Point]) -> str | None:
    """The latest started_at_utc of the points' domain runs (null when none is recorded)."""
    times = []
    for p in points:
        for d in DOMAINS:
            require_run_files(p.run_dir / d)
            times.append(read_started_at(p.run_dir / d / "run_args.json"))
    return max((t for t in times if t), default=None)


def build_operating_point(point: Point, dest: Path, *, submission: str, generated_at_utc: str | None) -> dict:
    """Step 1 for one point into ``dest`` (= operating_points/<name>); returns its metric overview."""
    meta_runs = {}
    for d in DOMAINS:
        source, target = point.run_dir / d, dest / d
        meta_runs[d] = _run_metadata(source, d)
        target.mkdir(parents=True)
        for name in RUN_FILES:
            shutil.copyfile(source / name, target / name)
        shutil.copytree(source / RUNTIME_DIR, target / RUNTIME_DIR, copy_function=shutil.copyfile)
    web, ent = (read_aggregated(dest / d / "aggregated_metrics.json") for d in DOMAINS)
    overview = overview_of(combine_aggregates(web, ent), str(dest / "metric_overview.json"))
    write_upstream_file(dest / "metric_overview.json", overview)
    write_upstream_file(dest / "operating_point_metadata.json", {
        "submission_name": submission, "operating_point_name": point.name, "method": point.method,
        "tier": point.tier, "generated_at_utc": generated_at_utc, "runs": meta_runs,
        "included_run_files": INCLUDED_RUN_FILES})
    return overview


def submission_overview(submission: str, code_name: str, points: Sequence[Point], overviews: Sequence[dict],
                        generated_at_utc: str | None) -> dict[str, Any]:
    """Step 2's submission_overview.json (keys in upstream's order)."""
    lafs_points = [(float(o["overall_full_set"]) * 100.0, o["memory_query_avg_seconds"], p.name)
                   for p, o in zip(points, overviews)]
    return {"submission_name": submission, "method": points[0].method, "tier": points[0].tier,
            "generated_at_utc": generated_at_utc, "archive_name": f"{submission}.tar.gz",
            "system_description_file": ROOT_FILES[0], "code_file": code_name,
            "lafs": lafs_summary(points[0].tier, lafs_points),
            "operating_points": [
                {"name": p.name, "metric_overview_file": f"operating_points/{p.name}/metric_overview.json",
                 "overall_full_set": o["overall_full_set"], "memory_query_avg_seconds": o["memory_query_avg_seconds"],
                 "lafs_accuracy_percentage_points": acc, "lafs_latency_seconds": latency}
                for p, o, (acc, latency, _) in zip(points, overviews, lafs_points)]}


def _default_data_root(points: Sequence[Point]) -> Path | None:
    path = read_json(points[0].run_dir / "web" / "run_args.json").get("trajectories_path")
    return Path(path).parent if isinstance(path, str) and path else None


@dataclass(frozen=True)
class Built:
    folder: Path
    tarball: Path
    overview: dict[str, Any]
    problems: tuple[Problem, ...]
    """Why it is not submittable (non-empty only with ``unofficial``)."""


def build_package(runs: Sequence[tuple[str, Path]], *, submission: str, code_file: Path,
                  system_description: Path, output_root: Path, method: str | None = None,
                  data_root: Path | None = None, pins: DataPins | None = None, unofficial: bool = False,
                  force: bool = False, generated_at_utc: str | None = None) -> Built:
    """Steps 1 and 2 over ``runs`` ((operating point name, run folder), in order); module docstring."""
    safe_name(submission, "submission name")
    for path, label in ((code_file, "code file"), (system_description, "SYSTEM_DESCRIPTION.md")):
        if not Path(path).is_file():
            raise InputError(str(path), "<file>", "<file>", f"the {label} must be one existing file")
    if code_file.name in (*ROOT_FILES, "operating_points", NOT_SUBMITTABLE):
        raise ConfigError("code file", f"{code_file.name!r} is a name the package root reserves")
    if not runs:
        raise ConfigError("operating points", "no run folder given")
    points = [read_point(name, Path(run), method) for name, run in runs]
    names = [p.name for p in points]
    if len(set(names)) != len(names):
        raise ConfigError("operating points", f"two operating points share a name: {names}")
    for p in points[1:]:
        for what in ("method", "tier"):
            if getattr(p, what) != getattr(points[0], what):
                raise InputError(str(p.run_dir / "v2.json"), "settings", what, f"{getattr(p, what)!r}, but operating "
                                 f"point {points[0].name!r} has {getattr(points[0], what)!r}")
    folder, tarball = output_root / submission, output_root / f"{submission}.tar.gz"
    if (folder.exists() or tarball.exists()) and not force:
        raise ConfigError(str(folder if folder.exists() else tarball), "already exists; not replaced",
                          fix="pass --force to rebuild it")
    when = generated_at_utc if generated_at_utc is not None else _generated_at(points)
    output_root.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{submission}.", dir=output_root))
    try:
        root = stage / submission
        overviews = [build_operating_point(p, root / "operating_points" / p.name, submission=submission,
                                           generated_at_utc=when) for p in points]
        shutil.copyfile(system_description, root / ROOT_FILES[0])
        shutil.copyfile(code_file, root / code_file.name)
        overview = submission_overview(submission, code_file.name, points, overviews, when)
        write_upstream_file(root / "submission_overview.json", overview)
        _, found = check_tree(root, data_root=data_root or _default_data_root(points), pins=pins)
        problems = tuple(r for p in points for r in p.reasons) + _moved(found, stage, f"{output_root}/")
        if problems and not unofficial:
            raise ValidationFailed(f"package {submission} (not written)", list(problems))
        if problems:
            with atomic_open(root / NOT_SUBMITTABLE) as fh:
                fh.write("NOT SUBMITTABLE: built by `mnemetric v2 package --unofficial`. Reasons:\n")
                fh.writelines(f"- {p}\n" for p in problems)
        staged_tar = write_tarball(root, stage / tarball.name)
        if force:
            shutil.rmtree(folder, ignore_errors=True)
            tarball.unlink(missing_ok=True)
        root.rename(folder)
        staged_tar.rename(tarball)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return Built(folder, tarball, overview, problems)


def _moved(problems: Sequence[Problem], old: Path, new: str) -> tuple[Problem, ...]:
    """The problems with files under ``old`` named with the prefix ``new`` instead (where the package is)."""
    prefix = str(old) + "/"
    return tuple(Problem(new + p.file[len(prefix):] if p.file.startswith(prefix) else p.file, p.record, p.field,
                         p.message) for p in problems)


def check_tarball(tarball: Path, *, data_root: Path | None,
                  pins: DataPins | None = None) -> tuple[dict, list[Problem]]:
    """`v2 package --check`: extract safely into a temporary folder, check the tree (refusals raise)."""
    with tempfile.TemporaryDirectory(prefix="mnemetric-v2-check-") as tmp:
        root = extract_safely(tarball, Path(tmp))
        try:
            overview, problems = check_tree(root, data_root=data_root, pins=pins)
        except InputError as exc:  # name the file inside the tarball, not the temporary copy
            raise InputError(str(tarball) + ":" + exc.problem.file.replace(tmp + "/", "", 1), exc.problem.record,
                             exc.problem.field, exc.problem.message, exc.fix) from None
        return overview, list(_moved(problems, Path(tmp), f"{tarball}:"))


def export_runs(runs: Sequence[tuple[str, Path]], dest: Path, *, method: str | None = None) -> list[Path]:
    """Each point's domain folders as ``dest/<op>/<method>_<domain>_<tier>/`` (the names upstream's step 1 reads)."""
    out = []
    for name, run in runs:
        point = read_point(name, Path(run), method)
        out += [export_run(point.run_dir / d, dest / point.name, method=point.method, domain=d, tier=point.tier)
                for d in DOMAINS]
    return out


def write_template(path: Path) -> Path:
    if path.exists():
        raise ConfigError(str(path), "already exists; not replaced")
    with atomic_open(path) as fh:
        fh.write(TEMPLATE)
    return path
