"""The API on a protocol that has ended operations: the seeded `wound-down` chain and a live
devnet wound down in front of the test, both 60+ days after the last Oracle price update. Every
endpoint is published and passes `check`; what is old is labelled, the forecasts say no
distribution is expected, values that have an on-chain truth still equal it; and the guards that
must refuse still do."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from ggp_devnet import devnet_profile, running_live
from support.chain import eth_call

from publisher.build import incremental
from publisher.build.pipeline import build
from publisher.build.validate import load_dir, validate
from publisher.chain import abis
from publisher.collect import collect
from publisher.config import load_profile
from publisher.errors import PublisherError

DAY = 86_400
WAD = 10**18


def body(out: Path, name: str):
    return json.loads((out / name).read_text())


def assert_published_honestly(out: Path, profile, net, snap) -> None:
    files = load_dir(out)
    assert validate(files, feed_max_age=profile.feed_max_age, oracle_max_age=profile.oracle_max_age) == []
    prices, metrics = body(out, "prices.json"), body(out, "metrics.json")
    assert prices["stale"] is True and prices["ggpPriceAgeDays"] >= 60 and metrics["ggp_price_stale"] is True
    assert any(w.startswith("GGP price is stale") for w in body(out, "status.json")["warnings"])
    params = body(out, "rewards/params.json")
    assert params["distributionExpected"] is False and params["noDistributionReason"]
    assert all(p["result"]["distributionExpected"] is False for p in body(out, "rewards/grid.json")["points"])
    staker = next(iter(sorted((out / "rewards").glob("0x*.json"))))
    assert json.loads(staker.read_text())["distributionExpected"] is False
    apy = body(out, "metrics/apy.json")
    assert apy["total_apy"] is not None and apy["total_apy_after_fees"] is not None and metrics["ggavax_apy"] is not None
    assert body(out, "featureFlags.json")["flags"]["minipoolCreation"] is False
    page = (out / "index.html").read_text()
    assert "The GGP price is stale" in page and "No GGP rewards distribution is expected" in page
    # Values with an on-chain truth still equal it.
    client = net_client(net)
    block = snap.block.number
    assert metrics["total_assets"] == eth_call(client, net.addresses["TokenggAVAX"], abis.totalAssets, block=block) / WAD
    assert prices["oracle"]["price"] == str(eth_call(client, net.addresses["Oracle"], abis.getGGPPriceInAVAX, block=block)[0])
    queue = body(out, "withdrawals.json")
    assert queue["status"] == "ok"
    assert queue["funded"]["avax"] == eth_call(client, net.addresses["WithdrawQueue"], abis.wq_totalAllocatedFunds, block=block) / WAD


def net_client(net):
    from publisher.chain.rpc import RpcClient

    return RpcClient([net.url])


@pytest.fixture(scope="module")
def wound(wound_devnet, tmp_path_factory):
    net = wound_devnet
    profile = devnet_profile(load_profile("devnet"), net)
    snap = collect(profile).snapshot
    out = tmp_path_factory.mktemp("wound") / "out"
    build(snap, profile, out)
    return net, profile, snap, out


def test_the_wound_down_chain_publishes_every_endpoint_labelled(wound):
    net, profile, snap, out = wound
    assert_published_honestly(out, profile, net, snap)
    assert body(out, "validators.json")["count"] == 0


def test_the_wound_down_chain_is_between_the_announced_dates(wound):
    """At its block operations have ended and the announced withdrawal window is still open."""
    _, _, _, out = wound
    got = {a["key"]: (a["daysLeft"], a["passed"]) for a in body(out, "status.json")["announcements"]}
    assert got == {"endOfOperations": (0, True), "withdrawalWindowEnd": (75, False)}
    shown = (out / "index.html").read_text().split('id="announced-list"')[1].split("</ul>")[0]
    assert shown.count("<strong>passed</strong>") == 1 and "75 days left" in shown


def test_the_function_answers_the_wound_down_chain_with_the_stale_price_and_no_distribution(wound, monkeypatch):
    """/rewards/byStake from the wound-down build's /rewards/params, 60+ days after the last Oracle
    price: its answer says the price is stale, in the words of /prices, and why no distribution is
    expected, in the words of the params."""
    from publisher.function import handler as H

    _, _, _, out = wound
    params, prices = body(out, "rewards/params.json"), body(out, "prices.json")
    assert params["ggpPriceStale"] is True and params["ggpPriceStaleReason"] == prices["staleReason"]
    assert prices["ggpPriceAgeDays"] >= 60 and params["distributionExpected"] is False
    monkeypatch.setenv("REWARDS_PARAMS_URL", (out / "rewards" / "params.json").resolve().as_uri())
    staker = next(iter(sorted((out / "rewards").glob("0x*.json")))).stem
    H.CACHES.clear()
    try:
        # A stake asked about, and an existing staker's own estimate: both at the stale price.
        answers = [H.handler({"rawPath": path, "rawQueryString": query,
                              "requestContext": {"http": {"method": "GET", "path": path}}}, None)
                   for path, query in (("/rewards/byStake", "ggpStaked=20000&avaxStaked=1000"),
                                       ("/rewards/estimate", f"address={staker}"))]
    finally:
        H.CACHES.clear()
    for resp in answers:
        assert resp["statusCode"] == 200, resp["body"]
        result = json.loads(resp["body"])["result"]
        warnings = {w["code"]: w["message"] for w in result["warnings"]}
        assert warnings["ggp_price_stale"] == f"the GGP price is stale: {prices['staleReason']}"
        assert result["distributionExpected"] is False and result["noDistributionReason"] == params["noDistributionReason"]
        assert params["noDistributionReason"] in warnings["no_distribution_expected"]


def test_the_guards_that_must_refuse_still_refuse_on_the_wound_down_chain(wound, tmp_path):
    _, profile, snap, out = wound
    # The AVAX/USD feed is a live third-party feed: an old round is refused, not labelled.
    with pytest.raises(PublisherError, match=r"AVAX/USD feed .* old"):
        collect(dataclasses.replace(profile, feed_max_age=60))
    # A wrong value (a zero Oracle price) is refused, however old.
    with pytest.raises(PublisherError, match="not positive"):
        build(dataclasses.replace(snap, oracle=dataclasses.replace(snap.oracle, price=0)), profile, tmp_path / "zero")
    # A block older than the live run is refused unless forced.
    older = dataclasses.replace(snap, block=dataclasses.replace(snap.block, number=snap.block.number - 1))
    with pytest.raises(PublisherError, match="older than the last run"):
        build(older, profile, out)
    # A stale price stripped of its label is refused by check.
    files = load_dir(out)
    files["/prices"] = json.dumps({**body(out, "prices.json"), "stale": False, "staleReason": None}).encode()
    assert any("labelled stale: False" in p for p in validate(files, oracle_max_age=profile.oracle_max_age))


def test_a_live_wind_down_publishes_sixty_days_after_the_last_price(tmp_path):
    with running_live(seed=1) as (net, live):
        live.run(days=2, pace=0)
        live.wind_down_at = live.now + 1
        live.run(days=62, pace=0)
        profile = devnet_profile(load_profile("devnet"), net)
        snap = collect(profile).snapshot
        out = tmp_path / "out"
        build(snap, profile, out)
        assert_published_honestly(out, profile, net, snap)


def test_the_watch_and_the_history_go_on_through_the_wind_down(tmp_path):
    """After the end of operations the chain still moves (queue claims, expiries, the depositor's
    runs): the watch sees each such block, and each publish adds to the price history, never
    dropping or rewriting a day."""
    from publisher.build.validate import compare_accumulated
    from publisher.sources import history_file
    from publisher.watch import Follower

    with running_live(seed=1) as (net, live):
        live.run(days=1, pace=0)
        live.wind_down_at = live.now + 1
        live.run(days=3, pace=0)
        profile = devnet_profile(load_profile("devnet"), net)
        client = net_client(net)
        out = tmp_path / "out"
        snap = collect(profile).snapshot
        cache = incremental.Cache()  # one process building again and again, as the watch
        incremental.build(snap, profile, out, cache=cache, workers=1)
        follower = Follower(client, profile)
        follower.published(snap)
        reasons, before = [], load_dir(out)
        for _ in range(4):
            live.run(days=1, pace=0)
            _, why = follower.look()
            reasons.append(why)
            snap = collect(profile, history_prior=history_file.load_published(out / "prices" / "history.json")).snapshot
            incremental.build(snap, profile, out, cache=cache, workers=1)
            follower.published(snap)
            after = load_dir(out)
            assert compare_accumulated(before, after) == []
            assert len(json.loads(after["/prices/history"])["points"]) >= len(json.loads(before["/prices/history"])["points"])
            before = after
    assert all(r is not None for r in reasons), reasons  # every wound-down day still changes something
    assert body(out, "prices.json")["stale"] is True
