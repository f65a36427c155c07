"""Composing conf/ exactly as `dvc exp run` does (DVC's own compose function), and building components.

The named options (``memory=bm25-upstream``, ``judge=upstream-gpt-4o``, ...) ship inside the package
(``mnemetric/conf``; the repository's top-level ``conf`` is that folder). The ``mnemetric`` command
composes them from anywhere; ``--conf DIR`` adds a project's own options (and, when DIR has a
``config.yaml``, its defaults).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

PACKAGE_CONF = Path(__file__).resolve().parent / "conf"


def package_conf_dir() -> Path:
    """The conf folder shipped with the package."""
    return PACKAGE_CONF


def project_conf_dir() -> Path:
    """The conf folder of the project in the working directory (./conf, the folder `dvc exp run` composes,
    when it holds a config.yaml), else the packaged one: where the ``benchmark`` conf group lists the families."""
    local = Path("conf")
    return local.resolve() if (local / "config.yaml").is_file() else PACKAGE_CONF


def option_spec(group: str, name: str) -> dict[str, Any]:
    """The option ``name`` of conf group ``group`` as a plain dict: ``<project conf>/<group>/<name>.yaml``,
    else the packaged one (options are plain YAML: no interpolation). A name no folder holds is a
    :class:`~mnemetric.errors.ConfigError` listing the options there are."""
    import yaml

    from mnemetric.errors import ConfigError

    folders = dict.fromkeys([project_conf_dir(), package_conf_dir()])
    for folder in folders:
        path = folder / group / f"{name}.yaml"
        if path.is_file():
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
            if not isinstance(data, dict):
                raise ConfigError(f"{group}={name}", f"{path} holds no mapping")
            return data
    known = sorted({f.stem for d in folders for f in (d / group).glob("*.yaml")})
    raise ConfigError(f"{group}={name}", "no such option", fix=f"one of {', '.join(known) or '(none)'}")


def _hydra_error(exc: BaseException) -> str:
    """Hydra's message plus its cause's (the cause names the key: ``full_key: retrieval.context_k``)."""
    parts, seen = [], exc
    while seen is not None and len(parts) < 3:
        text = str(seen).strip()
        if text and text not in parts:
            parts.append(text)
        seen = seen.__cause__
    return "\n  ".join(parts)


def compose_text(overrides: Iterable[str] = (), conf_dir: str | Path | None = None,
                 extra_dirs: Iterable[str | Path] = ()) -> str:
    """The composed YAML, byte for byte what `dvc exp run` writes to params.yaml.

    ``conf_dir`` (default: the package's conf) is the primary config folder; ``extra_dirs`` are added
    to Hydra's search path (a project's own options). Errors become one ConfigError.
    """
    from dvc.utils.hydra import compose_and_dump
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from mnemetric.errors import ConfigError
    from mnemetric.schema import register_schema

    conf = Path(conf_dir).resolve() if conf_dir else package_conf_dir()
    if not (conf / "config.yaml").is_file():
        raise ConfigError(f"{conf}: no config.yaml here", fix="pass the conf folder of a Mnemetric project")
    register_schema(conf)  # the Hydra plugin does this too; composing must not depend on plugin discovery
    args = list(overrides)
    extra = [Path(d).resolve() for d in extra_dirs if Path(d).resolve() != conf]
    if extra:
        args.append("hydra.searchpath=[" + ",".join(f"file://{d}" for d in extra) + "]")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "params.yaml"
        try:
            compose_and_dump(out, str(conf), None, "config", str(conf.parent), args)
        except (HydraException, OmegaConfBaseException) as exc:
            raise ConfigError(f"cannot compose {conf} with {args or 'no overrides'}: {_hydra_error(exc)}") from None
        return out.read_text(encoding="utf-8")


def compose(overrides: Iterable[str] = (), conf_dir: str | Path | None = None,
            extra_dirs: Iterable[str | Path] = ()) -> dict[str, Any]:
    """The composed run config as a dict, checked (types and ranges, key named)."""
    import yaml

    from mnemetric.schema import check_params

    params = yaml.safe_load(compose_text(overrides, conf_dir, extra_dirs)) or {}
    check_params(params, known=_sections(conf_dir))
    return params


def _sections(conf_dir: str | Path | None):
    """The params sections of ``conf_dir``'s families (None: the packaged conf's)."""
    from mnemetric.family import conf_families
    from mnemetric.schema import family_sections

    return family_sections() if conf_dir is None else family_sections(conf_families(conf_dir))


def compose_to(output_file: str | Path, conf_dir: str | Path | None = "conf",
               overrides: list[str] | None = None) -> None:
    """Write the composition of ``conf_dir`` (+ Hydra overrides) to ``output_file``, atomically,
    after checking it: a composition with a bad value writes nothing."""
    import yaml

    from mnemetric.io import atomic_open
    from mnemetric.schema import check_params

    text = compose_text(overrides or [], conf_dir)
    check_params(yaml.safe_load(text) or {}, known=_sections(conf_dir))
    with atomic_open(output_file) as fh:
        fh.write(text)


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

    from mnemetric.errors import ConfigError, MnemetricError

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
