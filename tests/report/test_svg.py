"""Inline-SVG charts: geometry checked by hand, text escaped, deterministic, readable without colour."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

from hypothesis import given, settings
from hypothesis import strategies as st

from mnemetric.report.svg import Bar, BarSeries, LineSeries, bar_chart, esc, fmt_interval, fmt_value, line_chart


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)  # inline SVG without xmlns is plain XML: tags are bare names


def texts(root: ET.Element) -> list[str]:
    return ["".join(t.itertext()) for t in root.iter("text")]


def bar_rects(root: ET.Element) -> list[ET.Element]:
    return [r for r in root.iter("rect") if r.get("class") == "bar"]


def test_formatting_by_hand():
    assert fmt_value(0.625) == "0.625"
    assert fmt_value(1) == "1.000"
    assert fmt_value(None) == "n/a"
    assert fmt_value(float("nan")) == "n/a"
    assert fmt_interval(0.2222, 1.0) == "[0.222, 1.000]"
    assert fmt_interval(None, 1.0) == ""
    assert esc('<a href="x">&\'') == "&lt;a href=&quot;x&quot;&gt;&amp;&#x27;"
    assert esc("a\x00b\x1bc") == "a\ufffdb\ufffdc"


def test_bar_lengths_are_proportional_to_values():
    series = [BarSeries("run", (Bar("a", 0.25), Bar("b", 0.75), Bar("c", 0.0)))]
    root = parse(bar_chart(series, title="t", id_prefix="p"))
    rects = bar_rects(root)
    widths = [float(r.get("width")) for r in rects]
    assert len(rects) == 3
    assert math.isclose(widths[1] / widths[0], 3.0, rel_tol=0.02)   # 0.75 / 0.25
    assert widths[2] == 0.0
    assert len({r.get("x") for r in rects}) == 1                      # all start at the value 0


def test_whisker_spans_low_to_high_and_label_carries_numbers():
    series = [BarSeries("run", (Bar("single-session-user", 0.5, low=0.25, high=1.0, n=8),))]
    root = parse(bar_chart(series, title="t", id_prefix="p"))
    (rect,) = bar_rects(root)
    x0, w = float(rect.get("x")), float(rect.get("width"))
    whisker = next(p for p in root.iter("path") if p.get("class") == "whisker")
    d = whisker.get("d")
    start = d.split()[0]                      # "Mx,y"
    xl = float(start[1:].split(",")[0])
    xh = float(d.split()[1][1:])              # "Hx"
    # value 0.5 ↦ x0 + w, so low 0.25 ↦ x0 + w/2 and high 1.0 ↦ x0 + 2w
    assert math.isclose(xl, x0 + w / 2, abs_tol=0.2)
    assert math.isclose(xh, x0 + 2 * w, abs_tol=0.2)
    assert "0.500 [0.250, 1.000] n=8" in texts(root)
    assert "single-session-user" in texts(root)


def test_two_series_differ_by_pattern_and_name_their_series():
    run = BarSeries("this run", (Bar("a", 0.4, 0.3, 0.5), Bar("b", 0.6)))
    base = BarSeries("baseline", (Bar("a", 0.2, 0.1, 0.3), Bar("b", 0.7)))
    root = parse(bar_chart([run, base], title="t", id_prefix="cmp"))
    fills = [r.get("fill") for r in bar_rects(root)]
    assert fills[0] == fills[2] and fills[0].startswith("#")          # series 0: solid
    assert fills[1] == fills[3] == "url(#cmp-fill1)"                   # series 1: a pattern
    assert [p.get("id") for p in root.iter("pattern")] == ["cmp-fill1"]
    labels = texts(root)
    assert "this run: 0.400 [0.300, 0.500]" in labels
    assert "baseline: 0.200 [0.100, 0.300]" in labels
    assert "baseline: 0.700" in labels
    assert "this run" in labels and "baseline" in labels               # legend


def test_missing_value_is_na_not_zero_and_out_of_domain_is_clamped_but_labelled():
    series = [BarSeries("run", (Bar("none", None), Bar("big", 1.4), Bar("one", 1.0)))]
    root = parse(bar_chart(series, title="t", id_prefix="p"))
    rects = bar_rects(root)
    assert len(rects) == 2                                             # no bar for the missing value
    assert rects[0].get("width") == rects[1].get("width")              # 1.4 drawn at the 1.0 edge
    assert "n/a" in texts(root) and "1.400" in texts(root)


def test_accessible_title_and_desc_list_every_value():
    series = [BarSeries("run", (Bar("a", 0.125, 0.0, 0.375, n=8),))]
    root = parse(bar_chart(series, title="Accuracy & more", id_prefix="acc"))
    assert root.get("role") == "img"
    assert root.get("aria-labelledby") == "acc-title acc-desc"
    assert root.find("title").text == "Accuracy & more"
    assert root.find("title").get("id") == "acc-title"
    assert root.find("desc").text == "a: run: 0.125 [0.000, 0.375] n=8"


HOSTILE = ['</text><script>alert(1)</script>', '" onload="alert(1)', "a & b <c> 'd'", "]]><!--"]


def test_hostile_text_is_escaped_everywhere():
    series = [BarSeries(HOSTILE[1], tuple(Bar(h, 0.5) for h in HOSTILE))]
    for svg in (bar_chart(series, title=HOSTILE[0], id_prefix="h"),
                line_chart([LineSeries(HOSTILE[0], ((1, 0.5), (5, 0.7)))], title=HOSTILE[2],
                           x_label=HOSTILE[3], y_label=HOSTILE[1], id_prefix="h")):
        root = parse(svg)                                              # still well-formed XML
        assert not list(root.iter("script"))
        assert all(not k.startswith("on") for el in root.iter() for k in el.attrib)
        assert "<script" not in svg
    bars = texts(parse(bar_chart(series, title=HOSTILE[0], id_prefix="h")))
    for h in HOSTILE:
        assert h in bars                                               # text round-trips exactly


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=20),
                min_size=1, max_size=5, unique=True))
def test_any_category_name_round_trips(names):
    svg = bar_chart([BarSeries("s", tuple(Bar(n, 0.5) for n in names))], title="t", id_prefix="q")
    shown = texts(parse(svg))

    def naive_xml_safe(s: str) -> str:
        out = "".join("\ufffd" if (ord(c) < 32 and c not in "\t\n\r") or c in "\x7f\ufffe\uffff" else c
                      for c in s)
        return out.replace("\r\n", "\n").replace("\r", "\n")             # XML end-of-line handling

    for n in names:
        assert naive_xml_safe(n) in [t.replace("\r\n", "\n").replace("\r", "\n") for t in shown]


def test_deterministic_bytes_and_prefixed_ids():
    series = [BarSeries("a", (Bar("x", 0.3, 0.1, 0.5),)), BarSeries("b", (Bar("x", 0.4),))]
    one = bar_chart(series, title="t", id_prefix="one")
    assert one == bar_chart(list(series), title="t", id_prefix="one")
    two = bar_chart(series, title="t", id_prefix="two")
    ids_one = {el.get("id") for el in parse(one).iter() if el.get("id")}
    ids_two = {el.get("id") for el in parse(two).iter() if el.get("id")}
    assert ids_one and all(i.startswith("one-") for i in ids_one)
    assert not ids_one & ids_two


def test_no_namespace_url_inline_but_standalone_has_it():
    series = [LineSeries("s", ((1, 0.5), (3, 0.6)))]
    assert "http" not in line_chart(series, title="t")
    assert "http" not in bar_chart([BarSeries("s", (Bar("a", 0.5),))], title="t")
    standalone = line_chart(series, title="t", standalone=True)
    assert ET.fromstring(standalone).tag == "{http://www.w3.org/2000/svg}svg"


def markers(root: ET.Element) -> list[ET.Element]:
    return [g[0] for g in root.iter("g")]


def test_line_chart_log_axis_spacing_by_hand():
    root = parse(line_chart([LineSeries("s", ((1, 0.1), (10, 0.5), (100, 0.9)))], title="t"))
    xs = [float(m.get("cx")) for m in markers(root)]
    assert math.isclose(xs[1] - xs[0], xs[2] - xs[1], abs_tol=0.2)   # log10: 0, 1, 2
    ys = [float(m.get("cy")) for m in markers(root)]
    # y = 0.1, 0.5, 0.9 on a 0..1 axis: equal steps of 0.4
    assert math.isclose(ys[0] - ys[1], ys[1] - ys[2], abs_tol=0.2)
    assert ys[0] > ys[1]                                               # higher values drawn higher


def test_line_chart_linear_axis_when_asked():
    root = parse(line_chart([LineSeries("s", ((1, 0.1), (2, 0.5), (4, 0.9)))], title="t", log_x=False))
    xs = [float(m.get("cx")) for m in markers(root)]
    assert math.isclose((xs[2] - xs[0]) / (xs[1] - xs[0]), 3.0, rel_tol=0.01)   # (4-1)/(2-1)


def test_line_series_differ_without_colour_and_none_breaks_the_line():
    a = LineSeries("session", ((1, 0.4), (3, 0.6), (5, None), (10, 0.9)))
    b = LineSeries("turn", ((1, 0.3), (3, 0.5)))
    root = parse(line_chart([a, b], title="recall", id_prefix="r"))
    lines = list(root.iter("polyline"))
    assert len(lines) == 2                                             # a: one segment (1,3); 10 alone; b: one
    assert lines[0].get("stroke-dasharray") is None
    assert lines[1].get("stroke-dasharray")                            # series 1 is dashed
    kinds = [m.tag for m in markers(root)]
    assert kinds == ["circle", "circle", "circle", "rect", "rect"]     # 3 points of a, 2 of b
    titles = ["".join(g.find("title").itertext()) for g in root.iter("g")]
    assert "session: k=10 0.900" in titles
    assert root.find("desc").text == "session: k=1 0.400, k=3 0.600, k=5 n/a, k=10 0.900; turn: k=1 0.300, k=3 0.500"
    assert {"1", "3", "5", "10"} <= set(texts(root))                   # a tick at every k
    assert "session" in texts(root) and "turn" in texts(root)          # legend
