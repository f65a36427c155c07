"""LongMemEval-V2's doors (report rows, the `mnemetric runs` row) read metrics/v2.json and params.yaml through
their typed display records: rows pinned on a hand-written file, full and partial; a field of the wrong type is
an InputError naming file and field. The card's custody bullets read metrics/run-v2.json likewise."""

from __future__ import annotations

import copy

import pytest

from mnemetric.custody.card import render_card
from mnemetric.errors import InputError
from mnemetric.longmemeval_v2.doors import category_rows, custody_facts, headline_rows
from mnemetric.longmemeval_v2.family import FAMILY
from mnemetric.longmemeval_v2.metrics_file import V2Shown
from mnemetric.report.model import Headline, Interval, TypeResult
from tests.support.edits import set_at

V2DOC = {"v2": "sample", "settings": {"memory": "bm25", "tier": "small"},
         "combined": {"accuracy": {"overall_full_set": {"value": 0.25, "n": 8, "ci95_low": 0.1, "ci95_high": 0.6,
                                                        "method": "clopper-pearson"},
                                   "abstention_only": {"value": 0.5, "n": 2}}},
         "domains": {"web": {"accuracy": {"non_abstention_only": {"value": 1, "n": 1, "method": "other"}}},
                     "enterprise": {}},
         "by_category": {"non_abstention_by_category": {"static": {"count": 3, "pct_correct": 0.5}, "dynamic": None},
                         "abstention_overall": {"pct_correct": 1.0}}}
PARAMS = {"benchmark": {"name": "longmemeval-v2"},
          "v2": {"name": "sample", "data_root": "data/s", "haystack": "h.json", "domains": ["web", "enterprise"],
                 "memory": {"name": "bm25"}, "reader": {"name": "offline"}, "checker": {"name": "offline"},
                 "token_counter": {"name": "o200k"}},
          "paths": {"metrics_v2": "m/v2.json"}}


def shown(doc=V2DOC) -> V2Shown:
    return V2Shown.from_record(doc, file="m/v2.json")


def test_the_report_rows_are_pinned():
    assert headline_rows(shown()) == [
        Headline("accuracy (full set) (combined)", 0.25, Interval(0.1, 0.6), 8, "exact Clopper-Pearson (95%)"),
        Headline("abstention accuracy (combined)", 0.5, None, 2, "no interval"),
        Headline("non-abstention accuracy (web)", 1, None, 1, "other")]
    assert category_rows(shown()) == (TypeResult("static", 0.5, None, 3), TypeResult("abstention (all)", 1.0, None, 0))
    assert (shown().memory, shown().tier, shown().haystack, shown().option) == ("bm25", "small", None, "sample")


def test_the_runs_row_is_pinned_and_an_empty_revision_shows_nothing():
    row = FAMILY.summary(PARAMS, {"m/v2.json": V2DOC}.get)
    assert row.headline == {"overall": 0.25, "non_abs": None, "abs": 0.5} and row.memory == "bm25"
    assert row.keys == {"benchmark": "longmemeval-v2", "v2": "sample", "data_root": "data/s", "haystack": "h.json",
                        "domains": "web,enterprise", "reader": "offline", "checker": "offline",
                        "token_counter": "o200k"}
    empty = FAMILY.summary({}, lambda path: None)
    assert set(empty.headline.values()) == {None} and set(empty.keys.values()) == {None} and empty.memory is None


def _set(doc: dict, dotted: str, value) -> dict:
    return set_at(copy.deepcopy(doc), dotted, value)


@pytest.mark.parametrize("dotted, value", [
    ("combined.accuracy.overall_full_set.value", "0.25"), ("combined.accuracy.abstention_only.n", 2.0),
    ("domains.web.accuracy", [1]), ("by_category.non_abstention_by_category.static.count", "3"),
    ("settings.memory", 5)])
def test_a_wrong_type_in_v2_json_is_an_error_naming_file_and_field(dotted, value):
    with pytest.raises(InputError) as err:
        shown(_set(V2DOC, dotted, value))
    assert (err.value.problem.file, err.value.problem.field) == ("m/v2.json", dotted)


@pytest.mark.parametrize("dotted, value", [("v2.domains", "web"), ("v2.reader.name", 1), ("benchmark", "v2")])
def test_a_wrong_type_in_params_is_an_error_naming_params_yaml(dotted, value):
    with pytest.raises(InputError) as err:
        FAMILY.summary(_set(PARAMS, dotted, value), {"m/v2.json": V2DOC}.get)
    assert (err.value.problem.file, err.value.problem.field) == ("params.yaml", dotted)


def test_an_older_params_layout_with_plain_string_components_shows_them_as_not_recorded():
    # params.yaml before the V2 components were conf groups (e.g. `v2.memory: bm25`)
    older = {**PARAMS, "v2": {**PARAMS["v2"], "memory": "bm25", "reader": "offline"}}
    row = FAMILY.summary(older, {"m/v2.json": V2DOC}.get)
    assert row.memory is None and row.keys["reader"] is None and row.keys["checker"] == "offline"


PARTIAL_RUN = {"variant": {"name": "x", "repo": "r"}, "reader": {"official": True}}
PARTIAL_CARD = "".join([
    '#### LongMemEval-V2 result: memory — on `x` (suite —)\n'
    '\n'
    '(no LongMemEval-V2 metrics)\n'
    '\n'
    '- data: `x` (None, r), root —, haystack —; custody record — sha256 — (NOT verified against the dataset pins)\n'
    '- memory system: —, code fingerprint —, config sha256 —\n'
    '- reader: —, model — (official)\n'
    '- checker: —, model —, prompt-set sha256 — (not recorded)\n'
    '- token counter: — (not recorded)\n'
    '- — of — questions checked, — failed\n'
    '- official_equivalence: — (the run manifest does not say)\n'
])


def test_a_partial_run_manifest_s_card_shows_what_it_has():
    assert render_card(FAMILY, PARTIAL_RUN, {}, None, None) == PARTIAL_CARD
    facts = {f.item: f.value for f in custody_facts(PARTIAL_RUN)}
    assert facts["dataset"] == "x" and facts["reader status"] == "official" and facts["checker status"] == "not recorded"
    assert facts["data root"] is None and facts["reader"] is None


@pytest.mark.parametrize("dotted, value", [("variant.sha256_verified", "yes"), ("counts.judged", "14"),
                                           ("variant.custody", "data/custody/v2-sample.json"), ("reader.official", 1),
                                           ("judge.prompt_set_sha256", 7)])
def test_a_wrong_type_in_the_run_manifest_is_an_error_naming_file_and_field(dotted, value):
    with pytest.raises(InputError) as err:
        render_card(FAMILY, _set({**PARTIAL_RUN, "counts": {}, "judge": {}}, dotted, value), {}, None, None,
                    file="metrics/run-v2.json")
    assert (err.value.problem.file, err.value.problem.field) == ("metrics/run-v2.json", dotted)
