"""Reader and checker texts extracted from STAND-IN upstream files (our words, upstream's code shape)."""

from __future__ import annotations

import hashlib
import json
import re

import pytest

from mnemetric.errors import IntegrityError, UpstreamFormatError
from mnemetric.longmemeval_v2 import upstream_text as ut
from mnemetric.longmemeval_v2.upstream_text import (
    KNOWN_PINS,
    CheckerTexts,
    ReaderTexts,
    checker_texts,
    load_checker_texts,
    load_reader_texts,
    reader_texts,
)
from mnemetric.upstream import PinnedFile
from mnemetric.upstream.literals import Field, Template
from tests.support.standin_v2 import (
    ABS_SYSTEM,
    EMPTY_MARKER,
    ENTERPRISE_PROMPT,
    GOT_SYSTEM,
    HARNESS_SENTINEL,
    HARNESS_STAND_IN,
    INTRO,
    QA_SENTINEL,
    QA_STAND_IN,
    QUESTION_HEAD,
    WEB_PROMPT,
    abs_user,
    got_user,
    no_execution,
    sha256_text,
    write_checkout,
)


def _canonical_sha(obj) -> str:
    """Naive second implementation of the text-set hash: sorted-key compact JSON, UTF-8."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
                          .encode("utf-8")).hexdigest()


@pytest.fixture()
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    assert not (tmp_path / HARNESS_SENTINEL).exists() and not (tmp_path / QA_SENTINEL).exists()


def test_stand_ins_would_fail_if_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for source, sentinel in ((HARNESS_STAND_IN, HARNESS_SENTINEL), (QA_STAND_IN, QA_SENTINEL)):
        body = "\n".join(line for line in source.splitlines() if "not installed" not in line)
        with pytest.raises(SystemExit, match="executed!"):
            exec(compile(body, "stand_in.py", "exec"), {"__name__": "stand_in"})  # noqa: S102 - control experiment
        assert (tmp_path / sentinel).exists()


# ---------------------------------------------------------------- reader texts


def test_reader_texts_are_byte_exact(in_tmp):
    with no_execution():
        texts = reader_texts(HARNESS_STAND_IN)
    assert texts.system_prompts == {"web": WEB_PROMPT, "enterprise": ENTERPRISE_PROMPT}
    assert "\x08oxed{}" in texts.system_prompts["web"] and "\\boxed{UNKNOWN}" in texts.system_prompts["web"]
    assert texts.intro == INTRO and texts.empty_marker == EMPTY_MARKER
    assert texts.question_part == Template((QUESTION_HEAD, Field("question_text")))
    assert texts.question_text("Where?") == QUESTION_HEAD + "Where?"
    assert texts.source_sha256 == sha256_text(HARNESS_STAND_IN)


def test_reader_text_set_hash_is_canonical_json(in_tmp):
    texts = reader_texts(HARNESS_STAND_IN)
    expected = {"system_prompts": {"web": WEB_PROMPT, "enterprise": ENTERPRISE_PROMPT}, "intro": INTRO,
                "empty_marker": EMPTY_MARKER, "question_part": [QUESTION_HEAD, {"field": "question_text"}]}
    assert texts.to_record() == expected and texts.texts_sha256 == _canonical_sha(expected)


def test_a_stand_in_is_never_pinned(in_tmp):
    texts = reader_texts(HARNESS_STAND_IN)
    assert texts.source_status is None and not texts.is_pinned
    assert texts.system_prompt_facts() == {"web": False, "enterprise": False}


def test_pinned_needs_a_verified_source_and_the_recorded_hash():
    fake = ReaderTexts({"web": "w", "enterprise": "e"}, "i", "m", Template(("q", Field("question_text"))),
                       source_sha256=ut.HARNESS.sha256)
    assert fake.source_status == "verified" and not fake.is_pinned  # right file name, wrong texts
    reported = KNOWN_PINS.pin(ut.REPO, "2cc8c540", ut.HARNESS_PATH)
    as_reported = ReaderTexts(fake.system_prompts, "i", "m", fake.question_part, source_sha256=reported.sha256)
    assert as_reported.source_status == "reported" and not as_reported.is_pinned


def test_the_web_prompt_facts_are_checked_by_length_and_hash():
    web = "x" * 548
    enterprise_bytes = "y" * 393
    texts = ReaderTexts({"web": web, "enterprise": enterprise_bytes}, "i", "m",
                        Template(("q", Field("question_text"))), source_sha256="0" * 64)
    assert texts.system_prompt_facts() == {"web": False, "enterprise": False}  # right lengths, other bytes


@pytest.mark.parametrize("edit, word", [
    (("DOMAIN_SYSTEM_PROMPTS = {", "PROMPTS_BY_DOMAIN = {"), "DOMAIN_SYSTEM_PROMPTS"),
    (('"enterprise": (', '"desk": ('), "domains"),
    (('"enterprise": (', '"enterprise": str(1) + ('), "dict of string literals"),
    (("def build_messages(", "def make_messages("), "build_messages"),
    (('head += "[nothing stored]"', 'head += CATEGORY_MAP["alpha"]'), "`head += <string literal>`; found 1 assignment(s), 0 literal"),
    (('ask = f"\\n\\n## Stand-in question:\\n{question_text}"', 'ask = f"{question_text!r}"'), "ask ="),
    (('ask = f"\\n\\n## Stand-in question:\\n{question_text}"', 'ask = f"Q: {system_prompt} {question_text}"'),
     "one field"),
    (('log_parts.append({"type": "text", "text": ask})', 'log_parts.append({"type": "text", "text": extra})'),
     "two named text parts"),
])
def test_reader_shape_changes_are_named_errors(in_tmp, edit, word):
    source = HARNESS_STAND_IN.replace(*edit)
    assert source != HARNESS_STAND_IN
    with no_execution(), pytest.raises(UpstreamFormatError, match=re.escape(word)):
        reader_texts(source, filename="harness.py")


# ---------------------------------------------------------------- checker texts


def test_checker_texts_are_exact(in_tmp):
    with no_execution():
        texts = checker_texts(QA_STAND_IN)
    abstention, gotchas = texts.checkers["llm_abstention_checker"], texts.checkers["llm_gotchas_checker"]
    assert abstention.system == ABS_SYSTEM and gotchas.system == GOT_SYSTEM
    values = {"question_text": "Q1", "reference_answer": "G{0}", "model_full_response": "F\\b", "model_final_answer": "A"}
    assert abstention.user.fill(values) == abs_user("Q1", "G{0}", "F\\b", "A")
    assert gotchas.user.fill(values) == got_user("Q1", "G{0}", "F\\b", "A")
    assert list(texts.checkers) == ["llm_abstention_checker", "llm_gotchas_checker"]


def test_checker_text_set_hash_is_canonical_json(in_tmp):
    texts = checker_texts(QA_STAND_IN)
    record = texts.to_record()
    assert record["llm_abstention_checker"]["system"] == ABS_SYSTEM
    assert texts.texts_sha256 == _canonical_sha(record) and not texts.is_pinned
    assert texts.source_sha256 == sha256_text(QA_STAND_IN)


def test_checker_source_status_follows_the_table():
    texts = CheckerTexts({}, source_sha256=ut.QA_EVAL_METRICS.sha256)
    assert texts.source_status == "verified" and not texts.is_pinned


@pytest.mark.parametrize("edit, word", [
    (("messages = _abs_messages(", "messages = _abs_messages_gone("), "one message builder"),
    (('{"role": "system", "content": _RUBRIC_ABS},', '{"role": "developer", "content": _RUBRIC_ABS},'), "roles"),
    (('f"{model_final_answer}\\n\\n"', '"(none)\\n\\n"'), "fields"),
    (('_RUBRIC_GOT = "Stand-in rubric two: "', '_RUBRIC_GOT = str(2) + "Stand-in rubric two: "'), "_RUBRIC_GOT"),
    (("def llm_gotchas_checker(", "def llm_gotcha_checker("), "llm_gotchas_checker"),
])
def test_checker_shape_changes_are_named_errors(in_tmp, edit, word):
    source = QA_STAND_IN.replace(*edit)
    assert source != QA_STAND_IN
    with no_execution(), pytest.raises(UpstreamFormatError, match=re.escape(word)):
        checker_texts(source, filename="qa_eval_metrics.py")


# ---------------------------------------------------------------- obtaining + extracting


def test_load_from_a_checkout_with_a_stand_in_pin(in_tmp, tmp_path):
    root = write_checkout(tmp_path / "LongMemEval-V2")
    harness_pin = PinnedFile(ut.REPO, ut.REVISION, ut.HARNESS_PATH, sha256_text(HARNESS_STAND_IN))
    qa_pin = PinnedFile(ut.REPO, ut.REVISION, ut.QA_EVAL_METRICS_PATH, sha256_text(QA_STAND_IN))
    with no_execution():
        reader = load_reader_texts(str(root), tmp_path / "cache", download=False, pin=harness_pin)
        checkers = load_checker_texts(str(root), tmp_path / "cache", download=False, pin=qa_pin)
    assert reader.intro == INTRO and checkers.checkers["llm_gotchas_checker"].system == GOT_SYSTEM


def test_the_real_pin_refuses_a_stand_in(in_tmp, tmp_path):
    root = write_checkout(tmp_path / "LongMemEval-V2")
    with pytest.raises(IntegrityError) as info:
        load_reader_texts(str(root), tmp_path / "cache", download=False)
    assert ut.HARNESS.sha256 in str(info.value) and sha256_text(HARNESS_STAND_IN) in str(info.value)
    with pytest.raises(IntegrityError, match="f8ba659e237c4282"):
        load_checker_texts(str(root), tmp_path / "cache", download=False)


def test_a_file_that_is_not_utf8_is_a_clear_error(tmp_path):
    root = tmp_path / "co"
    (root / "evaluation").mkdir(parents=True)
    data = b"X = '\xff'\n"
    (root / "evaluation" / "harness.py").write_bytes(data)
    pin = PinnedFile(ut.REPO, ut.REVISION, ut.HARNESS_PATH, hashlib.sha256(data).hexdigest())
    with pytest.raises(UpstreamFormatError, match="not UTF-8"):
        load_reader_texts(str(root), tmp_path / "cache", download=False, pin=pin)


# ---------------------------------------------------------------- the pins themselves (typed from the brief)


def test_v2_pins():
    be15 = "be15ea6e995462f3391c1a610892df3f67dfa7bd"
    assert ut.HARNESS == PinnedFile(ut.REPO, be15, "evaluation/harness.py",
                                    "8c6d1bd124ce2caf8a4bdc8516ef1b54ffca98ea4c49b4e50355ee4207b55eb1")
    assert ut.QA_EVAL_METRICS.sha256.startswith("f8ba659e") and ut.RUN_EVAL.sha256.startswith("95d43fa6")
    assert KNOWN_PINS.pin(ut.REPO, "c5c552d", ut.HARNESS_PATH).sha256.startswith("051aa2e2")
    reported = KNOWN_PINS.get(ut.REPO, "2cc8c540bdb87fe6761629b585e727e1c4704520", ut.HARNESS_PATH)
    assert reported is not None and reported.status == "reported" and not reported.verified
    assert reported.file.sha256.startswith("93fe5855")
    assert all(r.verified for r in KNOWN_PINS if r.file.revision == be15)
