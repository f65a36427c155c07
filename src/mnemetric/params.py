"""Reading params.yaml: the one place stage code gets its configuration.

``params.yaml`` is the committed composition of ``conf/`` (``dvc exp run`` rewrites it). Each stage
module declares ``PARAMS`` — the dotted keys it reads — and dvc.yaml lists exactly those keys
under the stage's ``params:`` (tests/test_pipeline.py keeps the two equal).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .errors import ConfigError

PARAMS_FILE = Path("params.yaml")


def load_params(path: str | Path = PARAMS_FILE) -> dict[str, Any]:
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"{p}: not found; run from the repository root (or `dvc exp run` to compose it from conf/)")
    with open(p, encoding="utf-8") as fh:
        data = yaml.safe_load(fh) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: expected a mapping at the top level")
    return data


def lookup(params: dict[str, Any], dotted: str) -> Any:
    node: Any = params
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            raise ConfigError(f"params.yaml: missing key {dotted!r} (is params.yaml stale? run `dvc exp run`)")
        node = node[part]
    return node


def stage_params(keys: list[str], path: str | Path = PARAMS_FILE) -> dict[str, Any]:
    """The declared keys of one stage, as a flat {dotted key: value} dict.

    Every top-level section a key belongs to is checked first (types and ranges, see
    :mod:`mnemetric.schema`), so a bad value stops the stage before any work, naming its key.
    """
    from .schema import check_section

    params = load_params(path)
    for section in dict.fromkeys(k.split(".")[0] for k in keys):
        if section in params:
            check_section(section, params[section])
    return {k: lookup(params, k) for k in keys}
