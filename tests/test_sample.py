"""The bundled sample generator: determinism and the upstream LongMemEval schema rules it must keep.

Schema facts: shared/docs/upstream-protocol.md §1.2 (fields, ids, has_answer placement, dates).
"""

from __future__ import annotations

import inspect
import json
import re
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from mnemetric.data.sample import (
    DEFAULT_SEED,
    QUESTION_TYPES,
    generate_sample,
    generate_synthetic,
    main,
    write_json_list,
    write_sample,
)
from mnemetric.io import sha256_file

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "data" / "sample" / "longmemeval_sample.json"

FIELDS = ["question_id", "question_type", "question", "answer", "question_date",
          "haystack_session_ids", "haystack_dates", "haystack_sessions", "answer_session_ids"]
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
DATE_RE = re.compile(r"^(\d{4}/\d{2}/\d{2}) \((Mon|Tue|Wed|Thu|Fri|Sat|Sun)\) (\d{2}:\d{2})$")
QID_RE = re.compile(r"^(gpt4_)?[0-9a-f]{8}(_abs)?$")
ANSWER_ID_RE = re.compile(r"^answer_(?:[0-9a-f]{8}(?:_[123])?|[0-9a-f]{8}_abs_[123]|ultrachat_\d+)$")
FILLER_ID_RE = re.compile(r"^(?:sharegpt_[A-Za-z0-9]+_\d+|ultrachat_\d+|[0-9a-f]{8}(?:_\d+)?)$")
NOT_ENOUGH = "The information provided is not enough."


@pytest.fixture(scope="module")
def sample() -> list[dict]:
    return generate_sample()


def canonical_bytes(instances: list) -> bytes:
    return (json.dumps(instances, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def parse_date(text: str) -> datetime:
    match = DATE_RE.match(text)
    assert match, f"{text!r} is not in the upstream date format"
    moment = datetime.strptime(f"{match[1]} {match[3]}", "%Y/%m/%d %H:%M")
    assert WEEKDAYS[moment.weekday()] == match[2], f"wrong weekday in {text!r}"
    return moment


def is_abs(inst: dict) -> bool:
    return "_abs" in inst["question_id"]


def answer_sessions(inst: dict) -> list[tuple[str, datetime, list[dict]]]:
    return [(sid, parse_date(d), s) for sid, d, s in
            zip(inst["haystack_session_ids"], inst["haystack_dates"], inst["haystack_sessions"])
            if "answer" in sid]


def evidence_turns(inst: dict) -> list[dict]:
    return [t for _, _, s in answer_sessions(inst) for t in s if t["has_answer"]]


def check_instance(inst: dict, sessions: tuple[int, int], turns: tuple[int, int]) -> bool:
    """Assert every schema rule on one instance; return True if it has the same-day date quirk."""
    assert list(inst) == FIELDS
    assert QID_RE.match(inst["question_id"]), inst["question_id"]
    assert inst["question_type"] in QUESTION_TYPES
    assert isinstance(inst["question"], str) and inst["question"].endswith("?")
    assert isinstance(inst["answer"], (str, int)) and not isinstance(inst["answer"], bool)
    ids, dates, hay = inst["haystack_session_ids"], inst["haystack_dates"], inst["haystack_sessions"]
    assert len(ids) == len(dates) == len(hay)
    assert sessions[0] <= len(hay) <= sessions[1]
    assert len(set(ids)) == len(ids)
    assert inst["answer_session_ids"] == [sid for sid in ids if "answer" in sid]
    assert set(inst["answer_session_ids"]) <= set(ids)
    assert 1 <= len(inst["answer_session_ids"]) <= 3 and len(inst["answer_session_ids"]) < len(ids)
    for sid, session in zip(ids, hay):
        check_session(inst, sid, session, turns)
    assert any(t["has_answer"] for t in evidence_turns(inst))
    moments = [parse_date(d) for d in dates]
    assert moments == sorted(moments) and len(set(moments)) == len(moments)
    question_moment = parse_date(inst["question_date"])
    if question_moment > moments[-1]:
        return False
    # The upstream quirk: the question is asked minutes before the last session, on the same day.
    assert question_moment.date() == moments[-1].date()
    assert moments[-1] - question_moment <= timedelta(minutes=60)
    assert len(moments) < 2 or question_moment > moments[-2]
    return True


def check_session(inst: dict, sid: str, session: list[dict], turns: tuple[int, int]) -> None:
    is_answer = "answer" in sid
    assert (ANSWER_ID_RE if is_answer else FILLER_ID_RE).match(sid), sid
    if is_answer:
        assert ("_abs_" in sid) == is_abs(inst), sid
    assert turns[0] <= len(session) <= turns[1]
    for i, turn in enumerate(session):
        expected = ["role", "content", "has_answer"] if is_answer else ["role", "content"]
        assert list(turn) == expected
        assert turn["role"] in ("user", "assistant")
        assert isinstance(turn["content"], str) and turn["content"].strip()
        if is_answer:
            assert isinstance(turn["has_answer"], bool)
        if i:
            assert turn["role"] != session[i - 1]["role"], f"roles must alternate in {sid}"
    assert session[-1]["role"] == "assistant"
    if is_answer:
        assert session[0]["role"] == "user"


# ---------------------------------------------------------------------------------- determinism


def test_two_runs_are_byte_identical(tmp_path):
    write_sample(tmp_path / "a.json")
    write_sample(tmp_path / "b.json")
    first = (tmp_path / "a.json").read_bytes()
    assert first == (tmp_path / "b.json").read_bytes()
    assert first == canonical_bytes(generate_sample(DEFAULT_SEED))


def test_committed_file_equals_fresh_generation(tmp_path):
    assert COMMITTED.exists(), "run: python -m mnemetric.data.sample --out data/sample/longmemeval_sample.json"
    write_sample(tmp_path / "fresh.json")
    assert COMMITTED.read_bytes() == (tmp_path / "fresh.json").read_bytes()


def test_cli_regenerates_the_committed_file(tmp_path, capsys):
    out = tmp_path / "sample.json"
    assert main(["--out", str(out)]) == 0
    assert out.read_bytes() == COMMITTED.read_bytes()
    assert "wrote 43 instances" in capsys.readouterr().out


def test_seed_changes_the_content():
    assert generate_sample(1) != generate_sample(DEFAULT_SEED)
    assert generate_sample(1) == generate_sample(1)


def test_committed_file_is_modest_and_documented():
    assert COMMITTED.stat().st_size < 800_000
    readme = (COMMITTED.parent / "README.md").read_text(encoding="utf-8")
    assert sha256_file(COMMITTED) in readme, "update the sha256 in data/sample/README.md"
    assert f"{COMMITTED.stat().st_size:,} bytes" in readme


@pytest.mark.parametrize("items", [[], [{"a": "café", "b": [1, {"c": None}], "d": []}], [1, "x\ny", {}]])
def test_streamed_writer_matches_json_dumps(tmp_path, items):
    out = tmp_path / "list.json"
    assert write_json_list(out, iter(items)) == len(items)
    assert out.read_bytes() == canonical_bytes(items)


# ---------------------------------------------------------------------------------- schema


def test_every_instance_keeps_the_schema(sample):
    quirks = [inst["question_id"] for inst in sample if check_instance(inst, (12, 16), (4, 12))]
    assert len(quirks) == 1


def test_counts_per_type_and_abstention(sample):
    assert len(sample) >= 36
    types = Counter(inst["question_type"] for inst in sample)
    assert set(types) == set(QUESTION_TYPES) and min(types.values()) >= 6
    assert "abstention" not in types
    abstentions = [inst for inst in sample if is_abs(inst)]
    assert len(abstentions) >= 6
    assert all(inst["question_id"].endswith("_abs") for inst in abstentions)
    assert len({inst["question_type"] for inst in abstentions}) >= 3


def test_ids_are_unique_and_varied(sample):
    qids = [inst["question_id"] for inst in sample]
    assert len(set(qids)) == len(qids)
    assert any(q.startswith("gpt4_") for q in qids) and any(not q.startswith("gpt4_") for q in qids)
    all_ids = [sid for inst in sample for sid in inst["haystack_session_ids"]]
    assert len(set(all_ids)) == len(all_ids)
    kinds = {next((p for p in ("answer", "sharegpt", "ultrachat") if sid.startswith(p)), "simulated")
             for sid in all_ids}
    assert kinds == {"answer", "sharegpt", "ultrachat", "simulated"}
    assert any(sid.startswith("answer_ultrachat_") for sid in all_ids)
    assert any(re.match(r"^answer_[0-9a-f]{8}_[123]$", sid) for sid in all_ids)


def test_answer_is_sometimes_a_bare_number(sample):
    assert any(type(inst["answer"]) is int for inst in sample)


def test_fillers_present_and_some_start_with_assistant(sample):
    for inst in sample:
        assert len(inst["haystack_session_ids"]) - len(inst["answer_session_ids"]) >= 9
    starts = [s[0]["role"] for inst in sample for sid, s in
              zip(inst["haystack_session_ids"], inst["haystack_sessions"]) if "answer" not in sid]
    assert "assistant" in starts and starts.count("user") > starts.count("assistant")


# ---------------------------------------------------------------------------------- evidence rules


def of_type(sample: list[dict], qtype: str, abstention: bool = False) -> list[dict]:
    chosen = [i for i in sample if i["question_type"] == qtype and is_abs(i) == abstention]
    assert chosen
    return chosen


def test_single_session_user_evidence_is_a_user_turn(sample):
    for inst in of_type(sample, "single-session-user"):
        (turn,) = evidence_turns(inst)
        assert turn["role"] == "user" and str(inst["answer"]) in turn["content"]
        assert len(inst["answer_session_ids"]) == 1


def test_single_session_assistant_evidence_is_an_assistant_turn(sample):
    for inst in of_type(sample, "single-session-assistant"):
        (turn,) = evidence_turns(inst)
        assert turn["role"] == "assistant" and str(inst["answer"]).lower() in turn["content"].lower()
        for _, _, session in answer_sessions(inst):
            assert not any(t["has_answer"] for t in session if t["role"] == "user")


def test_preference_answers_are_rubrics(sample):
    for inst in of_type(sample, "single-session-preference"):
        assert inst["answer"].startswith("The user would prefer") and "might not prefer" in inst["answer"]
        (turn,) = evidence_turns(inst)
        assert turn["role"] == "user"


def test_knowledge_update_has_old_and_new_value(sample):
    for inst in of_type(sample, "knowledge-update"):
        sessions = answer_sessions(inst)
        assert len(sessions) == 2
        old, new = ([t for t in s if t["has_answer"]] for _, _, s in sessions)
        assert len(old) == len(new) == 1 and old[0]["role"] == new[0]["role"] == "user"
        assert str(inst["answer"]).split()[0] in new[0]["content"]
        assert str(inst["answer"]) not in old[0]["content"]


def test_multi_session_evidence_spans_sessions(sample):
    for inst in of_type(sample, "multi-session"):
        sessions = answer_sessions(inst)
        assert 2 <= len(sessions) <= 3
        assert all(any(t["has_answer"] and t["role"] == "user" for t in s) for _, _, s in sessions)


def test_temporal_answers_follow_the_dates(sample):
    checked = Counter()
    for inst in of_type(sample, "temporal-reasoning"):
        question, answer = inst["question"], str(inst["answer"])
        days = [moment.date() for _, moment, _ in answer_sessions(inst)]
        asked = parse_date(inst["question_date"]).date()
        if question.startswith("How many days passed between"):
            checked["between"] += answer.startswith(f"{(days[1] - days[0]).days} days")
        elif question.startswith("How many days have passed since"):
            checked["since"] += answer == f"{(asked - days[0]).days} days"
        elif question.startswith("What day of the week"):
            checked["weekday"] += answer == days[0].strftime("%A")
        elif " ago?" in question:
            ago = {"a week": 7, "ten days": 10, "two weeks": 14, "three weeks": 21}
            phrase = question.rsplit(" buy ", 1)[1].removesuffix(" ago?")
            checked["ago"] += (asked - days[0]).days == ago[phrase]
        elif question.startswith("Which did I do first"):
            first, second = ([t for t in s if t["has_answer"]] for _, _, s in answer_sessions(inst))
            key = answer.split()[-1]  # e.g. "starter" of "Starting a sourdough starter"
            checked["first"] += key in first[0]["content"] and key not in second[0]["content"]
        elif question.startswith("In what order"):
            steps = re.fullmatch(r"First (.+), then (.+), and finally (.+)\.", answer).groups()
            facts = [next(t for t in s if t["has_answer"])["content"] for _, _, s in answer_sessions(inst)]
            checked["order"] += all(step.split()[-1] in fact for step, fact in zip(steps, facts))
    assert sum(checked.values()) == len(of_type(sample, "temporal-reasoning")), checked


def test_abstention_keeps_related_answer_sessions(sample):
    for inst in [i for i in sample if is_abs(i)]:
        assert inst["answer"].startswith(NOT_ENOUGH) and "You mentioned" in inst["answer"]
        assert all("_abs_" in sid for sid in inst["answer_session_ids"])
        assert evidence_turns(inst)


def test_evidence_vocabulary_overlaps_the_question(sample):
    """Retrieval on the sample is meaningful: word overlap with user turns finds the evidence."""
    stop = set("i my me the a an of to in on for and or did do what how many much is was you your "
               "have has it that this which with at be been about from now".split())

    def words(text: str) -> set[str]:
        return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in stop}

    hits = total = 0
    for inst in sample:
        if is_abs(inst) or inst["question_type"] not in ("single-session-user", "knowledge-update"):
            continue
        query = words(inst["question"])
        scores = [(len(query & set().union(*(words(t["content"]) for t in s if t["role"] == "user"))), sid)
                  for sid, s in zip(inst["haystack_session_ids"], inst["haystack_sessions"])]
        hits += "answer" in max(scores)[1]
        total += 1
    assert hits >= 0.8 * total


# ---------------------------------------------------------------------------------- synthetic


def test_synthetic_is_lazy_deterministic_and_valid():
    stream = generate_synthetic(12, 20, seed=7)
    assert inspect.isgenerator(stream)
    first = list(stream)
    assert first == list(generate_synthetic(12, 20, seed=7))
    assert [i["question_type"] for i in first[:6]] == list(QUESTION_TYPES)
    for inst in first:
        check_instance(inst, (20, 20), (4, 13))
    qids = [i["question_id"] for i in first]
    assert len(set(qids)) == len(qids)


def test_synthetic_sessions_are_long():
    instances = list(generate_synthetic(6, 48, seed=3))
    turns = [len(s) for inst in instances for s in inst["haystack_sessions"]]
    assert all(len(inst["haystack_sessions"]) == 48 for inst in instances)
    assert 9 <= sum(turns) / len(turns) <= 11


def test_synthetic_rejects_tiny_haystacks():
    with pytest.raises(ValueError):
        next(generate_synthetic(1, 3, seed=1))


def test_cli_streams_synthetic(tmp_path):
    out = tmp_path / "synthetic.json"
    assert main(["--synthetic", "5", "--sessions", "16", "--seed", "11", "--out", str(out)]) == 0
    assert out.read_bytes() == canonical_bytes(list(generate_synthetic(5, 16, seed=11)))
