"""Per question, not per run: a reader or checker request that gets no reply after every attempt (a timeout, a
server that keeps failing) fails THAT question — recorded with the reason, never a verdict, not cached, so the
next run asks it again — while a request the server refuses (401) still stops the run. Real HTTP against the
local OpenAI-compatible server; the V2 components on stand-in upstream texts."""

from __future__ import annotations

import pytest

from mnemetric.llm.types import LLMRequestError
from mnemetric.longmemeval_v2.llm_checkers import CheckCase, LLMCheckers
from mnemetric.longmemeval_v2.reader import OpenAIReader, ReaderInput
from mnemetric.longmemeval_v2.upstream_text import checker_texts, reader_texts
from tests.longmemeval_v2.executing import executor
from tests.support.openai_server import Fault, FakeOpenAIServer
from tests.support.standin_v2 import HARNESS_STAND_IN, QA_STAND_IN

ITEMS = [ReaderInput("web", [{"type": "text", "value": f"fact {i}"}], f"question {i}?", None) for i in range(3)]


def answer(messages):
    return "\\boxed{yes}" if isinstance(messages[-1]["content"], list) else '{"label": 1}'


@pytest.fixture()
def server():
    with FakeOpenAIServer(reply=answer) as s:
        yield s


def one_at_a_time(tmp_path, server):
    """Calls in item order, one in flight (so the scripted faults meet a known question)."""
    return executor(tmp_path, server.base_url, llm={"max_concurrency": 1})


def test_a_reader_timeout_fails_that_question_and_a_rerun_asks_it_again(server, tmp_path):
    reader = OpenAIReader(reader_texts(HARNESS_STAND_IN), base_url=server.base_url, timeout=0.2, max_retries=1)
    server.add_faults(Fault.slow(1.0), Fault.slow(1.0))  # the first question: both of its attempts time out
    replies = reader.answer_all(ITEMS, one_at_a_time(tmp_path, server))
    assert [r.failed is None for r in replies] == [False, True, True]
    assert replies[0].response_raw is None and "timed out after 0.2s" in replies[0].failed
    assert replies[0].request_sha256 == reader.calls(ITEMS)[0].key  # the failed question names its request
    sent = server.count
    assert sent == 4  # 2 attempts (max_retries=1) + 2 answers
    again = reader.answer_all(ITEMS, one_at_a_time(tmp_path, server))
    assert all(r.failed is None for r in again) and server.count == sent + 1  # only the failed one is sent again


def test_a_checker_that_gets_no_reply_fails_that_question_never_a_verdict(server, tmp_path):
    checker = LLMCheckers(checker_texts(QA_STAND_IN), base_url=server.base_url, max_retries=0)
    cases = [CheckCase("llm_gotchas_checker", "errors-gotchas", f"q{i}", f"gold {i}", f"reply {i}", f"reply {i}")
             for i in range(2)]
    server.add_faults(Fault.server_error(503))
    verdicts = checker.check_all(cases, one_at_a_time(tmp_path, server))
    assert verdicts[0].verdict is None and "judge gave no answer" in verdicts[0].failed and "HTTP 503" in verdicts[0].failed
    assert verdicts[1].verdict is True and verdicts[1].failed is None


def test_a_refused_request_still_stops_the_run(server, tmp_path):
    reader = OpenAIReader(reader_texts(HARNESS_STAND_IN), base_url=server.base_url, max_retries=0)
    server.add_faults(Fault.unauthorized())
    with pytest.raises(LLMRequestError, match="HTTP 401"):
        reader.answer_all(ITEMS, one_at_a_time(tmp_path, server))


def test_the_reader_knobs_are_conf_keys_with_upstreams_defaults(server, tmp_path):
    """conf/v2/reader/openai.yaml: run_eval's sampling (official only there) and harness.py's transport."""
    import yaml

    from mnemetric.config import package_conf_dir
    from mnemetric.longmemeval_v2.requests import READER_DEFAULTS

    conf = yaml.safe_load((package_conf_dir() / "v2" / "reader" / "openai.yaml").read_text())
    assert {k: conf[k] for k in READER_DEFAULTS} == READER_DEFAULTS
    assert (conf["timeout"], conf["max_retries"]) == (43200, 10)
    texts = reader_texts(HARNESS_STAND_IN)
    sampling = dict(READER_DEFAULTS, temperature=0.0)
    reader = OpenAIReader(texts, base_url=server.base_url, params=sampling, timeout=30.0, max_retries=2)
    call = reader.calls(ITEMS[:1])[0]
    assert call.params_sent["temperature"] == 0.0 and "timeout" not in call.params_sent  # transport: not in the key
    assert call.params["timeout"] == 30.0 and call.params["max_retries"] == 2
    assert call.key == OpenAIReader(texts, base_url=server.base_url, params=sampling).calls(ITEMS[:1])[0].key


def test_in_the_stages_a_reader_timeout_fails_that_question_and_a_plain_rerun_asks_only_it(tmp_path, monkeypatch):
    """Under DVC: stage v2_read writes its rows with the timed-out question failed, then exits 3 naming it and
    the re-ask command (`dvc repro`: a failed stage is not committed, so it runs again); that rerun sends the
    one failed request (the rest come from the cache) and v2_check and v2_metrics finish with nothing failed."""
    import json

    import yaml

    from mnemetric.config import compose
    from mnemetric.llm.failures import PartialFailure
    from mnemetric.longmemeval_v2.step_rows import ReadRow, read_rows
    from mnemetric.stages import v2_check, v2_memory, v2_metrics, v2_prepare, v2_read
    from tests.conftest import ROOT

    ws = tmp_path / "ws"
    (ws / "data" / "fingerprints").mkdir(parents=True)
    (ws / "data" / "fingerprints" / "v2-memory.json").write_text(json.dumps({"sha256": "0" * 64}))
    monkeypatch.chdir(ws)
    monkeypatch.setenv("MNEMETRIC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeOpenAIServer(reply=answer) as api:
        params = compose([f"v2.data_root={ROOT / 'data' / 'sample-v2'}", "v2/reader=openai",
                          "v2.reader._target_=tests.support.v2_tier.standin_reader", f"v2.reader.base_url={api.base_url}",
                          "v2.reader.timeout=1", "v2.reader.max_retries=0", "llm.max_concurrency=1"], ROOT / "conf")
        (ws / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
        v2_prepare.main()
        v2_memory.main()
        api.add_faults(Fault.slow(3.0))  # the first question's only attempt times out
        with pytest.raises(PartialFailure) as err:
            v2_read.main()
        first = api.count
        rows = read_rows(ws / "data" / "v2-runs" / "read.jsonl", ReadRow)
        failed = [r for r in rows if r.failed]
        assert len(rows) == 14 and len(failed) == 1 and "timed out after 1.0s" in failed[0].failed
        assert err.value.exit_code == 3 and failed[0].question_id in str(err.value) and "dvc repro" in str(err.value)
        v2_read.main()  # the plain rerun
        assert api.count == first + 1
        assert not any(r.failed for r in read_rows(ws / "data" / "v2-runs" / "read.jsonl", ReadRow))
        v2_check.main()
        v2_metrics.main()
    metrics = json.loads((ws / "metrics" / "v2.json").read_text())
    assert metrics["combined"]["questions"] == 14 and metrics["combined"]["failed"] == 0
