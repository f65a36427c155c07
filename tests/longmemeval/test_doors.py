"""LongMemEval's doors (card rows and custody, the `mnemetric runs` row, the comparability keys) read every
file through its typed display record: the text and numbers pinned on hand-written files, full and partial
(what a file lacks shows as before), and a field of the wrong type is an InputError naming file and field."""

from __future__ import annotations

import copy

import pytest

from mnemetric.custody.card import render_card
from mnemetric.errors import InputError
from mnemetric.longmemeval.compare import keys_from
from mnemetric.longmemeval.family import FAMILY
from mnemetric.official import OfficialEquivalence

from tests.custody.test_card import DETAIL, HEADLINE, OUTPUTS, RETRIEVAL, RUN
from tests.support.edits import set_at

JUDGED = "data/runs/h.jsonl.eval-results-gpt-4o"
FULL_CARD = "".join([
    '#### LongMemEval result: memory `bm25` on `s` (suite `full`)\n'
    '\n'
    '| metric | value | 95% interval | n |\n'
    '|---|---|---|---|\n'
    '| overall accuracy | 0.5000 | [0.1250, 0.8750] | 8 |\n'
    '| task-averaged accuracy | 0.2500 | [0.0000, 0.5000] | 8 |\n'
    '| abstention accuracy | 0.7500 | — | 4 |\n'
    '| multi-session | 0.5000 | [0.1000, 0.9000] | 2 |\n'
    '| session recall_all@5 | 0.5000 | — | 6 |\n'
    '| session ndcg_any@5 | 0.2500 | — | 6 |\n'
    '\n'
    '- dataset: `s` (huggingface, xiaowu0162/longmemeval-cleaned @ 98d7416c, file `longmemeval_s_cleaned.json`), sha256 `dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd` (verified)\n'
    '- suite: `full`, 500 questions, id-list sha256 `iiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiii`\n'
    '- memory system: `bm25`, code fingerprint `ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff`, config sha256 `cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc`\n'
    '- reader: `openai`, model `gpt-4o-2024-08-06`, returned `gpt-4o-2024-08-06`\n'
    '- judge: `upstream-gpt-4o`, snapshot(s) `gpt-4o-2024-08-06`, prompt-set sha256 `pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp`, endpoint(s) `http://127.0.0.1:8000/v1`\n'
    '- judged file: `data/runs/h.jsonl.eval-results-gpt-4o`, sha256 `eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee`\n'
    '- scoring profile `longmemeval-session-upstream-v1`; Mnemetric 0.1.0; 500 of 500 judged, 0 failed\n'
    '- official_equivalence: **false**\n'
    "  - judge endpoint(s) ['http://127.0.0.1:8000/v1'] are not the official API https://api.openai.com/v1\n"
])
PARTIAL_CARD = "".join([
    '#### LongMemEval result: memory — on `s` (suite —)\n'
    '\n'
    '| metric | value | 95% interval | n |\n'
    '|---|---|---|---|\n'
    '| overall accuracy | 0.5000 | — | 8 |\n'
    '| task-averaged accuracy | 0.2500 | — | 8 |\n'
    '| abstention accuracy | 0.7500 | — | — |\n'
    '| multi-session | 0.5000 | — | — |\n'
    '\n'
    '- dataset: `s` (None, file —), sha256 — (NOT verified)\n'
    '- suite: —, None questions, id-list sha256 —\n'
    '- memory system: —, code fingerprint —, config sha256 —\n'
    '- reader: —, model —, returned —\n'
    '- judge: —, snapshot(s) —, prompt-set sha256 —, endpoint(s) —\n'
    '- judged file: `<judged file>`, sha256 not in the custody manifest\n'
    '- scoring profile —; Mnemetric None; None of None judged, None failed\n'
    '- official_equivalence: — (the run manifest does not say)\n'
])
PARAMS = {"benchmark": {"name": "longmemeval"}, "variant": {"name": "s", "sha256": "a" * 64},
          "suite": {"name": "full"}, "adapter": {"schema": "v3"}, "scoring": {"name": "prof"},
          "judge": {"name": "gpt", "model": "gpt-4o"}, "memory": {"name": "bm25"},
          "reader": {"_target_": "x.Y", "name": "openai", "model": "m", "temperature": 0},
          "retrieval": {"context_k": 10, "context_tokens": 6000}, "paths": {"metrics_qa": "m/qa.json"}}
DOCS = {"m/qa.json": {**HEADLINE, "judge": "gpt"},
        "metrics/detail/qa.json": {**DETAIL, "judge": {"name": "gpt", "models": ["gpt-4o-2024-08-06"],
                                                       "prompt_set_sha256": "p" * 64}},
        "metrics/data.json": {"variant": {"sha256": "d" * 64}, "suite": {"name": "full", "ids_sha256": "i" * 64}},
        "metrics/retrieval.json": {"exclude_abs": {"n": 6, "session": {"recall_all@10": 0.75, "ndcg_any@10": 0.5}}},
        "metrics/run.json": RUN}


def test_the_card_text_is_pinned():
    assert render_card(FAMILY, RUN, {"qa": DETAIL, "retrieval": RETRIEVAL}, OUTPUTS,
                       {"paths": {"judged": JUDGED}}) == FULL_CARD


def test_a_partial_run_manifest_and_the_headline_layout_show_what_they_have():
    # an older or partial file: what it lacks prints as before ("—", or None where the card words it so)
    assert render_card(FAMILY, {"variant": {"name": "s"}}, {"qa": HEADLINE, "retrieval": {}}, {}, {}) == PARTIAL_CARD


def test_the_runs_row_is_pinned():
    row = FAMILY.summary(PARAMS, DOCS.get)
    assert row.headline == {"overall": 0.5, "task_avg": 0.25, "R_all@10": 0.75, "nDCG@10": 0.5}
    assert row.keys == {
        "benchmark": "longmemeval", "variant": "s", "sha256": "d" * 12, "suite": "full", "suite_sha256": "i" * 12,
        "adapter": "v3", "profile": "prof", "judge": "gpt-4o-2024-08-06", "judge_name": "gpt", "prompt_set": "p" * 12,
        "reader": '{"model": "m", "name": "openai", "temperature": 0}', "budget": "k=10,tokens=6000"}
    assert row.official == OfficialEquivalence.from_record(RUN["official_equivalence"], file="x")
    assert row.memory == "bm25"


def test_a_revision_without_files_shows_nothing_known():
    row = FAMILY.summary({}, lambda path: None)
    assert set(row.headline.values()) == {None} and row.official is None and row.memory is None
    assert row.keys["reader"] == "null" and row.keys["budget"] == "k=None,tokens=None"
    assert {k: v for k, v in row.keys.items() if k not in ("reader", "budget")} == dict.fromkeys(
        ("benchmark", "variant", "sha256", "suite", "suite_sha256", "adapter", "profile", "judge", "judge_name",
         "prompt_set"))


def _set(doc: dict, dotted: str, value) -> dict:
    return set_at(copy.deepcopy(doc), dotted, value)


@pytest.mark.parametrize("file, dotted, value", [
    ("metrics/detail/qa.json", "per_type.multi-session.n", "2"),
    ("metrics/detail/qa.json", "ci95.overall.low", "0.1"),
    ("metrics/detail/qa.json", "judge.models", "gpt-4o"),
    ("m/qa.json", "overall", True),
    ("m/qa.json", "per_type", [0.5]),
    ("metrics/data.json", "variant.sha256", 5),
    ("metrics/retrieval.json", "exclude_abs.session.recall_all@10", "0.75"),
    ("metrics/retrieval.json", "exclude_abs.n", 6.0),
])
def test_a_wrong_type_in_a_metrics_file_is_an_error_naming_file_and_field(file, dotted, value):
    docs = {**DOCS, file: _set(DOCS[file], dotted, value)}
    with pytest.raises(InputError) as err:
        FAMILY.summary(PARAMS, docs.get)
    assert (err.value.problem.file, err.value.problem.field) == (file, dotted)


@pytest.mark.parametrize("dotted, value", [("retrieval.context_k", "10"), ("judge.model", 4), ("reader", "openai"),
                                           ("paths.metrics_qa", 1)])
def test_a_wrong_type_in_params_is_an_error_naming_params_yaml(dotted, value):
    with pytest.raises(InputError) as err:
        FAMILY.summary(_set(PARAMS, dotted, value), DOCS.get)
    assert (err.value.problem.file, err.value.problem.field) == ("params.yaml", dotted)


@pytest.mark.parametrize("doc, dotted, value, file", [
    ("run", "counts.judged", "500", "metrics/run.json"),
    ("run", "variant.sha256_verified", "yes", "metrics/run.json"),
    ("run", "judge.endpoints", "http://x", "metrics/run.json"),
    ("outputs", f"files.{JUDGED}", "e" * 64, "data/custody/outputs.sha256.json"),
])
def test_a_wrong_type_in_the_card_s_custody_files_is_an_error(doc, dotted, value, file):
    run, outputs = RUN, OUTPUTS
    if doc == "run":
        run = _set(RUN, dotted, value)
    else:
        outputs = {"files": {JUDGED: value}}
    with pytest.raises(InputError) as err:
        render_card(FAMILY, run, {"qa": DETAIL, "retrieval": RETRIEVAL}, outputs, {"paths": {"judged": JUDGED}},
                    file="metrics/run.json")
    assert err.value.problem.file == file
    assert err.value.problem.field in (dotted, "<record>")


def test_a_card_input_of_the_wrong_type_names_the_role_s_files():
    with pytest.raises(InputError) as err:
        render_card(FAMILY, RUN, {"qa": _set(DETAIL, "abstention.n", "4"), "retrieval": None}, None, None)
    assert (err.value.problem.file, err.value.problem.field) == (
        "metrics/detail/qa.json or metrics/qa.json", "abstention.n")


def test_the_comparability_keys_read_the_typed_records():
    keys = keys_from(PARAMS, DOCS["metrics/data.json"], [])
    assert (keys.variant_sha256, keys.suite_ids_sha256, keys.adapter_schema, keys.reader, keys.context_k) == (
        "d" * 64, "i" * 64, "v3", '{"model": "m", "name": "openai", "temperature": 0}', 10)
    with pytest.raises(InputError) as err:
        keys_from(PARAMS, {"suite": {"ids_sha256": ["i"]}}, [])
    assert (err.value.problem.file, err.value.problem.field) == ("metrics/data.json", "suite.ids_sha256")
