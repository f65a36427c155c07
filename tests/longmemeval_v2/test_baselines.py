"""Mnemetric's V2 baselines on the bundled sample's trajectories (real files), each built from its conf option
(conf/v2/memory/<name>.yaml) as the stage builds it."""

from __future__ import annotations

import pytest

from mnemetric.config import build
from mnemetric.errors import ConfigError
from mnemetric.longmemeval_v2.baselines import render_state
from mnemetric.longmemeval_v2.pipeline import option
from mnemetric.longmemeval_v2.memory import validate_items
from mnemetric.longmemeval_v2.trajectories import iter_trajectories
from tests.conftest import ROOT

SAMPLE = ROOT / "data" / "sample-v2"
TRAJ = {t.id: t for t in iter_trajectories(SAMPLE / "trajectories.jsonl")}
WEB = ["fm-shop-001", "fm-shop-002", "fm-admin-001"]


def make_memory(name, **opts):
    return build(option("memory", name, SAMPLE, **opts), f"conf/v2/memory/{name}.yaml")


def filled(name, **opts):
    m = make_memory(name, **opts)
    for tid in WEB:
        m.insert(TRAJ[tid])
    return m


def test_none_returns_nothing():
    assert filled("none").query("anything") == []


def test_full_context_is_newest_first_with_optional_screenshots():
    items = filled("full-context").query("q")
    assert [i["value"].splitlines()[0] for i in items] == [f"Trajectory: {TRAJ[t].goal}" for t in reversed(WEB)]
    with_images = validate_items(filled("full-context", images=True).query("q"), system="full-context",
                                 question_id="q")
    first = TRAJ["fm-admin-001"]
    assert [i["type"] for i in with_images[: 1 + len(first.states)]] == ["text"] + ["image"] * len(first.states)
    assert with_images[1]["value"] == str(SAMPLE / first.states[0].screenshot)


def test_bm25_returns_the_matching_state_first_and_respects_top_k():
    m = filled("bm25", top_k=3)
    items = m.query("lamps?")
    assert len(items) == 3 and all(i["type"] == "text" for i in items)
    shop = TRAJ["fm-shop-001"]
    # "lamps" occurs in exactly two states of the sample: states 0 and 1 of fm-shop-001 (checked by hand)
    assert {i["value"] for i in items[:2]} == {render_state(shop, shop.states[0]), render_state(shop, shop.states[1])}


def test_empty_bm25_memory_returns_nothing():
    assert make_memory("bm25").query("x") == []


def test_unknown_baseline_names_the_options():
    with pytest.raises(ConfigError) as err:
        make_memory("rag")
    text = str(err.value)
    assert "no LongMemEval-V2 memory option 'rag'" in text and "bm25, dense, full-context, none" in text


def test_dense_over_states_through_a_local_embeddings_endpoint(monkeypatch):
    from tests.support.openai_server import FakeOpenAIServer

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeOpenAIServer() as server:
        m = filled("dense", backend="openai", model="emb-test", base_url=server.base_url, top_k=4)
        items = m.query("lamps?")
        sent = server.count
        again = filled("dense", backend="openai", model="emb-test", base_url=server.base_url, top_k=4).query("lamps?")
        assert server.count == sent and sent >= 1  # the embedding cache serves the rerun
    states = {render_state(TRAJ[t], s) for t in WEB for s in TRAJ[t].states}
    assert len(items) == 4 and {i["value"] for i in items} <= states and again == items
    assert all(r.path.endswith("/embeddings") for r in server.requests)
