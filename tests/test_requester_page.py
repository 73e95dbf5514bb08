"""A withdrawal requester's page (/withdrawals/{address}.html) and the lookup that leads to it.

The pages of the demo build and of the wound-down chain (stuck requests) in headless Chromium,
loaded from `publisher serve`: every request's state, actions, dates and amounts as its JSON has
them; the chart's "you are here" on the published line; light and dark; 390 px without sideways
scrolling; no console errors. The lookup with script (straight to the page) and without (the form
asks /withdrawals/lookup, which `publisher serve` redirects), and the CDN's viewer function, run in
node, answering every lookup as serve does.
"""
from __future__ import annotations

import dataclasses
import http.server
import json
import re
import shutil
import subprocess
import threading
import time
from datetime import datetime
from functools import partial
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
import requests
import yaml
from ggp_devnet import devnet_profile
from support import utc_text
from support.browser import Chromium

from publisher.build.pipeline import build, context
from publisher.collect import collect
from publisher.compute import rewards as R
from publisher.config import load_profile
from publisher.endpoints import requester_page as RP
from publisher.endpoints import withdrawals as W
from publisher.endpoints.registry import load_all, match
from publisher.serve import make_server
from publisher.snapshot import QueueStep, Receipt

ROOT = Path(__file__).resolve().parents[1]
STACK = ROOT / "templates" / "aws-stack.yaml"
WIDTHS = {390: 844, 1280: 900}
STATUS_WORDS = {"pending": "Waiting in line", "pendingExpired": "In line, past its expiration",
                "funded": "Funded: ready to claim", "expiredFunded": "Funded, then expired: reclaimable", "stuck": "Stuck"}

SHOWN_JS = """
[...document.querySelectorAll('article.request')].map(a => {
  const field = f => a.querySelector(`[data-field="${f}"]`);
  const times = {};
  for (const dd of a.querySelectorAll('dd[data-field]')) {
    const t = [...dd.querySelectorAll('time')].map(t => ({iso: t.getAttribute('datetime'), ts: +t.dataset.ts,
      text: t.textContent, rel: t.nextElementSibling ? t.nextElementSibling.textContent : null}));
    if (t.length) times[dd.dataset.field] = t;
  }
  return {id: +a.dataset.id, status: a.dataset.status, label: field('status').textContent,
          advice: field('advice').textContent,
          can: Object.fromEntries([...a.querySelectorAll('[data-action]')].map(li => [li.dataset.action, {can: li.dataset.can, text: li.textContent}])),
          values: Object.fromEntries([...a.querySelectorAll('[data-value]')].map(e => [e.dataset.field, {value: +e.dataset.value, text: e.textContent}])),
          stuck: field('stuckReason') ? field('stuckReason').textContent : null,
          estimate: field('estimate') ? field('estimate').textContent : null, times};
})
"""
CHART_JS = """
(() => { const f = document.getElementById('chart-line'); if (!f) return null;
  return Object.fromEntries([...f.querySelectorAll('g.plot g.series')].map(g => [g.dataset.series,
    [...g.querySelectorAll('circle')].map(c => [+c.dataset.x, +c.dataset.y])])); })()
"""


def serve(out: Path):
    server = make_server(out, port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


@pytest.fixture(scope="module")
def site(built):
    server, url = serve(built)
    yield url
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def wound_site(wound_devnet, tmp_path_factory):
    """The wound-down chain (operations ended, ggAVAX deposits paused: funded requests past their
    expiration are stuck), built and served once for the module."""
    profile = devnet_profile(load_profile("devnet"), wound_devnet)
    snap = collect(profile).snapshot
    out = tmp_path_factory.mktemp("wound-pages") / "out"
    build(snap, profile, out)
    server, url = serve(out)
    yield url, requester_files(out)
    server.shutdown()
    server.server_close()


def requester_files(out: Path) -> list[str]:
    """The addresses the build wrote a requester file for."""
    return sorted(p.name[: -len(".json")] for p in (out / "withdrawals").glob("0x*.json"))


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    b = Chromium(tmp_path_factory.mktemp("chromium-requester"))
    yield b
    b.close()


@pytest.fixture
def page(browser):
    browser.scripts(True)
    browser.send("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "light"}]})
    browser.viewport(1280, 900)
    # Away from the last test's page first: what it still logs (a failed fetch) is not this test's.
    browser.goto("about:blank")
    browser.events.clear()
    return browser


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    return tmp_path_factory.mktemp("requester-shots")


def human(ts: int) -> str:
    return utc_text(ts, "%d %b %Y,").lstrip("0")


def number(text: str) -> float:
    return float(text.split()[0].lstrip("#").replace(",", ""))


def assert_page_is_the_json(page, url: str, address: str) -> list[dict]:
    """The page of ``address`` shows what its JSON and /withdrawals say; the requests shown."""
    body = requests.get(f"{url}/withdrawals/{address}").json()
    listing = requests.get(url + "/withdrawals").json()
    now = requests.get(url + "/status").json()["block"]["timestamp"]
    page.goto(f"{url}/withdrawals/{address}.html")
    page.wait_for("document.documentElement.dataset.countedFrom")  # the script counted the relative times
    assert page.eval("+document.documentElement.dataset.countedFrom") == now
    assert page.eval("document.getElementById('requester').textContent") == body["requester"]
    shown = page.eval(SHOWN_JS)
    assert [s["id"] for s in shown] == [r["id"] for r in body["requests"]]
    for s, r in zip(shown, body["requests"], strict=True):
        where = (address, r["id"])
        assert s["status"] == r["status"] and s["label"] == STATUS_WORDS[r["status"]], where
        assert s["advice"] == r["advice"], where
        # Each action allowed names the queue's function that takes it, with the request's id.
        for action, flag, call in (("claim", "canClaim", "claimUnstake"), ("cancel", "canCancel", "cancelRequest"),
                                   ("reclaim", "canReclaim", "reclaimExpiredRequest")):
            assert s["can"][action]["can"] == str(r[flag]).lower(), where
            said = s["can"][action]["text"]
            assert said == (f"{said.split(':')[0]}: yes ({call}({r['id']}))" if r[flag] else f"{said.split(':')[0]}: no"), where
        assert s["stuck"] == r["stuckReason"], where
        for key in ("requestTime", "claimableTime", "expirationTime"):
            (t,) = s["times"][key]
            assert t["ts"] == r[key] and t["iso"] == time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(r[key])), where
            assert t["text"] == human(r[key]) and t["rel"] == f" ({relative(r[key], now)})", where
        assert s["values"]["shares"]["value"] == r["shares"] and number(s["values"]["shares"]["text"]) == pytest.approx(r["shares"], abs=5e-5)
        assert s["values"]["expectedAvax"]["value"] == r["expectedAvax"]
        assert number(s["values"]["expectedAvax"]["text"]) == pytest.approx(r["expectedAvax"], abs=5e-5)
        if r["fulfilled"]:
            assert number(s["values"]["allocatedAvax"]["text"]) == pytest.approx(r["allocatedAvax"], abs=5e-5)
        if r["position"] is None:
            assert "position" not in s["values"] and s["estimate"] is None, where
            continue
        assert s["values"]["position"]["value"] == r["position"], where
        assert s["values"]["position"]["text"].split()[:2] == [f"#{r['position']},", "with"]
        assert number(s["values"]["aheadAvax"]["text"]) == pytest.approx(r["aheadAvax"], abs=5e-5)
        assert ("already covers it" in s["estimate"]) == r["fundableNow"], where
        # Blamed on the returns only where nothing else stops its funding.
        unexplained = not (r["fundableNow"] or r["awaitsOverdueReturns"] or r["blockedBy"] is not None
                           or r["callsFundNothing"] or r["estimatedFundingTime"] is not None)
        assert ("no minipool return known today" in s["estimate"]) == unexplained, where
        if r["estimatedFundingTime"] is not None:
            assert [t["ts"] for t in s["times"]["estimate"]] == [r["estimatedFundingTime"]], where
        warned = "It has already expired" if r["status"] == "pendingExpired" else "It expires before that"
        assert (warned in s["estimate"]) == r["expiresBeforeFunding"], where
    assert_totals_shown(page, body)
    # The deadlines: one banner per request to claim (its expiration) or expiring before its funding.
    banners = set(page.eval("[...document.querySelectorAll('#banners [id^=banner-expires-]')].map(b => +b.id.split('-').pop())"))
    assert banners == {r["id"] for r in body["requests"] if r["canClaim"] or r["expiresBeforeFunding"]}
    window = page.eval("(document.getElementById('banner-window') || {}).textContent")
    closes = listing["window"]["closesAt"]
    asks = W.window_asks(body["requests"], closes, listing["pauses"]["ggavaxDeposits"], until=True)
    assert W.window_record(listing["announcements"], asks=asks, open_requests=bool(body["requests"]), days=False)["note"] in window
    assert "days left" not in window and "day left" not in window  # counted by the script: the page stays as it is
    assert ("you have no open request" in window) == (not body["requests"])
    # Its calendar and the queue's feed, to subscribe to, linked where they are published.
    calendar = page.eval("(document.getElementById('calendar-link') || {}).href || null")
    assert calendar == (f"{url}/withdrawals/{address}.ics" if body["requests"] or closes is not None else None)
    assert page.eval("document.getElementById('feed-link').href") == f"{url}/withdrawals/feed.xml"
    for link in filter(None, (calendar, f"{url}/withdrawals/feed.xml")):
        assert requests.get(link).status_code == 200, link
    # The queue's address, for acting without the site, and its pause, where it is.
    if body["requests"]:
        assert page.eval("document.getElementById('queue-address').textContent") == listing["address"]
    assert page.eval("!!document.getElementById('banner-queue-paused')") == bool(listing["parameters"]["paused"])
    # The depositor's staleness is a warning only where a request waits in line on it.
    waits = any(r["status"] == "pending" for r in body["requests"])
    assert page.eval("!!document.getElementById('banner-depositor')") == (listing["depositor"]["stale"] and waits)
    stuck = [r for r in body["requests"] if r["status"] == "stuck"]
    assert (page.eval("!!document.getElementById('banner-stuck')")) == bool(stuck)
    # The depositor's last call, in the words of the page and the numbers of /withdrawals.
    d = listing["depositor"]
    said = page.eval("document.getElementById('depositor').textContent")
    assert human(d["lastCallTime"]) in said and f"block {d['lastCallBlock']}" in said
    # The chart: the published line, and "you are here" on each of the requester's places.
    line = listing["schedule"]["line"]
    mine = [(p["position"], p["cumulativeAvax"]) for p in line if p["requester"].lower() == address]
    chart = page.eval(CHART_JS)
    if not mine:
        assert chart is None
    else:
        assert [tuple(p) for p in chart["you are here"]] == mine
        drawn = [tuple(p) for p in chart["AVAX the line needs through each place"]]
        assert set(drawn) <= {(p["position"], p["cumulativeAvax"]) for p in line}
        # The line from its front through the requester's last place, not what is behind it.
        assert (drawn[0][0], drawn[-1][0]) == (1, max(p for p, _ in mine))
        assert page.eval("document.querySelector('#assumptions').children.length") == len(listing["schedule"]["assumptions"])
    assert page.console_errors() == []
    return body["requests"]


def assert_totals_shown(page, body: dict) -> None:
    """What claims can still pay, and apart from it what expired requests hold (ggAVAX back when
    cancelled or reclaimed; nothing while stuck), as the JSON has them."""
    assert number(page.eval("document.getElementById('total-payable').textContent")) == pytest.approx(
        body["totals"]["payableAvax"], abs=5e-5)
    shown_apart = {"total-expired": ("pendingExpired", "expiredFunded"), "total-stuck": ("stuck",)}
    for element, statuses in shown_apart.items():
        held = sum(r["expectedAvax"] for r in body["requests"] if r["status"] in statuses)
        said = page.eval(f"(document.getElementById('{element}') || {{}}).textContent || null")
        assert (said is not None) == (held > 0), element
        if said is not None:
            assert number(said.split("and ", 1)[1]) == pytest.approx(held, abs=5e-5), element


@pytest.fixture(scope="module")
def demo_requesters(built):
    return requester_files(built)


# ---- the page ------------------------------------------------------------------------------------


def test_every_demo_page_shows_its_json(site, page, built, demo_requesters):
    assert len(demo_requesters) >= 10
    assert sorted(p.name[: -len(".html")] for p in (built / "withdrawals").glob("0x*.html")) == demo_requesters
    statuses = set()
    for address in demo_requesters:
        statuses |= {r["status"] for r in assert_page_is_the_json(page, site, address)}
    assert {"pending", "pendingExpired", "funded", "expiredFunded"} <= statuses


def test_the_wound_down_pages_show_stuck_requests(wound_site, page, shots):
    wound_site, addresses = wound_site
    stuck = 0
    for address in addresses:
        for r in assert_page_is_the_json(page, wound_site, address):
            if r["status"] == "stuck":
                stuck += 1
                assert not (r["canClaim"] or r["canCancel"] or r["canReclaim"]) and r["stuckReason"]
    assert stuck >= 5
    # A stuck request says why, in its card and in a banner.
    address = next(a for a in addresses if any(r["status"] == "stuck" for r in requests.get(f"{wound_site}/withdrawals/{a}").json()["requests"]))
    page.goto(f"{wound_site}/withdrawals/{address}.html")
    assert "deposits are paused" in page.eval("document.getElementById('banner-stuck').textContent")
    # A funded request's banner says what expiry means while deposits are paused: stuck, not reclaimable.
    funded = [a for a in addresses if any(r["canClaim"] for r in requests.get(f"{wound_site}/withdrawals/{a}").json()["requests"])]
    assert funded, "the wound-down scenario has a funded request to claim"
    page.goto(f"{wound_site}/withdrawals/{funded[0]}.html")
    expires = page.eval("[...document.querySelectorAll('#banners [id^=banner-expires-]')].map(b => b.textContent).join(' ')")
    assert "it is stuck: it can no longer be claimed, and reclaiming it reverts (ggAVAX (TokenggAVAX) deposits are paused)" in expires
    assert "only be reclaimed" not in expires
    for scheme in ("light", "dark"):
        page.send("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": scheme}]})
        for width, height in WIDTHS.items():
            page.viewport(width, height)
            page.goto(f"{wound_site}/withdrawals/{address}.html")
            assert page.eval("document.documentElement.scrollWidth") <= page.eval("innerWidth") == width
            page.screenshot(shots / f"stuck-{width}-{scheme}.png", full_page=True)
    assert page.console_errors() == []


@pytest.mark.parametrize("width", list(WIDTHS))
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_page_fits_the_screen_in_both_schemes(site, page, shots, demo_requesters, width, scheme):
    busiest = max(demo_requesters, key=lambda a: requests.get(f"{site}/withdrawals/{a}").json()["count"])
    page.send("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": scheme}]})
    page.viewport(width, WIDTHS[width])
    page.goto(f"{site}/withdrawals/{busiest}.html")
    assert page.eval("document.readyState") == "complete" and page.console_errors() == []
    assert page.eval("window.innerWidth") == width
    assert page.eval("document.documentElement.scrollWidth") <= width  # no sideways scrolling
    background = page.eval("getComputedStyle(document.body).backgroundColor")
    assert background == ("rgb(255, 255, 255)" if scheme == "light" else "rgb(20, 23, 31)")
    size = page.screenshot(shots / f"requester-{width}-{scheme}.png", full_page=True)
    assert size[0] == width and size[1] > WIDTHS[width]
    # Every link on the page resolves (the site's navigation from a page one folder down included).
    links = page.eval("[...document.querySelectorAll('a[href]')].map(a => a.href).filter(h => !h.includes('#'))")
    for link in set(links):
        assert requests.get(link).status_code == 200, link


def test_a_page_reads_right_without_script(built, demo_requesters):
    """Without script the relative times stay empty: no stray space is left before the punctuation
    that follows a date, and the announced dates, whole sentences, are not punctuated twice."""
    for address in demo_requesters:
        html = (built / "withdrawals" / f"{address}.html").read_text()
        main = re.sub(r"<(script|style)\b.*?</\1>", "", html.split("<main", 1)[1], flags=re.S)
        text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", main))  # inline: tags leave nothing behind
        assert not re.search(r" [,.;:]", text), (address, re.search(r".{40} [,.;:].{10}", text))
        assert not re.search(r"[.;] ?[.;]", text), (address, re.search(r".{40}[.;] ?[.;].{10}", text))
    assert "Announced dates" in text


def test_a_page_shows_the_receipts_of_its_body(demo_snapshot, demo_profile, built, demo_requesters):
    """A body with ``receipts`` (every request's steps from the queue's logs) shows them, each step
    with its date and amounts; a body without has no history section."""
    ctx = context(demo_snapshot, demo_profile)
    who = demo_snapshot.withdraw_queue.requests[0].requester
    step = QueueStep(12, 1_700_000_000, "0x" + "ab" * 32)
    claimed = Receipt(3, who, 12_250_000_000_000_000_000, 12_500_000_000_000_000_000, 1_700_086_400, step,
                      closed="claimed", closed_at=QueueStep(13, 1_700_000_000, "0x" + "cd" * 32), paid=12_500_000_000_000_000_000)
    shared = R.canonical_value({"site": {"title": "t", "version": "v", "network": "n", "chain_id": 1},
                                "view": ctx.cached(RP.queue_view)})
    no_line = R.canonical_value({"mine": (), "curve": ()})
    html = RP.make_page(shared, (who, (), (claimed,)), no_line)
    history = html.split('id="receipts"')[1].split("</ol>")[0]
    assert 'data-field="outcome">claimed<' in history and 'data-step="funded"' not in history
    requested = history.split('data-step="requested"')[1].split("</li>")[0]
    assert human(1_700_000_000) in requested and "block 12" in requested
    assert "; 12.2500 ggAVAX; to pay 12.5000 AVAX" in requested and "Wei" not in requested
    assert "block 13" in history.split('data-step="claimed"')[1]
    # Past steps are dates alone: the script counts only the open requests' and announced times.
    assert 'class="rel"' not in history
    assert 'id="receipts"' not in RP.make_page(shared, (who, (), ()), no_line)


def relative(ts: int, now: int) -> str:
    """The words the page's script writes for ``ts`` counted from ``now``: rounded down, an hour at
    the finest, days from two days on."""
    d = ts - now
    s = abs(d)
    if s < 3600:
        return "now" if d == 0 else "in under an hour" if d > 0 else "under an hour ago"
    n, unit = (s // 3600, "hour") if s < 2 * 86_400 else (s // 86_400, "day")
    words = f"{n} {unit}{'' if n == 1 else 's'}"
    return f"in {words}" if d > 0 else f"{words} ago"


def test_the_script_counts_relative_times_from_status(site, page, demo_requesters, tmp_path):
    """The page's script writes each relative time from the block /status names, rounded down to
    the hour or the day; the page's own bytes hold none (time passing never rewrites a page)."""
    address = demo_requesters[0]
    html = requests.get(f"{site}/withdrawals/{address}.html").text
    assert re.findall(r'<span class="rel" data-ts="\d+"></span>', html)  # empty until the script runs
    now = 1_800_000_000
    cases = {now: "now", now + 30: "in under an hour", now - 3599: "under an hour ago", now + 3600: "in 1 hour",
             now - 7199: "1 hour ago", now + 47 * 3600 + 3599: "in 47 hours", now + 2 * 86_400: "in 2 days",
             now - 3 * 86_400 - 86_399: "3 days ago", now + 289 * 86_400 + 5: "in 289 days"}
    assert {ts: relative(ts, now) for ts in cases} == cases
    # The page as published, with spans for the cases, beside a /status of that block.
    spans = "".join(f'<span class="rel" data-ts="{ts}"></span>' for ts in cases)
    (tmp_path / "withdrawals").mkdir()
    (tmp_path / "withdrawals" / "page.html").write_text(html.replace("<main", f'<p id="cases">{spans}</p><main', 1))
    (tmp_path / "status").write_text(json.dumps({"block": {"number": 1, "timestamp": now}}))
    page.goto((tmp_path / "withdrawals" / "page.html").as_uri())
    # file:// has no /status to fetch: a fetch of it, made after the page's own, fails too, and once
    # it has, the page's has settled, counting nothing.
    assert page.eval("fetch('../status').then(() => 'fetched', () => 'refused')") == "refused"
    assert page.eval("document.documentElement.dataset.countedFrom") is None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(http.server.SimpleHTTPRequestHandler, directory=tmp_path))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        page.goto(f"http://127.0.0.1:{server.server_address[1]}/withdrawals/page.html")
        page.wait_for("document.documentElement.dataset.countedFrom")
        shown = page.eval("[...document.querySelectorAll('#cases span.rel')].map(s => [+s.dataset.ts, s.textContent])")
    finally:
        server.shutdown()
        server.server_close()
    assert dict(shown) == {ts: f" ({w})" for ts, w in cases.items()}


def test_the_script_gives_the_key_dates_in_the_viewers_own_zone(site, page, demo_requesters):
    """Beside a UTC date the page counts from, the viewer's own time, its zone named, where the
    viewer's clock is not on UTC (the window's end, 00:00 UTC, is the evening before in Los
    Angeles); on UTC, nothing more than the relative time."""
    address = demo_requesters[0]
    body = requests.get(f"{site}/withdrawals/{address}").json()
    r = body["requests"][0]
    try:
        for zone in ("America/Los_Angeles", "Asia/Kolkata", "UTC"):
            page.send("Emulation.setTimezoneOverride", {"timezoneId": zone})
            page.goto(f"{site}/withdrawals/{address}.html")
            page.wait_for("document.documentElement.dataset.countedFrom")
            rel = page.eval(f"document.querySelector('#request-{r['id']} span.rel[data-ts=\"{r['expirationTime']}\"]').textContent")
            local = datetime.fromtimestamp(r["expirationTime"], ZoneInfo(zone))  # summer time included
            if zone == "UTC":
                assert "your time" not in rel, rel
                continue
            clock = local.strftime("%H:%M" + (":%S" if r["expirationTime"] % 60 else ""))
            assert f"your time: {local.day} {local.strftime('%b')}, {clock}" in rel, (zone, rel)
    finally:
        page.send("Emulation.setTimezoneOverride", {"timezoneId": ""})
    assert page.console_errors() == []


def test_the_registry_routes_a_page_beside_its_json():
    address = "0x" + "aB" * 20
    assert match(f"/withdrawals/{address}.html").path == RP.PAGE_PATH
    assert match(f"/withdrawals/{address}").path == RP.JSON_PATH
    assert match(RP.LOOKUP_PATH).path == RP.LOOKUP_PATH
    page = load_all()[RP.PAGE_PATH]
    assert page.canonical(f"/withdrawals/{address}.html") == f"/withdrawals/{address.lower()}.html"
    assert page.content_type.startswith("text/html") and not load_all()[RP.LOOKUP_PATH].documented


# ---- the lookup ----------------------------------------------------------------------------------

GOOD = "0x119A88dAf667cF9Aa39f8A722009CaB3A5a4DD91"
LOOKUPS = [
    f"address={GOOD}", f"address={GOOD.lower()}", f"address=%20{GOOD}%20", f"address=+{GOOD}", f"address={GOOD}&x=1",
    "address=0x12", "address=", "address", "", "x=1", f"address={GOOD}&address={GOOD}", "address=hello%20world",
    "address=0X" + GOOD[2:], "address=" + "f" * 90, f"address={GOOD}00", "address=0x%ZZ",
]


def test_serve_answers_the_lookup(site):
    for query in LOOKUPS:
        resp = requests.get(f"{site}/withdrawals/lookup?{query}", allow_redirects=False)
        status, where, message = RP.lookup(query)
        assert resp.status_code == status, query
        if status == 302:
            assert resp.headers["Location"] == where == f"/withdrawals/{GOOD.lower()}.html", query
        else:
            assert resp.status_code == 400 and resp.json() == {"error": {"code": where, "message": message}}, query
    # An address without an open request: the redirect still goes to its page, a 404 that says so.
    nobody = "0x" + "0" * 39 + "1"
    resp = requests.get(f"{site}/withdrawals/lookup?address={nobody}")
    assert resp.status_code == 404 and resp.url.endswith(f"/withdrawals/{nobody}.html")
    assert resp.json() == {"error": {"code": "not_found", "message": W.NEVER_REQUESTED.format(address=nobody)}}
    assert requests.get(f"{site}/withdrawals/{nobody}").status_code == 404
    # A checksummed page path is the lower-case page, as the JSON is.
    assert requests.get(f"{site}/withdrawals/{GOOD}.html").status_code == 200


def _viewer_code() -> str:
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
    return yaml.load(STACK.read_text(), Loader=Loader)["Resources"]["ViewerRequest"]["Properties"]["FunctionCode"]


def _querystring(query: str) -> dict:
    """The viewer function's ``request.querystring`` for a raw query, as CloudFront hands it over."""
    qs: dict = {}
    for part in query.split("&") if query else []:
        name, _, value = part.partition("=")
        if name in qs:
            qs[name].setdefault("multiValue", [{"value": qs[name]["value"]}]).append({"value": value})
        else:
            qs[name] = {"value": value}
    return qs


def run_viewer(requests_: list[tuple[str, str]]) -> list[dict]:
    """The viewer function's answers, run in node, to (uri, raw query) requests."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    events = [{"version": "1.0", "context": {"eventType": "viewer-request"}, "viewer": {"ip": "192.0.2.1"},
               "request": {"method": "GET", "uri": uri, "querystring": _querystring(q), "headers": {}, "cookies": {}}}
              for uri, q in requests_]
    script = (_viewer_code() + "\nconst events = JSON.parse(require('fs').readFileSync(0, 'utf8'));\n"
              "process.stdout.write(JSON.stringify(events.map(e => handler(e))));\n")
    run = subprocess.run([node, "-e", script], input=json.dumps(events), capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_the_viewer_function_answers_the_lookup_as_serve_does():
    answers = run_viewer([("/withdrawals/lookup", q) for q in LOOKUPS] + [("/withdrawals/lookup/", f"address={GOOD}")])
    for query, got in zip([*LOOKUPS, f"address={GOOD}"], answers, strict=True):
        status, where, message = RP.lookup(query)
        assert got["statusCode"] == status, (query, got)
        if status == 302:
            assert got["headers"]["location"]["value"] == where, query
        else:
            assert got["headers"]["content-type"]["value"] == "application/json"
            assert got["body"]["encoding"] == "text", query
            assert json.loads(got["body"]["data"]) == {"error": {"code": where, "message": message}}, query
    # Paths: a page, its JSON and the other address-keyed files are the lower-case keys serve reads.
    address = "0x" + "aB" * 20
    paths = [f"/withdrawals/{address}.html", f"/withdrawals/{address}", f"/stakers/{address}/", f"/rewards/{address}",
             "/withdrawals", f"/stakers/{address}.html", "/docs.html"]
    answers = run_viewer([(p, "") for p in paths])
    for path, got in zip(paths, answers, strict=True):
        assert "statusCode" not in got, path  # passed on to the origin
        ep = match(path.rstrip("/"))
        want = ep.canonical(path.rstrip("/")) if ep is not None and ep.path != RP.LOOKUP_PATH else path.rstrip("/")
        if path == f"/stakers/{address}.html":
            want = path.lower()  # no such file either way: a 404 from the bucket
        assert got["uri"] == want, path


def test_the_viewer_function_refuses_a_malformed_requester_as_serve_does(site):
    # Every other name under /withdrawals/ is the registry's, and is passed on to the origin.
    fixed = {p.split("/")[2] for p in load_all() if p.startswith("/withdrawals/") and "{" not in p}
    listed = re.search(r"var WITHDRAWALS = \{([^}]*)\}", _viewer_code())
    assert listed and set(re.findall(r"'([^']+)'", listed.group(1))) == fixed
    names = ["x", "0x123.html", "lookupx", "params.html", "feed.ics", "0x" + "g" * 40, "0x" + "ab" * 20 + "0.ics", "y" * 80]
    passed = sorted(fixed - {"lookup"})  # the lookup answers itself (above)
    answers = run_viewer([(f"/withdrawals/{n}", "") for n in names] + [(f"/withdrawals/{n}", "") for n in passed])
    for name, got in zip(names, answers, strict=False):
        status, code, message = RP.missing(name)
        assert status == got["statusCode"] == 400, name
        assert json.loads(got["body"]["data"]) == {"error": {"code": code, "message": message}}, name
        served = requests.get(f"{site}/withdrawals/{name}", timeout=10)
        assert (served.status_code, served.json()) == (400, {"error": {"code": code, "message": message}}), name
    assert passed and all(got["uri"] == f"/withdrawals/{n}" for n, got in zip(passed, answers[len(names):], strict=True))
    # A well-formed address without a file: serve's 404 says so (the CDN's is its generic one).
    nobody = "0x" + "ab" * 20
    for suffix, said in (("", W.NEVER_REQUESTED), (".html", W.NEVER_REQUESTED), (".ics", W.NO_CALENDAR)):
        served = requests.get(f"{site}/withdrawals/{nobody}{suffix}", timeout=10)
        assert (served.status_code, served.json()["error"]["message"]) == (404, said.format(address=nobody))


def test_the_lookup_form_with_script_goes_straight_to_the_page(site, page, demo_requesters):
    address = demo_requesters[1]
    checksummed = requests.get(f"{site}/withdrawals/{address}").json()["requester"]
    page.viewport(390, 844)
    for start in ("/", f"/withdrawals/{demo_requesters[0]}.html"):
        page.goto(site + start)
        # A malformed address: said in place, no request made.
        page.eval("document.getElementById('lookup-address').value = '0x1234 not an address';"
                  "document.querySelector('form.lookup button').click()")
        assert page.eval("document.getElementById('lookup-error').hidden") is False
        assert "is not an address" in page.eval("document.getElementById('lookup-error').textContent")
        assert page.eval("location.pathname") == start
        mark = len(page.events)
        page.eval(f"document.getElementById('lookup-address').value = '  {checksummed} ';"
                  "document.querySelector('form.lookup button').click()")
        page.wait_event("Page.loadEventFired", mark)
        assert page.eval("location.pathname + location.search") == f"/withdrawals/{address}.html"  # no redirect on the way
        assert page.eval("document.getElementById('requester').textContent") == checksummed
    # An address that never filed: what to do, said in place (its page would be a bare 404).
    nobody = "0x" + "ab" * 20
    page.goto(site + "/")
    page.eval(f"document.getElementById('lookup-address').value = '{nobody}';"
              "document.querySelector('form.lookup button').click()")
    page.wait_for("!document.getElementById('lookup-error').hidden")
    said = page.eval("document.getElementById('lookup-error').textContent")
    assert f"No withdrawal request was ever filed by {nobody}" in said and "file a request" in said
    assert page.eval("location.pathname") == "/"
    # The probe's 404 is the one failed load.
    assert [e for e in page.console_errors() if "404" not in e] == [] and len(page.console_errors()) <= 1


def test_the_lookup_form_without_script_is_redirected_by_serve(site, page, demo_requesters):
    address = demo_requesters[2]
    checksummed = requests.get(f"{site}/withdrawals/{address}").json()["requester"]
    page.scripts(False)
    for start in ("/", f"/withdrawals/{demo_requesters[0]}.html"):
        page.goto(site + start)
        mark = len(page.events)
        page.eval(f"document.getElementById('lookup-address').value = '{checksummed}';"
                  "document.querySelector('form.lookup button').click()")
        page.wait_event("Page.loadEventFired", mark)
        assert page.eval("location.pathname") == f"/withdrawals/{address}.html"  # after /withdrawals/lookup's 302
        assert page.eval("document.getElementById('requester').textContent") == checksummed
        assert page.eval("document.querySelectorAll('article.request').length") >= 1
    assert page.console_errors() == []


def test_the_estimate_form_answers_in_place_with_script_and_with_json_without(site, page, built, demo_requesters):
    """A requester page's estimate form: with script its words are the function's answer; without,
    the form's own submission is the function's JSON."""
    answer = requests.get(f"{site}/withdrawals/estimate", params={"amount": "250"}).json()["result"]
    page.scripts(True)
    page.goto(f"{site}/withdrawals/{demo_requesters[0]}.html")
    page.eval("document.getElementById('estimate-avax').value = '250'; "
              "document.querySelector('form.estimate button').click(); true")
    page.wait_for("document.getElementById('estimate-out').textContent.includes('advertised claimable time')")
    text = page.eval("document.getElementById('estimate-out').textContent")
    assert f"place {answer['position']} in line" in text and f"({answer['shares']:,.4f}".rstrip("0").rstrip(".") + " ggAVAX)" in text
    if answer["estimatedFundingTime"]:
        assert utc_text(answer["estimatedFundingTime"]) in text
    assert not page.console_errors()
    page.scripts(False)
    page.goto(f"{site}/withdrawals/{demo_requesters[0]}.html")
    page.eval("document.getElementById('estimate-avax').value = '250'; document.querySelector('form.estimate').submit(); true")
    page.wait_for("location.pathname.endsWith('/withdrawals/estimate')")
    assert json.loads(page.eval("document.body.innerText"))["result"] == answer
    page.scripts(True)


def test_a_page_line_is_the_canonical_json_of_the_places_it_draws():
    # A line of 1 000 places with AVAX amounts that are not round; one requester far back, one in front.
    line = [(k, round(k * 1.37 + 0.001 * (k % 7), 6)) for k in range(1, 1001)]
    curve = tuple(R.canonical_value(p) for p in line)
    for mine in ((), ({"position": 3, "id": 9, "cumulativeAvax": line[2][1], "expectedAvax": 1.5},),
                 ({"position": 640, "id": 1, "cumulativeAvax": 5.0, "expectedAvax": 0.25},
                  {"position": 997, "id": 2, "cumulativeAvax": line[996][1], "expectedAvax": 2.0})):
        last = max((r["position"] for r in mine), default=0)
        drawn = [line[k - 1] for k in RP.places_through(last)] if mine else []
        assert RP.line_data(curve, mine) == R.canonical_value({"mine": mine, "curve": drawn})
        assert len(drawn) <= RP.CHART_POINTS + 2 and (not drawn or (drawn[0][0], drawn[-1][0]) == (1, last))


def test_a_reclaim_in_line_shows_no_avax_paid():
    """A request reclaimed while in line gets its original ggAVAX back; its event names the AVAX it
    expected, which never moved: the page's receipt shows the shares, not that amount. A funded
    one's reclaim deposits its AVAX back: that amount is shown."""
    step = QueueStep(100, 1_800_000_000, "0x" + "11" * 32)
    wei = 10**18

    def item(funded: QueueStep | None) -> str:
        r = Receipt(3, "0x" + "ab" * 20, 5 * wei, 6 * wei, 1_800_000_000, step, funded, 6 * wei if funded else None,
                    "reclaimed", step, 6 * wei, 5 * wei, None)
        return str(RP.receipt_item(W.receipt_record(r), lambda ts: RP._time(ts)))

    in_line, funded = item(None), item(step)
    reclaimed = re.search(r'<li data-step="reclaimed">.*?</li>', in_line).group(0)
    assert reclaimed.endswith("; returned 5.0000 ggAVAX</li>") and " AVAX" not in reclaimed
    assert "; 6.0000 AVAX; returned 5.0000 ggAVAX" in re.search(r'<li data-step="reclaimed">.*?</li>', funded).group(0)


def test_a_day_passing_rewrites_no_page_whose_requests_keep_their_state(demo_snapshot, demo_profile, tmp_path):
    """The days left to the window's end and every other relative time are the page's script's:
    a day later, with nothing else changed, a page whose requests pass no deadline of their own
    in that day has the same bytes."""
    day = 86_400
    later = dataclasses.replace(demo_snapshot, block=dataclasses.replace(
        demo_snapshot.block, number=demo_snapshot.block.number + 1, timestamp=demo_snapshot.block.timestamp + day))
    pages, profile = {}, demo_profile.with_overrides(feed_max_age=10 * day)  # the AVAX/USD round ages too
    for name, snap in (("now", demo_snapshot), ("later", later)):
        build(snap, profile, tmp_path / name)
        pages[name] = {p.name: p.read_bytes() for p in (tmp_path / name / "withdrawals").glob("0x*.html")}
    t0, t1 = demo_snapshot.block.timestamp, later.block.timestamp
    moved = {r.requester.lower() for r in demo_snapshot.withdraw_queue.requests
             if any(t0 < t <= t1 for t in (r.claimable_time, r.expiration_time))}
    kept = [name for name in pages["now"] if name.removesuffix(".html") not in moved]
    assert kept and pages["now"].keys() == pages["later"].keys()
    assert [n for n in kept if pages["now"][n] != pages["later"][n]] == []
