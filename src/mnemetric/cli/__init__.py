"""The `mnemetric` command: the library for people who do not use DVC (and a few repo chores).

Every subcommand has --help. User errors print one message (file, record, field, fix) and exit
with status 2; a validation run that finds problems exits with status 1.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any

from mnemetric.errors import MnemetricError
from mnemetric.cli.registry import COMMANDS
from mnemetric.cli.registry import option_path

__all__ = ["build_parser", "load_memory", "main", "memory_options", "option_path"]

MODULES = ("answer", "batch", "card", "compare", "crosscheck", "data", "inventory", "judge_audit", "qa", "report",
           "retrieval", "runs", "sample", "shards", "v2", "v2_data", "v2_package", "verify")
"""The modules of mnemetric.cli that register commands, imported in this order for the whole parser
(``mnemetric --help`` lists the commands in registration order)."""

HOMES: dict[str, tuple[str, ...]] = {
    "answer": ("answer",), "merge": ("shards",), "batch": ("batch",), "card": ("card",), "compare": ("compare",),
    "crosscheck": ("crosscheck",), "validate": ("data",), "adapt": ("data",), "fetch": ("data",),
    "compose": ("data",), "inventory": ("inventory",), "judge-audit": ("judge_audit",), "judge": ("qa",),
    "score-qa": ("qa",), "cache": ("qa",), "report": ("report",), "retrieve": ("retrieval",),
    "score-retrieval": ("retrieval",), "runs": ("runs",), "sample": ("sample",),
    "v2": ("v2", "v2_data", "v2_package"), "v2-aggregate": ("v2",), "v2-combine": ("v2",), "v2-lafs": ("v2",),
    "v2-validate": ("v2_data",), "verify": ("verify",),
}
"""Command → the modules that register it (a group: all of its subcommands). ``mnemetric NAME ...`` imports
only these and builds only that command's parser, so a command pays for its own imports alone (the
whole CLI imports numpy, asyncio, the LLM client...: about 0.3 s before any work; tests/test_cli_lazy.py
checks this table against the registrations)."""


def __getattr__(name: str) -> Any:
    if name in ("load_memory", "memory_options"):  # re-exported, imported on first use
        from mnemetric.cli import retrieval
        return getattr(retrieval, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every command; given ``argv`` whose first word is a command, only that command's."""
    only = argv[0] if argv and argv[0] in HOMES else None
    for module in HOMES[only] if only else MODULES:
        importlib.import_module(f"mnemetric.cli.{module}")
    parser = argparse.ArgumentParser(
        prog="mnemetric",
        description="Mnemetric: upstream-exact, data-versioned evaluation of long-term memory (LongMemEval). "
                    "Inside the repository, `dvc repro` runs the pipeline; these commands give the same "
                    "library to people who bring their own files.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (summary, description, setup) in COMMANDS.items():
        if only is not None and name != only:
            continue
        sp = sub.add_parser(name, help=summary, description=description,
                            formatter_class=argparse.ArgumentDefaultsHelpFormatter)
        sp.set_defaults(handler=setup(sp))
    return parser


def main(argv: list[str] | None = None) -> int:
    from mnemetric.errors import install_interrupts, interrupt_message, interrupt_of, restore_interrupts

    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(argv).parse_args(argv)
    args.argv = argv  # what a re-ask command repeats
    previous = install_interrupts()  # SIGINT/SIGTERM: files being written are removed, one line, exit 128+signal
    try:
        return args.handler(args)
    except MnemetricError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except (KeyboardInterrupt, SystemError) as exc:
        if interrupt_of(exc) is None:
            raise
        text, code = interrupt_message(exc)
        print(text, file=sys.stderr)
        return code
    finally:
        restore_interrupts(previous)

