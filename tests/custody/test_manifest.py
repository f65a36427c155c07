"""The run manifest's generic frame and helpers (mnemetric.custody.manifest); values worked by hand.

LongMemEval's sections are tested with its family (tests/longmemeval/test_family.py); here a
family is a small hand-written stand-in, so the frame is seen without any family's layout.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import pytest

from mnemetric.custody.manifest import (
    SCHEMA,
    RunManifest,
    build_manifest,
    config_sha256,
    distinct,
    frame_manifest,
    params_sent,
    read_run_manifest,
    spread,
    write_run_manifest,
)
from mnemetric.errors import InputError, PluginError
from mnemetric.family import FamilyBase
from mnemetric.params import nest


@dataclass(frozen=True)
class Bare(FamilyBase):
    """Just what the frame reads of a family: name, display name, no gate of its own (FamilyBase's)."""

    name: str = "bare"
    display_name: str = "Bare"


def test_the_frame_is_schema_benchmark_the_sections_in_order_then_the_gate():
    m = build_manifest(Bare(), {"zeta": 1, "alpha": {"x": 2}})
    assert list(m) == ["schema", "benchmark", "zeta", "alpha", "official_equivalence"]
    assert m["schema"] == SCHEMA == "mnemetric.run-manifest/v1" and m["benchmark"] == "Bare"
    assert m["official_equivalence"] == {"value": False,
                                         "reasons": ["Bare has no official protocol to check a run against"]}


def test_the_typed_manifest_writes_the_frame_and_reads_it_back(tmp_path):
    m = frame_manifest(Bare(), {"zeta": 1, "alpha": {"x": 2}})
    assert m.to_record() == build_manifest(Bare(), {"zeta": 1, "alpha": {"x": 2}})
    write_run_manifest(tmp_path / "run.json", m)
    assert read_run_manifest(tmp_path / "run.json", Bare()) == m
    raw = m.to_record()
    with pytest.raises(InputError, match=r"run.json.*schema.*expected 'mnemetric.run-manifest/v1'"):
        RunManifest.from_record({**raw, "schema": "other/1"}, file="run.json")
    with pytest.raises(InputError, match=r"run.json.*field 'counts': missing or not an object"):
        RunManifest.from_record(raw, file="run.json", required=("alpha", "counts"))
    with pytest.raises(InputError, match=r"official_equivalence"):
        RunManifest.from_record({**raw, "official_equivalence": True}, file="run.json")


@pytest.mark.parametrize("key", ["schema", "benchmark", "official_equivalence"])
def test_a_family_may_not_write_the_frame_s_keys(key):
    with pytest.raises(PluginError, match=rf"bare.*manifest_sections.*'{key}'"):
        build_manifest(Bare(), {key: "mine"})


def test_a_gated_family_must_return_what_the_gate_reads():
    @dataclass(frozen=True)
    class Gated(Bare):
        required_sections: tuple = ("variant", "suite", "scoring", "judge", "counts")

        def official_reasons(self, manifest):
            raise AssertionError("the frame refuses before the gate runs")

    with pytest.raises(PluginError, match=r"no \['suite', 'scoring', 'judge', 'counts'\] section"):
        build_manifest(Gated(), {"variant": {}})


def test_config_hash_is_sha256_of_canonical_json():
    assert config_sha256({"b": [1, 2], "a": "x"}) == hashlib.sha256(b'{"a":"x","b":[1,2]}').hexdigest()


def test_nest():
    assert nest({"a.b": 1, "a.c": 2, "d": 3}) == {"a": {"b": 1, "c": 2}, "d": 3}


def test_spread_and_distinct():
    assert spread([4, 1, 7]) == {"min": 1, "mean": 4.0, "max": 7} and spread([]) is None
    assert distinct(["b", None, "a", "b", 3]) == ["3", "a", "b"]


def test_params_sent_come_from_the_lines_and_unrecorded_ones_are_counted():
    # r1, r2 the same set; r3 another; r9 names a request but records no parameters; None is no request
    lines = [("r1", {"t": 0}), ("r2", {"t": 0}), ("r3", {"t": 1}), ("r9", None), (None, {"t": 5})]
    assert params_sent(lines) == {"requests": 4, "values": [{"t": 0}, {"t": 1}], "not_in_cache": 1}
    assert params_sent(iter(lines)) == params_sent(lines)  # any iterable of (sha, params)
    assert params_sent([(None, None)]) is None and params_sent([]) is None
