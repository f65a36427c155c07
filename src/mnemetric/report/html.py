"""One self-contained HTML report page from a ``Report`` model.

``render_report(model)`` is pure: the same model gives the same bytes (no clock, no random ids).
The page needs nothing else: inline CSS, inline SVG charts (``report.svg``), no script, no link,
no image, no external URL. Every caller-supplied text is escaped. Page order: the
official-equivalence banner with its reasons first (before the title), then custody, the headline
table, per-type bars, retrieval curves, flips against a baseline, a family's own sections (e.g. judge
validity), cost and the result card.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from mnemetric.report.model import Custody, Fact, Flips, Interval, Report, Section, TypeResult
from mnemetric.report.svg import Bar, BarSeries, LineSeries, bar_chart, esc, fmt_interval, fmt_value, line_chart

NOT_RECORDED = "not recorded"
CSP = "default-src 'none'; style-src 'unsafe-inline'"
"""The page forbids itself every fetch and every script; inline CSS and inline SVG still work."""

CSS = """\
body { font-family: "DejaVu Sans", Verdana, sans-serif; margin: 1.5rem auto; max-width: 60rem;
       color: #1a1a1a; line-height: 1.4; padding: 0 1rem; }
h1 { font-size: 1.6rem; margin: 1rem 0 0.5rem; }
h2 { font-size: 1.15rem; border-bottom: 1px solid #cccccc; padding-bottom: 0.2rem; margin-top: 1.8rem; }
.banner { border: 3px solid; padding: 0.6rem 1rem; font-size: 1rem; }
.banner.official { border-color: #2e7d32; background: #edf7ee; }
.banner.not-official { border-color: #b45309; background: #fff4e5; border-style: dashed; }
.banner ul { margin: 0.3rem 0 0; }
table { border-collapse: collapse; margin: 0.5rem 0; }
th, td { border: 1px solid #cccccc; padding: 0.25rem 0.6rem; text-align: left; vertical-align: top; }
th { background: #f2f2f2; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
code { font-size: 0.85rem; word-break: break-all; }
pre { background: #f6f6f6; border: 1px solid #dddddd; padding: 0.8rem; white-space: pre-wrap; }
.note { color: #555555; font-size: 0.9rem; }
svg { max-width: 100%; height: auto; }"""


def _count(n: int | None) -> str:
    return NOT_RECORDED if n is None else f"{n:,}"


def _text(value: str | None) -> str:
    return esc(value) if value else NOT_RECORDED


def _code(value: str | None) -> str:
    return f"<code>{esc(value)}</code>" if value else NOT_RECORDED


def _interval(iv: Interval | None) -> str:
    return fmt_interval(iv.low, iv.high) if iv is not None else ""


def _table(head: Sequence[str], rows: Iterable[Sequence[str]], numeric: Sequence[int] = ()) -> str:
    """A table; cells are already-escaped HTML; columns in ``numeric`` are right-aligned."""
    out = ["<table>", "<thead><tr>" + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr></thead>", "<tbody>"]
    for row in rows:
        cells = "".join(f'<td class="num">{c}</td>' if i in numeric else f"<td>{c}</td>" for i, c in enumerate(row))
        out.append(f"<tr>{cells}</tr>")
    out += ["</tbody>", "</table>"]
    return "\n".join(out)


def banner(model: Report) -> str:
    """The official-equivalence banner; its words say the verdict, the colour only repeats it."""
    eq = model.equivalence
    cls, verdict = ("official", "official_equivalence: true — every number here equals what the "
                    "upstream scripts compute") if eq.official else (
        "not-official", "official_equivalence: false — these numbers are NOT the official upstream numbers")
    reasons = "".join(f"<li>{esc(r)}</li>" for r in eq.reasons)
    items = f"\n<ul>{reasons}</ul>" if reasons else ""
    return f'<section id="official-equivalence" class="banner {cls}" role="status">\n<strong>{esc(verdict)}</strong>{items}\n</section>'


def _verified(flag: bool | None) -> str:
    return NOT_RECORDED if flag is None else ("sha256 verified against the pin" if flag else "NOT verified")


def custody(c: Custody | Sequence[Fact]) -> str:
    """The custody table: :class:`Custody`'s fixed rows, or a family's own :class:`Fact` rows."""
    if not isinstance(c, Custody):
        rows = [(esc(f.item), _code(f.value) if f.code else _text(f.value)) for f in c]
        return '<section id="custody">\n<h2>Custody</h2>\n' + _table(("item", "value"), rows) + "\n</section>"
    rows = [("dataset variant", _text(c.dataset_variant)), ("dataset revision", _code(c.dataset_revision)),
            ("dataset sha256", _code(c.dataset_sha256)), ("verification", esc(_verified(c.dataset_verified))),
            ("suite", _text(c.suite)), ("suite id-list sha256", _code(c.suite_ids_sha256)),
            ("adapter schema", _code(c.adapter_schema)), ("memory system", _text(c.memory_system)),
            ("memory code fingerprint", _code(c.memory_fingerprint)), ("reader", _text(c.reader)),
            ("judge model snapshot", _text(c.judge_model)),
            ("judge prompt-set sha256", _code(c.judge_prompt_set_sha256)),
            ("judged file sha256", _code(c.judged_file_sha256))]
    return '<section id="custody">\n<h2>Custody</h2>\n' + _table(("item", "value"), rows) + "\n</section>"


def headline(model: Report) -> str:
    rows = [(esc(h.name), fmt_value(h.value), _interval(h.interval), _count(h.n), esc(h.method))
            for h in model.headline]
    notes = "".join(f'\n<p class="note">{esc(n)}</p>' for n in model.notes)
    return ('<section id="headline">\n<h2>Headline</h2>\n'
            + _table(("metric", "value", "interval [low, high]", "n", "method"), rows, numeric=(1, 3))
            + notes + "\n</section>")


def _bars(results: Sequence[TypeResult]) -> tuple[Bar, ...]:
    return tuple(Bar(r.question_type, r.value, r.interval.low if r.interval else None,
                     r.interval.high if r.interval else None, r.n) for r in results)


def per_type(model: Report) -> str:
    title = esc(model.per_type_title)
    if not model.per_type:
        return f'<section id="per-type">\n<h2>{title}</h2>\n<p>No per-type results.</p>\n</section>'
    series = [BarSeries(model.series_name, _bars(model.per_type))]
    if model.baseline_per_type:
        series.append(BarSeries(model.baseline_name or "baseline", _bars(model.baseline_per_type)))
    svg = bar_chart(series, title=model.per_type_title, value_label="accuracy", id_prefix="per-type")
    return f'<section id="per-type">\n<h2>{title}</h2>\n{svg}</section>'


def retrieval(model: Report) -> str:
    if not model.curves:
        return ""
    series = [LineSeries(c.name, tuple((p.k, p.value) for p in c.points)) for c in model.curves]
    svg = line_chart(series, title=model.retrieval_title, x_label="k", y_label="recall", id_prefix="retrieval")
    return f'<section id="retrieval">\n<h2>{esc(model.retrieval_title)}</h2>\n{svg}</section>'


def flips(f: Flips | None) -> str:
    if f is None:
        return ""
    rows = [(_code(r.question_id), esc(r.question_type), f"{esc(r.old_label)} → {esc(r.new_label)}") for r in f.rows]
    stats = []
    if f.paired_difference is not None:
        stats.append(f"paired difference (this run − {esc(f.baseline)}): {f.paired_difference:+.3f} "
                     f"{_interval(f.interval)}".rstrip())
    if f.mcnemar_p is not None:
        stats.append(f"exact McNemar p = {f.mcnemar_p:.4g}")
    stat_html = "".join(f"\n<p>{s}</p>" for s in stats)
    table = _table(("question id", "type", "old → new"), rows) if rows else "<p>No question changed label.</p>"
    return (f'<section id="flips">\n<h2>Flips against {esc(f.baseline)} ({len(f.rows)} question{"" if len(f.rows) == 1 else "s"})</h2>'
            f"{stat_html}\n{table}\n</section>")


def section(s: Section) -> str:
    """A family's own section: its paragraphs, then each table under its caption (every cell escaped)."""
    parts = [f'<section id="{esc(s.id)}">', f"<h2>{esc(s.title)}</h2>"]
    parts += [f"<p>{esc(p)}</p>" for p in s.paragraphs]
    for t in s.tables:
        if t.caption:
            parts.append(f"<h3>{esc(t.caption)}</h3>")
        parts.append(_table(t.head, [[esc(c) for c in row] for row in t.rows], t.numeric))
    return "\n".join(parts) + "\n</section>"


def cost(model: Report) -> str:
    if not model.cost:
        return ""
    rows = [(esc(c.stage), _count(c.requests), _count(c.cache_hits), _count(c.prompt_tokens),
             _count(c.completion_tokens), f"${c.usd:.4f}") for c in model.cost]
    return ('<section id="cost">\n<h2>Cost</h2>\n'
            + _table(("stage", "requests", "cache hits", "prompt tokens", "completion tokens", "USD"),
                     rows, numeric=(1, 2, 3, 4, 5)) + "\n</section>")


def result_card(model: Report) -> str:
    if not model.result_card:
        return ""
    return f'<section id="result-card">\n<h2>Result card</h2>\n<pre>{esc(model.result_card)}</pre>\n</section>'


def render_report(model: Report) -> str:
    """The complete page (UTF-8 text). Sections without data are left out, never shown as 0."""
    parts = [banner(model), f"<h1>{esc(model.title)}</h1>", custody(model.custody), headline(model),
             per_type(model), retrieval(model), flips(model.flips), *map(section, model.sections), cost(model),
             result_card(model)]
    body = "\n".join(p for p in parts if p)
    return ('<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
            f"<title>{esc(model.title)}</title>\n<style>\n{CSS}\n</style>\n</head>\n<body>\n{body}\n</body>\n</html>\n")
