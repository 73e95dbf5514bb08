"""The pages in a real browser: headless Chromium (Debian's, installed by .ci/run) loading them from
`publisher serve`, at desktop and phone widths, with and without script."""
from __future__ import annotations

import json
import threading

import pytest
import requests
from support.browser import Chromium

from publisher.pipeline import build
from publisher.serve import make_server

PAGES = {"index": "/", "reference": "/docs.html", "calculator": "/calculator.html"}
WIDTHS = {1280: 900, 390: 844}

CHARTS_JS = """
[...document.querySelectorAll('figure.chart')].map(f => {
  const plot = f.querySelector('g.plot'), svg = f.querySelector('svg'), box = svg && svg.getBoundingClientRect();
  const inside = el => { const r = el.getBoundingClientRect(), x = r.left + r.width / 2, y = r.top + r.height / 2;
                         return x >= box.left - 1 && x <= box.right + 1 && y >= box.top - 1 && y <= box.bottom + 1 && r.width > 0; };
  return {id: f.id, domain: plot && plot.dataset.domain, range: plot && plot.dataset.range,
          series: [...f.querySelectorAll('g.series')].filter(g => g.closest('g.plot')).map(g => ({name: g.dataset.series,
            points: [...g.querySelectorAll('circle')].map(c => ({x: +c.dataset.x, y: +c.dataset.y,
              cx: +c.getAttribute('cx'), cy: +c.getAttribute('cy'), shown: inside(c)}))})),
          bars: [...f.querySelectorAll('rect[data-label]')].map(r => ({label: r.dataset.label, value: +r.dataset.value,
              width: +r.getAttribute('width'), shown: inside(r)})),
          table: f.querySelectorAll('table tr').length};
})
"""


def number(text: str) -> float:
    return float(text.split()[0].lstrip("$").replace(",", ""))


@pytest.fixture(scope="module")
def site(demo_snapshot, demo_profile, tmp_path_factory):
    out = tmp_path_factory.mktemp("browser-site") / "out"
    build(demo_snapshot, demo_profile, out)
    server = make_server(out, port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    b = Chromium(tmp_path_factory.mktemp("chromium-profile"))
    yield b
    b.close()


@pytest.fixture
def page(browser):
    """The browser with a clean slate per test: script on, light scheme, no events."""
    browser.scripts(True)
    browser.send("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "light"}]})
    browser.events.clear()
    return browser


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    return tmp_path_factory.mktemp("screenshots")


@pytest.mark.parametrize("width", list(WIDTHS))
@pytest.mark.parametrize("name", list(PAGES))
def test_pages_load_without_errors_and_fit_the_screen(site, page, shots, name, width):
    page.viewport(width, WIDTHS[width])
    page.goto(site + PAGES[name])
    assert page.eval("document.readyState") == "complete"
    assert page.console_errors() == []
    # No sideways scrolling: nothing is wider than the screen (wide tables and code scroll inside their box).
    assert page.eval("document.documentElement.scrollWidth") <= width
    assert page.eval("window.innerWidth") == width
    size = page.screenshot(shots / f"{name}-{width}.png", full_page=True)
    assert size[0] == width and size[1] >= WIDTHS[width] * (0.9 if name == "calculator" else 1.5)
    assert page.eval("document.querySelector('h1').getBoundingClientRect().right") <= width


def test_the_charts_plot_the_published_data(site, page):
    page.viewport(1280, 900)
    page.goto(site + "/")
    charts = {c["id"]: c for c in page.eval(CHARTS_JS)}
    history = requests.get(site + "/prices/history").json()["points"]
    grid = requests.get(site + "/rewards/grid").json()["points"]
    counts = requests.get(site + "/minipools").json()["countsByStatus"]

    expected = {
        "chart-ggp-avax": {"GGP in AVAX": [(p["timestamp"], p["ggpInAvax"]) for p in history]},
        "chart-ggp-usd": {"GGP in USD": [(p["timestamp"], p["ggpInUSD"]) for p in history]},
        "chart-avax-usd": {"AVAX in USD": [(p["timestamp"], p["avaxInUSD"]) for p in history]},
        "chart-share": {"AVAX per ggAVAX": [(p["ggavaxTime"], p["ggavaxExchangeRate"]) for p in history
                                            if p["ggavaxExchangeRate"] is not None]},
        "chart-apr": {f"{int(a):,} AVAX": [(p["collateralizationPct"], p["result"]["aprPct"]) for p in grid
                                           if p["avaxStaked"] == a] for a in ("1000", "4000", "10000")},
    }
    assert len(history) > 60 and len(expected["chart-share"]["AVAX per ggAVAX"]) >= 1
    for chart_id, series in expected.items():
        chart = charts[chart_id]
        assert {s["name"]: [(p["x"], p["y"]) for p in s["points"]] for s in chart["series"]} == series, chart_id
        x0, x1, y0, y1 = map(float, chart["domain"].split())
        left, right, bottom, top = map(float, chart["range"].split())
        for s in chart["series"]:
            for p in s["points"]:
                assert p["shown"], (chart_id, p)
                if x1 > x0:
                    assert p["cx"] == pytest.approx(left + (p["x"] - x0) / (x1 - x0) * (right - left), abs=0.01)
                assert p["cy"] == pytest.approx(bottom - (p["y"] - y0) / (y1 - y0) * (bottom - top), abs=0.01)
        assert chart["table"] == 1 + len({p[0] for pts in series.values() for p in pts})  # header + one row per x
    bars = charts["chart-minipools"]["bars"]
    assert {b["label"]: b["value"] for b in bars} == counts and all(b["shown"] or b["value"] == 0 for b in bars)
    top_bar = max(bars, key=lambda b: b["value"])
    assert all(b["width"] == pytest.approx(top_bar["width"] * b["value"] / top_bar["value"], abs=0.02) for b in bars)
    # The APY chart says it has no data rather than drawing made-up points while the history is short.
    assert "chart-apy" in charts and not charts["chart-apy"]["series"]
    assert page.console_errors() == []


def test_the_calculator_answers_in_place(site, page, shots):
    page.viewport(390, 844)
    page.goto(site + "/calculator.html")
    for ggp, avax in (("10000", "1000"), ("1500", "1000")):
        page.eval(f"document.getElementById('ggpStaked').value = '{ggp}'; document.getElementById('avaxStaked').value = '{avax}';"
                  "document.getElementById('r-apr') && document.getElementById('r-apr').remove();"
                  "document.querySelector('#calc button').click()")
        page.wait_for("!!document.getElementById('r-apr')")
        answer = requests.get(site + "/rewards/byStake", params={"ggpStaked": ggp, "avaxStaked": avax}).json()["result"]
        shown = page.eval("Object.fromEntries([...document.querySelectorAll('#answer td[id]')].map(td => [td.id, td.textContent]))")
        assert shown["r-apr"] == f"{answer['aprPct']:,.2f} %"
        assert shown["r-collateralization"] == f"{answer['collateralizationRatioPct']:,.2f} %"
        assert number(shown["r-effective"]) == pytest.approx(answer["effectiveGGPStaked"], abs=5e-5) and shown["r-effective"].endswith(" GGP")
        assert number(shown["r-ggp-cycle"]) == pytest.approx(answer["ggpPerCycle"], abs=5e-5)
        assert number(shown["r-ggp-year"]) == pytest.approx(answer["ggpPerYear"], abs=5e-5)
        assert number(shown["r-avax-cycle"]) == pytest.approx(answer["avaxPerCycle"], abs=5e-5)
        assert number(shown["r-avax-year"]) == pytest.approx(answer["avaxPerYear"], abs=5e-5) and shown["r-avax-year"].endswith(" AVAX")
        warnings = page.eval("[...document.querySelectorAll('#warnings li')].map(li => li.textContent)")
        assert warnings == [w["message"] for w in answer["warnings"]]
        assert page.eval("location.pathname") == "/calculator.html"  # answered in place
    assert warnings and "below" in warnings[0]  # 1500 GGP on 1000 AVAX is under the minimum: said in words
    page.screenshot(shots / "calculator-answer-390.png", full_page=True)
    page.eval("document.getElementById('ggpStaked').value = '1e5'; document.getElementById('ggpStaked').removeAttribute('pattern');"
              "document.querySelector('#calc button').click()")
    page.wait_for("!!document.getElementById('error')")
    assert "ggpStaked" in page.eval("document.getElementById('error').textContent")
    assert page.console_errors() == [] or all("400" in e for e in page.console_errors())


def test_the_pages_work_without_script(site, page):
    page.viewport(1280, 900)
    page.scripts(False)
    page.goto(site + "/")
    assert page.eval("document.querySelectorAll('figure.chart svg circle').length") > 200
    assert page.eval("document.getElementById('age').textContent") == ""  # the script would have filled it
    page.goto(site + "/calculator.html")
    mark = len(page.events)
    page.eval("document.getElementById('ggpStaked').value = '10000'; document.querySelector('#calc button').click()")
    page.wait_event("Page.loadEventFired", mark)
    assert page.eval("location.pathname + location.search") == "/rewards/byStake?ggpStaked=10000&avaxStaked=1000"
    body = json.loads(page.eval("document.body.innerText"))
    assert body["inputs"] == {"ggpStaked": "10000", "avaxStaked": "1000", "ggpStakedWei": str(10**22),
                              "avaxStakedWei": str(10**21)} and body["result"]["aprPct"] > 0


def test_dark_mode_follows_the_system(site, page, shots):
    page.viewport(1280, 900)
    colors = {}
    for scheme in ("light", "dark"):
        page.send("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": scheme}]})
        page.goto(site + "/")
        colors[scheme] = page.eval("[getComputedStyle(document.body).backgroundColor, getComputedStyle(document.body).color,"
                                   " getComputedStyle(document.querySelector('.chart text')).fill]")
        page.screenshot(shots / f"index-{scheme}-1280.png")
    assert colors["light"][0] == "rgb(255, 255, 255)" and colors["dark"][0] != colors["light"][0]
    assert all(a != b for a, b in zip(colors["light"], colors["dark"], strict=True))
