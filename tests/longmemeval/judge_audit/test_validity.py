"""Judge validity on the bundled sample run: the lexical judge and loopback model judges (the stand-in
upstream prompts, our strict and lenient wordings) see the run's answers, controls and adversarial answers;
the repeat flip rate goes through separate caches (the main cache and the judged file unchanged); the report
page shows the section; the typed reader names a bad file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mnemetric.errors import InputError
from mnemetric.execute import ImmediateExecutor
from mnemetric.io import dumps_canonical
from mnemetric.llm.cache import CACHE_FILENAME, ResponseCache, default_cache_dir
from mnemetric.longmemeval.components import OfflineLexicalJudge, UpstreamJudge
from mnemetric.longmemeval.judge.lexical import normalize
from mnemetric.longmemeval.judge.own_prompts import OwnPromptJudge
from mnemetric.longmemeval.judge_audit.files import KEYS, read_judge_audit, write_judge_audit
from mnemetric.longmemeval.judge_audit.run import repeat_executors, run_validity
from mnemetric.longmemeval.reference import reference_by_id
from tests.conftest import ROOT
from tests.longmemeval.judge_audit.toy_judges import JUDGED, SAMPLE, Coin, rule_reply, sample_slice
from tests.support.openai_server import FakeOpenAIServer
from tests.support.standin_evaluate_qa import write_standin

MODEL = "gpt-4o-2024-08-06"


@pytest.fixture()
def env(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-AUDIT")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def matrix(base_url: str, checkout: Path, sha: str) -> list:
    return [OfflineLexicalJudge(),
            UpstreamJudge("upstream-gpt-4o", "gpt-4o", MODEL, base_url=base_url, longmemeval_dir=str(checkout),
                          evaluate_qa_sha256=sha),
            OwnPromptJudge("strict", "strict", MODEL, "strict", base_url=base_url),
            OwnPromptJudge("lenient", "lenient", MODEL, "lenient", base_url=base_url)]


def _strict_says(gold: object, answer: str) -> bool:  # tests/…/toy_judges.rule_reply's strict rule, restated
    words = set(normalize(answer).split())
    return f" {normalize(gold)} " in f" {normalize(answer)} " and not {"not", "might"} & words


def test_the_matrix_on_the_sample_run(sample_run_outputs, tmp_path, env):
    judged = sample_slice(sample_run_outputs, tmp_path)
    refs = reference_by_id(SAMPLE)
    sha = write_standin(tmp_path / "upstream")
    with FakeOpenAIServer(reply=rule_reply) as server, ImmediateExecutor({}, progress=False) as ex:
        record = run_validity(matrix(server.base_url, tmp_path / "upstream", sha), judged, refs, ex,
                              reference_file=SAMPLE)
        sent = server.count
    assert tuple(record) == KEYS
    n_items = len(record["items"])
    assert sent == 3 * n_items  # one request per item and model judge; the lexical judge sends none
    rows = {r["name"]: r for r in record["judges"]}
    assert list(rows) == ["lexical", f"upstream-gpt-4o ({MODEL})", f"strict ({MODEL})", f"lenient ({MODEL})"]
    lex, strict, lenient = rows["lexical"], rows[f"strict ({MODEL})"], rows[f"lenient ({MODEL})"]
    # the run was judged lexically: the lexical judge agrees with it exactly
    assert lex["agreement_with_run"]["overall"]["agreement"] == 1.0
    assert lex["agreement_with_run"]["flips"] == {"yes_to_no": [], "no_to_yes": []}
    # what the audit is for: the lexical judge accepts every hedged and every contradicted answer
    assert lex["adversarial"]["hedged"]["acceptance"] == 1.0 and lex["adversarial"]["contradicted"]["acceptance"] == 1.0
    assert lex["adversarial"]["vague"]["acceptance"] == 0.0 and lex["controls"]["negative"]["acceptance"] == 0.0
    assert strict["adversarial"]["hedged"]["accepted"] == 0 < lenient["adversarial"]["hedged"]["accepted"]
    golds = {q: r.answer for q, r in refs.items()}
    assert strict["controls"]["positive"]["accepted"] == sum(
        _strict_says(golds[q], str(golds[q])) for q in {i["question_id"] for i in record["items"]})
    # every item carries each judge's label; the strict judge's labels follow its rule on every set
    for item in record["items"]:
        assert set(item["labels"]) == set(rows)
        assert item["labels"][f"strict ({MODEL})"] == _strict_says(golds[item["question_id"]], item["hypothesis"])
    # pairwise: every two of {run verdicts, 4 judges}; disputed: each strict disagreement is listed
    assert len(record["pairwise"]) == 10 and record["pairwise"][0]["a"] == "run verdicts"
    for q in strict["agreement_with_run"]["flips"]["yes_to_no"]:
        assert any(r.startswith(f"strict ({MODEL}) says no") for r in record["disputed"][q])
    out = tmp_path / "judge_audit.json"
    write_judge_audit(out, record)
    audit = read_judge_audit(out)
    assert [j.name for j in audit.judges] == list(rows) and audit.official_equivalence.value is False
    assert audit.judges[0].adversarial_acceptance["hedged"] == 1.0 and audit.judges[0].flip_rate is None
    assert set(audit.disputed) == set(record["disputed"]) and all(audit.is_disputed(q) for q in audit.disputed)


def test_the_report_page_of_the_sample_run_shows_judge_validity(sample_run_outputs, tmp_path, monkeypatch):
    """The whole sample run, audited offline (lexical judge), in the report page (`mnemetric report --judge-audit`)."""
    from mnemetric.cli import main

    out = tmp_path / "judge_audit.json"
    assert main(["judge-audit", "validity", str(sample_run_outputs / JUDGED), str(SAMPLE), "--out", str(out)]) == 0
    monkeypatch.chdir(sample_run_outputs)
    page = tmp_path / "index.html"
    assert main(["report", "--out", str(page), "--judge-audit", str(out)]) == 0
    html = page.read_text()
    section = html[html.index('<section id="judge-validity">'):]
    section = section[:section.index("</section>")]
    for text in ("Judge validity", "Controls", "Adversarial answers accepted", "Judge matrix", "Pairwise agreement",
                 "lexical", "100.0% (30/30)", "0.0% (0/43)", "not measured", "disputed", "Fleiss, Cohen"):
        assert text in section, text
    plain = tmp_path / "plain.html"  # no --judge-audit: the run's own audit (stage judge_audit), when it has one
    assert (sample_run_outputs / "metrics/detail/judge_audit.json").is_file()
    assert main(["report", "--out", str(plain)]) == 0
    assert '<section id="judge-validity">' in plain.read_text()


def _snapshot(path: Path) -> list:
    with ResponseCache(path) as cache:
        return [(r.key, r.model, r.stage, dumps_canonical(cache.get(r.key))) for r in cache.rows()]


def test_repeats_use_separate_caches_and_leave_the_main_cache_alone(sample_run_outputs, tmp_path, env):
    judged = sample_slice(sample_run_outputs, tmp_path)
    before = judged.read_bytes()
    refs = reference_by_id(SAMPLE)
    n_run = len(judged.read_text().splitlines())
    folder = tmp_path / "repeats"
    with FakeOpenAIServer(reply=Coin()) as server, ImmediateExecutor({"max_concurrency": 1}, progress=False) as ex:
        judges = [OwnPromptJudge("strict", "strict", MODEL, "strict", base_url=server.base_url)]
        repeat_executor = repeat_executors(None, {"max_concurrency": 1}, folder, ex)  # the factory both doors use

        first = run_validity(judges, judged, refs, ex)
        assert first["judges"][0]["repeat"] is None
        main_cache = default_cache_dir() / "llm-cache.sqlite3"
        snapshot, sent = _snapshot(main_cache), server.count
        record = run_validity(judges, judged, refs, ex, repeats=2, repeat_executor=repeat_executor)
        assert server.count - sent == 2 * n_run  # the repeats were asked afresh, never read from the main cache
        assert _snapshot(main_cache) == snapshot  # ... and never written to it
        rep = record["judges"][0]["repeat"]
        # a coin judge, asked in order: an odd number of answers per repeat makes one repeat the mirror image
        # of the other, so exactly one of them differs from the matrix verdicts everywhere
        assert n_run % 2 == 1 and rep == {"repeats": 2, "compared": 2 * n_run, "flips": n_run, "flip_rate": 0.5,
                                          "unstable": sorted(json.loads(x)["question_id"] for x in
                                                             judged.read_text().splitlines())}
        for r in (1, 2):
            with ResponseCache(folder / f"repeat-{r}" / CACHE_FILENAME) as cache:
                assert len(cache.rows()) == n_run
        sent = server.count
        assert run_validity(judges, judged, refs, ex, repeats=2, repeat_executor=repeat_executor) == record
        assert server.count == sent  # a rerun reads the repeats' own caches: same numbers, nothing paid twice
    assert judged.read_bytes() == before


def test_the_reader_names_a_bad_file(tmp_path):
    bad = tmp_path / "audit.json"
    bad.write_text('{"official_equivalence": {"value": false, "reasons": ["x"]}}')
    with pytest.raises(InputError, match="judged_file"):
        read_judge_audit(bad)
    with pytest.raises(InputError, match="judge-audit validity"):
        read_judge_audit(tmp_path / "missing.json")


def test_the_v2_report_refuses_a_judge_audit_by_name():
    from mnemetric.errors import ConfigError
    from mnemetric.longmemeval_v2.doors import report

    with pytest.raises(ConfigError, match="--judge-audit"):
        report({}, "", None, judge_audit="metrics/detail/judge_audit.json")


def test_a_matrix_of_one_judge_twice_is_refused(sample_run_outputs):
    from mnemetric.errors import ConfigError

    with pytest.raises(ConfigError, match="distinct judges"):
        run_validity([OfflineLexicalJudge(), OfflineLexicalJudge()], sample_run_outputs / JUDGED,
                     reference_by_id(SAMPLE), None)


def test_the_command_measures_the_flip_rate_into_its_own_cache(sample_run_outputs, tmp_path, env, capsys,
                                                                monkeypatch):
    """`mnemetric judge-audit validity --repeats` (the door: the run's executor option and llm settings, one
    more executor per repeat over its own cache file); the report then shows a measured flip rate."""
    from mnemetric.cli import main

    judged = sample_slice(sample_run_outputs, tmp_path)
    option = tmp_path / "strict.yaml"
    option.write_text((ROOT / "conf/judge/strict.yaml").read_text())
    out, folder = tmp_path / "audit.json", tmp_path / "repeats"
    with FakeOpenAIServer(reply=Coin()) as server:
        assert main(["judge-audit", "validity", str(judged), str(SAMPLE), "--judge", "lexical", "--judge", str(option),
                     "--base-url", server.base_url, "--repeats", "1", "--repeat-cache", str(folder), "--out", str(out),
                     ]) == 0
    n_run = len(judged.read_text().splitlines())
    rows = read_judge_audit(out).judges
    assert rows[0].flip_rate is None and rows[1].flip_rate is not None
    with ResponseCache(folder / "repeat-1" / "llm-cache.sqlite3") as cache:
        assert len(cache.rows()) == n_run
    with ResponseCache(default_cache_dir() / "llm-cache.sqlite3") as cache:
        assert len(cache.rows()) == server.count - n_run  # the repeat's replies are in its own file only
    assert "flip rate" in capsys.readouterr().out
    page = tmp_path / "index.html"
    monkeypatch.chdir(sample_run_outputs)  # the sample run's metrics
    assert main(["report", "--out", str(page), "--judge-audit", str(out)]) == 0
    html = page.read_text()
    section = html[html.index('<section id="judge-validity">'):]
    assert f"strict ({MODEL})" in section
    assert f"/{n_run}, 1 repeat)" in section[:section.index("</section>")]  # the loopback judge's flip rate
