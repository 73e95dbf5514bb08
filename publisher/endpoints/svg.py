"""Charts as inline SVG, drawn at build time so the pages show them without script.

A small module of our own rather than a plotting library: the pages need three shapes (lines over
dates, lines over numbers, horizontal bars), the output must be small, deterministic text styled by
the page's CSS (so dark and light mode follow ``prefers-color-scheme``), and each plotted point must
carry its data value so tests can check the drawing against the published numbers. Libraries that
emit SVG (matplotlib, pygal) bring large dependencies, inline styles or script.

Every chart is a ``<figure>``: the SVG (``role="img"``, titled) plus a visually hidden data table for
screen readers. Plot geometry is recorded on the plot group (``data-domain``: x0 x1 y0 y1 in data
units; ``data-range``: the pixel box left right bottom top), and each point carries ``data-x`` and
``data-y``, so ``cx = left + (x - x0) / (x1 - x0) * (right - left)`` and likewise for y.

The SVG holds only the plot (grid, lines, points, bars) and scales with the screen; every label
(ticks, axis titles, bar names and values) is HTML placed beside it at the percentage of the plot
where its tick is, so text keeps the page's size on a phone instead of shrinking with the drawing.
Every other x tick label carries ``alt``: the page hides those where the chart is narrow.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from functools import lru_cache, partial

from markupsafe import Markup, escape

WIDTH, HEIGHT = 440, 260  # the plot's own coordinates; labels are HTML around it
PAD = 6  # room for the markers at the plot's edges (and the x tick marks below it)
BAR_WIDTH, BAR_PITCH, BAR_HEIGHT = 320, 26, 18


@dataclass(frozen=True)
class Series:
    name: str
    points: tuple[tuple[float, float], ...]  # (x, y) in data units, x ascending


def nice_step(span: float, count: int = 5, whole: bool = False) -> float:
    """A 1-2-5 step (or 2.5) giving about ``count`` intervals over ``span``; ``whole``: a whole number."""
    if span <= 0 or not math.isfinite(span):
        return 1.0
    raw = span / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in ((1, 2, 5, 10) if whole else (1, 2, 2.5, 5, 10)) if m * mag >= raw)
    return max(1, round(step)) if whole else step


def ticks(lo: float, hi: float, count: int = 5, whole: bool = False) -> list[float]:
    """Round tick values covering [lo, hi] (which is widened to them); ``whole``: whole numbers only
    (counts, places), a single value widened by one each side."""
    if hi == lo:
        lo, hi = ((lo - 1, hi + 1) if lo == 0 or whole else (lo - abs(lo) * 0.05, hi + abs(hi) * 0.05))
    step = nice_step(hi - lo, count, whole)
    start, end = math.floor(lo / step + 1e-9), math.ceil(hi / step - 1e-9)
    return [round(i * step, 12) for i in range(start, end + 1)]


def number(value: float, step: float | None = None) -> str:
    """A label with thousands separated: with ``step``, the decimals that step needs (ticks,
    fixed precision); without, up to six significant digits, trailing zeros dropped. A positive
    amount that would show as 0 reads "less than" its smallest shown, never 0."""
    # -0.0 is 0.0 (one key to remember, so one label for both, whichever came first).
    return _label(value + 0, step)


@lru_cache(maxsize=1 << 16)  # remembered: the thousands of requester pages label one line's places
def _label(value: float, step: float | None) -> str:
    if step is None:
        whole = len(str(int(abs(value)))) if abs(value) >= 1 else 0
        text = f"{value:,.{max(0, 6 - whole)}f}"
        text = text.rstrip("0").rstrip(".") if "." in text else text
        return "less than 0.000001" if value > 0 and text == "0" else text
    text = f"{value:,.{_decimals(step)}f}"
    if value > 0 and not text.strip("0.,"):
        return f"less than {step:,.{_decimals(step)}f}"
    return text


@lru_cache(maxsize=256)
def _decimals(step: float) -> int:
    return next((d for d in range(10) if abs(round(step, d) - step) < 1e-12 * max(1.0, abs(step))), 10)


def day(ts: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(ts))


def _date_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    days = max(1, math.ceil((hi - lo) / 86_400 / count))
    first = math.ceil(lo / 86_400) * 86_400
    out = list(range(int(first), int(hi) + 1, days * 86_400))
    return [float(t) for t in out] or [lo]


def _fmt(v: float) -> str:
    return f"{v:.2f}".rstrip("0").rstrip(".")


class _Frame:
    def __init__(self, x0, x1, y0, y1, width=WIDTH, height=HEIGHT):
        self.x0, self.x1, self.y0, self.y1 = x0, x1, y0, y1
        self.width, self.height = width, height
        self.left, self.right, self.top, self.bottom = PAD, width - PAD, PAD, height - PAD

    def x(self, v: float) -> float:
        if self.x1 == self.x0:
            return (self.left + self.right) / 2
        return self.left + (v - self.x0) / (self.x1 - self.x0) * (self.right - self.left)

    def y(self, v: float) -> float:
        return self.bottom - (v - self.y0) / (self.y1 - self.y0) * (self.bottom - self.top)

    def attrs(self) -> str:
        return (f'data-domain="{self.x0!r} {self.x1!r} {self.y0!r} {self.y1!r}" '
                f'data-range="{_fmt(self.left)} {_fmt(self.right)} {_fmt(self.bottom)} {_fmt(self.top)}"')


def line_chart(chart_id: str, title: str, series: list[Series], *, x_label: str, y_label: str,
               dates: bool = False, y_zero: bool = False, x_format=None, y_format=None, x_whole: bool = False) -> Markup:
    """Lines with a marker per point; x in unix seconds when ``dates``, whole numbers when ``x_whole``."""
    drawn = [s for s in series if s.points]
    if not drawn:
        return Markup(f'<figure class="chart" id="{escape(chart_id)}"><figcaption>{escape(title)}</figcaption>'
                      '<p class="muted">No data yet.</p></figure>')
    xs = [x for s in drawn for x, _ in s.points]
    ys = [y for s in drawn for _, y in s.points]
    x0, x1 = min(xs), max(xs)
    yt = ticks(0 if y_zero else min(ys), max(ys))
    xt = _date_ticks(x0, x1) if dates else ticks(x0, x1, whole=x_whole)
    if not dates:
        x0, x1 = min(x0, xt[0]), max(x1, xt[-1])
    f = _Frame(x0, x1, yt[0], yt[-1])
    ystep = yt[1] - yt[0] if len(yt) > 1 else None
    yf = y_format or (lambda v: number(v, ystep))
    xf = x_format or ((lambda v: time.strftime("%b %d", time.gmtime(v))) if dates
                      else (lambda v: number(v, xt[1] - xt[0] if len(xt) > 1 else None)))
    yticks, xticks = [(f.y(v), yf(v)) for v in yt], [(f.x(v), xf(v)) for v in xt if x0 <= v <= x1]
    # A point's title: its numbers and dates need no escaping (thousands of points a page), a
    # caller's own format may.
    xl = day if dates else xf if x_format is None else (lambda v: escape(x_format(v)))
    yl = number if y_format is None else (lambda v: escape(y_format(v)))
    # With the default labels, a marker's text after its place depends on its values alone.
    xstep = None if dates else xt[1] - xt[0] if len(xt) > 1 else None
    rest = partial(_marker_rest, dates, xstep) if x_format is None and y_format is None else None
    # The last x label is centred on its tick, at most at the plot's right edge.
    out = [_open(chart_id, title, f, y_label, [t for _, t in yticks], max((len(t) for _, t in xticks), default=0) // 2 + 1)]
    out.append(_grid(f, yticks, xticks))
    out.append(f'<g class="plot" {f.attrs()}>')
    # The frame's mapping written out (thousands of points a page), as _Frame.x and _Frame.y
    # compute it, operation for operation: the same floats, so the same text.
    left, x0, dx, width = f.left, f.x0, f.x1 - f.x0, f.right - f.left
    bottom, y0, dy, height = f.bottom, f.y0, f.y1 - f.y0, f.bottom - f.top
    for i, s in enumerate(drawn):
        at = [(f"{left + (x - x0) / dx * width if dx else (f.left + f.right) / 2:.2f}".rstrip("0").rstrip("."),
               f"{bottom - (y - y0) / dy * height:.2f}".rstrip("0").rstrip(".")) for x, y in s.points]
        out.append(f'<g class="series s{i}" data-series="{escape(s.name)}">')
        if len(s.points) > 1:
            out.append(f'<polyline points="{" ".join(f"{cx},{cy}" for cx, cy in at)}"/>')
        r, name = 2.5 if len(s.points) > 40 else 3.5, escape(s.name)
        for (x, y), (cx, cy) in zip(s.points, at, strict=True):
            # Zero aside: 0.0 and -0.0 are one key and print apart.
            if rest is not None and x and y:
                out.append(f'<circle cx="{cx}" cy="{cy}" r="{r}"{rest(x, y, name)}')
            else:
                out.append(f'<circle cx="{cx}" cy="{cy}" r="{r}" data-x="{x!r}" data-y="{y!r}"><title>{xl(x)}: {yl(y)} {name}</title></circle>')
        out.append("</g>")
    out.append("</g></svg>")
    out.append(_labels(f, yticks, xticks, x_label))
    if len(drawn) > 1:
        out.append(_legend([s.name for s in drawn]))
    rows = sorted({x for s in drawn for x, _ in s.points})
    columns = [list(map({x: y for x, y in s.points}.get, rows)) for s in drawn]  # each series' y at each x, or None
    out.append(_table(title, [x_label] + [s.name for s in drawn],
                      [_data_row(dates, x, ys) for x, ys in zip(rows, zip(*columns, strict=True), strict=True)]))
    out.append("</figure>")
    return Markup("".join(out))


@lru_cache(maxsize=1 << 16, typed=True)  # the requester pages draw the places of one line, again and again
def _marker_rest(dates: bool, xstep: float | None, x: float, y: float, name: str) -> str:
    """A point's marker after its place and size: its values and its title, in the default labels."""
    return f' data-x="{x!r}" data-y="{y!r}"><title>{day(x) if dates else number(x, xstep)}: {number(y)} {name}</title></circle>'


def bar_chart(chart_id: str, title: str, bars: list[tuple[str, int]], *, value_label: str, label_header: str = "") -> Markup:
    """Horizontal bars of counts, one per label, value axis from zero."""
    height = 2 * PAD + BAR_PITCH * len(bars)
    vt = ticks(0, max([v for _, v in bars] + [1]))
    # Narrower than a line chart: drawn at a larger scale, so a row stays as tall as its label.
    f = _Frame(vt[0], vt[-1], 0, len(bars), width=BAR_WIDTH, height=height)
    step = vt[1] - vt[0]
    xticks = [(f.x(v), number(v, step)) for v in vt]
    out = [_open(chart_id, title, f, "", [label for label, _ in bars], max(len(number(v, 1)) for _, v in bars) + 1)]
    out.append(_grid(f, [], xticks))
    out.append(f'<g class="plot bars" {f.attrs()}>')
    names = []
    for i, (label, value) in enumerate(bars):
        top = f.top + BAR_PITCH * i + (BAR_PITCH - BAR_HEIGHT) / 2
        middle = _pct((top + BAR_HEIGHT / 2) / height)
        out.append(f'<rect class="s0" x="{f.left}" y="{_fmt(top)}" width="{_fmt(f.x(value) - f.left)}" height="{BAR_HEIGHT}" '
                   f'data-label="{escape(label)}" data-value="{value!r}"><title>{escape(label)}: {number(value, 1)}</title></rect>')
        names.append(f'<span class="tick y name" style="top:{middle}">{escape(label)}</span>'
                     f'<span class="tick value" style="top:{middle};left:{_pct(f.x(value) / f.width)}">{number(value, 1)}</span>')
    out.append("</g></svg>")
    out.append(_labels(f, [], xticks, value_label, "".join(names)))
    out.append(_table(title, [label_header, value_label], [_row((label, number(value, 1))) for label, value in bars]))
    out.append("</figure>")
    return Markup("".join(out))


def _pct(fraction: float) -> str:
    return f"{fraction * 100:.3f}".rstrip("0").rstrip(".") + "%"


def _open(chart_id: str, title: str, f: _Frame, y_label: str, left_labels: list[str], right: int) -> str:
    """The figure up to the plot's SVG. The plot box leaves room on its left for the widest label
    there and ``right`` characters on its right (in ``ch`` of the labels' font, which does not
    scale with the drawing)."""
    cid = escape(chart_id)
    widest = max((len(t) for t in left_labels), default=0)
    return (f'<figure class="chart" id="{cid}"><figcaption id="{cid}-title">{escape(title)}</figcaption>'
            f'<div class="frame">'
            + (f'<div class="y-title" aria-hidden="true">{escape(y_label)}</div>' if y_label else '<div></div>')
            + f'<div class="plotbox" style="margin-left:calc({widest}ch + 8px);margin-right:{right}ch">'
            # Inline in HTML, the parser puts <svg> in the SVG namespace itself: no xmlns needed.
            f'<svg viewBox="0 0 {f.width} {f.height}" role="img" aria-labelledby="{cid}-title">'
            f'<title>{escape(title)}</title>')


def _grid(f: _Frame, yticks, xticks) -> str:
    out = ['<g class="axis">']
    for y, _ in yticks:
        out.append(f'<line class="grid" x1="{f.left}" x2="{f.right}" y1="{_fmt(y)}" y2="{_fmt(y)}"/>')
    for x, _ in xticks:
        out.append(f'<line class="tick" x1="{_fmt(x)}" x2="{_fmt(x)}" y1="{f.bottom}" y2="{f.bottom + 4}"/>')
    out.append(f'<line class="base" x1="{f.left}" x2="{f.right}" y1="{f.bottom}" y2="{f.bottom}"/>')
    out.append("</g>")
    return "".join(out)


def _labels(f: _Frame, yticks, xticks, x_label: str, extra: str = "") -> str:
    """The labels beside the plot, each at its tick's place in percent of the plot box; then the
    x axis title under it. Closes the plot box and the frame."""
    out = [f'<span class="tick y" style="top:{_pct(y / f.height)}">{escape(text)}</span>' for y, text in yticks]
    out += [f'<span class="tick x{" alt" if i % 2 else ""}" style="left:{_pct(x / f.width)}">{escape(text)}</span>'
            for i, (x, text) in enumerate(xticks)]
    return "".join(out) + extra + f'</div><div></div><div class="x-title">{escape(x_label)}</div></div>'


def _legend(names: list[str]) -> str:
    # HTML, not SVG: it wraps on narrow screens. The table below is what screen readers get.
    items = "".join(f'<li class="s{i}">{escape(name)}</li>' for i, name in enumerate(names))
    return f'<ul class="legend" aria-hidden="true">{items}</ul>'


def _table(caption: str, head: list[str], rows: list[str]) -> str:
    """A table of the chart's data, its rows written (``_row``, ``_data_row``)."""
    # Wrapped: a caption can escape a clipped table box and widen the page.
    out = [f'<div class="sr-only"><table><caption>{escape(caption)}</caption><tr>']
    out += [f"<th>{escape(h)}</th>" for h in head]
    out.append("</tr>")
    out += rows
    out.append("</table></div>")
    return "".join(out)


def _row(cells: tuple[str, ...]) -> str:
    return "<tr>" + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>"


@lru_cache(maxsize=1 << 14, typed=True)  # the requester pages' tables repeat the rows of one line
def _data_row(dates: bool, x: float, ys: tuple[float | None, ...]) -> str:
    """A line chart's row: x, then each series' y at x ("–" where it has none)."""
    return _row((day(x) if dates else number(x), *("–" if y is None else number(y) for y in ys)))
