"""argparse ``type=`` functions for numeric options: a bad value is a usage error, never a traceback.

argparse prints ``error: argument --max-concurrency: must be an integer >= 1, got '0'`` with the
usage line and exits with status 2 when one of these raises ArgumentTypeError. Every numeric
option of the `mnemetric` commands uses one of them (tests/test_cli_types.py walks the parser).
"""

from __future__ import annotations

import argparse
import math


def _integer(text: str, least: int, what: str) -> int:
    try:
        value = int(text)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """An integer >= 1 (concurrency, k, token budgets)."""
    return _integer(text, 1, "an integer >= 1")


def count(text: str) -> int:
    """An integer >= 0 (request budgets, bootstrap resamples where 0 means none, seeds)."""
    return _integer(text, 0, "an integer >= 0")


def _number(text: str, positive: bool) -> float:
    what = "a finite number > 0" if positive else "a finite number >= 0"
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}") from None
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
    return value


def amount(text: str) -> float:
    """A finite number >= 0 (dollars)."""
    return _number(text, positive=False)


def positive_number(text: str) -> float:
    """A finite number > 0 (seconds of a timeout)."""
    return _number(text, positive=True)
