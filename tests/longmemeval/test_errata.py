"""The errata overlay: the data file as the upstream tracker reports it, its reader, sensitivity()."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemetric.errors import InputError
from mnemetric.longmemeval.errata import DEFAULT_PATH, read_errata, sensitivity

from tests.conftest import ROOT

SSU, SSP, SSA = "single-session-user", "single-session-preference", "single-session-assistant"
MS, TR, KU = "multi-session", "temporal-reasoning", "knowledge-update"
TYPES = (SSU, SSP, SSA, MS, TR, KU)

# upstream-protocol.md section 6, hand-typed: question id -> (variants, issue numbers)
TRACKER = {
    "370a8ff4": ({"s", "m", "oracle"}, (19, 26, 40)),
    "gpt4_88806d6e": ({"s", "m", "oracle"}, (40,)),
    "dd2973ad": ({"s", "m", "oracle"}, (21,)),
    "eac54add": ({"s", "m", "oracle"}, (37,)),
    "9aaed6a3": ({"s", "m", "oracle"}, (50,)),
    "gpt4_f420262d": ({"s", "m", "oracle"}, (50,)),
    "ad7109d1": ({"s"}, (12,)),
    "a3332713": ({"m"}, (11,)),
}


def test_the_data_file_lists_the_tracker_reports():
    assert DEFAULT_PATH == ROOT / "data/errata/longmemeval.yaml"
    errata = read_errata()
    assert {e.question_id: (set(e.variants), e.issues) for e in errata.entries} == TRACKER
    assert all(e.description and "\n" not in e.description for e in errata.entries)
    assert {e.question_id for e in errata.entries if e.variants_basis == "stated"} == {"ad7109d1", "a3332713"}
    assert "a3332713" in errata.ids("m") and "a3332713" not in errata.ids("s")
    assert "ad7109d1" in errata.ids("s") and "ad7109d1" not in errata.ids("oracle")
    assert len(errata.ids()) == 8 and len(errata.ids("oracle")) == 6


def broken(tmp_path: Path, old: str, new: str) -> Path:
    path = tmp_path / "errata.yaml"
    shutil.copy(DEFAULT_PATH, path)
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    return path


@pytest.mark.parametrize(("old", "new", "record", "field"), [
    ("variants: [s, m, oracle]\n    variants_basis: gold-or-evidence\n    issues: [40]",
     "variants: [s, mm, oracle]\n    variants_basis: gold-or-evidence\n    issues: [40]",
     "entries index 1 (gpt4_88806d6e)", "variants"),
    ('question_id: "dd2973ad"', "question_id: 12345678", "entries index 2", "question_id"),
    ('question_id: "eac54add"', 'question_id: "370a8ff4"', "entries index 3 (370a8ff4)", "question_id"),
    ("issues: [12]", "issues: [twelve]", "entries index 6 (ad7109d1)", "issues"),
    ("variants_basis: stated\n    issues: [11]", "variants_basis: guessed\n    issues: [11]",
     "entries index 7 (a3332713)", "variants_basis"),
    ("schema: mnemetric.longmemeval-errata/v1", "schema: other/v9", "<file>", "schema"),
    ('  - question_id: "a3332713"', '  - question_id: "a3332713"\n    gold: 350', "entries index 7 (a3332713)", "gold"),
])
def test_a_broken_errata_file_names_file_entry_and_field(tmp_path, old, new, record, field):
    path = broken(tmp_path, old, new)
    with pytest.raises(InputError) as info:
        read_errata(path)
    assert (info.value.problem.file, info.value.problem.record, info.value.problem.field) == (str(path), record, field)


def test_missing_description_and_bad_yaml(tmp_path):
    path = broken(tmp_path, 'description: "Gold says $200', 'note: "Gold says $200')
    with pytest.raises(InputError, match="note"):
        read_errata(path)
    path.write_text("entries: [unclosed\n")
    with pytest.raises(InputError, match="not valid YAML"):
        read_errata(path)


ITEMS = [("370a8ff4", TR, False), ("t2", TR, True), ("t3", TR, True),
         ("ad7109d1", KU, True), ("k2", KU, False),
         ("u1", SSU, True), ("u2_abs", SSU, False),
         ("a1", SSA, True), ("p1", SSP, False), ("m1", MS, True)]


def test_sensitivity_worked_example():
    out = sensitivity(ITEMS, ["370a8ff4", "ad7109d1", "a3332713"])
    official, without = out["official"], out["excluding_errata"]
    # official: TR 2/3, KU 1/2, SSU 1/2, SSA 1, SSP 0, MS 1 -> task (2/3 + 1/2 + 1/2 + 1 + 0 + 1)/6 = 11/18
    assert official["per_type"][TR] == {"accuracy": pytest.approx(2 / 3), "n": 3}
    assert official["task_averaged"] == pytest.approx(11 / 18) and official["overall"] == pytest.approx(0.6)
    # without the two present errata: TR 2/2, KU 0/1 -> task (1 + 0 + 1/2 + 1 + 0 + 1)/6 = 7/12; overall 5/8
    assert without["per_type"][TR] == {"accuracy": 1.0, "n": 2}
    assert without["per_type"][KU] == {"accuracy": 0.0, "n": 1}
    assert without["task_averaged"] == pytest.approx(7 / 12) and without["overall"] == pytest.approx(5 / 8)
    assert without["n"] == 8 and official["n"] == 10
    assert without["abstention"] == official["abstention"] == {"accuracy": 0.0, "n": 1}
    assert out["excluded"] == ["370a8ff4", "ad7109d1"] and out["absent"] == ["a3332713"]


def test_excluding_a_whole_type_or_the_abstention_questions_leaves_them_undefined():
    out = sensitivity(ITEMS, ["p1", "u2_abs"])["excluding_errata"]
    assert out["per_type"][SSP] == {"accuracy": None, "n": 0} and out["task_averaged"] is None
    assert out["abstention"] == {"accuracy": None, "n": 0}
    assert out["per_type"][SSU] == {"accuracy": 1.0, "n": 1} and out["overall"] == pytest.approx(6 / 8)


def test_no_errata_among_the_items_changes_nothing():
    out = sensitivity(ITEMS, ["a3332713"])
    assert out["excluding_errata"] == out["official"] and out["excluded"] == [] and out["absent"] == ["a3332713"]


def test_bad_items_are_input_errors():
    with pytest.raises(InputError, match="unknown type"):
        sensitivity([("q1", "open-domain", True)], [])


@given(st.lists(st.tuples(st.sampled_from(TYPES), st.booleans(), st.booleans(), st.booleans()), max_size=40))
def test_excluded_numbers_equal_a_naive_recount(rows):
    items = [(f"q{i}" + ("_abs" if is_abs else ""), t, label) for i, (t, label, is_abs, _) in enumerate(rows)]
    errata = [q for (q, _, _), row in zip(items, rows, strict=True) if row[3]]
    out = sensitivity(items, errata + ["never_judged"])
    kept = [(q, t, lab) for q, t, lab in items if q not in set(errata)]
    naive_overall = sum(lab for _, _, lab in kept) / len(kept) if kept else None
    assert out["excluding_errata"]["overall"] == pytest.approx(naive_overall) if kept else \
        out["excluding_errata"]["overall"] is None
    for t in TYPES:
        labels = [lab for _, tt, lab in kept if tt == t]
        assert out["excluding_errata"]["per_type"][t]["n"] == len(labels)
    assert out["excluded"] == sorted(errata) and out["absent"] == ["never_judged"]
    assert out["official"]["n"] == len(items)
