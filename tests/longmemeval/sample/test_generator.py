"""The generator as a whole: the committed sample's exact bytes, and the upstream schema rules it keeps.

Schema facts: shared/docs/upstream-protocol.md §1.2 (fields, ids, has_answer placement, dates). The
pinned sha256 values were taken from the committed file and from the previous generator
(src/mnemetric/data/sample.py, before this package replaced it), not from this code.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from datetime import datetime, timedelta

import pytest
import yaml

from mnemetric.longmemeval.instance_checks import check_instance
from mnemetric.io import sha256_file
from mnemetric.longmemeval.sample import DEFAULT_SEED, QUESTION_TYPES, generate_sample, instances_sha256, write_instances

from tests.conftest import ROOT

COMMITTED = ROOT / "data" / "sample" / "longmemeval_sample.json"
SAMPLE_SHA256 = "85aa0d974c4cd5cd28034fb9463b4f14d6807e46b9ac39fcf8c8f6ca6a9d95e6"
SAMPLE_SIZE = 638_597
SEED_1_SHA256 = "0446df5813cb4b0ec0d30537f254794c5427ce8c6ed7b1e5896d2040badc317e"  # old generator, seed 1

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
    return [inst.to_record() for inst in generate_sample()]


def naive_bytes(records: list) -> bytes:
    """A second serialiser: the whole list at once."""
    return (json.dumps(records, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


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


def check_rules(inst: dict, sessions: tuple[int, int], turns: tuple[int, int]) -> bool:
    """Assert every schema rule on one instance; return True if it has the same-day date quirk."""
    assert check_instance(inst, "<generated>", 0) == []
    assert list(inst) == FIELDS
    assert QID_RE.match(inst["question_id"]), inst["question_id"]
    assert inst["question_type"] in QUESTION_TYPES
    assert isinstance(inst["question"], str) and inst["question"].endswith("?")
    assert isinstance(inst["answer"], (str, int)) and not isinstance(inst["answer"], bool)
    ids, dates, hay = inst["haystack_session_ids"], inst["haystack_dates"], inst["haystack_sessions"]
    assert sessions[0] <= len(hay) <= sessions[1]
    assert len(set(ids)) == len(ids)
    assert inst["answer_session_ids"] == [sid for sid in ids if "answer" in sid]
    assert 1 <= len(inst["answer_session_ids"]) <= 3 and len(inst["answer_session_ids"]) < len(ids)
    for sid, session in zip(ids, hay):
        check_session(inst, sid, session, turns)
    assert evidence_turns(inst)
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
        assert list(turn) == (["role", "content", "has_answer"] if is_answer else ["role", "content"])
        assert turn["content"].strip()
        if i:
            assert turn["role"] != session[i - 1]["role"], f"roles must alternate in {sid}"
    assert session[-1]["role"] == "assistant"
    if is_answer:
        assert session[0]["role"] == "user"


# ---------------------------------------------------------------------------------- bytes


def test_committed_file_has_the_pinned_bytes():
    assert sha256_file(COMMITTED) == SAMPLE_SHA256
    assert COMMITTED.stat().st_size == SAMPLE_SIZE
    pin = yaml.safe_load((ROOT / "conf" / "variant" / "sample.yaml").read_text(encoding="utf-8"))
    assert (pin["sha256"], pin["size"]) == (SAMPLE_SHA256, SAMPLE_SIZE)


def test_regeneration_is_byte_identical_to_the_committed_file(tmp_path):
    out = tmp_path / "fresh.json"
    assert write_instances(out, generate_sample()) == (43, SAMPLE_SHA256)
    assert out.read_bytes() == COMMITTED.read_bytes()
    assert hashlib.sha256(out.read_bytes()).hexdigest() == SAMPLE_SHA256


def test_streamed_bytes_equal_the_naive_serialiser(sample):
    assert naive_bytes(sample) == COMMITTED.read_bytes()


def test_in_memory_hash_equals_the_file_hash():
    assert instances_sha256(generate_sample(DEFAULT_SEED)) == (43, SAMPLE_SHA256)


def test_other_seeds_give_other_files_pinned_by_the_old_generator():
    assert instances_sha256(generate_sample(1)) == (43, SEED_1_SHA256)


def test_committed_file_is_modest_and_documented():
    readme = (COMMITTED.parent / "README.md").read_text(encoding="utf-8")
    assert SAMPLE_SHA256 in readme, "update the sha256 in data/sample/README.md"
    assert f"{SAMPLE_SIZE:,} bytes" in readme
    assert "mnemetric sample" in readme and "mnemetric.longmemeval.instance.sample" not in readme


# ---------------------------------------------------------------------------------- schema


def test_every_instance_keeps_the_schema(sample):
    quirks = [inst["question_id"] for inst in sample if check_rules(inst, (12, 16), (4, 12))]
    assert len(quirks) == 1


@pytest.mark.task("longmemeval", "single-session-user")
@pytest.mark.task("longmemeval", "single-session-assistant")
@pytest.mark.task("longmemeval", "single-session-preference")
@pytest.mark.task("longmemeval", "temporal-reasoning")
@pytest.mark.task("longmemeval", "knowledge-update")
@pytest.mark.task("longmemeval", "multi-session")
def test_counts_per_type_and_abstention(sample):
    """data/sample/README.md's table: 8, 6, 6, 8, 7, 8 questions; 2, 0, 0, 2, 1, 2 abstentions."""
    types = Counter(inst["question_type"] for inst in sample)
    abstentions = Counter(inst["question_type"] for inst in sample if is_abs(inst))
    assert [types[t] for t in QUESTION_TYPES] == [8, 6, 6, 8, 7, 8]
    assert [abstentions[t] for t in QUESTION_TYPES] == [2, 0, 0, 2, 1, 2]
    assert all(inst["question_id"].endswith("_abs") for inst in sample if is_abs(inst))
    assert sum(len(i["haystack_sessions"]) for i in sample) == 609
    assert sum(len(s) for i in sample for s in i["haystack_sessions"]) == 3875


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


def test_one_answer_is_a_bare_number(sample):
    """data/sample/README.md: question 136015c4 (a multi-session count) has an integer answer."""
    numbers = [(i["question_id"], i["answer"]) for i in sample if type(i["answer"]) is int]
    assert [q for q, _ in numbers] == ["136015c4"]


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


@pytest.mark.task("longmemeval", "single-session-user")
def test_single_session_user_evidence_is_a_user_turn(sample):
    for inst in of_type(sample, "single-session-user"):
        (turn,) = evidence_turns(inst)
        assert turn["role"] == "user" and str(inst["answer"]) in turn["content"]
        assert len(inst["answer_session_ids"]) == 1


@pytest.mark.task("longmemeval", "single-session-assistant")
def test_single_session_assistant_evidence_is_an_assistant_turn(sample):
    for inst in of_type(sample, "single-session-assistant"):
        (turn,) = evidence_turns(inst)
        assert turn["role"] == "assistant" and str(inst["answer"]).lower() in turn["content"].lower()


@pytest.mark.task("longmemeval", "single-session-preference")
def test_preference_answers_are_rubrics(sample):
    for inst in of_type(sample, "single-session-preference"):
        assert inst["answer"].startswith("The user would prefer") and "might not prefer" in inst["answer"]
        (turn,) = evidence_turns(inst)
        assert turn["role"] == "user"


@pytest.mark.task("longmemeval", "knowledge-update")
def test_knowledge_update_has_old_and_new_value(sample):
    for inst in of_type(sample, "knowledge-update"):
        sessions = answer_sessions(inst)
        assert len(sessions) == 2
        old, new = ([t for t in s if t["has_answer"]] for _, _, s in sessions)
        assert len(old) == len(new) == 1 and old[0]["role"] == new[0]["role"] == "user"
        assert str(inst["answer"]).split()[0] in new[0]["content"]
        assert str(inst["answer"]) not in old[0]["content"]


@pytest.mark.task("longmemeval", "multi-session")
def test_multi_session_evidence_spans_sessions(sample):
    for inst in of_type(sample, "multi-session"):
        sessions = answer_sessions(inst)
        assert 2 <= len(sessions) <= 3
        assert all(any(t["has_answer"] and t["role"] == "user" for t in s) for _, _, s in sessions)


@pytest.mark.task("longmemeval", "temporal-reasoning")
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


@pytest.mark.task("longmemeval", "abstention")
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
