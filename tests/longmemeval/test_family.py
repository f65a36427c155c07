"""The LongMemEval family's parts of custody: its run-manifest sections and its result-card rows.

Run manifest: hand-written run files on disk and a real LLM cache; every value hand-computed. The
manifest changes when any recorded input changes, and only then (clock, hypothesis text, labels,
conf-only knobs it does not record leave it byte-identical). Card: hand-written metrics in both QA
layouts (detail with intervals, headline numbers).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from mnemetric.custody.manifest import NOT_INSTALLED, build_manifest
from mnemetric.errors import InputError
from mnemetric.family import CardRow
from mnemetric.longmemeval.doors import card_rows, qa_rows, retrieval_rows
from mnemetric.longmemeval.family import FAMILY, gather_inputs, run_sections
from mnemetric.llm.cache import ResponseCache

UPSTREAM = {"temperature": 0, "max_tokens": 10, "n": 1}


def params(tmp: Path) -> dict:
    return {
        "variant": {"name": "s", "source": "huggingface", "repo": "xiaowu0162/longmemeval-cleaned",
                    "revision": "98d7416c24c778c2fee6e6f3006e7a073259d48f", "file": "longmemeval_s_cleaned.json",
                    "sha256": "a" * 64},
        "suite": {"name": "full", "kind": "full"},
        "adapter": {"name": "session-v3", "schema": "mnemetric.longmemeval-session/v3"},
        "memory": {"name": "bm25", "k1": 1.5, "b": 0.75},
        "reader": {"_target_": "mnemetric.longmemeval.components.ChatReader", "name": "openai", "kind": "openai",
                   "model": "gpt-4o-2024-08-06", "temperature": 0},
        "judge": {"name": "upstream-gpt-4o", "kind": "upstream", "model": "gpt-4o-2024-08-06", "temperature": 0.7,
                  "max_tokens": 99, "n": 3},  # conf deliberately differs: the manifest reads what was sent
        "retrieval": {"granularity": "session", "context_k": 10, "context_tokens": 6000},
        "scoring": {"name": "longmemeval-session-upstream-v1"},
        "llm": {"max_concurrency": 8},
        "paths": {k: str(tmp / v) for k, v in {
            "custody_dir": "custody", "suite": "suite.json", "fingerprints": "fp", "contexts": "contexts.jsonl",
            "hypotheses": "hyp.jsonl", "judged": "hyp.jsonl.eval-results-gpt-4o"}.items()},
    }


def jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def judged_line(qid: str, sha: str, model: str = "gpt-4o-2024-08-06", label: bool = True) -> dict:
    return {"question_id": qid, "hypothesis": f"answer {qid}", "autoeval_label": {"model": model, "label": label},
            "mnemetric_judge": {"prompt_set_sha256": "p" * 64, "endpoint": "https://api.openai.com/v1",
                                "request_sha256": sha}}


@pytest.fixture()
def run(tmp_path):
    """A complete run of 3 questions on disk; the cache holds the 3 judge requests."""
    p = params(tmp_path)
    (tmp_path / "custody").mkdir()
    (tmp_path / "fp").mkdir()
    (tmp_path / "custody" / "s.json").write_text(json.dumps({"verified": True, "sha256": "a" * 64,
                                                             "verified_at": "2026-11-29T19:24:42+00:00"}))
    (tmp_path / "suite.json").write_text(json.dumps({"size": 3, "ids_sha256": "i" * 64,
                                                     "question_ids": ["q1", "q2", "q3_abs"]}))
    (tmp_path / "fp" / "memory.json").write_text(json.dumps({"sha256": "m" * 64}))
    (tmp_path / "fp" / "reader.json").write_text(json.dumps(
        {"sha256": "r" * 64, "modules": {"mnemetric.longmemeval.reader.prompt": "t" * 64}}))
    jsonl(tmp_path / "contexts.jsonl", [
        {"question_id": "q1", "tokens": 10, "items": [{"x": 1}, {"x": 2}]},
        {"question_id": "q2", "tokens": 20, "items": [{"x": 1}, {"x": 2}, {"x": 3}]},
        {"question_id": "q3_abs", "tokens": 60, "items": [{"x": 1}, {"x": 2}, {"x": 3}, {"x": 4}]}])
    jsonl(tmp_path / "hyp.jsonl", [{"question_id": q, "hypothesis": "h", "model": "gpt-4o-2024-08-06",
                                    "request_sha256": f"r{q}"} for q in ("q1", "q2", "q3_abs")])
    jsonl(tmp_path / "hyp.jsonl.eval-results-gpt-4o", [judged_line(q, f"j{q}") for q in ("q1", "q2", "q3_abs")])
    cache_file = tmp_path / "cache.sqlite3"
    with ResponseCache(cache_file) as cache:
        for q in ("q1", "q2", "q3_abs"):
            cache.put(f"j{q}", {"kind": "chat", "model": "gpt-4o-2024-08-06", "params": UPSTREAM}, {"model": "x"})
            cache.put(f"r{q}", {"kind": "chat", "model": "gpt-4o-2024-08-06",
                                "params": {"temperature": 0, "max_tokens": 800, "n": 1}}, {"model": "x"})
    return tmp_path, p, cache_file


def built(p: dict, cache_file: Path) -> dict:
    return build_manifest(FAMILY, run_sections(gather_inputs(p, cache_path=cache_file)))


def manifest(run) -> dict:
    tmp, p, cache_file = run
    return built(p, cache_file)


def test_the_sections_come_in_the_manifest_s_order_between_benchmark_and_the_gate(run):
    assert list(manifest(run)) == ["schema", "benchmark", "mnemetric_version", "variant", "suite", "adapter", "memory",
                                   "reader", "judge", "retrieval", "scoring", "packages", "counts",
                                   "official_equivalence"]
    assert manifest(run)["benchmark"] == "LongMemEval"


def test_values_are_read_from_the_run_files(run):
    m = manifest(run)
    assert m["variant"]["sha256_verified"] is True
    assert m["suite"] == {"name": "full", "kind": "full", "size": 3, "ids_sha256": "i" * 64}
    assert m["memory"]["fingerprint_sha256"] == "m" * 64
    assert m["retrieval"]["requested"] == {"granularity": "session", "context_k": 10, "context_tokens": 6000}
    # items 2, 3, 4 and tokens 10, 20, 60 per question, by hand
    assert m["retrieval"]["delivered"] == {"questions": 3, "items": {"min": 2, "mean": 3.0, "max": 4},
                                           "tokens": {"min": 10, "mean": 30.0, "max": 60}}
    assert m["counts"] == {"questions": 3, "judged": 3, "failed": 0}
    assert m["judge"]["resolved_models"] == ["gpt-4o-2024-08-06"]
    assert m["judge"]["endpoints"] == ["https://api.openai.com/v1"]
    assert m["reader"]["prompt_set_sha256"] == "t" * 64
    assert m["packages"]["dvc"] != NOT_INSTALLED
    assert "verified_at" not in json.dumps(m) and "2026-11-29" not in json.dumps(m)  # no clock


def test_params_sent_come_from_the_cache_not_from_conf(run):
    m = manifest(run)
    assert m["judge"]["params_sent"] == {"requests": 3, "values": [UPSTREAM], "not_in_cache": 0}
    assert m["reader"]["params_sent"] == {"requests": 3, "values": [{"temperature": 0, "max_tokens": 800, "n": 1}],
                                          "not_in_cache": 0}
    assert m["official_equivalence"] == {"value": False, "reasons": [
        f"judge prompt set sha256 {'p' * 64} is not the pinned upstream set "
        "80a2a38e6c8aa82aaefb929f7b755d2bdfce9253c066f20174e0ab51cc358b53"]}


def test_a_request_absent_from_the_cache_says_so(run):
    tmp, p, cache_file = run
    jsonl(tmp / "hyp.jsonl.eval-results-gpt-4o", [judged_line("q1", "jq1"), judged_line("q2", "unknown"),
                                                  judged_line("q3_abs", "jq3_abs")])
    sent = built(p, cache_file)["judge"]["params_sent"]
    assert sent == {"requests": 3, "values": [UPSTREAM], "not_in_cache": 1}
    nothing = built(p, tmp / "no-such-cache.sqlite3")["judge"]["params_sent"]
    assert nothing == {"requests": 3, "values": [], "not_in_cache": 3}
    assert not (tmp / "no-such-cache.sqlite3").exists()  # reading never creates a cache


def _edit_json(path: Path, **changes) -> None:
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))


def _edit_jsonl(path: Path, i: int, fn) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    fn(rows[i])
    jsonl(path, rows)


CHANGES = {
    "variant revision": lambda t, p: p["variant"].update(revision="b" * 40),
    "variant sha256": lambda t, p: p["variant"].update(sha256="c" * 64),
    "verification": lambda t, p: _edit_json(t / "custody" / "s.json", verified=False),
    "suite ids": lambda t, p: _edit_json(t / "suite.json", ids_sha256="j" * 64),
    "suite size": lambda t, p: _edit_json(t / "suite.json", question_ids=["q1", "q2"]),
    "adapter schema": lambda t, p: p["adapter"].update(schema="mnemetric.longmemeval-session/v2"),
    "memory name": lambda t, p: p["memory"].update(name="dense"),
    "memory config": lambda t, p: p["memory"].update(k1=1.2),
    "memory fingerprint": lambda t, p: _edit_json(t / "fp" / "memory.json", sha256="n" * 64),
    "reader model requested": lambda t, p: p["reader"].update(model="gpt-4o-mini-2024-07-18"),
    "reader model returned": lambda t, p: _edit_jsonl(t / "hyp.jsonl", 0, lambda r: r.update(model="other")),
    "judge snapshot returned": lambda t, p: _edit_jsonl(t / "hyp.jsonl.eval-results-gpt-4o", 1,
                                                        lambda r: r["autoeval_label"].update(model="gpt-4o-2024-05-13")),
    "judge prompt set": lambda t, p: _edit_jsonl(t / "hyp.jsonl.eval-results-gpt-4o", 0,
                                                 lambda r: r["mnemetric_judge"].update(prompt_set_sha256="q" * 64)),
    "judge endpoint": lambda t, p: _edit_jsonl(t / "hyp.jsonl.eval-results-gpt-4o", 0,
                                               lambda r: r["mnemetric_judge"].update(endpoint="http://127.0.0.1:9/v1")),
    "judge request (params)": lambda t, p: _edit_jsonl(t / "hyp.jsonl.eval-results-gpt-4o", 2,
                                                       lambda r: r["mnemetric_judge"].update(request_sha256="rq1")),
    "budget requested": lambda t, p: p["retrieval"].update(context_k=5),
    "budget delivered": lambda t, p: _edit_jsonl(t / "contexts.jsonl", 0, lambda r: r.update(tokens=11)),
    "scoring profile": lambda t, p: p["scoring"].update(name="mnemetric-historical"),
    "judged count": lambda t, p: jsonl(t / "hyp.jsonl.eval-results-gpt-4o", [judged_line("q1", "jq1")]),
    "failed count": lambda t, p: jsonl(t / "hyp.jsonl.eval-results-gpt-4o.failures.jsonl", [{"question_id": "q2"}]),
    "judge name": lambda t, p: p["judge"].update(name="upstream-gpt-4o-proxy"),
}

NO_CHANGE = {
    "custody clock": lambda t, p: _edit_json(t / "custody" / "s.json", verified_at="2030-01-01T00:00:00+00:00"),
    "hypothesis text": lambda t, p: _edit_jsonl(t / "hyp.jsonl", 0, lambda r: r.update(hypothesis="other text")),
    "judge label": lambda t, p: _edit_jsonl(t / "hyp.jsonl.eval-results-gpt-4o", 0,
                                            lambda r: r["autoeval_label"].update(label=False)),
    "context text": lambda t, p: _edit_jsonl(t / "contexts.jsonl", 0, lambda r: r["items"][0].update(x="y")),
    "conf judge params (not what was sent)": lambda t, p: p["judge"].update(temperature=0.1),
    "llm client settings": lambda t, p: p["llm"].update(max_concurrency=2),
}


@pytest.mark.parametrize("name", sorted(CHANGES))
def test_the_manifest_changes_when_a_recorded_input_changes(run, name):
    tmp, p, cache_file = run
    before = built(copy.deepcopy(p), cache_file)
    CHANGES[name](tmp, p)
    assert built(p, cache_file) != before


@pytest.mark.parametrize("name", sorted(NO_CHANGE))
def test_the_manifest_does_not_change_otherwise(run, name):
    tmp, p, cache_file = run
    before = json.dumps(built(copy.deepcopy(p), cache_file))
    NO_CHANGE[name](tmp, p)
    assert json.dumps(built(p, cache_file)) == before


def test_a_bad_line_names_file_and_line(run):
    tmp, p, cache_file = run
    (tmp / "contexts.jsonl").write_text('{"tokens": 1, "items": []}\n[1]\n')
    with pytest.raises(InputError) as exc:
        gather_inputs(p, cache_path=cache_file)
    assert "contexts.jsonl" in str(exc.value) and "line 2" in str(exc.value)


def test_two_prompt_sets_in_one_judged_file_are_named(run):
    tmp, p, cache_file = run
    _edit_jsonl(tmp / "hyp.jsonl.eval-results-gpt-4o", 0, lambda r: r["mnemetric_judge"].update(prompt_set_sha256="q" * 64))
    m = built(p, cache_file)
    assert m["judge"]["prompt_set_sha256"] is None and m["judge"]["prompt_set_sha256s"] == ["p" * 64, "q" * 64]
    assert "the judgments name 2 different prompt sets" in m["official_equivalence"]["reasons"]


def test_an_unreadable_cache_is_an_input_error(run):
    tmp, p, _ = run
    bad = tmp / "bad.sqlite3"
    bad.write_bytes(b"this is not a database" * 100)
    with pytest.raises(InputError) as exc:
        built(p, bad)
    assert "bad.sqlite3" in str(exc.value)


def test_a_reader_model_s_prompt_set_is_the_fingerprint_of_the_reader_prompt_module(run):
    tmp, p, cache_file = run
    assert manifest(run)["reader"]["prompt_set_sha256"] == "t" * 64  # fp/reader.json modules[...reader.prompt]
    # the component says which module names its prompts (none for the extractive reader); kind is not asked
    p["reader"] = {"_target_": "mnemetric.longmemeval.components.OfflineExtractiveReader", "name": "extractive",
                   "kind": "openai"}
    assert built(p, cache_file)["reader"]["prompt_set_sha256"] is None  # no model, no prompt


def test_the_family_s_manifest_sections_read_the_files_its_params_name(run, monkeypatch):
    tmp, p, cache_file = run
    monkeypatch.setenv("MNEMETRIC_CACHE_DIR", str(tmp / "empty-cache-dir"))
    sections = FAMILY.manifest_sections(p)
    assert sections["suite"]["ids_sha256"] == "i" * 64 and sections["counts"] == {"questions": 3, "judged": 3,
                                                                                   "failed": 0}
    assert sections["judge"]["params_sent"] == {"requests": 3, "values": [], "not_in_cache": 3}  # another cache


# ------------------------------------------------------------------ the result card's rows

DETAIL = {"overall": 0.5, "task_averaged": 0.25, "abstention": {"accuracy": 0.75, "n": 4}, "n": 8,
          "ci95": {"overall": {"low": 0.125, "high": 0.875}, "task_averaged": {"low": 0.0, "high": 0.5},
                   "abstention": None},
          "per_type": {"multi-session": {"accuracy": 0.5, "n": 2, "ci95": {"low": 0.1, "high": 0.9}}}}
HEADLINE = {"overall": 0.5, "task_averaged": 0.25, "abstention": 0.75, "n": 8, "per_type": {"multi-session": 0.5}}
RETRIEVAL = {"granularity": "session", "exclude_abs": {"n": 6, "session": {"recall_all@5": 0.5, "ndcg_any@5": 0.25,
                                                                            "recall_any@5": 0.9}}}


def test_qa_rows_from_the_detail_layout():
    assert qa_rows(DETAIL) == [CardRow("overall accuracy", 0.5, 0.125, 0.875, 8),
                               CardRow("task-averaged accuracy", 0.25, 0.0, 0.5, 8),
                               CardRow("abstention accuracy", 0.75, None, None, 4),
                               CardRow("multi-session", 0.5, 0.1, 0.9, 2)]


def test_qa_rows_from_the_headline_layout():
    assert qa_rows(HEADLINE) == [CardRow("overall accuracy", 0.5, None, None, 8),
                                 CardRow("task-averaged accuracy", 0.25, None, None, 8),
                                 CardRow("abstention accuracy", 0.75, None, None, None),
                                 CardRow("multi-session", 0.5, None, None, None)]


def test_retrieval_rows_are_print_retrieval_metrics_set_only():
    # recall_any@5 is not one print_retrieval_metrics.py prints: left out
    assert retrieval_rows(RETRIEVAL) == [CardRow("session recall_all@5", 0.5, n=6), CardRow("session ndcg_any@5", 0.25, n=6)]


def test_card_rows_need_the_qa_metrics():
    assert card_rows({"qa": None, "retrieval": RETRIEVAL}) == []
    assert card_rows({"qa": HEADLINE, "retrieval": None}) == qa_rows(HEADLINE)
    assert [r.label for r in card_rows({"qa": HEADLINE, "retrieval": RETRIEVAL})][-2:] == [
        "session recall_all@5", "session ndcg_any@5"]
    assert FAMILY.card.inputs["qa"] == ("metrics/detail/qa.json", "metrics/qa.json")


# ------------------------------------------------------------------ the files whose sha256 custody keeps


def test_output_files_cover_the_run():
    p = {"variant": {"file": "f.json"}, "paths": {
        "raw_dir": "data/raw", "adapted": "data/adapted/s.jsonl", "retrieval_log": "data/runs/r.jsonl",
        "contexts": "data/runs/c.jsonl", "hypotheses": "data/runs/h.jsonl", "judged": "data/runs/h.jsonl.eval-results-x"}}
    assert FAMILY.output_files(p) == [
        "data/raw/f.json", "data/adapted/s.jsonl", "data/runs/r.jsonl", "data/runs/c.jsonl", "data/runs/h.jsonl",
        "data/runs/h.jsonl.failures.jsonl", "data/runs/h.jsonl.eval-results-x",
        "data/runs/h.jsonl.eval-results-x.failures.jsonl"]
