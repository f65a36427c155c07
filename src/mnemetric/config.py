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
        raise ConfigError(f"{where}: field '_target_': missing; name the class to build, "
                          "e.g. `_target_: mypackage.memory.MyMemory`")
    try:
        return instantiate(cfg, _convert_="all")
    except InstantiationException as exc:
        if isinstance(exc.__cause__, MnemetricError):
            raise exc.__cause__ from None
        raise ConfigError(f"{where}: could not build {cfg['_target_']}: {exc}") from None
