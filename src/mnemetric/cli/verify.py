"""`mnemetric verify [--rev REV]`: re-hash the run's files against the sha256 custody manifest."""

from __future__ import annotations

import argparse
import json
import sys

from mnemetric.cli.registry import Handler, command

DEFAULT_MANIFEST = "data/custody/outputs.sha256.json"


@command("verify", "re-hash the run's files against their sha256 manifest; name every file that drifted",
         "Reads the sha256 custody manifest (data/custody/outputs.sha256.json, written by the pipeline's "
         "custody_manifest stage) and re-hashes every file it lists: in the workspace, or with --rev as they "
         "were at a git revision (manifest and files read through dvc.api, from the DVC cache or remote). "
         "Prints ok / DRIFT / MISSING per file; exit 0 when all match, 1 when any drifted.")
def _verify(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("--rev", help="a git revision (branch, tag, commit, experiment) instead of the workspace")
    p.add_argument("--manifest", default=DEFAULT_MANIFEST, help="the sha256 manifest, relative to the repository")
    p.add_argument("--repo", default=None, help="with --rev: the repository (default: the current one)")

    def run(a: argparse.Namespace) -> int:
        return verify_command(a.manifest, a.rev, a.repo)
    return run


def _load(manifest: str, rev: str | None, repo: str | None) -> object:
    from mnemetric.errors import InputError
    if rev is None:
        from mnemetric.io import require_file
        text = require_file(manifest, fix="run the pipeline (dvc repro) first").read_text(encoding="utf-8")
    else:
        import dvc.api
        try:
            text = dvc.api.read(manifest, repo=repo, rev=rev, encoding="utf-8")
        except Exception as exc:  # noqa: BLE001 — dvc raises many kinds; the user gets one message
            raise InputError(manifest, f"rev {rev}", "<file>", f"cannot be read at that revision ({exc})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(manifest, f"line {exc.lineno}", "<json>", f"not valid JSON ({exc.msg})") from None


def verify_command(manifest: str, rev: str | None = None, repo: str | None = None) -> int:
    from mnemetric.custody.sha256_manifest import Sha256Manifest, revision_opener, verify, workspace_opener
    files = Sha256Manifest.from_record(_load(manifest, rev, repo), file=manifest).files
    opener = workspace_opener() if rev is None else revision_opener(rev, repo)
    where = "the workspace" if rev is None else f"revision {rev}"
    drifted = 0
    for path, drift in verify(files, opener):
        if drift is None:
            print(f"ok       {path}")
        elif drift.actual is None:
            drifted += 1
            print(f"MISSING  {path} (expected sha256 {drift.expected}; {drift.detail})")
        else:
            drifted += 1
            print(f"DRIFT    {path} (expected sha256 {drift.expected}, got {drift.actual})")
    summary = f"{len(files) - drifted} of {len(files)} file(s) match {manifest} in {where}"
    if drifted:
        print(f"{summary}; {drifted} drifted", file=sys.stderr)
        return 1
    print(summary)
    return 0
