"""`mnemetric runs`: branches and DVC experiments with headline numbers and comparability keys.

Everything is read from git at each revision (params.yaml, metrics/*.json and metrics/detail/qa.json
are git-tracked, ``cache: false``), so listing is fast and needs no DVC cache. Each row is its
benchmark family's (params.yaml ``benchmark``; ``Family.summary``): its headline numbers, its run
manifest's verdict and its comparability keys. Runs whose keys agree share a group letter: those
pairs may be compared with `mnemetric compare`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from mnemetric.cli.registry import Handler, command
from mnemetric.errors import MnemetricError

def run_summary(name: str, kind: str, repo: Path, default: Any = None) -> dict[str, Any]:
    """One row: the revision, its family's headline numbers and comparability keys (or why it has none).

    The family is the revision's params ``benchmark`` (LongMemEval when a revision predates it); its
    ``summary`` reads that revision's files (``read(path)``: the JSON at the revision, None when absent).
    ``default``: the family of a revision whose params name none (None: conf's default, composed)."""
    from mnemetric import revisions
    from mnemetric.family import headline_family

    rev = revisions.resolve(name, repo)
    row: dict[str, Any] = {"name": name, "kind": kind, "commit": rev.short}

    def read(path: str) -> Any:
        return revisions.read_json(rev, path, repo) if revisions.exists(rev, path, repo) else None
    try:
        params = revisions.read_yaml(rev, "params.yaml", repo) or {}
        named = isinstance(params.get("benchmark"), dict)
        family = headline_family(params) if named else (default or headline_family(None))
        summary = family.summary(params, read)
    except MnemetricError as exc:
        return {**row, "error": str(exc).splitlines()[0]}
    row["benchmark"] = family.display_name
    row["headline"] = dict(summary.headline)
    row["keys"] = dict(summary.keys)
    row["memory"] = summary.memory
    row["official"] = None if summary.official is None else summary.official.to_record()
    return row


def list_runs(repo: Path, include_workspace: bool = True) -> list[dict[str, Any]]:
    """Rows for the workspace, every local branch and every DVC experiment, with group letters."""
    from mnemetric import revisions

    names = [("workspace", "workspace")] if include_workspace else []
    names += [(b, "branch") for b, _ in revisions.branches(repo)]
    names += [(e, "experiment") for e in sorted(revisions.experiment_refs(repo))]
    out = [run_summary(n, k, repo) for n, k in names]
    groups: dict[str, str] = {}
    for row in out:
        if "keys" in row:
            sig = json.dumps(row["keys"], sort_keys=True)
            row["group"] = groups.setdefault(sig, chr(ord("A") + len(groups)) if len(groups) < 26 else str(len(groups)))
    return out


def headline_labels(rows: list[dict[str, Any]]) -> list[str]:
    """Every headline label of the rows, in first-seen order (families differ in their headline)."""
    return list(dict.fromkeys(label for r in rows for label in (r.get("headline") or {})))


def _fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def rows_group(rows: list[dict[str, Any]], keys: dict) -> str:
    """The group letter of the first row holding ``keys``."""
    return next(r["group"] for r in rows if r.get("keys") == keys)


def render(rows: list[dict[str, Any]]) -> str:
    """A table of runs, then one line per comparability group naming its keys."""
    labels = headline_labels(rows)
    head = ["group", "run", "kind", "commit", "benchmark", "memory", "official", *labels]
    body = [head]
    for r in rows:
        gate = r.get("official")
        official = "—" if not gate else ("yes" if gate["value"] else f"no ({len(gate['reasons'])} reasons)")
        body.append([r.get("group", "!"), r["name"], r["kind"], r["commit"], str(r.get("benchmark") or "—"),
                     str(r.get("memory") or "—"), official,
                     *[_fmt((r.get("headline") or {}).get(label)) for label in labels]])
    widths = [max(len(b[i]) for b in body) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(b, widths)).rstrip() for b in body]
    lines.append("")
    seen: dict[str, dict] = {}
    for r in rows:
        if "group" in r:
            seen.setdefault(r["group"], r["keys"])
    first = next(iter(seen.values()), {})
    for g, keys in seen.items():
        members = [r["name"] for r in rows if r.get("group") == g]
        verdict = "comparable: " + ", ".join(members) if len(members) > 1 else f"alone: {members[0]}"
        shown = keys if keys is first else {k: v for k, v in keys.items() if v != first.get(k)}
        lines.append(f"group {g} ({verdict})" + ("" if keys is first else f"; differs from group {rows_group(rows, first)} in:"))
        lines.append("  " + ", ".join(f"{k}={v}" for k, v in shown.items()))
    lines += [f"! {r['name']}: {r['error']}" for r in rows if "error" in r]
    for r in rows:  # the publishability gate's reasons (the family's run manifest), one line each
        gate = r.get("official")
        lines += [f"not official ({r['name']}): {reason}" for reason in (gate["reasons"] if gate else [])]
    return "\n".join(lines)


@command("runs", "branches and DVC experiments with headline numbers and comparability keys",
         "List the workspace, local branches and DVC experiments with the headline numbers of each one's "
         "benchmark family (params.yaml benchmark; LongMemEval: overall and task-averaged accuracy, session "
         "recall_all@10 and ndcg_any@10; LongMemEval-V2: accuracy on the full set, non-abstention and "
         "abstention), the publishability verdict of its run manifest (official_equivalence and its reasons) "
         "and its comparability keys (LongMemEval: variant, dataset sha256 prefix, suite, adapter, profile, "
         "judge, reader, retrieval budget; LongMemEval-V2: option, data root, haystack, domains, reader, "
         "checker, token counter). Runs sharing a group letter may be compared with `mnemetric compare`.")
def _runs(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    p.add_argument("--no-workspace", action="store_true", help="leave out the workspace")
    p.add_argument("--repo", type=Path, default=Path("."), help="the project's git checkout")

    def run(a: argparse.Namespace) -> int:
        rows = list_runs(a.repo, include_workspace=not a.no_workspace)
        from mnemetric.cli.compare import emit

        emit(json.dumps(rows, indent=2) if a.json else render(rows))
        return 0
    return run
