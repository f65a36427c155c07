"""The V2 memory protocol: item validation as upstream harness.py:304-329, the shared-haystack rule, and
what the memory may see. Expected values are written out by hand."""

from __future__ import annotations

import pytest

from mnemetric.errors import PluginError
from mnemetric.longmemeval_v2.memory import build_memory, is_shared, memories, validate_items
from mnemetric.longmemeval_v2.trajectories import State, Trajectory


def traj(tid: str) -> Trajectory:
    state = State(f"http://x.test/{tid}", "click", None, f"page of {tid}", f"screenshots/{tid}/0.png", 0)
    return Trajectory(tid, "web", f"goal {tid}", "http://x.test/", None, (state,))


TRAJ = {t: traj(t) for t in ("t1", "t2", "t3")}


class Recorder:
    """Counts inserts (shared per instance through a class-level log)."""

    name = "recorder"
    log: list[tuple[int, str]] = []
    made = 0

    def __init__(self):
        Recorder.made += 1
        self.serial = Recorder.made
        self.queries: list[tuple] = []

    def insert(self, trajectory):
        Recorder.log.append((self.serial, trajectory.id))

    def query(self, *args, **kwargs):
        self.queries.append((args, kwargs))
        return []


@pytest.fixture(autouse=True)
def fresh():
    Recorder.log, Recorder.made = [], 0


def test_valid_items_are_copied_without_extra_keys(tmp_path):
    img = tmp_path / "a.png"
    img.write_bytes(b"x")
    items = [{"type": "text", "value": " hi ", "score": 3}, {"type": "image", "value": str(img)}]
    assert validate_items(items, system="m", question_id="q1") == [
        {"type": "text", "value": " hi "}, {"type": "image", "value": str(img)}]
    assert validate_items([], system="m", question_id="q1") == []


@pytest.mark.parametrize("items, needle", [
    ({"type": "text", "value": "x"}, "must return a list"),
    (("a",), "must return a list"),
    (["text"], "item 0 must be an object"),
    ([{"type": "text", "value": "ok"}, {"type": "audio", "value": "x"}], "item 1 has invalid type 'audio'"),
    ([{"value": "x"}], "item 0 has invalid type None"),
    ([{"type": "text", "value": "   "}], "item 0 has an invalid value"),
    ([{"type": "text", "value": 3}], "item 0 has an invalid value"),
    ([{"type": "text"}], "item 0 has an invalid value"),
    ([{"type": "image", "value": "/no/such/file.png"}], "image path does not exist"),
])
def test_invalid_items_name_system_and_question(items, needle):
    with pytest.raises(PluginError) as err:
        validate_items(items, system="my-memory", question_id="mnv2-q7")
    text = str(err.value)
    assert needle in text and text.startswith("my-memory: ") and "mnv2-q7" in text


def test_is_shared():
    assert is_shared([["t1", "t2"], ["t1", "t2"]])
    assert not is_shared([["t1", "t2"], ["t2", "t1"]])  # same set, other order: not shared
    assert not is_shared([])
    assert is_shared([["t1"]])


def test_shared_haystack_builds_one_memory_once():
    lists = [["t1", "t2", "t3"]] * 4
    got = list(memories(Recorder, lists, TRAJ))
    assert len({id(m) for m in got}) == 1 and Recorder.made == 1
    assert Recorder.log == [(1, "t1"), (1, "t2"), (1, "t3")]  # three inserts in all, in haystack order


def test_distinct_haystacks_build_a_fresh_memory_per_question():
    lists = [["t1", "t2"], ["t2", "t1"], ["t3"]]
    got = list(memories(Recorder, lists, TRAJ))
    assert len({id(m) for m in got}) == 3 and Recorder.made == 3
    assert Recorder.log == [(1, "t1"), (1, "t2"), (2, "t2"), (2, "t1"), (3, "t3")]


def test_build_memory_inserts_the_whole_trajectory_objects():
    class Keep(Recorder):
        def insert(self, trajectory):
            self.got = getattr(self, "got", []) + [trajectory]

    m = build_memory(Keep, ["t2", "t1"], TRAJ)
    assert m.got == [TRAJ["t2"], TRAJ["t1"]]
