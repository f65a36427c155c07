"""The phrase banks: package data that loads, is well-formed, and is refused (file, entry, field) when not."""

from __future__ import annotations

import copy
import fnmatch
import json
import random
import re
import string
import tomllib
from importlib import resources

import pytest

from mnemetric.errors import InputError
from mnemetric.longmemeval.sample.banks import BANK_FILES, Pick, SampleOf, decode, draw_slots, load_banks, parse_banks

from tests.conftest import ROOT

FOLDER = resources.files("mnemetric.longmemeval.sample").joinpath("banks")


def raw_banks() -> dict:
    return {name: json.loads(FOLDER.joinpath(name).read_text(encoding="utf-8")) for name in BANK_FILES}


def refused(raw: dict) -> InputError:
    with pytest.raises(InputError) as info:
        parse_banks(raw)
    return info.value


# ---------------------------------------------------------------------------------- the shipped files


def test_the_package_ships_exactly_the_bank_files():
    shipped = sorted(p.name for p in FOLDER.iterdir() if p.name.endswith(".json"))
    assert shipped == sorted(BANK_FILES)


def test_pyproject_declares_them_as_package_data():
    """Without [tool.setuptools.package-data] a wheel has no banks/*.json (checked by hand: 0 files)."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    globs = data["tool"]["setuptools"]["package-data"]["mnemetric.longmemeval.sample"]
    assert all(any(fnmatch.fnmatch(f"banks/{name}", g) for g in globs) for name in BANK_FILES)


def test_the_banks_load_with_the_counts_of_the_files():
    banks = load_banks()
    assert len(banks.topics) == 15 and len(banks.greetings) == 4
    assert [len(banks.facts[t]) for t in ("single-session-user", "single-session-assistant",
                                         "single-session-preference")] == [7, 6, 7]
    assert len(banks.updates) == 6 and len(banks.events) == 10 and len(banks.purchases) == 6
    assert [e.abstains for e in banks.facts["single-session-user"]] == [True, True, True, False, True, True, True]
    assert [e.abstains for e in banks.updates] == [True, False, True, True, False, False]
    assert dict(banks.time_ago) == {7: "a week ago", 10: "ten days ago", 14: "two weeks ago", 21: "three weeks ago"}
    assert banks.abstention_prefix == "The information provided is not enough. "
    assert banks.tallies["concerts"].templates["answer"].format(total=1234) == "$1,234"


def _strings(value, path=""):
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, f"{path}[{i}]")


PLACEHOLDER = re.compile(r"\{[a-z_]+(?:\[\d\])*(?::,)?\}")


def test_every_text_is_clean_and_every_brace_is_a_simple_placeholder():
    """A second, naive reading of the files: no stray blanks, no double spaces, braces only in {name},
    {name[0]}, {name[0][1]} or {total:,} form."""
    for name, raw in raw_banks().items():
        for path, text in _strings(raw):
            where = f"{name}{path}"
            if path == ".about":  # each file's description, not a template
                continue
            assert text.strip(), where
            if path != ".abstention_prefix":
                assert text == text.strip(), where
            assert "  " not in text and "\n" not in text, where
            assert "{" not in PLACEHOLDER.sub("", text) and "}" not in PLACEHOLDER.sub("", text), where


def test_every_topic_has_enough_distinct_exchanges_and_slots_it_uses():
    for topic in load_banks().topics.values():
        assert len(topic.exchanges) >= 6, topic.name
        assert len({e.user for e in topic.exchanges}) == len(topic.exchanges), topic.name
        used = {f.split("[")[0] for e in topic.exchanges for text in (e.user, e.assistant)
                for _, f, _, _ in string.Formatter().parse(text) if f}
        assert used <= set(topic.slots), topic.name


# ---------------------------------------------------------------------------------- slot draws


def test_pick_and_sample_of_draw_like_random():
    assert Pick(("a", "b", "c")).draw(random.Random(5)) == random.Random(5).choice(["a", "b", "c"])
    pool = tuple(range(10))
    assert SampleOf(pool, 3).draw(random.Random(9)) == random.Random(9).sample(list(pool), 3)


def test_slots_are_drawn_in_file_order():
    slots = {"b": Pick((1, 2, 3)), "a": Pick((4, 5, 6))}
    rng = random.Random(0)
    expected = {"b": rng.choice([1, 2, 3]), "a": rng.choice([4, 5, 6])}
    assert draw_slots(random.Random(0), slots) == expected
    assert list(draw_slots(random.Random(0), slots)) == ["b", "a"]


# ---------------------------------------------------------------------------------- refused files


def test_unknown_placeholder_names_file_entry_and_field():
    raw = raw_banks()
    raw["single_session.json"]["single-session-user"][1]["question"] = "How long is my {commute}?"
    err = refused(raw)
    assert (err.problem.file, err.problem.record, err.problem.field) == (
        "mnemetric/sample/banks/single_session.json", "single-session-user[1]", "question")
    assert "['commute']" in err.problem.message


def test_unknown_topic_is_refused():
    raw = raw_banks()
    raw["temporal.json"]["events"][3]["topic"] = "astronomy"
    err = refused(raw)
    assert (err.problem.record, err.problem.field) == ("events[3]", "topic")
    assert "astronomy" in err.problem.message


def test_missing_field_is_refused():
    raw = raw_banks()
    del raw["knowledge_update.json"]["knowledge-update"][0]["new_user"]
    err = refused(raw)
    assert (err.problem.file, err.problem.record, err.problem.field, err.problem.message) == (
        "mnemetric/sample/banks/knowledge_update.json", "knowledge-update[0]", "new_user", "missing")


def test_abstention_question_without_answer_is_refused():
    raw = raw_banks()
    del raw["single_session.json"]["single-session-user"][0]["abs_answer"]
    err = refused(raw)
    assert (err.problem.record, err.problem.field) == ("single-session-user[0]", "abs_answer")


def test_sample_larger_than_its_pool_is_refused():
    raw = raw_banks()
    raw["single_session.json"]["single-session-assistant"][0]["slots"]["b"] = {"sample": 9, "from": "invented_books"}
    err = refused(raw)
    assert (err.problem.record, err.problem.field) == ("single-session-assistant[0]", "slots.b")


def test_fixed_slot_must_belong_to_the_topic():
    raw = raw_banks()
    raw["single_session.json"]["single-session-user"][0]["fixed"] = {"colour": "{name}"}
    err = refused(raw)
    assert (err.problem.record, err.problem.field) == ("single-session-user[0]", "fixed")


def test_scenario_template_with_a_field_its_builder_does_not_supply_is_refused():
    raw = raw_banks()
    raw["temporal.json"]["scenarios"]["days_ago"]["answer"] = "{days} days"
    err = refused(raw)
    assert (err.problem.file, err.problem.record, err.problem.field) == (
        "mnemetric/sample/banks/temporal.json", "scenarios.days_ago", "answer")


def test_wrong_type_and_missing_file_are_refused():
    raw = raw_banks()
    raw["topics.json"]["greetings"] = "Hello!"
    assert refused(raw).problem.field == "greetings"
    raw = copy.deepcopy(raw_banks())
    del raw["multi_session.json"]
    assert refused(raw).problem.file == "mnemetric/sample/banks/multi_session.json"


@pytest.mark.parametrize("file, path, record, field", [
    ("single_session.json", ("single-session-user", 2), "single-session-user[2]", "abs_questoin"),
    ("temporal.json", ("scenarios",), "<file>", "scenarios"),
    ("topics.json", ("topics", "pets", "exchanges", 0), "topics.pets.exchanges[0]", "abs_questoin"),
])
def test_unknown_keys_are_refused_not_skipped(file, path, record, field):
    raw = raw_banks()
    target = raw[file]
    for step in path:
        target = target[step]
    target["abs_questoin"] = "What?"
    err = refused(raw)
    assert (err.problem.file, err.problem.record, err.problem.field) == (f"mnemetric/sample/banks/{file}", record, field)
    assert "abs_questoin" in err.problem.message


def test_invalid_json_names_the_line():
    with pytest.raises(InputError) as info:
        decode("topics.json", '{\n  "about": "x",\n  "greetings": [\n}\n')
    assert info.value.problem.record == "line 4"
