"""metrics/v2.json and metrics/run-v2.json typed: what is written reads back, the old official shape is refused with
the file named; the latency sidecar is used only with the memory rows it was measured with."""

from __future__ import annotations

import json

import pytest

from mnemetric.errors import InputError
from mnemetric.longmemeval_v2.manifest import read_manifest, v2_manifest, write_manifest
from mnemetric.longmemeval_v2.metrics_file import MEASURED, V2Metrics, read_metrics, write_metrics
from mnemetric.longmemeval_v2.steps import Latencies
from mnemetric.longmemeval_v2.summary_file import (ACCURACY_KEYS, CATEGORIES, MEMORY_CONTEXT, Accuracy, Block, Lafs,
                                                   V2Summary)
from mnemetric.official import OfficialEquivalence
from mnemetric.config import compose

NOT_OFFICIAL = OfficialEquivalence(False, ("r",))
SETTINGS = {"haystack": "lme_v2_small.json", "tier": "small", "domains": ["web"], "memory": "bm25",
            "memory_query_context": "question", "reader": "offline", "checker": "offline", "token_counter": "t",
            "memory_context_max_tokens": 100}
ACCURACY = {k: Accuracy(0.5, 1, 2, 0.1, 0.9, "clopper-pearson") for k in ACCURACY_KEYS}
SUMMARY = V2Summary("mnemetric.longmemeval-v2.metrics/1", SETTINGS,
                    {"web": Block(2, 2, 0, accuracy=ACCURACY, category_accuracy=dict.fromkeys(CATEGORIES, 0.5),
                                  memory_query_avg_seconds=0.5, memory_context=dict.fromkeys(MEMORY_CONTEXT, 1))},
                    None, Lafs(True, "small", values={"lafs_gain": 1.0}), NOT_OFFICIAL)


def test_v2_metrics_drop_what_a_clock_measured_and_read_back(tmp_path):
    m = V2Metrics.of("longmemeval-v2", True, "sample", SUMMARY, {"abstention_overall": {"count": 1}, "overall": {}})
    write_metrics(tmp_path / "v2.json", m)
    raw = json.loads((tmp_path / "v2.json").read_text())
    assert list(raw) == ["benchmark", "headline", "v2", "schema", "settings", "domains", "combined",
                         "official_equivalence", "latency", "lafs", "by_category"]
    assert "memory_query_avg_seconds" not in raw["domains"]["web"] and raw["lafs"] == {"tier": "small", "note": MEASURED}
    assert raw["by_category"] == {"abstention_overall": {"count": 1}}
    assert read_metrics(tmp_path / "v2.json") == m


def test_the_old_official_shape_is_refused_with_the_file_named(tmp_path):
    m = V2Metrics.of("longmemeval-v2", False, "sample", SUMMARY, {})
    raw = m.to_record() | {"official_equivalence": {"official": False, "reasons": ["r"]}}
    (tmp_path / "v2.json").write_text(json.dumps(raw))
    with pytest.raises(InputError, match="v2.json: .*official_equivalence"):
        read_metrics(tmp_path / "v2.json")


def test_the_run_manifest_reads_back(tmp_path):
    block = Block(3, 3, 0, accuracy={}, category_accuracy={}, memory_query_avg_seconds=None, memory_context={})
    summary = V2Summary("s", {}, {"web": block}, block, Lafs(False, None, "r"), NOT_OFFICIAL)
    m = v2_manifest(compose()["v2"], summary, "metrics/run-v2.json")
    write_manifest(tmp_path / "run-v2.json", m)
    assert read_manifest(tmp_path / "run-v2.json") == m
    raw = json.loads((tmp_path / "run-v2.json").read_text())
    raw.pop("counts")
    (tmp_path / "run-v2.json").write_text(json.dumps(raw))
    with pytest.raises(InputError, match="counts"):
        read_manifest(tmp_path / "run-v2.json")


def test_a_latency_sidecar_of_other_memory_rows_is_not_used(tmp_path):
    lat = Latencies({("web", "q1"): (0.25, 0.0)})
    lat.write(tmp_path / "latency.json", "a" * 64)
    assert Latencies.read(tmp_path / "latency.json", "a" * 64).of("web", "q1") == (0.25, 0.0)
    assert Latencies.read(tmp_path / "latency.json", "b" * 64) is None
    assert Latencies.read(tmp_path / "missing.json", "a" * 64) is None
