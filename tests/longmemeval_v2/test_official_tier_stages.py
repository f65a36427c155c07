"""`-S v2=small` (and medium) to the end, stage by stage, on loopback stand-ins: the Hugging Face hub (a file
server holding an official-SHAPED tier built from the bundled sample, with the test's own pins:
tests/support/v2_tier.py) and the OpenAI API (tests/support/openai_server.py) for the reader and the checker.

The stages run in-process in a workspace holding the composed params.yaml (the tier option, the screenshot
archives verified through a pinned checksums.sha256, the official reader and checker options with their prices
from conf/config.yaml, the official token counter on a tiny processor folder when its packages are installed):
v2_prepare (download + verify + extract) → v2_memory → v2_read → v2_check → v2_metrics (metrics/v2.json and
metrics/v2-latency.json). Only the reader and checker TEXTS are stand-ins (the real ones are upstream's pinned
files), so the run completes and is not official for that reason alone (and, without torchvision, for the
counter's).
"""

from __future__ import annotations

import functools
import importlib.util
import json
from pathlib import Path

import pytest
import yaml

from mnemetric.config import compose
from mnemetric.errors import ConfigError
from tests.conftest import ROOT
from tests.support.file_server import FileServer
from tests.support.openai_server import FakeOpenAIServer
from tests.support.v2_tier import serve, sha256, tier_files, tier_pins

SAMPLE = ROOT / "data" / "sample-v2"
COUNTER_PACKAGES = all(importlib.util.find_spec(m) is not None for m in ("transformers", "PIL", "torch"))


def reply(messages):
    if isinstance(messages[-1]["content"], list):  # the reader: parts
        return "From memory: \\boxed{Meadow Post}"
    return '{"label": 1, "reason": "stand-in judge"}'


@pytest.fixture(scope="module")
def tier():
    files = tier_files(SAMPLE)
    return files, tier_pins(files)


def _params(ws: Path, tier_name: str, checksums: str, openai_url: str, counter: Path | None, *more: str) -> None:
    overrides = [f"v2={tier_name}", f"v2.checksums_sha256={checksums}",
                 "v2.reader._target_=tests.support.v2_tier.standin_reader", f"v2.reader.base_url={openai_url}",
                 "v2.checker._target_=tests.support.v2_tier.standin_checkers", f"v2.checker.base_url={openai_url}",
                 *([f"v2.token_counter.path={counter}"] if counter else ["v2/token_counter=o200k"]), *more]
    (ws / "params.yaml").write_text(yaml.safe_dump(compose(overrides, ROOT / "conf"), sort_keys=False))


@pytest.fixture(scope="module")
def processor(tmp_path_factory):
    if not COUNTER_PACKAGES:
        return None
    from tests.longmemeval_v2.test_tokens_processor import write_processor

    return write_processor(tmp_path_factory.mktemp("qwen-processor"), "Qwen2Tokenizer")


def _workspace(tmp_path: Path, monkeypatch, pins) -> Path:
    """A stage workspace (cwd) with a memory fingerprint, its own response cache and key, and the test's own pins."""
    from mnemetric.longmemeval_v2 import obtain
    from mnemetric.stages import v2_prepare

    ws = tmp_path / "ws"
    (ws / "data" / "fingerprints").mkdir(parents=True)
    (ws / "data" / "fingerprints" / "v2-memory.json").write_text(json.dumps({"sha256": "0" * 64}))
    monkeypatch.chdir(ws)
    monkeypatch.setenv("MNEMETRIC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setattr(v2_prepare, "prepare", functools.partial(obtain.prepare, pins=pins))
    return ws


@pytest.mark.parametrize("tier_name", ["small", "medium"])
def test_the_official_tier_runs_to_its_metrics_through_the_stages(tier, processor, tier_name, tmp_path, monkeypatch):
    from mnemetric.stages import v2_check, v2_memory, v2_metrics, v2_prepare, v2_read

    files, pins = tier
    ws = _workspace(tmp_path, monkeypatch, pins)
    with FileServer() as hub, FakeOpenAIServer(reply=reply) as api:
        serve(hub, files, pins)
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        _params(ws, tier_name, sha256(files["checksums.sha256"]), api.base_url, processor)
        v2_prepare.main()
        v2_memory.main()
        assert api.count == 0  # nothing asked of a model before the reader
        v2_read.main()
        v2_check.main()
        v2_metrics.main()
        asked = [r.body["model"] for r in api.requests]
    custody = json.loads((ws / "data" / "custody" / f"v2-{tier_name}.json").read_text())
    assert custody["all_verified"] is True and custody["tier"] == tier_name
    assert sorted(e["file"] for e in custody["files"]) == sorted(
        ["questions.jsonl", "trajectories.jsonl", f"haystacks/lme_v2_{tier_name}.json", "checksums.sha256",
         "trajectory_screenshots/web_screenshots.tar.gz", "trajectory_screenshots/enterprise_screenshots_base.tar.gz"])
    m = json.loads((ws / "metrics" / "v2.json").read_text())
    assert m["v2"] == tier_name and m["combined"]["questions"] == 14 and m["combined"]["failed"] == 0
    assert m["settings"]["tier"] == tier_name and m["settings"]["reader"] == "openai"
    llm_checked = sum(1 for r in (SAMPLE / "questions.jsonl").read_text().splitlines()
                      if json.loads(r)["eval_function"].split("|")[0].strip().startswith("llm_"))
    assert asked.count("Qwen/Qwen3.5-9B") == 14 and asked.count("gpt-5.2") == llm_checked
    reasons = m["official_equivalence"]["reasons"]
    # not official for the stand-in texts (and the counter without torchvision) only: the data is the verified tier
    assert all(r.startswith(("reader ", "checker ", "token counter ", "the Qwen/Qwen3.5-9B processor was loaded"))
               for r in reasons), reasons
    assert "reader texts not read from the pinned upstream harness.py" in reasons
    run = json.loads((ws / "metrics" / "run-v2.json").read_text())
    assert run["variant"]["sha256_verified"] is True and run["variant"]["unverified_files"] == []
    usage = json.loads((ws / "data" / "v2-runs" / "read-usage.json").read_text())
    assert usage["responses"] == 14 and usage["unpriced_models"] == [] and usage["usd"] > 0  # priced by conf
    if processor is not None:
        assert run["token_counter"]["name"].startswith("qwen3.5-9b-processor")
    # ...and to metrics/v2-latency.json: measured here (cold), LAFS computed, the data being the verified tier
    latency = json.loads((ws / "metrics" / "v2-latency.json").read_text())
    assert (latency["v2"], latency["measured"], latency["source"]["carried"]) == (tier_name, True, False)
    assert latency["cache"] == {"timed_cache_served": 0, "warm": False}
    assert latency["query_seconds"]["combined"]["n"] == 14 and latency["query_seconds"]["combined"]["avg_seconds"] > 0
    assert latency["lafs"]["computed"] is True and latency["lafs"]["tier"] == tier_name
    assert latency["lafs"]["accuracy_percentage_points"] == pytest.approx(
        100 * m["combined"]["accuracy"]["overall_full_set"]["value"])
    assert latency["official"] is False  # the stand-in texts: v2.json's verdict


def test_an_unpriced_reader_stops_before_any_request_naming_the_fix(tier, tmp_path, monkeypatch):
    """A reader model the price table does not know, under max_usd: v2_read asks nothing and names the conf key,
    the override and -S llm.budget.max_usd=null."""
    from mnemetric.stages import v2_memory, v2_prepare, v2_read

    files, pins = tier
    ws = _workspace(tmp_path, monkeypatch, pins)
    with FileServer() as hub, FakeOpenAIServer(reply=reply) as api:
        serve(hub, files, pins)
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        _params(ws, "small", sha256(files["checksums.sha256"]), api.base_url, None, "v2.images=false",
                "v2.reader.model=local/qwen-9b")
        v2_prepare.main()
        v2_memory.main()
        with pytest.raises(ConfigError) as err:
            v2_read.main()
        assert api.count == 0
    text = str(err.value)
    assert "no price for model 'local/qwen-9b' but max_usd=50.0 is set" in text
    assert "llm.prices in conf/config.yaml" in text and "-S llm.budget.max_usd=null" in text
