"""mnemetric.schema, the v2 part: the ``v2`` option is typed (its four components open), checked at composition
and when a stage reads it, with the key named."""

from __future__ import annotations

import pytest

from mnemetric.config import compose
from mnemetric.errors import ConfigError
from mnemetric.schema import check_section


def v2(**kw):
    return compose()["v2"] | kw


@pytest.mark.parametrize(("change", "key", "needle"), [
    ({"max_tokens": 0}, "v2.max_tokens", "must be >= 1, got 0"),
    ({"max_tokens": "10"}, "v2.max_tokens", "expected an integer"),
    ({"source": "ftp"}, "v2.source", "'ftp' is not one of bundled, huggingface"),
    ({"domains": ["web", "mars"]}, "v2.domains[1]", "'mars' is not one of web, enterprise"),
    ({"images": "yes"}, "v2.images", "expected true or false"),
    ({"revision": "f152293e"}, "v2.revision", "is not valid"),
    ({"checksums_sha256": "ABC"}, "v2.checksums_sha256", "is not valid"),
    ({"extra": 1}, "v2.extra", "unknown key"),
    ({"memory": "bm25"}, "v2.memory", "expected a mapping, got str 'bm25'"),
    ({"reader": {"_target_": "x.Y"}}, "v2.reader.name", "missing or not a string"),
    ({"checker": {"name": "c", "_target_": 3}}, "v2.checker._target_", "expected a dotted path"),
])
def test_a_bad_v2_value_is_named(change, key, needle):
    with pytest.raises(ConfigError) as err:
        check_section("v2", v2(**change))
    assert err.value.key == key and needle in str(err.value)


def test_a_component_given_as_a_name_says_which_sub_group_chooses_it():
    with pytest.raises(ConfigError) as err:
        check_section("v2", v2(token_counter="o200k"))
    assert "-S v2/token_counter=<option>" in str(err.value)


@pytest.mark.parametrize("option", ["sample", "small", "medium"])
def test_every_v2_option_passes(option):
    check_section("v2", compose([f"v2={option}"])["v2"])  # no error


def test_composition_refuses_a_mistyped_v2_value_naming_the_key():
    with pytest.raises(ConfigError, match="v2.max_tokens"):
        compose(["v2.max_tokens=abc"])
    with pytest.raises(ConfigError, match="v2.memory: expected a mapping"):
        compose(["v2.memory=bm25"])
