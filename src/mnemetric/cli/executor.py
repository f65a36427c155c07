"""The run's executor for a command (answer, judge, retrieve): ``--executor NAME|YAML`` and the ``llm:`` settings.

A command builds ONE executor per run exactly as a stage does (:func:`mnemetric.execute.build_executor`
over the conf group ``executor`` and the composed ``llm:`` section), with the command's overrides
(``--max-concurrency``, ``--max-requests``, ``--max-usd`` where the command has them).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from mnemetric.cli.registry import composed, conf_options, load_option, option_path


def add_executor_option(p: argparse.ArgumentParser) -> None:
    """``--executor``: an option of <conf>/executor/ or the package's, or a YAML path with a _target_."""
    p.add_argument("--executor", default="immediate", metavar="NAME",
                   help="executor option in <conf>/executor/ (shipped: " + ", ".join(conf_options("executor"))
                        + "; immediate: every call now, one budget and usage ledger for the run; batch: the OpenAI "
                        "Batch API at the batch price, resumed after a kill from its ledger, see `mnemetric batch`; "
                        "batch-export: batch files for another runner such as vllm run-batch) or a path to a "
                        "YAML file whose _target_ names the executor class")


def with_overrides(llm: dict[str, Any], a: argparse.Namespace) -> dict[str, Any]:
    """``llm`` with the command's budget and concurrency options applied (those it has)."""
    llm = dict(llm)
    budget = dict(llm.get("budget") or {})
    if getattr(a, "max_requests", None) is not None:
        budget["max_requests"] = a.max_requests
    if getattr(a, "max_usd", None) is not None:
        budget["max_usd"] = a.max_usd
    llm["budget"] = budget
    if getattr(a, "max_concurrency", None) is not None:
        llm["max_concurrency"] = a.max_concurrency
    return llm


def llm_settings(conf: Path, a: argparse.Namespace) -> dict[str, Any]:
    """The run's ``llm:`` settings (composed as `dvc exp run` would) with the command's overrides."""
    return with_overrides(composed(conf)["llm"], a)


def command_executor(a: argparse.Namespace):
    """The command's executor: ``a.executor`` (conf option or YAML path) completed with ``llm:`` (composed
    from ``a.conf``, one composition) and the command's overrides."""
    from mnemetric.execute import build_executor

    section, llm, where = executor_parts(a)
    return build_executor(section, llm, where=where)


def executor_parts(a: argparse.Namespace) -> tuple[dict[str, Any], dict[str, Any], str]:
    """The ``executor`` section, the ``llm:`` settings (with the command's overrides) and where the section
    came from: what :func:`command_executor` builds from (a command that needs a second executor of the
    same kind, e.g. one over a separate cache, builds it from these)."""
    name = getattr(a, "executor", "immediate")
    path = option_path("executor", name, a.conf)
    cfg = composed(a.conf, [] if path is not None else [f"executor={name}"])
    section = load_option("executor", name, a.conf) if path is not None else cfg["executor"]
    from mnemetric.cli.shards import executor_overrides

    section = {**section, **executor_overrides(a)}  # --workers
    return section, with_overrides(cfg["llm"], a), str(path or f"executor={name}")


def add_partial_option(p: argparse.ArgumentParser) -> None:
    """``--allow-partial``: keep a result in which some questions failed (exit 0, never official)."""
    p.add_argument("--allow-partial", action="store_true",
                   help="when some questions fail (no usable model answer), keep the partial result and exit 0 "
                        "(never official); without it the files are written and the command exits 3, naming "
                        "the failed count and the command that re-asks only them")


def end_partial_command(name: str, failures: list, total: int, a: argparse.Namespace, scores: str = "") -> None:
    """After a command wrote its outputs: some (not all) questions failed → exit 3 with the ONE command that
    re-asks only them (this very command again: the cache answers the rest, failures are never cached),
    unless ``--allow-partial`` (then a warning naming the same command)."""
    import shlex
    import sys

    from mnemetric.llm.failures import PartialFailure, partial_message

    if not failures or len(failures) >= total:
        return
    argv = [str(x) for x in getattr(a, "argv", sys.argv[1:]) if x != "--allow-partial"]
    rerun = shlex.join(["mnemetric", *argv])
    if a.allow_partial:
        print(partial_message(name, failures, total, rerun, scores), file=sys.stderr)
        return
    raise PartialFailure(name, failures, total, rerun, scores, keep=f"{rerun} --allow-partial")
