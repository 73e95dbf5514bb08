"""The human pages and the OpenAPI document they are rendered from: descriptions, examples, the
dashboard's figures against the published files, and no internal names."""
from __future__ import annotations

import dataclasses
import html
import json
import re

import pytest
from support import utc_text

from publisher.build.pipeline import build
from publisher.endpoints.pages import EXAMPLE_ITEMS, _env, _trim, trailing_apy
from publisher.endpoints.registry import load_all
from publisher.serve import Site

# DESIGN §6 compatibility contract: (endpoint, field) -> words its description must contain.
CONTRACT = {
    ("/metrics", "ggavax_apy"): ("percent", "Balancer", "DefiLlama"),
    ("/metrics", "total_assets"): ("AVAX", "DefiLlama"),
    ("/metrics/apy", "total_apy"): ("percent", "DeltaPrime"),
    ("/metrics/apy", "total_apy_after_fees"): ("percent", "Balancer"),
    ("/prices", "ggpInUSD"): ("USD", "DeltaPrime", "calculator"),
    ("/prices", "avaxInUSD"): ("USD", "DeltaPrime", "calculator"),
    ("/stakers", "stakers"): ("CLI tutorials", "analysts"),
}
INTERNAL = ("compute/", ".py", "r_v", "TEGS", "snapshot.", "ctx.", "registry", "struct")


@pytest.fixture(scope="module")
def out(demo_snapshot, demo_profile, tmp_path_factory):
    return build(demo_snapshot, demo_profile, tmp_path_factory.mktemp("pages") / "out").out_dir


def pub(out, name):
    return json.loads((out / name).read_text())


def properties(schema: dict, where: str):
    """(dotted name, property schema) for every property, however deeply nested."""
    if not isinstance(schema, dict):
        return
    for name, sub in schema.get("properties", {}).items():
        yield f"{where}.{name}", sub
        for alt in [sub, *sub.get("anyOf", [])]:
            yield from properties(alt, f"{where}.{name}")
            if alt.get("type") == "array":
                yield from properties(alt.get("items", {}), f"{where}.{name}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from properties(schema["additionalProperties"], f"{where}.*")


def description(sub: dict) -> str:
    return sub.get("description") or next((a.get("description", "") for a in sub.get("anyOf", []) if a.get("description")), "")


def test_every_property_of_the_openapi_document_is_described(out):
    doc = pub(out, "openapi.json")
    found = []
    for path, item in doc["paths"].items():
        op = item["get"]
        for p in op.get("parameters", []):
            assert p["description"], (path, p["name"])
        for status, resp in op["responses"].items():
            for content in resp.get("content", {}).values():
                found += list(properties(content["schema"], f"{path} {status}"))
    found += list(properties(doc["components"]["schemas"]["Error"], "Error"))
    assert len(found) > 600
    missing = [name for name, sub in found if not description(sub)]
    assert missing == []


def test_the_compatibility_contract_fields_say_who_reads_them(out):
    doc = pub(out, "openapi.json")
    for (path, field), words in CONTRACT.items():
        schema = doc["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
        text = description(schema["properties"][field])
        for word in words:
            assert word in text, (path, field, word, text)


def test_openapi_json_is_the_docs_document(out):
    assert (out / "openapi.json").read_bytes() == (out / "docs.json").read_bytes()
    assert "/openapi.json" in pub(out, "openapi.json")["paths"]
    assert load_all()["/openapi.json"].cache == load_all()["/docs"].cache == "docs"


def visible_text(page: str) -> str:
    page = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


@pytest.mark.parametrize("page", ["index.html", "docs.html", "calculator.html"])
def test_pages_use_no_internal_names_and_no_remote_assets(out, page):
    text = (out / page).read_text()
    shown = visible_text(text)
    for word in INTERNAL:
        assert word not in shown, (page, word)
    assert not re.search(r'(src|href)="(https?:)?//', text), "pages must work offline"


def test_the_reference_has_a_section_and_a_real_example_per_endpoint(out):
    page = (out / "docs.html").read_text()
    doc = pub(out, "openapi.json")
    for path, item in doc["paths"].items():
        anchor = item["get"]["operationId"]
        section = re.search(rf'<section class="endpoint" id="{anchor}">(.*?)</section>', page, re.S)
        assert section, path
        if path in ("/docs", "/openapi.json", "/status"):  # linked, not copied: /status digests the pages
            assert f'Current response: <a href="{path[1:]}">' in section.group(1)
            continue
        if load_all()[path].content_type != "application/json":  # a calendar or a feed: linked, and published
            link = re.search(r'Current response: <a href="([^"]+)">', section.group(1))
            assert link and (out / html.unescape(link.group(1))).is_file(), path
            # Its body is a text, not fields: the media type and what it is.
            assert f"Response: <code>{load_all()[path].content_type}</code>" in section.group(1), path
            assert '<table class="fields">\n    <tr><th>field</th>' not in section.group(1), path
            continue
        example = re.search(r"<summary>Example response: <code>([^<]+)</code></summary>.*?<pre><code>(.*?)</code></pre>",
                            section.group(1), re.S)
        assert example, path
        url, body = html.unescape(example.group(1)), json.loads(html.unescape(example.group(2)))
        if load_all()[path].is_function:  # the function's own answer to the example query
            status, _, answer = Site(out).get(path, url.split("?", 1)[1], "GET")
            assert status == 200 and body == _trim(json.loads(answer)), path
            if path == "/rewards/byStake":
                assert body["result"]["aprPct"] > 0
            elif path == "/rewards/estimate":  # the first staker's, from its file and the params
                assert url.endswith(body["address"].lower()) and body["result"]["avaxPerCycleWei"].isdigit()
            else:
                assert body["result"]["position"] >= 1
            continue
        published = pub(out, load_all()[path].canonical(url).lstrip("/") + ".json")
        assert body == _trim(published), path
    # Lists are cut: /stakers shows two stakers and says how many more there are.
    stakers = pub(out, "stakers.json")["stakers"]
    assert f"… {len(stakers) - EXAMPLE_ITEMS} more" in page


def test_shared_objects_are_described_once(out):
    page = (out / "docs.html").read_text()
    assert page.count("<code>meta.block.number</code>") == 1
    assert page.count("<code>meta.network</code>") == 1
    assert page.count("see <a href=\"#shared\">shared objects</a>") >= 15


def card(page: str, ident: str) -> tuple[str, str]:
    m = re.search(rf'<a class="card" href="([^"]+)" id="{ident}">(.*?)</a>', page, re.S)
    assert m, ident
    return m.group(1), " ".join(visible_text(m.group(2)).split())


def test_the_dashboard_shows_the_published_figures_and_links_them(out):
    page = (out / "index.html").read_text()
    m, prices, ggavax = pub(out, "metrics.json"), pub(out, "prices.json"), pub(out, "ggAvax.json")
    params, pools = pub(out, "rewards/params.json"), pub(out, "minipools.json")
    assert card(page, "fig-apy") == ("metrics/apy", card(page, "fig-apy")[1])
    assert f"{m['ggavax_apy']:.2f} %" in card(page, "fig-apy")[1]
    assert card(page, "fig-assets")[0] == "ggAvax" and f"{ggavax['totalAssets']:,.0f} AVAX" in card(page, "fig-assets")[1]
    assert card(page, "fig-tvl")[0] == "metrics" and f"{m['tvl_avax']:,.0f} AVAX" in card(page, "fig-tvl")[1]
    assert card(page, "fig-ggp")[0] == "prices" and f"{prices['ggpInAvax']:.5f} AVAX" in card(page, "fig-ggp")[1]
    assert f"${prices['avaxInUSD']:,.2f}" in card(page, "fig-avax")[1]
    assert card(page, "fig-stakers")[0] == "stakers" and card(page, "fig-stakers")[1].split()[2] == str(m["staker_count"])
    assert card(page, "fig-minipools")[0] == "minipools" and f" {pools['count']} " in card(page, "fig-minipools")[1]
    when = utc_text(params["nextDistributionTime"])
    assert card(page, "fig-distribution")[0] == "rewards/params" and when in card(page, "fig-distribution")[1]
    assert str(m["meta"]["block"]["number"]) in card(page, "fig-block")[1]
    # Every figure links to an endpoint the build published.
    for href in re.findall(r'<a class="card" href="([^"]+)"', page):
        assert (out / (href + ".json")).is_file(), href


def chart_points(page: str, chart_id: str) -> list[tuple[float, float]]:
    """(data-x, data-y) of every point a dashboard chart plots."""
    m = re.search(rf'<figure[^>]*id="{chart_id}".*?</figure>', page, re.S)
    assert m, chart_id
    return [(float(x), float(y)) for x, y in re.findall(r'<circle[^>]*data-x="([^"]+)" data-y="([^"]+)"', m.group(0))]


def test_a_first_build_draws_the_share_price_and_its_trailing_apy(out):
    """The share price of every day comes from the chain, so the trailing APY has data at once."""
    page = (out / "index.html").read_text()
    history = pub(out, "prices/history.json")["points"]
    share = [(p["ggavaxTime"], p["ggavaxExchangeRate"]) for p in history if p["ggavaxExchangeRate"] is not None]
    assert len(share) == len(history) >= 7
    assert chart_points(page, "chart-share") == [(float(t), x) for t, x in share]
    apy = trailing_apy(share)
    assert len(apy) >= 7 and all(0 < v < 100 for _, v in apy)
    assert chart_points(page, "chart-apy") == [(float(t), v) for t, v in apy]
    assert "the trailing APY needs" not in page


def test_the_dashboard_counts_the_data_age_only_on_the_build_clock(demo_snapshot):
    """A data block near the build's wall-clock time: the page counts its age (script). One far
    from it (the demo's devnet starts at a fixed genesis): the page says the dates are on the
    network's own clock, and counts nothing."""
    from publisher.endpoints.context import Context
    from publisher.endpoints.pages import index
    from publisher.endpoints.registry import resolve

    block = demo_snapshot.block.timestamp

    def dashboard(generated_at: int) -> str:
        return resolve(dict(index(Context(demo_snapshot, generated_at=generated_at)))["/"])

    near = dashboard(block + 300)
    assert f'<span id="age" data-ts="{block}">' in near and "own clock" not in visible_text(near)
    far = dashboard(block + 254 * 86_400 + 3_000)
    text = " ".join(visible_text(far).split())
    assert 'id="age"' not in far and "ago" not in text
    assert "on this network's own clock: about 254 days before the time this page was built" in text
    assert "the next distribution's included, are on it too" in text
    assert "on the network's clock" in card(far, "fig-distribution")[1]
    assert "the network's own clock" in card(far, "fig-block")[1]
    ahead = " ".join(visible_text(dashboard(block - 3 * 86_400)).split())
    assert "about 3 days after the time this page was built" in ahead


def test_the_trailing_apy_compounds_the_share_price_over_the_window():
    day = 86_400
    share = [(d * day, 1 + 0.0005 * d) for d in range(0, 61)]
    apy = trailing_apy(share, 30)
    assert [t for t, _ in apy] == [d * day for d in range(30, 61)]
    _t, value = apy[-1]
    assert value == pytest.approx(((1.03 / 1.015) ** (365 / 30) - 1) * 100)
    assert trailing_apy(share[:30], 30) == []  # less than a window: nothing to plot, nothing made up


def test_a_page_reads_a_bodys_keys_before_a_dicts_methods():
    """``a.b`` on a dict is its key ``b`` first (the bodies' fields), a method of the dict only by a
    name that is no key; anything else as Jinja reads it."""
    page = _env().from_string("{{ d.count }} {{ d.items }} {{ d.get('x', 'none') }} {{ e.items() | list }} {{ s.upper() }}")
    assert page.render(d={"count": 3, "items": "rows"}, e={"k": 1}, s="ok") == "3 rows none [(&#39;k&#39;, 1)] OK"


def test_the_dashboard_shows_the_windows_note_wherever_its_end_is_announced():
    from publisher.endpoints.pages import _banners

    def queue(days_left: int, passed: bool) -> dict:
        return {"status": "ok", "parameters": {"paused": False}, "schedule": {"stale": False},
                "funded": {"stuckCount": 0}, "window": {"closed": passed, "note": f"note {days_left}"},
                "announcements": [{"key": "withdrawalWindowEnd", "daysLeft": days_left, "passed": passed}]}

    def shown(q: dict) -> list[str]:
        return [text for text, _ in _banners({}, {}, {}, q)]

    assert shown(queue(30, False)) == ["note 30"] and shown(queue(6, False)) == ["note 6"]
    assert shown(queue(0, False)) == ["note 0"] and shown(queue(0, True)) == ["note 0"]
    unannounced = {**queue(0, False), "announcements": [], "window": {"closed": False, "note": "none announced"}}
    assert shown(unannounced) == []
    # First among the others: what every holder still in has to act on.
    stale = {**queue(3, False), "schedule": {"stale": True, "staleReason": "no call for 3 days"}}
    assert shown(stale)[0] == "note 3" and "depositor looks stale" in shown(stale)[1]


def test_examples_and_links_only_name_files_that_exist(demo_snapshot, demo_profile):
    """A requester's example is an address with a file: an open request's owner, else a requester
    on record (its calendar only where a window's end is announced); without a queue, the queue's
    parameters and feed are not linked."""
    from publisher.build.pipeline import context
    from publisher.endpoints import openapi, pages

    q = demo_snapshot.withdraw_queue
    closed_only = dataclasses.replace(demo_snapshot, withdraw_queue=dataclasses.replace(q, requests=()))
    ex = openapi._examples(context(closed_only, demo_profile))
    first = demo_snapshot.queue_receipts[0].requester
    assert ex["/withdrawals/{address}:address"] == ex["/withdrawals/{address}.ics:address"] == first
    unannounced = dataclasses.replace(demo_profile, announcements={})
    ex = openapi._examples(context(closed_only, unannounced))
    assert ex["/withdrawals/{address}:address"] == first and ex["/withdrawals/{address}.ics:address"] is None
    ctx = context(dataclasses.replace(demo_snapshot, withdraw_queue=None, withdraw_queue_note="no queue here"), demo_profile)
    assert pages.absent(ctx, "/withdrawals/feed.xml") and pages.absent(ctx, "/withdrawals/params")
    assert not pages.absent(ctx, "/withdrawals") and not pages.absent(ctx, "/stakers")
    links = {r["path"]: r["link"] for r in pages._endpoint_links(ctx)}
    assert links["/withdrawals/feed.xml"].startswith("docs.html#") and links["/withdrawals"] == "withdrawals"
