"""`mnemetric runs`: branches and DVC experiments with headline numbers and comparability keys.

Everything is read from git at each revision (params.yaml, metrics/*.json and metrics/detail/qa.json
are git-tracked, ``cache: false``), so listing is fast and needs no DVC cache. Runs whose keys agree (variant sha256,
suite hash, adapter schema, scoring profile, judge, reader, retrieval budget) share a group letter:
those pairs may be compared with `mnemetric compare`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from mnemetric.cli.registry import Handler, command
from mnemetric.errors import InputError

HEADLINE = (("overall", "qa", "overall"), ("task_avg", "qa", "task_averaged"),
            ("R_all@10", "retrieval", "exclude_abs.session.recall_all@10"),
            ("nDCG@10", "retrieval", "exclude_abs.session.ndcg_any@10"))


def _get(tree: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(tree, dict) or part not in tree:
            return None
        tree = tree[part]
    return tree


def _headline(value: Any) -> float | None:
    """A number, or the ``value`` / ``point`` / ``accuracy`` of a block (layouts differ by version)."""
    if isinstance(value, dict):
        value = next((value[k] for k in ("value", "point", "accuracy", "mean") if k in value), None)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def run_summary(name: str, kind: str, repo: Path) -> dict[str, Any]:
    """One row: the revision, its headline numbers and its comparability keys (or why it has none)."""
    from mnemetric import revisions
    from mnemetric.longmemeval.compare import conf_settings

    rev = revisions.resolve(name, repo)
    row: dict[str, Any] = {"name": name, "kind": kind, "commit": rev.short}
    try:
        params = revisions.read_yaml(rev, "params.yaml", repo) or {}
        paths = params.get("paths") or {}
        files = {"data": paths.get("metrics_data", "metrics/data.json"), "qa": paths.get("metrics_qa", "metrics/qa.json"),
                 "retrieval": paths.get("metrics_retrieval", "metrics/retrieval.json"),
                 "qa_detail": "metrics/detail/qa.json", "run": "metrics/run.json"}
        metrics = {k: revisions.read_json(rev, f, repo) if revisions.exists(rev, f, repo) else {} for k, f in files.items()}
    except InputError as exc:
        return {**row, "error": str(exc).splitlines()[0]}
    row["headline"] = {label: _headline(_get(metrics[f], key)) for label, f, key in HEADLINE}
    data, qa = metrics["data"], metrics["qa"]
    judge = next((b["judge"] for b in (metrics["qa_detail"], qa) if isinstance(b.get("judge"), dict)), {})
    row["keys"] = {
        "benchmark": _get(params, "benchmark.name"),
        "variant": _get(params, "variant.name"),
        "sha256": (_get(data, "variant.sha256") or _get(params, "variant.sha256") or "")[:12] or None,
        "suite": (_get(data, "suite.name") or _get(params, "suite.name")),
        "suite_sha256": (_get(data, "suite.ids_sha256") or "")[:12] or None,
        "adapter": _get(params, "adapter.schema"),
        "profile": _get(params, "scoring.name"),
        "judge": ",".join(judge.get("models") or []) or _get(params, "judge.model"),
        "judge_name": _get(params, "judge.name"),
        "prompt_set": (judge.get("prompt_set_sha256") or "")[:12] or None,
        "reader": json.dumps(conf_settings(_get(params, "reader")), sort_keys=True),
        "budget": f"k={_get(params, 'retrieval.context_k')},tokens={_get(params, 'retrieval.context_tokens')}",
    }
    row["memory"] = _get(params, "memory.name")
    gate = _get(metrics["run"], "official_equivalence")
    row["official"] = ({"value": bool(gate.get("value")), "reasons": list(gate.get("reasons") or [])}
                       if isinstance(gate, dict) else None)
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


def _fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def rows_group(rows: list[dict[str, Any]], keys: dict) -> str:
    """The group letter of the first row holding ``keys``."""
    return next(r["group"] for r in rows if r.get("keys") == keys)


def render(rows: list[dict[str, Any]]) -> str:
    """A table of runs, then one line per comparability group naming its keys."""
    head = ["group", "run", "kind", "commit", "memory", "official", *[h[0] for h in HEADLINE]]
    body = [head]
    for r in rows:
        gate = r.get("official")
        official = "—" if not gate else ("yes" if gate["value"] else f"no ({len(gate['reasons'])} reasons)")
        body.append([r.get("group", "!"), r["name"], r["kind"], r["commit"], str(r.get("memory") or "—"), official,
                     *[_fmt((r.get("headline") or {}).get(h[0])) for h in HEADLINE]])
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
    for r in rows:  # the publishability gate's reasons (metrics/run.json), one line each
        gate = r.get("official")
        lines += [f"not official ({r['name']}): {reason}" for reason in (gate["reasons"] if gate else [])]
    return "\n".join(lines)


@command("runs", "branches and DVC experiments with headline numbers and comparability keys",
         "List the workspace, local branches and DVC experiments with their headline numbers (overall and "
         "task-averaged accuracy, session recall_all@10 and ndcg_any@10), the publishability verdict of "
         "metrics/run.json (official_equivalence and its reasons) and comparability keys (variant, "
         "dataset sha256 prefix, suite, adapter, profile, judge, reader, retrieval budget). Runs sharing a "
         "group letter may be compared with `mnemetric compare`.")
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
