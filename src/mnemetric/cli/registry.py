"""The subcommand registry: each module registers its commands with ``@command``."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

Handler = Callable[[argparse.Namespace], int]
Setup = Callable[[argparse.ArgumentParser], Handler]
COMMANDS: dict[str, tuple[str, str, Setup]] = {}


def command(name: str, summary: str, description: str):
    """Register a subcommand: ``@command(...)`` over a function taking (parser) that returns its handler."""
    def wrap(setup: Setup) -> Setup:
        COMMANDS[name] = (summary, description, setup)
        return setup
    return wrap


def option_path(group: str, name: str, conf: Path) -> Path:
    """conf/<group>/<name>.yaml, or ``name`` itself when it is a path to a YAML file."""
    from ..errors import ConfigError
    path = Path(name)
    if name.endswith((".yaml", ".yml")) or path.is_file():
        if not path.is_file():
            raise ConfigError(f"{path}: no such {group} config file")
        return path
    path = conf / group / f"{name}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(f.stem for f in (conf / group).glob("*.yaml"))) or f"none found in {conf / group}"
        raise ConfigError(f"unknown {group} {name!r}; available: {known} "
                          f"(from {conf / group}; or pass a path to a YAML file)")
    return path


def load_option(group: str, name: str, conf: Path) -> dict[str, Any]:
    """A conf option (conf/<group>/<name>.yaml, or a YAML path) as a plain dict."""
    import yaml

    from ..errors import ConfigError

    path = option_path(group, name, conf)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({exc})") from None
    return data if isinstance(data, dict) else {}
