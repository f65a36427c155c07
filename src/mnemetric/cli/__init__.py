"""The `mnemetric` command: the library for people who do not use DVC (and a few repo chores).

Every subcommand has --help. User errors print one message (file, record, field, fix) and exit
with status 2; a validation run that finds problems exits with status 1.
"""

from __future__ import annotations

import argparse
import sys

from mnemetric.errors import MnemetricError
from mnemetric.cli import answer, batch, card, compare, crosscheck, data, inventory, judge_audit, qa, report, retrieval, runs, sample, shards, v2, v2_data, v2_package, verify  # noqa: F401  (registers the commands)
from mnemetric.cli.registry import COMMANDS
from mnemetric.cli.registry import option_path
from mnemetric.cli.retrieval import load_memory, memory_options

__all__ = ["build_parser", "load_memory", "main", "memory_options", "option_path"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mnemetric",
        description="Mnemetric: upstream-exact, data-versioned evaluation of long-term memory (LongMemEval). "
                    "Inside the repository, `dvc repro` runs the pipeline; these commands give the same "
                    "library to people who bring their own files.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (summary, description, setup) in COMMANDS.items():
        sp = sub.add_parser(name, help=summary, description=description,
                            formatter_class=argparse.ArgumentDefaultsHelpFormatter)
        sp.set_defaults(handler=setup(sp))
    return parser


def main(argv: list[str] | None = None) -> int:
    from mnemetric.errors import install_interrupts, interrupt_message, interrupt_of, restore_interrupts

    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # what a re-ask command repeats
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

