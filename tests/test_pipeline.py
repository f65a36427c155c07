"""dvc.yaml ↔ stage modules: each stage declares exactly the params its module reads."""

from __future__ import annotations

import importlib

import pytest
import yaml

from .conftest import ROOT

DVC_YAML = yaml.safe_load((ROOT / "dvc.yaml").read_text())


@pytest.mark.parametrize("stage", sorted(DVC_YAML["stages"]))
def test_stage_params_match_module(stage):
    spec = DVC_YAML["stages"][stage]
    module = importlib.import_module(f"mnemetric.stages.{stage}")
    assert spec["cmd"] == f"python -m mnemetric.stages.{stage}"
    assert spec.get("params", []) == module.PARAMS


def test_dvc_loads_the_pipeline():
    from dvc.repo import Repo

    with Repo(str(ROOT)) as repo:
        names = {s.addressing for s in repo.index.stages}
    assert set(DVC_YAML["stages"]) <= names
