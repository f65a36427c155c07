"""Template extraction from a STAND-IN evaluate_qa.py (our own words, upstream's code shape only).

No upstream text appears here: the five templates below are made up. The stand-in mimics the
shape described in shared/docs/upstream-protocol.md §3.2 (a get_anscheck_prompt function choosing
a template by if/elif on ``abstention`` and ``task``, then ``.format``), plus unrelated script code
that must never run: a top-level ``raise SystemExit`` makes any exec/import of the file fail.
"""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import importlib
import json
import textwrap

import pytest

from mnemetric.errors import DownloadError, InputError, IntegrityError, MnemetricError, UpstreamFormatError
from mnemetric.longmemeval.judge import upstream_file as uf
from mnemetric.longmemeval.judge import upstream_prompts as up
from mnemetric.longmemeval.judge.upstream_prompts import TEMPLATE_KEYS, extract_templates
from mnemetric.longmemeval.judge.upstream_file import locate_evaluate_qa
from mnemetric.longmemeval.judge.upstream_prompts import PromptSet, parse_label, template_key_for
from tests.support.file_server import FileServer

from tests.support.standin_evaluate_qa import EXPECTED, STAND_IN, T_ABS, T_DEFAULT, T_PREF, T_TEMPORAL, T_UPDATE  # noqa: F401


def _split(text: str) -> str:
    """Write a template as implicit concatenation of two literals (ast folds them into one)."""
    half = len(text) // 2
    return f"{text[:half]!r}\n            {text[half:]!r}"


# Shape 2: abstention tested first, direct "...".format(...) returns, implicit concatenation,
# default in the final else.
STAND_IN_DIRECT = f'''\
raise SystemExit("executed!")

def get_anscheck_prompt(task, question, answer, response, abstention=False):
    if abstention:
        return ({_split(T_ABS)}).format(question, answer, response)
    elif task == 'temporal-reasoning':
        return {T_TEMPORAL!r}.format(question, answer, response)
    elif 'knowledge-update' == task:
        return {T_UPDATE!r}.format(question, answer, response)
    elif task == 'single-session-preference':
        return {T_PREF!r}.format(question, answer, response)
    else:
        return ({_split(T_DEFAULT)}).format(question, answer, response)
'''

# Shape 3: templates assigned in branches, one .format after the chain; `or` tests; `abstention == True`.
STAND_IN_LATE_FORMAT = f'''\
raise SystemExit("executed!")

def get_anscheck_prompt(task, question, answer, response, abstention=False):
    if abstention == True:
        template = {T_ABS!r}
    elif task == 'single-session-user' or task == 'single-session-assistant' or task == 'multi-session':
        template = {T_DEFAULT!r}
    elif task == 'temporal-reasoning':
        template = {T_TEMPORAL!r} + ""
    elif task == 'knowledge-update':
        template = {T_UPDATE!r}
    elif task == 'single-session-preference':
        template = {T_PREF!r}
    else:
        raise NotImplementedError
    return template.format(question, answer, response)
'''

# Shape 4: the type list lives in a module-level constant.
STAND_IN_MODULE_LIST = STAND_IN.replace(
    "import sys\n", "import sys\n\nPLAIN_TASKS = ('single-session-user', 'single-session-assistant', 'multi-session')\n"
).replace("if task in ['single-session-user', 'single-session-assistant', 'multi-session']:", "if task in PLAIN_TASKS:")

PIN_URL_PATH = f"/{uf.UPSTREAM_REPO}/{uf.REVISION}/{uf.PATH}"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.fixture()
def no_execution(monkeypatch):
    """A context manager: inside it, exec / eval / dynamic import fail loudly."""
    @contextlib.contextmanager
    def forbid():
        def forbidden(*args, **kwargs):
            raise AssertionError("the upstream file must never be executed or imported")

        with monkeypatch.context() as m:
            m.setattr(builtins, "exec", forbidden)
            m.setattr(builtins, "eval", forbidden)
            m.setattr(importlib, "import_module", forbidden)
            yield

    return forbid


def _checkout(tmp_path, text: str):
    target = tmp_path / "LongMemEval" / uf.PATH
    target.parent.mkdir(parents=True)
    target.write_text(text, encoding="utf-8")
    return tmp_path / "LongMemEval", target


# ---------------------------------------------------------------- extraction


def test_stand_in_would_fail_if_executed():
    with pytest.raises(SystemExit, match="executed!"):
        exec(compile(STAND_IN, "stand_in.py", "exec"), {"__name__": "stand_in"})


@pytest.mark.parametrize("source", [STAND_IN, STAND_IN_DIRECT, STAND_IN_LATE_FORMAT, STAND_IN_MODULE_LIST],
                         ids=["branch", "direct", "late", "module-list"])
def test_extraction_finds_all_five(source, no_execution):
    with no_execution():
        assert extract_templates(source) == EXPECTED


def test_module_list_shape_really_uses_the_constant():
    assert "if task in PLAIN_TASKS:" in STAND_IN_MODULE_LIST


def test_extracted_keys_are_in_fixed_order():
    assert list(extract_templates(STAND_IN)) == list(TEMPLATE_KEYS)


def test_missing_template_is_a_clear_error():
    broken = STAND_IN.replace(
        f"        elif task == 'knowledge-update':\n            template = {T_UPDATE!r}\n"
        "            prompt = template.format(question, answer, response)\n", "")
    assert broken != STAND_IN
    with pytest.raises(UpstreamFormatError, match="no template found for knowledge-update"):
        extract_templates(broken)


def test_missing_function_is_a_clear_error():
    with pytest.raises(UpstreamFormatError, match="get_anscheck_prompt"):
        extract_templates("def other(task):\n    return 'x {} {} {}'.format(1, 2, 3)\n")


@pytest.mark.parametrize("bad, shown", [
    ("Only two: {} {}", "2 replacement field"),
    ("Named: {question} {} {}", "{question}"),
    ("Four: {} {} {} {}", "4 replacement field"),
])
def test_template_with_wrong_fields_is_rejected(bad, shown):
    source = STAND_IN.replace(repr(T_PREF), repr(bad))
    with pytest.raises(UpstreamFormatError, match="single-session-preference") as info:
        extract_templates(source)
    assert shown in str(info.value)


def test_two_different_templates_for_one_key_is_an_error():
    source = STAND_IN_LATE_FORMAT.replace(
        "    return template.format",
        f"    if task in ['knowledge-update']:\n        template = {T_PREF!r}\n    return template.format")
    assert source != STAND_IN_LATE_FORMAT
    with pytest.raises(UpstreamFormatError, match="knowledge-update"):
        extract_templates(source)


def test_syntax_error_is_a_mnemetric_error():
    with pytest.raises(UpstreamFormatError, match="cannot parse"):
        extract_templates("def broken(:\n")


# ---------------------------------------------------------------- selection, rendering, labels


@pytest.mark.parametrize("qid, qtype, key", [
    ("q1", "single-session-user", "default"),
    ("q2", "single-session-assistant", "default"),
    ("q3", "multi-session", "default"),
    ("q4", "temporal-reasoning", "temporal-reasoning"),
    ("q5", "knowledge-update", "knowledge-update"),
    ("q6", "single-session-preference", "single-session-preference"),
    ("q7_abs", "temporal-reasoning", "abstention"),
    ("q8_abs", "single-session-preference", "abstention"),
    ("gpt4_q9_abs_2", "multi-session", "abstention"),
    ("q10_abs", "not-a-type", "abstention"),  # the id is checked before the type, as upstream does
])
@pytest.mark.task("longmemeval", "single-session-user")
@pytest.mark.task("longmemeval", "single-session-assistant")
@pytest.mark.task("longmemeval", "single-session-preference")
@pytest.mark.task("longmemeval", "temporal-reasoning")
@pytest.mark.task("longmemeval", "knowledge-update")
@pytest.mark.task("longmemeval", "multi-session")
def test_template_selection_checks_abs_first(qid, qtype, key):
    assert template_key_for(qid, qtype) == key


def test_unknown_type_is_an_error():
    with pytest.raises(InputError, match="unknown question_type 'abstention'"):
        template_key_for("q1", "abstention")


def test_render_fills_question_answer_response_positionally():
    ps = PromptSet(extract_templates(STAND_IN), _sha(STAND_IN))
    assert ps.render("q1", "multi-session", "How many?", 15, "About 15.") == T_DEFAULT.format("How many?", "15", "About 15.")
    assert ps.render("q1_abs", "multi-session", "Where?", "never said", "No idea") == T_ABS.format("Where?", "never said", "No idea")
    assert "Reference: 2.5\n" in ps.render("q2", "temporal-reasoning", "q", 2.5, "r")


def test_prompt_set_hashes():
    templates = extract_templates(STAND_IN)
    ps = PromptSet(templates, _sha(STAND_IN))
    canonical = json.dumps(templates, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert ps.prompt_set_sha256 == _sha(canonical)
    assert ps.source_sha256 == _sha(STAND_IN)
    assert not ps.is_pinned  # a stand-in is never the pinned upstream prompt set


@pytest.mark.parametrize("text, label", [
    ("yes", True), ("Yes.", True), ("  YES  ", True), ("Yes, the response is correct", True),
    ("yesterday", True),  # upstream substring quirk kept for parity
    ("no", False), ("No.", False), ("", False), ("y e s", False), ("The answer is wrong", False),
])
def test_parse_label_keeps_the_substring_rule(text, label):
    assert parse_label(text) is label


# ---------------------------------------------------------------- locating and verifying the file


def test_checkout_is_used_and_verified(tmp_path, no_execution):
    checkout, target = _checkout(tmp_path, STAND_IN)
    path = locate_evaluate_qa(str(checkout), tmp_path / "cache", download=False, expected_sha256=_sha(STAND_IN))
    assert path == target
    with no_execution():
        ps = PromptSet.from_file(path)
    assert ps.templates == EXPECTED and ps.source_sha256 == _sha(STAND_IN)


def test_sha_mismatch_names_both_hashes_and_the_path(tmp_path):
    checkout, target = _checkout(tmp_path, STAND_IN)
    with pytest.raises(IntegrityError) as info:
        locate_evaluate_qa(str(checkout), tmp_path / "cache", download=False)
    message = str(info.value)
    assert uf.SHA256 in message and _sha(STAND_IN) in message and str(target) in message


def test_missing_checkout_file_says_how_to_fix(tmp_path):
    with pytest.raises(MnemetricError) as info:
        locate_evaluate_qa(str(tmp_path / "nowhere"), tmp_path / "cache")
    message = str(info.value)
    assert "MNEMETRIC_LONGMEMEVAL_DIR" in message and uf.REVISION in message and "network" in message


def test_no_checkout_no_cache_no_download_says_how_to_fix(tmp_path):
    with pytest.raises(DownloadError) as info:
        locate_evaluate_qa(None, tmp_path / "cache", download=False)
    message = str(info.value)
    assert "MNEMETRIC_LONGMEMEVAL_DIR" in message and uf.REVISION in message and "network" in message


def test_download_then_cache_makes_no_second_request(tmp_path, no_execution):
    cache = tmp_path / "cache"
    with FileServer() as server:
        server.files[PIN_URL_PATH] = STAND_IN.encode("utf-8")
        first = locate_evaluate_qa(None, cache, base_url=server.url, expected_sha256=_sha(STAND_IN))
        assert len(server.requests) == 1 and server.requests[0]["path"] == PIN_URL_PATH
        second = locate_evaluate_qa(None, cache, base_url=server.url, expected_sha256=_sha(STAND_IN))
        assert len(server.requests) == 1  # served from the cache
    assert first == second == cache / "upstream" / _sha(STAND_IN) / "evaluate_qa.py"
    assert first.read_text(encoding="utf-8") == STAND_IN
    assert not [p for p in first.parent.iterdir() if p.name.endswith(".tmp")]
    with no_execution():
        assert PromptSet.from_file(first).templates == EXPECTED


def test_download_follows_redirects(tmp_path):
    with FileServer() as server:
        server.redirects[PIN_URL_PATH] = "/cdn/blob"
        server.files["/cdn/blob"] = STAND_IN.encode("utf-8")
        path = locate_evaluate_qa(None, tmp_path / "cache", base_url=server.url, expected_sha256=_sha(STAND_IN))
    assert path.read_text(encoding="utf-8") == STAND_IN


def test_downloaded_file_with_wrong_hash_is_not_cached(tmp_path):
    cache = tmp_path / "cache"
    with FileServer() as server:
        server.files[PIN_URL_PATH] = STAND_IN.encode("utf-8")
        with pytest.raises(IntegrityError) as info:
            locate_evaluate_qa(None, cache, base_url=server.url)  # the real pin: the stand-in cannot match
    message = str(info.value)
    assert uf.SHA256 in message and _sha(STAND_IN) in message
    assert not uf.cached_path(cache).exists()


def test_corrupted_cache_is_refused(tmp_path):
    cached = uf.cached_path(tmp_path / "cache", _sha(STAND_IN))
    cached.parent.mkdir(parents=True)
    cached.write_text(STAND_IN + "# tampered\n", encoding="utf-8")
    with pytest.raises(IntegrityError, match="sha256 mismatch"):
        locate_evaluate_qa(None, tmp_path / "cache", download=False, expected_sha256=_sha(STAND_IN))


def test_http_error_is_a_download_error(tmp_path):
    with FileServer() as server:
        with pytest.raises(DownloadError, match="HTTP 404") as info:
            locate_evaluate_qa(None, tmp_path / "cache", base_url=server.url, expected_sha256=_sha(STAND_IN))
    assert "MNEMETRIC_LONGMEMEVAL_DIR" in str(info.value)


def test_load_prompt_set_end_to_end(tmp_path):
    checkout, _ = _checkout(tmp_path, textwrap.dedent(STAND_IN_DIRECT))
    ps = up.load_prompt_set(str(checkout), tmp_path / "cache", download=False, expected_sha256=_sha(STAND_IN_DIRECT))
    assert ps.templates == EXPECTED
