"""Synthetic haystacks: lazy, exactly S sessions, valid, and the same bytes as the previous generator.

The sha256 pins come from src/mnemetric/data/sample.py (the generator this package replaced), run
before it was removed: `--synthetic 500 --sessions 48` (seed 20241014) gave 6581f611…e0, and the
smaller sets below gave the values in SMALL.
"""

from __future__ import annotations

import inspect

import pytest

from mnemetric.longmemeval.instance_checks import check_instance
from mnemetric.errors import ConfigError
from mnemetric.longmemeval.sample import QUESTION_TYPES, generate_synthetic, instances_sha256

S_SCALE_SHA256 = "6581f61102d9409a4aff9c1b60077872019623630111b7a51f5f7415c3705fe0"
SMALL = {
    (12, 20, 7): "35ab14f606333ded152fe831d38c30a99785192a440f067a9c5ca8d8c5ace96b",
    (5, 16, 11): "4133cab48d0559c8a0c6fea0b7829580cc02b12147d917f40237157f691e027f",
    (6, 48, 3): "0900a2dc7d4fbbaf6719cdfa6ff28801bb3a14bd43f2c38ec9be9baedff39b33",
}


@pytest.mark.parametrize("args, sha", SMALL.items(), ids=[str(k) for k in SMALL])
def test_small_sets_equal_the_old_generator(args, sha):
    n, sessions, seed = args
    assert instances_sha256(generate_synthetic(n, sessions, seed)) == (n, sha)


def test_s_scale_set_equals_the_old_generator():
    assert instances_sha256(generate_synthetic(500, 48, 20241014)) == (500, S_SCALE_SHA256)


def test_synthetic_is_lazy_cycles_the_types_and_is_valid():
    stream = generate_synthetic(12, 20, seed=7)
    assert inspect.isgenerator(stream)
    first = [inst.to_record() for inst in stream]
    assert [i["question_type"] for i in first] == list(QUESTION_TYPES) * 2
    for index, record in enumerate(first):
        assert check_instance(record, "<synthetic>", index) == []
        assert len(record["haystack_sessions"]) == 20
    qids = [i["question_id"] for i in first]
    assert len(set(qids)) == len(qids)


def test_synthetic_sessions_are_long():
    instances = list(generate_synthetic(6, 48, seed=3))
    turns = [len(s.turns) for inst in instances for s in inst.sessions]
    assert all(len(inst.sessions) == 48 for inst in instances)
    assert 9 <= sum(turns) / len(turns) <= 11


def test_out_of_range_counts_are_config_errors_before_anything_is_built():
    with pytest.raises(ConfigError) as info:
        generate_synthetic(1, 3, seed=1)
    assert info.value.key == "--sessions" and "got 3" in info.value.problem
    with pytest.raises(ConfigError) as info:
        generate_synthetic(-1, 48, seed=1)
    assert info.value.key == "--synthetic"
    assert list(generate_synthetic(0, 48, seed=1)) == []
