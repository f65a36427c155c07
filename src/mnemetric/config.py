"""Composing conf/ into params.yaml exactly as `dvc exp run` does (DVC's own compose function)."""

from __future__ import annotations

from pathlib import Path


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
