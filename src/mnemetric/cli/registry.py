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


def conf_options(group: str, conf: Path | None = None) -> list[str]:
    """The option names of conf group ``group`` shipped with the package, plus those in <conf>/<group>/."""
    from mnemetric.config import package_conf_dir
    folders = [package_conf_dir()] + ([Path(conf)] if conf is not None else [])
    return sorted({f.stem for d in folders for f in (d / group).glob("*.yaml")})


def option_path(group: str, name: str, conf: Path) -> Path | None:
    """``name`` itself when it is a path to a YAML file, else None (a named option, composed by Hydra)."""
    from mnemetric.errors import ConfigError
    path = Path(name)
    if name.endswith((".yaml", ".yml")) or path.is_file():
        if not path.is_file():
            raise ConfigError(f"{path}: no such {group} config file")
        return path
    return None


def load_option(group: str, name: str, conf: Path) -> dict[str, Any]:
    """A conf option as a plain dict: a YAML file given by path, or ``<group>=<name>`` composed through
    Hydra exactly as `dvc exp run` composes it — from the options shipped with the package plus the
    project's ``conf`` folder (``--conf``, default ./conf when it exists), so the command works from
    any directory."""
    import yaml

    from mnemetric.config import compose
    from mnemetric.errors import ConfigError

    path = option_path(group, name, conf)
    if path is not None:
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path}: not valid YAML ({exc})") from None
        return data if isinstance(data, dict) else {}
    return composed(conf, [f"{group}={name}"])[group]


def composed(conf: Path, overrides: list[str] | None = None) -> dict[str, Any]:
    """The run config composed from the package's options plus the project's ``conf`` (when it exists)."""
    from mnemetric.config import compose

    project = Path(conf)
    primary = project if (project / "config.yaml").is_file() else None
    extra = [project] if project.is_dir() and primary is None else []
    return compose(overrides or [], conf_dir=primary, extra_dirs=extra)


GROUPS: dict[str, dict[str, tuple[str, str, Setup]]] = {}
"""Command groups (``mnemetric GROUP SUBCOMMAND``): group name → its subcommands, in registration order."""


def group(name: str, summary: str, description: str) -> None:
    """Register a command group; its subcommands are added with ``@subcommand(name, ...)``."""
    GROUPS.setdefault(name, {})
    COMMANDS[name] = (summary, description, _group_setup(name))


def subcommand(group_name: str, name: str, summary: str, description: str):
    """Register ``mnemetric GROUP NAME``: like ``@command``, inside a group made by :func:`group`."""
    def wrap(setup: Setup) -> Setup:
        GROUPS.setdefault(group_name, {})[name] = (summary, description, setup)
        return setup
    return wrap


def _group_setup(name: str) -> Setup:
    def setup(p: argparse.ArgumentParser) -> Handler:
        sub = p.add_subparsers(dest=f"{name}_command", metavar="SUBCOMMAND", required=True)
        for sub_name, (summary, description, sub_setup) in GROUPS[name].items():
            sp = sub.add_parser(sub_name, help=summary, description=description,
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
            sp.set_defaults(subhandler=sub_setup(sp))
        return lambda a: a.subhandler(a)
    return setup
