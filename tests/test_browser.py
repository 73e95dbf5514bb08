"""The pages in a real browser: headless Chromium (Debian's, installed by .ci/run) loading them from
`publisher serve`, at desktop and phone widths, with and without script."""
from __future__ import annotations

import itertools
import json
import re
import threading

import pytest
import requests
from support import utc_text
from support.browser import Chromium

from publisher.build.pipeline import build
from publisher.endpoints.pages import trailing_apy
from publisher.serve import make_server

PAGES = {"index": "/", "reference": "/docs.html", "calculator": "/calculator.html"}
WIDTHS = {1280: 900, 390: 844, 360: 800}

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
    browser.goto("about:blank")  # away from the last test's page: what it still logs is not this test's
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
    share = expected["chart-share"]["AVAX per ggAVAX"]
    expected["chart-apy"] = {"ggAVAX APY after fees": trailing_apy(share)}
    assert len(history) > 60 and len(share) == len(history) and len(expected["chart-apy"]["ggAVAX APY after fees"]) >= 7
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
    assert page.console_errors() == []


LABELS_JS = """
[...document.querySelectorAll('figure.chart')].filter(f => f.querySelector('svg')).map(f => {
  const box = f.getBoundingClientRect();
  const labels = [...f.querySelectorAll('.tick, .x-title, .y-title')].filter(e => e.offsetParent !== null && e.textContent)
    .map(e => { const r = e.getBoundingClientRect();
                return {text: e.textContent, cls: e.className, size: parseFloat(getComputedStyle(e).fontSize),
                        left: r.left, right: r.right, top: r.top, bottom: r.bottom, height: r.height}; });
  return {id: f.id, left: box.left, right: box.right, svg: f.querySelector('svg').getBoundingClientRect().width, labels};
})
"""

PATHS_JS = """
[...document.querySelectorAll('code.path')].map(c => {
  const segments = [...c.childNodes].filter(n => n.nodeType === 3).map(n => {
    const r = document.createRange(); r.selectNodeContents(n); return r.getClientRects().length; });
  return {text: c.textContent, lines: c.getClientRects().length, segments};
})
"""


def test_charts_and_endpoint_names_stay_legible_on_a_360_px_phone(site, page, shots):
    """The plots shrink with the screen, their labels do not: 12 px type, none overlapping, all
    inside their chart. Endpoint paths break only after a slash."""
    page.viewport(360, 800)
    page.goto(site + "/")
    charts = page.eval(LABELS_JS)
    assert len(charts) >= 6
    for chart in charts:
        assert chart["svg"] < 300  # the drawing itself is scaled down, to about half its size
        labels = chart["labels"]
        assert labels and all(label["size"] >= 12 and label["height"] >= 12 for label in labels), chart["id"]
        assert all(chart["left"] <= label["left"] and label["right"] <= chart["right"] for label in labels), chart["id"]
        for kind, lo, hi in (("tick x", "left", "right"), ("tick y", "top", "bottom")):
            row = sorted((lab for lab in labels if lab["cls"].startswith(kind) and "value" not in lab["cls"]), key=lambda lab: lab[lo])
            assert all(a[hi] <= b[lo] + 0.5 for a, b in itertools.pairwise(row)), (chart["id"], kind, row)
    page.screenshot(shots / "index-charts-360.png", full_page=True)
    broken = 0
    for url in ("/", "/docs.html"):
        page.goto(site + url)
        paths = page.eval(PATHS_JS)
        assert len(paths) >= 15
        assert all(segments == 1 for p in paths for segments in p["segments"]), [p for p in paths if max(p["segments"]) > 1]
        broken += sum(p["lines"] > 1 for p in paths)
    assert broken  # some do break, at a slash
    page.viewport(1280, 900)
    page.goto(site + "/")
    wide = page.eval(LABELS_JS)
    assert all(label["size"] == 12 for chart in wide for label in chart["labels"])  # the same type on a desktop


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


def test_the_calculator_says_what_is_wrong_with_a_link_or_an_edit(site, page):
    page.viewport(390, 844)
    answer = "!!document.getElementById('r-apr')"
    error = "document.getElementById('error') && document.getElementById('error').textContent"
    # A shared link with an amount the form does not accept: the message, no answer.
    for query, said in (("ggpStaked=1e5&avaxStaked=1000", "GGP staked (ggpStaked) must be a whole-token amount"),
                        ("ggpStaked=12,000&avaxStaked=1000", "(got \u201c12,000\u201d)"),
                        ("ggpStaked=1500", "Own AVAX (avaxStaked) is required.")):
        page.goto(site + "/calculator.html?" + query)
        page.wait_for(error)
        assert said in page.eval(error) and not page.eval(answer), query
        assert page.eval("document.getElementById('answer').hidden") is False
    # A link the function refuses (above the GGP supply): its own message.
    page.goto(site + "/calculator.html?ggpStaked=30000000&avaxStaked=1000")
    page.wait_for(error)
    assert "ggpStaked" in page.eval(error) and not page.eval(answer)
    # A good link answers; the rate's source is described as what it is.
    page.goto(site + "/calculator.html?ggpStaked=10000&avaxStaked=1000")
    page.wait_for(answer)
    source = requests.get(site + "/rewards/params").json()["validatorRate"]["source"]
    words = {"validators": "potential reward the validator provider reports", "minipools": "finished minipools",
             "default": "the configured default"}
    assert words[source] in page.eval("document.getElementById('rate-source').textContent")
    assert all(words[s] not in page.eval("document.getElementById('rate-source').textContent") for s in words if s != source)
    # An edit to an invalid amount replaces the answer with the message; a valid one asks again.
    page.eval("const g = document.getElementById('ggpStaked'); g.value = '10000x';"
              "g.dispatchEvent(new Event('input', {bubbles: true}))")
    assert not page.eval(answer) and "(got \u201c10000x\u201d)" in page.eval(error)
    page.eval("const h = document.getElementById('ggpStaked'); h.value = '20000';"
              "h.dispatchEvent(new Event('input', {bubbles: true}))")
    assert not page.eval(answer) and not page.eval(error)
    assert "press Estimate" in page.eval("document.getElementById('stale').textContent")
    page.eval("document.querySelector('#calc button').click()")
    page.wait_for(answer)
    assert page.eval("location.search") == "?ggpStaked=20000&avaxStaked=1000"
    assert page.console_errors() == [] or all("400" in e for e in page.console_errors())


def test_the_pages_work_without_script(site, page):
    page.viewport(1280, 900)
    page.scripts(False)
    page.goto(site + "/")
    assert page.eval("document.querySelectorAll('figure.chart svg circle').length") > 200
    # The demo's devnet keeps its own clock, far from today's: the page says so in words, no script needed.
    assert page.eval("document.getElementById('age')") is None
    assert "this network's own clock" in page.eval("document.getElementById('clock').textContent")
    # The announced dates, counted from the block's time: the demo's block is before both.
    rows = page.eval("[...document.querySelectorAll('#announced-list li[id]')].map(r => r.innerText)")
    assert len(rows) == 2 and "2026-08-15" in rows[0] and "150 days left" in rows[0]
    assert "2026-12-31" in rows[1] and "288 days left" in rows[1]
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
                                   " getComputedStyle(document.querySelector('.chart .tick')).color,"
                                   " getComputedStyle(document.querySelector('.chart polyline')).stroke]")
        page.screenshot(shots / f"index-{scheme}-1280.png")
    assert colors["light"][0] == "rgb(255, 255, 255)" and colors["dark"][0] != colors["light"][0]
    assert all(a != b for a, b in zip(colors["light"], colors["dark"], strict=True))


def test_the_withdrawal_estimate_form_answers_in_words(site, page):
    """The dashboard's form asks the function and says its answer; a request the queue would refuse
    is said to be refused, with why, not placed in line."""
    page.goto(site + "/index.html")
    out = "document.getElementById('estimate-out').textContent"

    def ask(amount: str) -> str:
        page.eval(f"document.getElementById('estimate-avax').value = {amount!r}; "
                  "document.querySelector('form.estimate button').click()")
        page.wait_for(f"{out} && !{out}.startsWith('Asking')")
        return page.eval(out)

    said = ask("100")
    answer = requests.get(site + "/withdrawals/estimate", params={"amount": "100"}).json()["result"]
    assert answer["refused"] is False
    assert said.startswith("For ") and f"place {answer['position']} in line" in said and "refuse" not in said
    assert not re.search(r"\d\.\d{5,}", said) and "e-" not in said  # amounts as the pages show them
    tiny = ask("0.0000001")
    assert tiny.startswith("For less than 0.0001 AVAX (less than 0.0001 ggAVAX)") and "e-" not in tiny, tiny
    refused = ask("0")
    assert "the queue would refuse this request now" in refused and "the queue refuses a request for 0 shares." in refused
    assert "in line" not in refused


def test_the_estimate_form_never_promises_a_claim_after_the_request_expires(site, page):
    """A request the estimate sees funded after its expiration can never be claimed: the form says it
    would expire first, and its expiration delay, chosen in the form, is the one the function is asked."""
    page.goto(site + "/index.html")
    out = "document.getElementById('estimate-out').textContent"
    est = site + "/withdrawals/estimate"
    # The demo's line: the first amount whose funding the estimate dates after a 3-day expiration.
    late = next(a for a in ("100", "250", "1000", "5000")
                if requests.get(est, params={"amount": a}).json()["result"]["expiresBeforeFunding"])
    delays = [int(v) for v in page.eval("[...document.querySelectorAll('#estimate-delay option')].map(o => o.value)")]
    assert delays[0] == 3 * 86_400 and delays == sorted(delays)

    def ask(delay: int) -> str:
        page.eval(f"document.getElementById('estimate-avax').value = {late!r}; "
                  f"document.getElementById('estimate-delay').value = '{delay}'; "
                  "document.querySelector('form.estimate button').click()")
        page.wait_for(f"{out} && !{out}.startsWith('Asking')")
        return page.eval(out)

    for delay in delays:
        answer = requests.get(est, params={"amount": late, "expirationDelay": delay}).json()["result"]
        said, expires = ask(delay), f"expire{'' if answer['expiresBeforeFunding'] else 's'} at"
        assert answer["expirationDelay"] == delay
        assert f"{expires} {utc_text(answer['expirationTime'])}" in said, said
        if answer["expiresBeforeFunding"]:
            assert "before that funding" in said and "can be claimed until" not in said, said
        else:
            assert "once funded it can be claimed until it expires" in said, said
    assert page.console_errors() == []
