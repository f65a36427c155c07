"""Adapters: what a memory system sees carries no label; both schemas, on the bundled sample we author in
the exact upstream schema (always) and on real upstream bytes (when ../shared has them)."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from mnemetric.longmemeval.adapted import AdaptedRecord, AdaptedRecords, SessionAdapter, read_adapted
from mnemetric.longmemeval.instance import load_instances
from mnemetric.errors import ConfigError, InputError
from mnemetric.longmemeval.adapt import adapt_file
from mnemetric.longmemeval.suite import QuestionMeta, suite_universe, write_question_index

from tests.conftest import ROOT

V3 = SessionAdapter("session-v3", "mnemetric.longmemeval-session/v3")
V2 = SessionAdapter("legacy-v2", "mnemetric.longmemeval-session/v2")
BUNDLED = ROOT / "data" / "sample" / "longmemeval_sample.json"


@pytest.fixture(params=["bundled", "upstream"])
def dataset(request):
    """The bundled sample (authored by us, upstream schema), and the real upstream sample when present."""
    return BUNDLED if request.param == "bundled" else request.getfixturevalue("upstream_sample")


LABEL_KEYS = {"answer", "question_type", "has_answer", "answer_session_ids", "question_id", "abstention", "upstream_id"}


def all_keys(obj) -> set[str]:
    if isinstance(obj, dict):
        return set(obj) | {k for v in obj.values() for k in all_keys(v)}
    if isinstance(obj, list):
        return {k for v in obj for k in all_keys(v)}
    return set()


def assert_no_label_leak(rec: AdaptedRecord) -> None:
    memory = asdict(rec.memory)
    assert not (all_keys(memory) & LABEL_KEYS)
    text = json.dumps(memory)
    for s in rec.eval.sessions:
        assert s.upstream_id not in text  # real ids contain "answer"
    assert rec.eval.question_id not in text  # real ids end in "_abs"
    assert rec.eval.question_type not in text
    ids = [s.session_id for s in rec.memory.sessions]
    assert all("answer" not in i and "noans" not in i for i in ids)


@pytest.mark.parametrize("adapter", [V3, V2], ids=["v3", "v2"])
def test_no_label_leaks(dataset, adapter):
    for pos, inst in enumerate(load_instances(dataset)):
        assert_no_label_leak(adapter.adapt(inst, pos))


@pytest.mark.task("longmemeval", "temporal-reasoning")
def test_v3_carries_dates_and_prefixes(upstream_sample):
    inst = load_instances(upstream_sample)[1]
    rec = V3.adapt(inst, 1)
    assert rec.memory.schema == "mnemetric.longmemeval-session/v3"
    assert rec.memory.query.date == inst.question_date
    assert rec.memory.query.prefix == f"[Current date: {inst.question_date}]"
    assert [s.date for s in rec.memory.sessions] == sorted(s.date for s in inst.sessions)
    assert all(s.prefix == f"[Session date: {s.date}]" for s in rec.memory.sessions)
    assert rec.eval.abstention and rec.eval.question_id == "gpt4_70e84552_abs"


def test_v2_is_undated(upstream_sample):
    rec = V2.adapt(load_instances(upstream_sample)[0], 0)
    assert rec.memory.query.date is None and rec.memory.query.prefix == ""
    assert all(s.date is None and s.prefix == "" for s in rec.memory.sessions)
    assert "2023/" not in json.dumps(asdict(rec.memory))


def test_eval_view_maps_back_to_upstream(dataset):
    inst = load_instances(dataset)[0]
    rec = V3.adapt(inst, 0)
    by_upstream = {s.session_id: s for s in inst.sessions}
    for mem, ev in zip(rec.memory.sessions, rec.eval.sessions):
        assert mem.session_id == ev.session_id
        up = by_upstream[ev.upstream_id]
        assert [m.content for m in mem.messages] == [t.content for t in up.turns]
        assert list(ev.has_answer) == [t.has_answer for t in up.turns]
    assert rec.eval.answer_session_ids == inst.answer_session_ids


def test_sessions_are_replayed_chronologically(dataset, tmp_path):
    inst = load_instances(dataset)[0]
    shuffled = inst.to_record()
    for key in ("haystack_session_ids", "haystack_dates", "haystack_sessions"):
        shuffled[key] = shuffled[key][::-1]  # oracle files are not sorted by time
    path = tmp_path / "rev.json"
    path.write_text(json.dumps([shuffled]))
    rec = V3.adapt(load_instances(path)[0], 0)
    assert [s.date for s in rec.memory.sessions] == sorted(s.date for s in inst.sessions)
    assert [s.position for s in rec.memory.sessions] == sorted(
        range(len(inst.sessions)), key=lambda i: (shuffled["haystack_dates"][i], i))


def test_adapt_file_roundtrip(dataset, tmp_path):
    out = tmp_path / "adapted.jsonl"
    expected = [V3.adapt(i, n) for n, i in enumerate(load_instances(dataset))]
    assert adapt_file(V3, dataset, out) == len(expected) > 0
    assert list(read_adapted(out)) == expected


def test_unknown_schema_is_a_config_error():
    with pytest.raises(ConfigError, match="unknown schema"):
        SessionAdapter("x", "mnemetric.longmemeval-session/v9")


def test_bad_adapted_line_names_line(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"memory": {}}\n')
    with pytest.raises(InputError, match="line 1"):
        list(read_adapted(path))


SAMPLE = ROOT / "data" / "sample" / "longmemeval_sample.json"


@pytest.mark.parametrize("adapter", [V3, V2], ids=["v3", "v2"])
def test_no_label_leaks_on_the_bundled_sample(adapter):
    records = [adapter.adapt(inst, pos) for pos, inst in enumerate(load_instances(SAMPLE))]
    for rec in records:
        assert_no_label_leak(rec)
    ids = [r.memory.query.query_id for r in records]
    assert len(set(ids)) == len(ids) and all(i.startswith("q-") for i in ids)  # opaque, not file positions


# A hand-written adapted line (the layout AdaptedRecord.to_record writes), then one fault at a time.
GOOD_LINE = {
    "memory": {"schema": "mnemetric.longmemeval-session/v3",
               "query": {"query_id": "q-1", "text": "Where?", "date": "2023/05/30 (Tue) 10:00",
                         "prefix": "[Current date: 2023/05/30 (Tue) 10:00]"},
               "sessions": [{"session_id": "s001", "date": "2023/05/01 (Mon) 09:00",
                             "prefix": "[Session date: 2023/05/01 (Mon) 09:00]",
                             "messages": [{"role": "user", "content": "I parked on level 3"},
                                          {"role": "assistant", "content": "noted"}], "position": 1}]},
    "eval": {"question_id": "q1", "question_type": "single-session-user", "question": "Where?", "answer": 3,
             "question_date": "2023/05/30 (Tue) 10:00", "abstention": False, "answer_session_ids": ["answer_x"],
             "sessions": [{"session_id": "s001", "upstream_id": "answer_x", "date": "2023/05/01 (Mon) 09:00",
                           "has_answer": [True, None]}]},
}


def _line(change) -> dict:
    raw = json.loads(json.dumps(GOOD_LINE))
    change(raw)
    return raw


def test_a_hand_written_line_reads_back_to_its_bytes():
    rec = AdaptedRecord.from_record(_line(lambda r: None), file="a.jsonl", line=1)
    assert rec.memory.sessions[0].messages[1].content == "noted" and rec.eval.answer == 3
    assert rec.eval.sessions[0].has_answer == (True, None) and rec.memory.sessions[0].position == 1
    assert json.dumps(rec.to_record()) == json.dumps(GOOD_LINE)


@pytest.mark.parametrize("change, field, message", [
    (lambda r: r.pop("eval"), "eval", "missing"),
    (lambda r: r.update(extra=1), "extra", "unexpected field"),
    (lambda r: r["memory"].update(query=[]), "memory.query", "expected a JSON object"),
    (lambda r: r["memory"]["query"].pop("text"), "memory.query.text", "missing"),
    (lambda r: r["memory"]["sessions"][0]["messages"][1].update(role=None), "memory.sessions[0].messages[1].role",
     "expected a string"),
    (lambda r: r["memory"]["sessions"][0].update(position=True), "memory.sessions[0].position",
     "expected an integer"),
    (lambda r: r["memory"]["sessions"][0]["messages"].append("hi"), "memory.sessions[0].messages[2]",
     "expected a JSON object"),
    (lambda r: r["eval"].update(answer=None), "eval.answer", "expected a string or a number"),
    (lambda r: r["eval"].update(abstention="no"), "eval.abstention", "expected true or false"),
    (lambda r: r["eval"].update(answer_session_ids="answer_x"), "eval.answer_session_ids",
     "expected a list of strings"),
    (lambda r: r["eval"]["sessions"][0]["has_answer"].append(1), "eval.sessions[0].has_answer[2]",
     "expected true, false or null"),
    (lambda r: r["eval"]["sessions"][0].update(label=1), "eval.sessions[0].label", "unexpected field"),
])
def test_a_bad_field_is_named(tmp_path, change, field, message):
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps(GOOD_LINE) + "\n" + json.dumps(_line(change)) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        list(read_adapted(path))
    assert (err.value.problem.file, err.value.problem.record, err.value.problem.field) == (str(path), "line 2", field)
    assert err.value.problem.message.startswith(message) and "dvc repro adapt" in err.value.fix


def test_adapted_records_are_a_sized_stream_read_anew_per_pass(tmp_path):
    """What the retrieve stage hands on instead of a list of every haystack (GBs at M): its universe (ids and
    types in file order) from the question index, before the adapted file is opened."""
    out = tmp_path / "adapted.jsonl"
    adapt_file(V3, BUNDLED, out)
    every = list(read_adapted(out))
    index = tmp_path / "index.jsonl"
    write_question_index(index, (QuestionMeta.of_adapted(r) for r in every))
    ids = [every[5].eval.question_id, every[1].eval.question_id]
    universe = suite_universe(index, ids)
    assert universe == [(r.eval.question_id, r.eval.question_type) for r in (every[1], every[5])]  # file order
    records = AdaptedRecords(out, universe, index=index)
    out.write_text("not read yet\n")  # len() is the suite's size: the file is not opened
    assert len(records) == 2
    adapt_file(V3, BUNDLED, out)
    assert [r.eval.question_id for r in records] == [ids[1], ids[0]]  # file order, a fresh pass each time
    assert list(records) == [every[1], every[5]]


def test_an_index_out_of_step_with_the_adapted_file_is_named(tmp_path):
    out = tmp_path / "adapted.jsonl"
    adapt_file(V3, BUNDLED, out)
    every = list(read_adapted(out))
    index = tmp_path / "index.jsonl"
    write_question_index(index, (QuestionMeta.of_adapted(r) for r in every[1:]))
    with pytest.raises(InputError, match=f"(?s){index}.*'question_id'.*no line for question "
                                         f"'{every[0].eval.question_id}'.*dvc repro suite"):
        suite_universe(index, [every[0].eval.question_id, every[1].eval.question_id])
    a, b = every[0].eval, every[1].eval
    swapped = AdaptedRecords(out, [(b.question_id, b.question_type), (a.question_id, a.question_type)], index=index)
    with pytest.raises(InputError, match=f"(?s)question '{a.question_id}'.*'eval.question_id'.*out of step with "
                                         f"the question index {index}: it has '{b.question_id}' in its place"):
        list(swapped)
    other = next(t for t in {e.eval.question_type for e in every} if t != a.question_type)
    retyped = AdaptedRecords(out, [(a.question_id, other)], index=index)
    with pytest.raises(InputError, match=f"(?s)'eval.question_type'.*'{a.question_type}', but the question index "
                                         f"{index} says '{other}'.*dvc repro suite"):
        list(retyped)


@pytest.mark.parametrize("adapter", [V3, V2], ids=["v3", "v2"])
def test_to_record_is_asdict_of_each_half(dataset, adapter):
    """to_record spells ``dataclasses.asdict`` out (for speed): the same keys in the same order, the same
    values, so the adapted file's bytes do not change; a field added to a view and not to to_record fails."""
    for position, inst in enumerate(load_instances(dataset)):
        rec = adapter.adapt(inst, position)
        expected = {"memory": asdict(rec.memory), "eval": asdict(rec.eval)}
        assert json.dumps(rec.to_record(), ensure_ascii=False) == json.dumps(expected, ensure_ascii=False)
        assert rec.to_record() == json.loads(json.dumps(expected))
