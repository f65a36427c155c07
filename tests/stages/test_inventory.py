"""Stage inventory's door: each family's run manifest that exists is read, with its path; none is an error."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from mnemetric.errors import InputError
from mnemetric.stages.inventory import run_manifests


@dataclass(frozen=True)
class Named:
    run_manifest: str | None


def test_the_manifests_that_exist_are_read_in_family_order(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "b.json").write_text(json.dumps({"benchmark": "B"}))
    (tmp_path / "m" / "a.json").write_text(json.dumps({"benchmark": "A"}))
    families = [Named("m/b.json"), Named(None), Named("m/gone.json"), Named("m/a.json")]
    assert run_manifests(families) == [{"benchmark": "B", "path": "m/b.json"}, {"benchmark": "A", "path": "m/a.json"}]


def test_no_manifest_at_all_names_every_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match=r"m/x.json, m/y.json.*does not exist"):
        run_manifests([Named("m/x.json"), Named("m/y.json")])
