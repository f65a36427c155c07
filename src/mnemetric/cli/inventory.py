"""`mnemetric inventory verify|derive|markers`: re-hash the reviewed upstream sources; derive the task inventory;
write (or check) the committed index of the tests' task markers."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from mnemetric.cli.registry import Handler, command

DEFAULT_INVENTORY = "data/inventory/upstream-task-inventory.json"
ALIASES = {"upstream_dir": "longmemeval", "v2_dir": "longmemeval-v2"}
"""The older per-family flags (--upstream-dir, --v2-dir): aliases of --checkout longmemeval=DIR / longmemeval-v2=DIR."""


@command("inventory", "verify the reviewed upstream sources of the task inventory (sha256), derive the inventory, "
         "or index the tests' task markers",
         "verify: re-hash every reviewed_sources file of the inventory in local upstream checkouts, one per family "
         "(--checkout FAMILY=DIR, FAMILY a benchmark conf option: longmemeval, longmemeval-v2, or a family of your "
         "own; --upstream-dir and --v2-dir are the older spellings for the two LongMemEval families) and print "
         "match / mismatch / missing per file; a family given no checkout is listed as not checked; exit 1 on "
         "any mismatch or missing file. derive: recompute the inventory from --seed (the structure and text), the "
         "run manifest(s), the cross-check evidence, the metrics files and the @pytest.mark.task markers of the "
         "tests (read with ast, never run), and write it to --out. markers: read the @pytest.mark.task markers of "
         "--tests-dir with ast and write their index (default data/inventory/task-markers.json), the file stage "
         "`inventory` reads instead of tests/ (so a test edit reruns no stage); --check compares instead of "
         "writing and exits 1 when the index is stale.")
def _inventory(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("action", choices=("verify", "derive", "markers"), help="what to do")
    p.add_argument("--inventory", type=Path, default=Path(DEFAULT_INVENTORY), help="verify: the inventory to check")
    p.add_argument("--checkout", action="append", default=[], metavar="FAMILY=DIR",
                   help="verify: the upstream checkout of one family at the inventory's revision (repeatable; "
                        "e.g. longmemeval=/tmp/upstream/LongMemEval)")
    p.add_argument("--upstream-dir", type=Path, help="verify: the same as --checkout longmemeval=DIR")
    p.add_argument("--v2-dir", type=Path, help="verify: the same as --checkout longmemeval-v2=DIR")
    p.add_argument("--seed", type=Path, help="derive: the inventory whose structure and text are kept")
    p.add_argument("--out", type=Path, help="derive: where to write the derived inventory; markers: where to write "
                                            "the index (default data/inventory/task-markers.json)")
    p.add_argument("--check", action="store_true", help="markers: compare the index with the tests, write nothing")
    p.add_argument("--run-manifest", type=Path, action="append", default=None,
                   help="derive: a run manifest (repeatable; default: each benchmark family's run manifest that "
                        "exists, e.g. metrics/run.json, metrics/run-v2.json)")
    p.add_argument("--crosscheck", type=Path, help="derive: cross-check evidence (mnemetric crosscheck output)")
    p.add_argument("--metrics", type=Path, action="append", default=None,
                   help="derive: a metrics file (repeatable; default: the files the families' tasks are measured in "
                        "that exist, e.g. metrics/detail/qa.json, metrics/v2.json)")
    p.add_argument("--tests-dir", type=Path, default=Path("tests"),
                   help="derive, markers: the tests whose task markers count")

    def run(a: argparse.Namespace) -> int:
        if a.check and a.action != "markers":
            from mnemetric.errors import ConfigError
            raise ConfigError("--check", f"does not apply to `inventory {a.action}`", fix="drop --check")
        return {"verify": _verify, "derive": _derive, "markers": _markers}[a.action](a)
    return run


def _markers(a: argparse.Namespace) -> int:
    """Write the markers index from --tests-dir, or (--check) report whether the written one matches."""
    from mnemetric.custody.task_markers import (MARKERS_FILE, MARKERS_FIX, collect_task_markers, read_markers,
                                                write_markers)
    from mnemetric.errors import ConfigError
    _refuse(a, ("--upstream-dir", "--v2-dir", "--seed", "--crosscheck", "--run-manifest", "--metrics"))
    if a.checkout:
        raise ConfigError("--checkout", "does not apply to `inventory markers`", fix="drop --checkout")
    out = a.out if a.out is not None else Path(MARKERS_FILE)
    markers = collect_task_markers(a.tests_dir, root=a.tests_dir.parent)
    tests = sum(len(refs) for refs in markers.values())
    if not a.check:
        write_markers(out, markers)
        print(f"wrote {out}: {len(markers)} tasks marked by {tests} test refs in {a.tests_dir}")
        return 0
    written = read_markers(out)
    if written == markers:
        print(f"{out} is up to date ({len(markers)} tasks, {tests} test refs)")
        return 0
    changed = sorted(k for k in set(written) | set(markers) if written.get(k) != markers.get(k))
    for family, task in changed:
        print(f"  {family}/{task}: index {written.get((family, task), [])} != tests {markers.get((family, task), [])}",
              file=sys.stderr)
    print(f"{out} is stale: {len(changed)} task(s) differ from the markers in {a.tests_dir}; fix: {MARKERS_FIX}",
          file=sys.stderr)
    return 1


def _refuse(a: argparse.Namespace, names: tuple[str, ...]) -> None:
    from mnemetric.errors import ConfigError
    for name in names:
        if getattr(a, name.lstrip("-").replace("-", "_")) is not None:
            raise ConfigError(name, f"does not apply to `inventory {a.action}`", fix=f"drop {name}")


def read_json(path: Path) -> Any:
    """A JSON file's content; missing, not UTF-8 or not JSON is an InputError naming it."""
    from mnemetric.errors import InputError
    from mnemetric.io import require_file
    try:
        return json.loads(require_file(path).read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise InputError(str(path), "<file>", "<json>", "not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise InputError(str(path), f"line {exc.lineno}", "<json>", f"not valid JSON ({exc.msg})") from None


def checkouts(a: argparse.Namespace) -> dict[str, Path]:
    """family name -> checkout folder, from --checkout FAMILY=DIR and the alias flags (each family once)."""
    from mnemetric.errors import ConfigError
    pairs = [(f"--{flag.replace('_', '-')}", name, getattr(a, flag)) for flag, name in ALIASES.items()
             if getattr(a, flag) is not None]
    for item in a.checkout:
        name, sep, folder = item.partition("=")
        if not (sep and name and folder):
            raise ConfigError("--checkout", f"{item!r} is not FAMILY=DIR",
                              fix="for example --checkout longmemeval=/tmp/upstream/LongMemEval")
        pairs.append(("--checkout", name, Path(folder)))
    out: dict[str, Path] = {}
    for flag, name, folder in pairs:
        if name in out:
            raise ConfigError(flag, f"gives family {name!r} a second checkout", fix="give each family one")
        if not folder.is_dir():
            raise ConfigError(flag, f"{folder} is not a folder")
        out[name] = folder
    if not out:
        raise ConfigError("--checkout", "is required by `inventory verify`",
                          fix="pass a family's upstream checkout, e.g. --checkout longmemeval=/tmp/upstream/LongMemEval")
    return out


def _verify(a: argparse.Namespace) -> int:
    from mnemetric.custody.inventory import Inventory, verify_reviewed_sources
    from mnemetric.errors import InputError
    from mnemetric.family import family_named
    _refuse(a, ("--seed", "--out", "--run-manifest", "--crosscheck", "--metrics"))
    given = {family_named(name).display_name: (name, folder) for name, folder in checkouts(a).items()}
    inventory = Inventory.from_record(read_json(a.inventory), file=str(a.inventory))  # typed: a bad field is named
    families = {f.benchmark: f for f in inventory.families}
    dirs: dict[str, Path] = {}
    for bench, (_, folder) in given.items():
        if bench not in families:
            raise InputError(str(a.inventory), "<file>", "families", f"no {bench} family")
        dirs[families[bench].repository] = folder
    results = verify_reviewed_sources(inventory, dirs, file=str(a.inventory))
    for bench, fam in families.items():
        if bench not in given:
            print(f"{bench}: not checked (no --checkout for it): {len(fam.reviewed_sources)} reviewed source(s)")
            continue
        folder = given[bench][1]
        print(f"{bench} {fam.repository} @ {fam.revision}: checkout {folder}{_head(folder)}")
        for r in (r for r in results if r.repository == fam.repository):
            detail = "" if r.status == "match" else (
                f" (expected {r.expected_sha256}, got {r.actual_sha256})" if r.status == "mismatch" else " (no such file)")
            print(f"  {r.status:8} {r.path}{detail}")
    bad = [r for r in results if r.status != "match"]
    print(f"{len(results) - len(bad)} match, {sum(r.status == 'mismatch' for r in results)} mismatch, "
          f"{sum(r.status == 'missing' for r in results)} missing", file=sys.stderr if bad else sys.stdout)
    return 1 if bad else 0


def _head(folder: Path) -> str:
    """`` (git HEAD <sha>)`` when the folder is a git checkout whose HEAD git can name; else empty."""
    import subprocess
    try:
        out = subprocess.run(["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return f" (git HEAD {out.stdout.strip()})" if out.returncode == 0 and out.stdout.strip() else ""


def _derive(a: argparse.Namespace) -> int:
    from mnemetric.custody.inventory import collect_task_markers, derive, metrics_files
    from mnemetric.custody.inventory_file import Inventory, write_inventory
    from mnemetric.errors import ConfigError
    from mnemetric.family import conf_families
    _refuse(a, ("--upstream-dir", "--v2-dir"))
    if a.checkout:
        raise ConfigError("--checkout", "does not apply to `inventory derive`", fix="drop --checkout")
    for name in ("seed", "out"):
        if getattr(a, name) is None:
            raise ConfigError(f"--{name}", "is required by `inventory derive`")
    families = list(conf_families())
    manifests = a.run_manifest
    if manifests is None:
        named = [Path(f.run_manifest) for f in families if f.run_manifest]
        manifests = [m for m in named if m.is_file()]
        if not manifests:
            print(f"note: no run manifest found ({', '.join(map(str, named))}), so no task can be measured",
                  file=sys.stderr)
    metric_files = [Path(m) for m in metrics_files(families) if Path(m).is_file()] if a.metrics is None else a.metrics
    run_manifests = [{**_object(read_json(m), m), "path": _rel(m)} for m in manifests]
    crosscheck = None if a.crosscheck is None else {**_object(read_json(a.crosscheck), a.crosscheck),
                                                    "path": _rel(a.crosscheck)}
    seed = Inventory.from_record(_object(read_json(a.seed), a.seed), file=str(a.seed))
    derived = derive(seed, run_manifests=run_manifests, crosscheck=crosscheck, markers=collect_task_markers(a.tests_dir),
                     metrics={_rel(m): _object(read_json(m), m) for m in metric_files}, families=families)
    write_inventory(a.out, derived)
    inventory = derived.to_record()
    tasks = [t for f in inventory["families"] for t in f["tasks"]]
    counts = {s: sum(t["coverage_status"] == s for t in tasks) for s in ("measured", "mapped", "unmapped")}
    print(f"wrote {a.out}: {len(tasks)} tasks ({', '.join(f'{n} {s}' for s, n in counts.items())}); "
          f"complete: {str(inventory['complete']).lower()}")
    for line in family_lines(inventory):
        print(line)
    return 0


def family_lines(inventory: dict[str, Any]) -> list[str]:
    """One line per family of the inventory, the headline family (params.yaml ``benchmark``) first:
    its task counts and the manifests its measured tasks cite."""
    from mnemetric.family import headline_family
    from mnemetric.params import PARAMS_FILE, load_params

    head = headline_family(load_params() if PARAMS_FILE.is_file() else None).display_name
    fams = sorted(inventory["families"], key=lambda f: f["benchmark"] != head)
    out = []
    for fam in fams:
        tasks = fam["tasks"]
        counts = {s: sum(t["coverage_status"] == s for t in tasks) for s in ("measured", "mapped", "unmapped")}
        refs = sorted({r for t in tasks for r in t["evidence_refs"][1:]})
        out.append(f"  {fam['benchmark']}{' (headline)' if fam['benchmark'] == head else ''}: "
                   f"{', '.join(f'{n} {s}' for s, n in counts.items())}; evidence {', '.join(refs) or 'none'}")
    return out


def _object(raw: Any, path: Path) -> dict[str, Any]:
    from mnemetric.errors import InputError
    if not isinstance(raw, dict):
        raise InputError(str(path), "<file>", "<json>", f"expected a JSON object, got {type(raw).__name__}")
    return raw


def _rel(path: Path) -> str:
    """``path`` relative to the working folder when it is inside it (evidence refs are repo paths)."""
    try:
        return Path(path).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return Path(path).as_posix()
