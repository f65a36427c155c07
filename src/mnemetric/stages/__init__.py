"""One thin module per dvc.yaml stage: read declared params, call the library, write outputs."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from mnemetric.errors import MnemetricError


def run(main: Callable[[], None]) -> None:
    """Run a stage's main(); user errors print one clean message and exit non-zero.

    Outputs are written only while params.yaml still holds what the stage read (see
    :func:`mnemetric.params.guard_writes`): two `dvc exp run` in one workspace cannot mix settings.
    A stage that fails inside a workspace `dvc exp run` ends its message with the one command that puts
    the workspace back as committed (:func:`restore_command`): the experiment already composed
    params.yaml for its settings and DVC removed the baseline's outputs, so the next `dvc repro` would
    otherwise retry the failed settings.
    """
    from mnemetric.errors import install_interrupts, interrupt_message, interrupt_of
    from mnemetric.params import guard_writes

    guard_writes()
    install_interrupts()  # SIGINT/SIGTERM raise Interrupted: files being written are removed, one line, exit 128+signal
    try:
        main()
    except MnemetricError as exc:
        print(f"error: {exc}", file=sys.stderr)
        # after a partial failure the experiment's settings are what the next `dvc repro` must re-ask with
        hint = experiment_restore_hint() if exc.restore_hint else None
        if hint:
            print(hint, file=sys.stderr)
        sys.exit(exc.exit_code)
    except (KeyboardInterrupt, SystemError) as exc:  # a signal raised inside C code arrives as a SystemError
        if interrupt_of(exc) is None:
            raise
        text, code = interrupt_message(exc)
        print(text, file=sys.stderr)
        sys.exit(code)


def option(argv: Sequence[str], flag: str, default: str) -> tuple[list[str], str]:
    """(the other arguments, the value of ``flag VALUE`` or ``default``): a stage's one optional flag."""
    args, value = list(argv), default
    if flag in args:
        i = args.index(flag)
        if i + 1 >= len(args):
            from mnemetric.errors import ConfigError

            raise ConfigError("stage command", f"{flag} needs a value")
        value = args[i + 1]
        del args[i:i + 2]
    return args, value


def in_workspace_experiment() -> bool:
    """True inside a stage that `dvc exp run` runs in the workspace itself. DVC sets DVC_EXP_BASELINE_REV
    (and DVC_EXP_NAME) for every experiment's stages, and DVC_ROOT to the workspace; a queued or --temp
    experiment runs elsewhere and leaves the workspace alone."""
    if not os.environ.get("DVC_EXP_BASELINE_REV"):
        return False
    root = os.environ.get("DVC_ROOT")
    return root is None or Path(root).resolve() == Path.cwd().resolve()


def _git(*args: str) -> list[str]:
    proc = subprocess.run(["git", *args], capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise OSError(proc.stderr.strip())
    return [line for line in proc.stdout.split("\0") if line]


def restore_command() -> str | None:
    """The one shell command that puts a workspace back as its last commit after a failed experiment in it,
    or None when there is nothing to restore (or git cannot tell).

    What the experiment changed is told apart from edits made before it by time: the experiment wrote
    params.yaml when it started (the composition of its ``-S`` settings), so a tracked file that differs from
    HEAD and was written since (params.yaml, dvc.lock, a metrics file, a custody record) is checked out of
    HEAD, a file git does not track that was written since (a failure record) is removed, and `dvc checkout`
    brings back the DVC-tracked outputs of HEAD's dvc.lock. Older edits and files git ignores stay as they are.
    """
    try:
        started = Path("params.yaml").stat().st_mtime
        changed = _git("diff", "--name-only", "-z", "HEAD", "--")
        untracked = _git("ls-files", "--others", "--exclude-standard", "-z")
    except OSError:
        return None

    def since(rel: str) -> bool:
        path = Path(rel)
        return not path.exists() or path.stat().st_mtime >= started

    restore = sorted(rel for rel in changed if since(rel))
    remove = sorted(rel for rel in untracked if Path(rel).is_file() and since(rel))
    if not restore and not remove:
        return None
    steps = [f"git checkout HEAD -- {shlex.join(restore)}"] if restore else []
    steps += [f"rm -f -- {shlex.join(remove)}"] if remove else []
    return " && ".join([*steps, "dvc checkout"])


def experiment_restore_hint() -> str | None:
    """The closing lines of a stage error inside a workspace experiment (see :func:`restore_command`)."""
    if not in_workspace_experiment():
        return None
    command = restore_command()
    if command is None:
        return None
    name = os.environ.get("DVC_EXP_NAME")
    which = f"experiment {name}" if name else "experiment"
    return (f"the {which} failed; params.yaml still holds its settings, so the next `dvc repro` would retry them."
            f" To put the workspace back as committed, run:\n  {command}")

