"""Dependency-free inline-SVG charts: pure functions from chart data to SVG text.

Rules every chart follows:

* Same input → same bytes: no random ids, no clock, coordinates printed with one decimal; element
  ids are ``<id_prefix>-…`` so several charts can share a page (give each its own prefix).
* Every piece of text (titles, labels, names) is escaped (``html.escape`` with quotes), so hostile
  names cannot close an element or add an attribute.
* Readable without colour: bar series differ by fill pattern (solid, hatched, dotted, cross-hatched)
  and every bar carries a value label naming its series; line series differ by dash pattern and
  marker shape, and the legend shows both.
* Accessible: ``role="img"`` with a ``<title>`` and a ``<desc>`` that lists every value.
* No external reference: the SVG is meant to sit inside an HTML page, where no ``xmlns`` is needed;
  ``standalone=True`` adds the SVG namespace for a separate .svg file.

Numbers are shown with three decimals (``fmt_value``) and intervals as ``[low, high]``
(``fmt_interval``); a missing value is "n/a", never 0.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

PALETTE = ("#1f5f99", "#c8641e", "#2e7d32", "#7b3fa0", "#8c6d1f")
"""Dark enough for black-on-white text contrast; colour is never the only cue."""
DASHES = ("", "7 4", "2 3", "9 3 2 3", "4 2")
MARKERS = ("circle", "square", "triangle", "diamond", "cross")
SVG_NS = "http://www.w3.org/2000/svg"
FONT = 'font-family="DejaVu Sans, Verdana, sans-serif"'


@dataclass(frozen=True)
class Bar:
    """One bar: a value in a category, with an optional interval and sample size."""

    category: str
    value: float | None
    low: float | None = None
    high: float | None = None
    n: int | None = None


@dataclass(frozen=True)
class BarSeries:
    name: str
    bars: tuple[Bar, ...]


@dataclass(frozen=True)
class LineSeries:
    """One line: (x, y) points; a None y breaks the line there."""

    name: str
    points: tuple[tuple[float, float | None], ...]


_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff\ufffe\uffff]")


def esc(text: object) -> str:
    """Text safe inside an element or a quoted attribute of HTML and of XML (SVG).

    ``&``, ``<``, ``>``, ``"`` and ``'`` become entities; characters that XML forbids (C0 controls
    other than tab/newline/CR, DEL, lone surrogates, U+FFFE/U+FFFF) become U+FFFD.
    """
    return html.escape(_NOT_XML.sub("\ufffd", str(text)), quote=True)


def fmt_value(value: float | None) -> str:
    """A proportion-like number with three decimals; None or NaN → "n/a"."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.3f}"


def fmt_interval(low: float | None, high: float | None) -> str:
    """``[low, high]`` with three decimals, or "" when either end is missing."""
    if low is None or high is None:
        return ""
    return f"[{fmt_value(low)}, {fmt_value(high)}]"


def _f(x: float) -> str:
    return f"{x:.1f}"


def _open_svg(width: float, height: float, prefix: str, title: str, desc: str, standalone: bool) -> list[str]:
    ns = f' xmlns="{SVG_NS}"' if standalone else ""
    return [f'<svg{ns} role="img" width="{_f(width)}" height="{_f(height)}" '
            f'viewBox="0 0 {_f(width)} {_f(height)}" aria-labelledby="{esc(prefix)}-title {esc(prefix)}-desc" {FONT}>',
            f'<title id="{esc(prefix)}-title">{esc(title)}</title>',
            f'<desc id="{esc(prefix)}-desc">{esc(desc)}</desc>',
            f'<rect x="0" y="0" width="{_f(width)}" height="{_f(height)}" fill="#ffffff"/>']


def _pattern_defs(prefix: str, count: int) -> list[str]:
    """Fill patterns for bar series 1.. (series 0 is solid): hatched, dotted, cross-hatched."""
    out = ["<defs>"]
    for i in range(1, count):
        colour, pid, kind = PALETTE[i % len(PALETTE)], f"{esc(prefix)}-fill{i}", (i - 1) % 3
        out.append(f'<pattern id="{pid}" patternUnits="userSpaceOnUse" width="6" height="6">'
                   f'<rect width="6" height="6" fill="#ffffff"/>')
        if kind == 0:
            out.append(f'<path d="M0,6 L6,0 M-1,1 L1,-1 M5,7 L7,5" stroke="{colour}" stroke-width="1.6"/>')
        elif kind == 1:
            out.append(f'<circle cx="3" cy="3" r="1.5" fill="{colour}"/>')
        else:
            out.append(f'<path d="M0,0 L6,6 M6,0 L0,6" stroke="{colour}" stroke-width="1.2"/>')
        out.append("</pattern>")
    out.append("</defs>")
    return out


def _fill(prefix: str, i: int) -> str:
    return PALETTE[0] if i == 0 else f"url(#{esc(prefix)}-fill{i})"


def _categories(series: Sequence[BarSeries]) -> list[str]:
    seen: list[str] = []
    for s in series:
        for b in s.bars:
            if b.category not in seen:
                seen.append(b.category)
    return seen


def _bar_label(series_name: str, bar: Bar, several: bool) -> str:
    parts = [f"{series_name}:"] if several else []
    parts.append(fmt_value(bar.value))
    if (interval := fmt_interval(bar.low, bar.high)):
        parts.append(interval)
    if bar.n is not None:
        parts.append(f"n={bar.n}")
    return " ".join(parts)


def _bar_desc(series: Sequence[BarSeries]) -> str:
    items = [f"{b.category}: {_bar_label(s.name, b, True)}" for s in series for b in s.bars]
    return "; ".join(items) if items else "no data"


def bar_chart(series: Sequence[BarSeries], *, title: str, value_label: str = "accuracy",
              id_prefix: str = "bars", domain: tuple[float, float] = (0.0, 1.0), width: int = 760,
              standalone: bool = False) -> str:
    """Horizontal bars per category, one bar per series side by side, with interval whiskers.

    ``width`` is the preferred width; the chart grows when the value labels need more room.

    x = left + (v − lo) / (hi − lo) · plot_width, clamped to the domain (the label keeps the true
    value). Whisker from ``low`` to ``high`` through the bar's middle, with end caps.
    """
    cats, several = _categories(series), len(series) > 1
    left = min(280.0, 16.0 + 7.0 * max((len(c) for c in cats), default=4))
    longest = max((len(_bar_label(s.name, b, several)) for s in series for b in s.bars), default=8)
    label_space, bar_h, gap, top = 16.0 + 6.4 * longest, 14.0, 12.0, 44.0
    plot_w = max(320.0, width - left - label_space)
    width = int(math.ceil(left + plot_w + label_space))
    row_h = max(1, len(series)) * (bar_h + 2) + gap
    plot_h = max(row_h, len(cats) * row_h)
    height = top + plot_h + 56 + 18 * max(1, len(series))
    lo, hi = domain

    def x_of(v: float) -> float:
        return left + (min(max(v, lo), hi) - lo) / (hi - lo) * plot_w

    out = _open_svg(width, height, id_prefix, title, _bar_desc(series), standalone)
    out += _pattern_defs(id_prefix, len(series))
    out.append(f'<text x="{_f(width / 2)}" y="22" text-anchor="middle" font-size="15" font-weight="bold">{esc(title)}</text>')
    for t in range(6):
        v = lo + (hi - lo) * t / 5
        out.append(f'<line x1="{_f(x_of(v))}" y1="{_f(top)}" x2="{_f(x_of(v))}" y2="{_f(top + plot_h)}" stroke="#dddddd"/>')
        out.append(f'<text x="{_f(x_of(v))}" y="{_f(top + plot_h + 16)}" text-anchor="middle" font-size="11">{v:.1f}</text>')
    out.append(f'<text x="{_f(left + plot_w / 2)}" y="{_f(top + plot_h + 34)}" text-anchor="middle" font-size="12">{esc(value_label)}</text>')
    for r, cat in enumerate(cats):
        y0 = top + r * row_h + gap / 2
        out.append(f'<text x="{_f(left - 8)}" y="{_f(y0 + (row_h - gap) / 2 + 4)}" text-anchor="end" font-size="12">{esc(cat)}</text>')
        for i, s in enumerate(series):
            bar = next((b for b in s.bars if b.category == cat), None)
            if bar is not None:
                out += _one_bar(bar, s.name, i, y0 + i * (bar_h + 2), bar_h, x_of, id_prefix, several)
    out.append(f'<line x1="{_f(left)}" y1="{_f(top)}" x2="{_f(left)}" y2="{_f(top + plot_h)}" stroke="#333333"/>')
    out += _bar_legend(series, id_prefix, left, top + plot_h + 48)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _one_bar(bar: Bar, name: str, i: int, y: float, h: float, x_of, prefix: str, several: bool) -> list[str]:
    out, x0, end = [], x_of(0.0), x_of(0.0)
    if bar.value is not None and not math.isnan(bar.value):
        end = x_of(bar.value)
        out.append(f'<rect class="bar" x="{_f(x0)}" y="{_f(y)}" width="{_f(max(0.0, end - x0))}" height="{_f(h)}" '
                   f'fill="{_fill(prefix, i)}" stroke="#222222" stroke-width="0.8"/>')
    if bar.low is not None and bar.high is not None:
        xl, xh, ym = x_of(bar.low), x_of(bar.high), y + h / 2
        out.append(f'<path class="whisker" d="M{_f(xl)},{_f(ym)} H{_f(xh)} M{_f(xl)},{_f(ym - 4)} V{_f(ym + 4)} '
                   f'M{_f(xh)},{_f(ym - 4)} V{_f(ym + 4)}" stroke="#000000" stroke-width="1.5" fill="none"/>')
        end = max(end, xh)
    out.append(f'<text x="{_f(end + 6)}" y="{_f(y + h - 3)}" font-size="11">{esc(_bar_label(name, bar, several))}</text>')
    return out


def _bar_legend(series: Sequence[BarSeries], prefix: str, x: float, y: float) -> list[str]:
    out = []
    for i, s in enumerate(series):
        yy = y + 18 * i
        out.append(f'<rect x="{_f(x)}" y="{_f(yy - 10)}" width="22" height="12" fill="{_fill(prefix, i)}" '
                   f'stroke="#222222" stroke-width="0.8"/>')
        out.append(f'<text x="{_f(x + 28)}" y="{_f(yy)}" font-size="12">{esc(s.name)}</text>')
    return out


def _marker(kind: str, x: float, y: float, colour: str) -> str:
    s = 4.5
    if kind == "circle":
        return f'<circle cx="{_f(x)}" cy="{_f(y)}" r="{_f(s)}" fill="{colour}"/>'
    if kind == "square":
        return f'<rect x="{_f(x - s)}" y="{_f(y - s)}" width="{_f(2 * s)}" height="{_f(2 * s)}" fill="{colour}"/>'
    if kind == "triangle":
        return f'<path d="M{_f(x)},{_f(y - s - 1)} L{_f(x + s + 1)},{_f(y + s)} L{_f(x - s - 1)},{_f(y + s)} Z" fill="{colour}"/>'
    if kind == "diamond":
        return f'<path d="M{_f(x)},{_f(y - s - 1)} L{_f(x + s + 1)},{_f(y)} L{_f(x)},{_f(y + s + 1)} L{_f(x - s - 1)},{_f(y)} Z" fill="{colour}"/>'
    return (f'<path d="M{_f(x - s)},{_f(y - s)} L{_f(x + s)},{_f(y + s)} M{_f(x + s)},{_f(y - s)} '
            f'L{_f(x - s)},{_f(y + s)}" stroke="{colour}" stroke-width="2"/>')


def _x_scale(xs: list[float], log_x: bool, left: float, plot_w: float):
    use_log = log_x and xs and min(xs) > 0 and max(xs) > min(xs)
    lo, hi = (min(xs), max(xs)) if xs else (0.0, 1.0)
    if hi == lo:
        lo, hi = lo - 1, hi + 1
    if use_log:
        return lambda v: left + (math.log(v) - math.log(lo)) / (math.log(hi) - math.log(lo)) * plot_w
    return lambda v: left + (v - lo) / (hi - lo) * plot_w


def _fmt_x(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _line_desc(series: Sequence[LineSeries], x_label: str) -> str:
    parts = [f"{s.name}: " + ", ".join(f"{x_label}={_fmt_x(x)} {fmt_value(y)}" for x, y in s.points)
             for s in series]
    return "; ".join(parts) if parts else "no data"


def line_chart(series: Sequence[LineSeries], *, title: str, x_label: str = "k", y_label: str = "recall",
               id_prefix: str = "lines", log_x: bool = True, y_domain: tuple[float, float] = (0.0, 1.0),
               width: int = 760, height: int = 380, standalone: bool = False) -> str:
    """One line with markers per series; x ticks at every x present (log axis when all x > 0)."""
    xs = sorted({float(x) for s in series for x, _ in s.points})
    left, right, top, bottom = 64.0, 40.0, 44.0, 70.0 + 18 * max(1, len(series))
    plot_w, plot_h = width - left - right, height - top - bottom
    x_of = _x_scale(xs, log_x, left, plot_w)
    ylo, yhi = y_domain

    def y_of(v: float) -> float:
        return top + plot_h - (min(max(v, ylo), yhi) - ylo) / (yhi - ylo) * plot_h

    out = _open_svg(width, height, id_prefix, title, _line_desc(series, x_label), standalone)
    out.append(f'<text x="{_f(width / 2)}" y="22" text-anchor="middle" font-size="15" font-weight="bold">{esc(title)}</text>')
    for t in range(5):
        v = ylo + (yhi - ylo) * t / 4
        out.append(f'<line x1="{_f(left)}" y1="{_f(y_of(v))}" x2="{_f(left + plot_w)}" y2="{_f(y_of(v))}" stroke="#dddddd"/>')
        out.append(f'<text x="{_f(left - 6)}" y="{_f(y_of(v) + 4)}" text-anchor="end" font-size="11">{v:.2f}</text>')
    for x in xs:
        out.append(f'<line x1="{_f(x_of(x))}" y1="{_f(top)}" x2="{_f(x_of(x))}" y2="{_f(top + plot_h)}" stroke="#eeeeee"/>')
        out.append(f'<text x="{_f(x_of(x))}" y="{_f(top + plot_h + 16)}" text-anchor="middle" font-size="11">{esc(_fmt_x(x))}</text>')
    out.append(f'<path d="M{_f(left)},{_f(top)} V{_f(top + plot_h)} H{_f(left + plot_w)}" stroke="#333333" fill="none"/>')
    out.append(f'<text x="{_f(left + plot_w / 2)}" y="{_f(top + plot_h + 34)}" text-anchor="middle" font-size="12">{esc(x_label)}</text>')
    out.append(f'<text x="14" y="{_f(top + plot_h / 2)}" text-anchor="middle" font-size="12" '
               f'transform="rotate(-90 14 {_f(top + plot_h / 2)})">{esc(y_label)}</text>')
    for i, s in enumerate(series):
        out += _one_line(s, i, x_of, y_of, x_label)
    out += _line_legend(series, left, top + plot_h + 56)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _one_line(s: LineSeries, i: int, x_of, y_of, x_label: str) -> list[str]:
    colour, dash, marker = PALETTE[i % len(PALETTE)], DASHES[i % len(DASHES)], MARKERS[i % len(MARKERS)]
    dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
    out, segment = [], []
    points = sorted(s.points, key=lambda p: p[0])
    for x, y in [*points, (None, None)]:
        if y is not None and x is not None and not math.isnan(y):
            segment.append(f"{_f(x_of(float(x)))},{_f(y_of(y))}")
            continue
        if len(segment) > 1:
            out.append(f'<polyline points="{" ".join(segment)}" fill="none" stroke="{colour}" stroke-width="2"{dash_attr}/>')
        segment = []
    for x, y in points:
        if y is None or math.isnan(y):
            continue
        out.append(f"<g>{_marker(marker, x_of(float(x)), y_of(y), colour)}"
                   f"<title>{esc(s.name)}: {esc(x_label)}={esc(_fmt_x(x))} {fmt_value(y)}</title></g>")
    return out


def _line_legend(series: Sequence[LineSeries], x: float, y: float) -> list[str]:
    out = []
    for i, s in enumerate(series):
        colour, dash, marker = PALETTE[i % len(PALETTE)], DASHES[i % len(DASHES)], MARKERS[i % len(MARKERS)]
        yy = y + 18 * i
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<line x1="{_f(x)}" y1="{_f(yy - 4)}" x2="{_f(x + 36)}" y2="{_f(yy - 4)}" stroke="{colour}" stroke-width="2"{dash_attr}/>')
        out.append(_marker(marker, x + 18, yy - 4, colour))
        out.append(f'<text x="{_f(x + 44)}" y="{_f(yy)}" font-size="12">{esc(s.name)}</text>')
    return out
