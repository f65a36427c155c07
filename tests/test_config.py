"""conf/ ↔ params.yaml: every option composes and instantiates; params.yaml is not stale."""

from __future__ import annotations

import pytest
import yaml
from hydra.utils import instantiate

from mnemetric.config import compose_to, conf_options

from tests.conftest import ROOT

CONF = ROOT / "conf"
GROUPS = ("variant", "adapter", "scoring", "suite")


def compose(tmp_path, overrides=()) -> dict:
    out = tmp_path / "params.yaml"
    compose_to(out, CONF, list(overrides))
    return yaml.safe_load(out.read_text())


def test_params_yaml_equals_the_composition_of_conf(tmp_path):
    """params.yaml must be what `dvc exp run` would write (DVC's own compose function, byte for byte)."""
    out = tmp_path / "params.yaml"
    compose_to(out, CONF)
    committed = (ROOT / "params.yaml").read_text()
    assert committed == out.read_text(), (
        "params.yaml is stale vs conf/: run `make params` (or `dvc exp run`) and commit params.yaml")


def test_every_group_has_options():
    groups = {g for g, _ in conf_options(CONF)}
    assert set(GROUPS) <= groups
    expected = {
        "variant": {"sample", "oracle", "s", "m"},
        "adapter": {"session-v3", "legacy-v2"},
        "scoring": {"longmemeval-session-upstream-v1", "mnemetric-historical"},
        "suite": {"development", "full"},
    }
    for group, options in expected.items():
        assert options <= {o for g, o in conf_options(CONF) if g == group}


@pytest.mark.parametrize(("group", "option"), conf_options(CONF))
def test_option_composes_and_instantiates(tmp_path, group, option):
    cfg = compose(tmp_path, [f"{group}={option}"])
    assert cfg[group]["name"] == option, f"conf/{group}/{option}.yaml must set name: {option}"
    if "_target_" in cfg[group]:
        instantiate(cfg[group])


def test_paths_follow_the_choices(tmp_path):
    cfg = compose(tmp_path, ["variant=oracle", "suite=development"])
    assert cfg["paths"]["adapted"] == "data/adapted/oracle.jsonl"
    assert cfg["paths"]["suite"] == "data/suites/oracle-development.json"


@pytest.mark.parametrize("name", ["oracle", "s", "m"])
def test_official_variants_are_pinned(tmp_path, name):
    v = compose(tmp_path, [f"variant={name}"])["variant"]
    assert v["repo"] == "xiaowu0162/longmemeval-cleaned"
    assert v["revision"] == "98d7416c24c778c2fee6e6f3006e7a073259d48f"
    assert len(v["sha256"]) == 64 and v["license"] and v["pin_source"]


@pytest.mark.parametrize(("target", "needle"), [
    ("no_such_package.memory.Keyword", "no module named 'no_such_package'"),
    ("mnemetric.longmemeval.memory.bm25.NoSuchClass", "has no attribute 'NoSuchClass'"),
])
def test_a_target_that_cannot_be_imported_asks_whether_it_is_installed(target, needle):
    from mnemetric.config import build
    from mnemetric.errors import ConfigError

    with pytest.raises(ConfigError) as err:
        build({"_target_": target, "name": "x"}, "conf/memory/x.yaml")
    text = str(err.value)
    assert needle in text and "installed in this environment" in text and "pip install -e" in text
    assert text.startswith("conf/memory/x.yaml._target_: ")
