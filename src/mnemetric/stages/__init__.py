"""One thin module per dvc.yaml stage: read declared params, call the library, write outputs."""

from __future__ import annotations

import sys
from collections.abc import Callable

from ..errors import MnemetricError


def run(main: Callable[[], None]) -> None:
    """Run a stage's main(); user errors print one clean message and exit non-zero."""
    try:
        main()
    except MnemetricError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
