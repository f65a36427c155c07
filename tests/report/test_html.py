"""The HTML report: self-contained, every number and label shown, hostile text escaped, banner first."""

from __future__ import annotations

import re
from dataclasses import replace
from html.parser import HTMLParser

import pytest

from mnemetric.report import (
    CostRow,
    Curve,
    CurvePoint,
    Custody,
    Equivalence,
    Flip,
    Flips,
    Headline,
    Interval,
    Report,
    TypeResult,
    render_report,
)


def custody(**kw) -> Custody:
    base = dict(dataset_variant="oracle", dataset_revision="98d7416c24c778c2fee6e6f3006e7a073259d48f",
                dataset_sha256="aa" * 32, dataset_verified=True, suite="development", suite_ids_sha256="bb" * 32,
                adapter_schema="mnemetric.longmemeval-session/v3", memory_system="bm25-upstream",
                memory_fingerprint="cc" * 32, reader="openai:gpt-4o-mini", judge_model="gpt-4o-2024-08-06",
                judge_prompt_set_sha256="dd" * 32, judged_file_sha256="ee" * 32)
    return Custody(**(base | kw))


def model(**kw) -> Report:
    base = dict(
        title="Run 7 on oracle",
        equivalence=Equivalence(False, ("reader is not the upstream reader", "suite is a subset")),
        custody=custody(),
        headline=(Headline("overall", 0.4321, Interval(0.1234, 0.7654), 1234, "percentile bootstrap, 1000 resamples"),
                  Headline("task_averaged", 0.5, None, None, "mean of per-type accuracies")),
        per_type=(TypeResult("temporal-reasoning", 0.375, Interval(0.125, 0.625), 8),
                  TypeResult("knowledge-update", None, None, 0)),
        series_name="this run",
        baseline_name="main",
        baseline_per_type=(TypeResult("temporal-reasoning", 0.25, Interval(0.0, 0.5), 8),
                           TypeResult("knowledge-update", 0.8, Interval(0.6, 1.0), 5)),
        retrieval_title="recall_all@k",
        curves=(Curve("session", (CurvePoint(1, 0.472), CurvePoint(5, 0.861))),
                Curve("turn", (CurvePoint(1, 0.389), CurvePoint(5, 0.667)))),
        flips=Flips("main", (Flip("q-0001", "temporal-reasoning", "wrong", "correct"),
                             Flip("q-0002_abs", "multi-session", "correct", "wrong")),
                    paired_difference=0.0714, interval=Interval(-0.0357, 0.1786), mcnemar_p=0.03125),
        cost=(CostRow("judge", 12345, 67, 890123, 4567, 1.23456), CostRow("total", 12346, 68, 890124, 4568, 2.5)),
        result_card="## Result card\n| overall | 0.432 |",
        notes=("intervals: a Mnemetric addition",),
    )
    return Report(**(base | kw))


class Collect(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def parsed(page: str) -> Collect:
    c = Collect()
    c.feed(page)
    c.close()
    return c


def test_complete_page_with_no_external_reference_and_no_script():
    page = render_report(model())
    assert page.startswith("<!DOCTYPE html>\n<html lang=\"en\">")
    assert page.endswith("</html>\n")
    assert not re.search(r"https?://|ftp://|\bsrc\s*=|\bhref\s*=|@import|url\((?!#)", page, re.I)
    tags = {t for t, _ in parsed(page).tags}
    assert not tags & {"script", "link", "img", "iframe", "object", "embed", "base", "a"}
    assert {"style", "svg", "table", "pre"} <= tags
    csp = [a["content"] for t, a in parsed(page).tags if t == "meta" and a.get("http-equiv")]
    assert csp == ["default-src 'none'; style-src 'unsafe-inline'"]


def test_every_number_and_label_of_the_model_appears():
    page = render_report(model())
    text = " ".join(parsed(page).text)
    expected = [
        # banner and title
        "official_equivalence: false", "reader is not the upstream reader", "suite is a subset", "Run 7 on oracle",
        # custody
        "oracle", "98d7416c24c778c2fee6e6f3006e7a073259d48f", "aa" * 32, "sha256 verified against the pin",
        "development", "bb" * 32, "mnemetric.longmemeval-session/v3", "bm25-upstream", "cc" * 32,
        "openai:gpt-4o-mini", "gpt-4o-2024-08-06", "dd" * 32, "ee" * 32,
        # headline: 0.4321 → 0.432, [0.1234, 0.7654] → [0.123, 0.765], n 1234 → 1,234
        "overall", "0.432", "[0.123, 0.765]", "1,234", "percentile bootstrap, 1000 resamples",
        "task_averaged", "0.500", "mean of per-type accuracies", "intervals: a Mnemetric addition",
        # per-type bars (labels inside the SVG), both series
        "temporal-reasoning", "knowledge-update", "this run: 0.375 [0.125, 0.625] n=8", "this run: n/a n=0",
        "main: 0.250 [0.000, 0.500] n=8", "main: 0.800 [0.600, 1.000] n=5",
        # curves (desc and marker titles)
        "session: k=1 0.472, k=5 0.861; turn: k=1 0.389, k=5 0.667", "recall_all@k",
        # flips: +0.0714 → +0.071, interval, p 0.03125 printed with 4 significant digits
        "Flips against main (2 questions)", "q-0001", "q-0002_abs", "wrong → correct", "correct → wrong",
        "multi-session", "+0.071 [-0.036, 0.179]", "exact McNemar p = 0.03125",
        # cost
        "judge", "12,345", "67", "890,123", "4,567", "$1.2346", "12,346", "$2.5000",
        # result card, verbatim
        "## Result card\n| overall | 0.432 |",
    ]
    missing = [e for e in expected if e not in text]
    assert not missing


def test_missing_values_say_not_recorded_and_empty_sections_are_left_out():
    m = model(custody=custody(memory_fingerprint=None, judge_prompt_set_sha256=None, dataset_verified=None),
              flips=None, cost=(), curves=(), result_card="")
    page = render_report(m)
    text = " ".join(parsed(page).text)
    assert text.count("not recorded") == 4          # the 3 custody fields + task_averaged's n
    for section in ('id="flips"', 'id="cost"', 'id="retrieval"', 'id="result-card"'):
        assert section not in page
    assert 'id="per-type"' in page and 'id="headline"' in page


def test_verification_failure_is_spelled_out():
    text = " ".join(parsed(render_report(model(custody=custody(dataset_verified=False)))).text)
    assert "NOT verified" in text


HOSTILE = '</pre></table><script>alert("x")</script><img src=x onerror=alert(1)> & \'q\''


@pytest.mark.parametrize("where", ["title", "reason", "question_id", "card", "type", "method", "custody", "series"])
def test_hostile_text_is_escaped(where):
    m = model()
    if where == "title":
        m = replace(m, title=HOSTILE)
    elif where == "reason":
        m = replace(m, equivalence=Equivalence(False, (HOSTILE,)))
    elif where == "question_id":
        m = replace(m, flips=replace(m.flips, rows=(Flip(HOSTILE, "t", "a", "b"),)))
    elif where == "card":
        m = replace(m, result_card=HOSTILE)
    elif where == "type":
        m = replace(m, per_type=(TypeResult(HOSTILE, 0.5, None, 3),))
    elif where == "method":
        m = replace(m, headline=(Headline(HOSTILE, 0.5, None, 3, HOSTILE),))
    elif where == "custody":
        m = replace(m, custody=custody(memory_system=HOSTILE, dataset_sha256=HOSTILE))
    else:
        m = replace(m, series_name=HOSTILE, baseline_name=HOSTILE)
    page = render_report(m)
    p = parsed(page)
    assert not {t for t, _ in p.tags} & {"script", "img"}
    assert not any(k.startswith("on") for _, attrs in p.tags for k in attrs)
    assert "<script" not in page and "<img" not in page
    assert any(HOSTILE in chunk for chunk in p.text)      # shown as text, unchanged


def test_deterministic_bytes():
    assert render_report(model()) == render_report(model())
    assert render_report(model()).encode("utf-8") == render_report(model(cost=tuple(model().cost))).encode("utf-8")


def test_banner_comes_first_and_states_the_verdict():
    for official, word in ((False, "official_equivalence: false"), (True, "official_equivalence: true")):
        page = render_report(model(equivalence=Equivalence(official, () if official else ("why",))))
        body = page.split("<body>\n", 1)[1]
        assert body.startswith('<section id="official-equivalence"')
        assert body.index(word) < body.index("<h1>")
        first_tags = [t for t, _ in parsed(body).tags][:2]
        assert first_tags == ["section", "strong"]


def test_order_of_sections():
    page = render_report(model())
    ids = re.findall(r'<section id="([a-z-]+)"', page)
    assert ids == ["official-equivalence", "custody", "headline", "per-type", "retrieval", "flips", "cost", "result-card"]
