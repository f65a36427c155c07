"""The subcommand registry: each module registers its commands with ``@command``."""

from __future__ import annotations

import argparse
from collections.abc import Callable

Handler = Callable[[argparse.Namespace], int]
Setup = Callable[[argparse.ArgumentParser], Handler]
COMMANDS: dict[str, tuple[str, str, Setup]] = {}


def command(name: str, summary: str, description: str):
    """Register a subcommand: ``@command(...)`` over a function taking (parser) that returns its handler."""
    def wrap(setup: Setup) -> Setup:
        COMMANDS[name] = (summary, description, setup)
        return setup
    return wrap
