"""One thin module per dvc.yaml stage: read declared params, call the library, write outputs."""

from __future__ import annotations

import sys
from collections.abc import Callable

from mnemetric.errors import MnemetricError


def run(main: Callable[[], None]) -> None:
    """Run a stage's main(); user errors print one clean message and exit non-zero.

    Outputs are written only while params.yaml still holds what the stage read (see
    :func:`mnemetric.params.guard_writes`): two `dvc exp run` in one workspace cannot mix settings.
    """
    from mnemetric.params import guard_writes

    guard_writes()
    try:
        main()
    except MnemetricError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
