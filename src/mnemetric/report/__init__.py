"""Offline reports: inline-SVG charts and a self-contained HTML page from a typed report model.

Pure functions: the caller fills ``Report`` from the metric files; ``render_report`` returns the
page text and ``bar_chart`` / ``line_chart`` return SVG text. Nothing here but the door
:mod:`mnemetric.report.page` (a family's page, written atomically) reads or writes a file; no page
needs a script at view time or refers to a network address.
"""

from __future__ import annotations

from mnemetric.report.html import render_report
from mnemetric.report.model import (
    CostRow,
    Curve,
    CurvePoint,
    Custody,
    Equivalence,
    Fact,
    Flip,
    Flips,
    Headline,
    Interval,
    Report,
    Section,
    Table,
    TypeResult,
)
from mnemetric.report.svg import Bar, BarSeries, LineSeries, bar_chart, line_chart

__all__ = [
    "Bar",
    "BarSeries",
    "CostRow",
    "Curve",
    "CurvePoint",
    "Custody",
    "Equivalence",
    "Fact",
    "Flip",
    "Flips",
    "Headline",
    "Interval",
    "LineSeries",
    "Report",
    "Section",
    "Table",
    "TypeResult",
    "bar_chart",
    "line_chart",
    "render_report",
]
