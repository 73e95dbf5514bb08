"""The build-time chart module: scales, ticks, the geometry each point records, and the fallbacks."""
from __future__ import annotations

import itertools
import math
import re
import xml.etree.ElementTree as ET

import pytest

from publisher.endpoints import svg


def parse(markup) -> ET.Element:
    return ET.fromstring(str(markup))


def plotted(fig: ET.Element):
    plot = fig.find(".//g[@class='plot']") or fig.find(".//g[@class='plot bars']")
    x0, x1, y0, y1 = map(float, plot.get("data-domain").split())
    left, right, bottom, top = map(float, plot.get("data-range").split())
    return plot, (x0, x1, y0, y1), (left, right, bottom, top)


@pytest.mark.parametrize("lo,hi", [(0, 1), (0.0238, 0.0321), (22.1, 29.4), (-3, 250), (1_000, 1_000_000), (5, 5), (0, 0)])
def test_ticks_are_round_evenly_spaced_and_cover_the_data(lo, hi):
    t = svg.ticks(lo, hi)
    assert t[0] <= lo and t[-1] >= hi and 3 <= len(t) <= 12
    steps = {round(b - a, 12) for a, b in itertools.pairwise(t)}
    assert len(steps) == 1
    step = steps.pop()
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert round(mantissa, 9) in (1, 2, 2.5, 5, 10)


def test_every_point_is_drawn_where_the_recorded_scale_puts_it():
    a = svg.Series("GGP in AVAX", ((1767225600, 0.0304), (1767312000, 0.0311), (1767398400, 0.0299)))
    b = svg.Series("other", ((1767225600, 0.028), (1767398400, 0.033)))
    fig = parse(svg.line_chart("c1", "Prices", [a, b], x_label="date", y_label="AVAX", dates=True))
    plot, (x0, x1, y0, y1), (left, right, bottom, top) = plotted(fig)
    groups = plot.findall("g")
    assert [g.get("data-series") for g in groups] == ["GGP in AVAX", "other"]
    for g, series in zip(groups, (a, b), strict=True):
        circles = g.findall("circle")
        assert [(float(c.get("data-x")), float(c.get("data-y"))) for c in circles] == list(series.points)
        for c in circles:
            x, y = float(c.get("data-x")), float(c.get("data-y"))
            assert float(c.get("cx")) == pytest.approx(left + (x - x0) / (x1 - x0) * (right - left), abs=0.01)
            assert float(c.get("cy")) == pytest.approx(bottom - (y - y0) / (y1 - y0) * (bottom - top), abs=0.01)
            assert top - 0.01 <= float(c.get("cy")) <= bottom + 0.01
        line = g.find("polyline").get("points").split()
        assert line == [f"{c.get('cx')},{c.get('cy')}" for c in circles]
    assert y0 <= 0.028 and y1 >= 0.033


def test_dates_and_labels_are_on_the_axes():
    s = svg.Series("AVAX in USD", tuple((1767225600 + d * 86_400, 20 + d) for d in range(30)))
    markup = str(svg.line_chart("c2", "AVAX", [s], x_label="date (UTC)", y_label="USD per AVAX", dates=True))
    texts = re.findall(r'<(?:span|div) class="(?:tick[^"]*|[xy]-title)"[^>]*>([^<]*)</', markup)
    assert "date (UTC)" in texts and "USD per AVAX" in texts
    assert "Jan 01" in texts and any(t.startswith("Jan 2") for t in texts)
    assert "<title>2026-01-01: 20 AVAX in USD</title>" in markup  # each point's tooltip: day and value
    assert "<text" not in markup  # every label is HTML: it keeps the page's type size when the plot shrinks


def test_each_label_sits_where_its_tick_is_drawn():
    """Labels are HTML beside the SVG, placed in percent of the plot box: the same fraction of the
    viewBox as the grid line or tick mark they name. Every other x label is marked ``alt``."""
    s = svg.Series("GGP in USD", tuple((1767225600 + d * 86_400, 0.6 + d / 100) for d in range(40)))
    fig = parse(svg.line_chart("c8", "GGP", [s], x_label="date", y_label="USD", dates=True))
    width, height = map(float, fig.find(".//svg").get("viewBox").split()[2:])
    grid = [float(line.get("y1")) for line in fig.iter("line") if line.get("class") == "grid"]
    marks = [float(line.get("x1")) for line in fig.iter("line") if line.get("class") == "tick"]
    spans = [e for e in fig.iter("span") if "tick" in e.get("class", "")]
    ys = [e for e in spans if e.get("class") == "tick y"]
    xs = [e for e in spans if e.get("class").startswith("tick x")]

    def at(e: ET.Element, prop: str) -> float:
        return float(re.search(rf"{prop}:([\d.]+)%", e.get("style")).group(1))

    assert len(ys) == len(grid) >= 3 and len(xs) == len(marks) >= 3
    assert [at(e, "top") for e in ys] == pytest.approx([y / height * 100 for y in grid], abs=0.001)
    assert [at(e, "left") for e in xs] == pytest.approx([x / width * 100 for x in marks], abs=0.005)  # marks at 0.01 units
    assert [e.get("class").endswith(" alt") for e in xs] == [i % 2 == 1 for i in range(len(xs))]
    bars = parse(svg.bar_chart("c9", "Bars", [("Staking", 30), ("Error", 4)], value_label="minipools"))
    rects = bars.findall(".//rect")
    names = [e for e in bars.iter("span") if e.get("class") == "tick y name"]
    bar_height = float(bars.find(".//svg").get("viewBox").split()[3])
    assert [e.text for e in names] == ["Staking", "Error"]
    assert [at(e, "top") for e in names] == pytest.approx(
        [(float(r.get("y")) + float(r.get("height")) / 2) / bar_height * 100 for r in rects], abs=0.001)


@pytest.mark.parametrize("value,step,text", [(0.0304, None, "0.0304"), (40739.2568, None, "40,739.3"), (20, None, "20"),
                                             (0.025, 0.005, "0.025"), (27.5, 2.5, "27.5"), (1500, 500, "1,500"),
                                             (0.69061694, 0.0001, "0.6906")])
def test_numbers_are_labelled_with_the_precision_they_need(value, step, text):
    assert svg.number(value, step) == text


def test_a_remembered_label_is_the_same_whatever_was_labelled_first():
    """Labels are remembered by value, and values that compare equal share one: -0.0 and 0.0 get
    the same label in either order (a build's bytes must not depend on which page came first)."""
    svg._label.cache_clear()
    first = [svg.number(-0.0), svg.number(-0.0, 0.5), svg.number(1), svg.number(True, 0.0001)]
    svg._label.cache_clear()
    second = [svg.number(0.0), svg.number(0.0, 0.5), svg.number(1.0), svg.number(1, 0.0001)]
    assert first == second == ["0", "0.0", "1", "1.0000"]


def test_screen_readers_get_a_table_of_the_same_data():
    s = svg.Series("APR", ((0, 5.5), (10, 13.25), (150, 45.75)))
    fig = parse(svg.line_chart("c3", "APR by collateralization", [s], x_label="collateralization, %", y_label="APR, %"))
    svg_el = fig.find(".//svg")
    assert svg_el.get("role") == "img" and svg_el.get("aria-labelledby") == "c3-title"
    table = fig.find(".//table")
    assert table.find("caption").text == "APR by collateralization"
    rows = [[td.text for td in tr.findall("td")] for tr in table.findall("tr")[1:]]
    assert rows == [["0", "5.5"], ["10", "13.25"], ["150", "45.75"]]


def test_bars_record_their_values_and_lengths():
    bars = [("Prelaunch", 5), ("Staking", 30), ("Error", 0)]
    fig = parse(svg.bar_chart("c4", "Minipools by status", bars, value_label="minipools", label_header="status"))
    plot, (x0, x1, _, _), (left, right, _, _) = plotted(fig)
    rects = plot.findall("rect")
    assert [(r.get("data-label"), int(r.get("data-value"))) for r in rects] == bars
    for r in rects:
        assert float(r.get("width")) == pytest.approx((int(r.get("data-value")) - x0) / (x1 - x0) * (right - left), abs=0.01)
    assert x0 == 0 and x1 >= 30


def test_names_are_escaped_and_empty_series_say_so():
    markup = str(svg.line_chart("c5", "a <b> & c", [svg.Series("x<y", ((1, 2), (2, 3)))], x_label="x", y_label="y"))
    assert "<b>" not in markup and "a &lt;b&gt; &amp; c" in markup and 'data-series="x&lt;y"' in markup
    parse(markup)  # well-formed
    empty = str(svg.line_chart("c6", "Nothing", [svg.Series("s", ())], x_label="x", y_label="y"))
    assert "No data yet" in empty and "<svg" not in empty


def test_a_single_point_is_drawn_inside_the_plot():
    fig = parse(svg.line_chart("c7", "One", [svg.Series("s", ((1773727200, 1.0095),))], x_label="d", y_label="v", dates=True))
    plot, _, (left, right, bottom, top) = plotted(fig)
    c = plot.find(".//circle")
    assert left <= float(c.get("cx")) <= right and top <= float(c.get("cy")) <= bottom
    assert plot.find(".//polyline") is None


def test_whole_number_ticks_for_counts_and_places():
    """Places in line are whole: their axis never shows 0.950 or 2.5, one place included."""
    for lo, hi in ((1, 1), (1, 2), (1, 3), (1, 17), (3, 240), (7, 7)):
        xt = svg.ticks(lo, hi, whole=True)
        assert xt[0] <= lo and xt[-1] >= hi and len(xt) >= 2
        assert all(float(v).is_integer() for v in xt), (lo, hi, xt)
    chart = svg.line_chart("c", "t", [svg.Series("s", ((1, 5.0),))], x_label="place", y_label="AVAX", x_whole=True)
    assert "0.950" not in chart and "1.000" not in chart and ">1<" in chart


def test_a_positive_amount_too_small_to_show_is_never_0():
    assert svg.number(1e-18, 0.0001) == "less than 0.0001" and svg.number(1e-18) == "less than 0.000001"
    assert svg.number(0.0, 0.0001) == "0.0000" and svg.number(0) == "0" and svg.number(0.00006, 0.0001) == "0.0001"
