"""Composing conf/ into params.yaml exactly as `dvc exp run` does (DVC's own compose function)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def compose_to(output_file: str | Path, conf_dir: str | Path = "conf", overrides: list[str] | None = None) -> None:
    """Write the composition of ``conf_dir`` (+ Hydra overrides) to ``output_file``.

    Uses ``dvc.utils.hydra.compose_and_dump``, the very call `dvc exp run` makes (Hydra compose
    API, version_base=None, then OmegaConf.resolve), so the result is byte-identical to DVC's.
    """
    from dvc.utils.hydra import compose_and_dump

    conf = Path(conf_dir).resolve()
    compose_and_dump(output_file, str(conf), None, "config", str(conf.parent), list(overrides or []))


def conf_options(conf_dir: str | Path = "conf") -> list[tuple[str, str]]:
    """Every (group, option) pair under conf/<group>/<option>.yaml."""
    root = Path(conf_dir)
    return sorted((d.name, f.stem) for d in root.iterdir() if d.is_dir() for f in d.glob("*.yaml"))


def build(cfg: dict[str, Any], where: str) -> Any:
    """Hydra ``instantiate`` of a conf option; failures become one ConfigError naming ``where``.

    A MnemetricError raised by the target's constructor (e.g. a missing model name) is passed
    through as itself, so its own message reaches the user.
    """
    from hydra.errors import InstantiationException
    from hydra.utils import instantiate

    from .errors import ConfigError, MnemetricError

    if not isinstance(cfg, dict) or "_target_" not in cfg:
        raise ConfigError(f"{where}._target_", "missing; name the class to build",
                          fix="e.g. `_target_: mypackage.memory.MyMemory`")
    target = str(cfg["_target_"])
    problem = _unimportable(target)
    if problem:
        raise ConfigError(f"{where}._target_", f"cannot import {target!r}: {problem}",
                          fix="is the package that defines it installed in this environment? "
                              "`pip install -e path/to/your/package` (in this project's .venv), then check the "
                              "dotted path (package.module.Class)")
    try:
        return instantiate(cfg, _convert_="all")
    except InstantiationException as exc:
        if isinstance(exc.__cause__, MnemetricError):
            raise exc.__cause__ from None
        cause = exc.__cause__ or exc
        raise ConfigError(f"{where}", f"could not build {target}: {type(cause).__name__}: {cause}",
                          fix="check the option's keys against the class's constructor arguments") from None


def _unimportable(target: str) -> str | None:
    """Why ``target`` (package.module.Name) cannot be imported, or None if it can."""
    import importlib

    module, _, name = target.rpartition(".")
    if not module:
        return "not a dotted path"
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        return f"no module named {exc.name!r}"
    except ImportError as exc:
        return f"{type(exc).__name__}: {exc}"
    if not hasattr(mod, name):
        return f"module {module!r} has no attribute {name!r}"
    return None
