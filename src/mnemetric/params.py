"""Reading params.yaml: the one place stage code gets its configuration.

``params.yaml`` is the committed composition of ``conf/`` (``dvc exp run`` rewrites it). Each stage
module declares ``PARAMS`` — the dotted keys it reads — and dvc.yaml lists exactly those keys
under the stage's ``params:`` (tests/test_pipeline.py keeps the two equal).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from mnemetric.errors import ConfigError

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


def nest(flat: Mapping[str, Any]) -> dict[str, Any]:
    """``{"a.b": 1}`` -> ``{"a": {"b": 1}}`` (a stage's declared params as the composed layout)."""
    out: dict[str, Any] = {}
    for dotted, value in flat.items():
        node = out
        *parents, last = dotted.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    return out


def stage_params(keys: list[str], path: str | Path = PARAMS_FILE) -> dict[str, Any]:
    """The declared keys of one stage, as a flat {dotted key: value} dict.

    Every top-level section a key belongs to is checked first (types and ranges, see
    :mod:`mnemetric.schema`), so a bad value stops the stage before any work, naming its key.
    """
    from mnemetric.schema import check_section

    params = load_params(path)
    for section in dict.fromkeys(k.split(".")[0] for k in keys):
        if section in params:
            check_section(section, params[section])
    values = {k: lookup(params, k) for k in keys}
    if _guard_writes:
        from mnemetric.io import set_commit_guard

        set_commit_guard(lambda: check_unchanged(path, values))
    return values


_guard_writes = False


def guard_writes(on: bool = True) -> None:
    """From now on, every output this process writes first checks that params.yaml still holds the
    values the stage read (stages.run turns this on)."""
    global _guard_writes
    _guard_writes = on


def check_unchanged(path: str | Path, values: dict[str, Any]) -> None:
    """Raise ConfigError if params.yaml no longer holds ``values`` (another `dvc exp run` rewrote it)."""
    now = load_params(path)
    for key, before in values.items():
        try:
            after = lookup(now, key)
        except ConfigError:
            after = "<missing>"
        if after != before:
            raise ConfigError(key, f"params.yaml changed while this stage ran (it read {before!r:.80}, "
                              f"params.yaml now says {after!r:.80}); nothing was written",
                              fix="another `dvc exp run` in this workspace? Run many experiments with "
                                  "`dvc exp run --queue ...` then `dvc queue start -j N` (or `dvc exp run --temp`), "
                                  "which give each its own workspace")
