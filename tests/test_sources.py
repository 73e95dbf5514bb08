"""Off-chain sources end to end: real devnets, real stand-in servers over HTTP, the real CLI."""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from fractions import Fraction

import pytest
from ggp_devnet import devnet_profile, running
from ggp_devnet.scenarios import LAUNCHED, STAKING, WAD
from ggp_devnet.seed import DEPLOYER
from ggp_devnet.standins import Fault, Standins, missing_node
from support.chain import checkpoint, head, mine_at, send
from support.jsonrpc import LimitedRpc

from publisher.chain.abi import Fn
from publisher.chain.rpc import RpcClient
from publisher.collect import collect
from publisher.compute import prices as compute_prices
from publisher.compute.nodeid import node_id
from publisher.config import load_profile
from publisher.errors import PublisherError
from publisher.snapshot import Known, PricePoint
from publisher.sources import history, history_file, prices
from publisher.sources.validators import MAX_PAGES

SET_ROUND = Fn("setRound(uint80,int256,uint256,uint256,uint80)")
KEY = "glacier-key-s3cr3t"


# -- fixtures ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def services(demo):
    """Stand-ins of our own, so faults never reach the session devnet's."""
    with Standins(demo.scenario) as s:
        yield s


@pytest.fixture(autouse=True)
def clean(services):
    services.reset()
    yield
    services.reset()


@pytest.fixture
def profile(demo_profile, services):
    return demo_profile.with_overrides(validator_api_url=services.glacier.url, pchain_rpc_url=services.pchain.url,
                                       price_api_url=services.prices.url)


@pytest.fixture(scope="module")
def feednet():
    """A devnet whose feed rounds tests rewrite (inside evm_snapshot/evm_revert)."""
    with running("demo") as net:
        yield net


@pytest.fixture
def set_round(feednet):
    rpc = RpcClient([feednet.url])
    snapshot_id = rpc.request("evm_snapshot")

    def send(round_id, answer, started, updated, answered):
        data = SET_ROUND.encode(round_id, answer, started, updated, answered)
        tx = rpc.request("eth_sendTransaction", [{"from": DEPLOYER, "to": feednet.addresses["PriceFeed"], "data": "0x" + data.hex()}])
        for _ in range(100):
            receipt = rpc.request("eth_getTransactionReceipt", [tx])
            if receipt:
                assert receipt["status"] == "0x1"
                return
            time.sleep(0.02)
        raise AssertionError("setRound not mined")

    yield send
    rpc.request("evm_revert", [snapshot_id])


def latest_timestamp(url: str) -> int:
    return int(RpcClient([url]).request("eth_getBlockByNumber", ["latest", False])["timestamp"], 16)


def run_cli(args: list[str], env_extra: dict[str, str]) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PUBLISHER_")}
    env.update(env_extra)
    return subprocess.run([sys.executable, "-m", "publisher.cli", *args], env=env, capture_output=True, text=True, timeout=120)


def expected_nodes(snap) -> set[str]:
    return {node_id(m.node_id) for m in snap.minipools if m.status in (LAUNCHED, STAKING)}


# -- the demo snapshot ------------------------------------------------------------------------------


def test_demo_snapshot_carries_usd_prices(demo_snapshot):
    snap = demo_snapshot
    usd = compute_prices.usd_prices(snap)
    assert usd["avax_usd"] == Fraction(snap.feed.answer, 10**8) > 0
    assert usd["ggp_usd"] == Fraction(snap.oracle.price, WAD) * usd["avax_usd"]
    prices.validate_feed(snap.feed, snap.block, load_profile("devnet").feed_max_age)
    assert snap.price_check.status == "ok"
    assert Fraction(snap.price_check.avax_usd) == pytest.approx(usd["avax_usd"], rel=1e-6)


def test_demo_snapshot_dex_quote(demo, demo_snapshot):
    snap = demo_snapshot
    q = compute_prices.dex_quote(snap)
    day = len(demo.scenario.prices) - 1
    dex_price = demo.scenario.final_price * (1000 + day % 7 - 3) // 1000  # as seeded
    assert q["ggp_in_avax"] == Fraction(dex_price, WAD)
    assert q["reserve_ggp"] == 400_000 * WAD
    assert q["deviation_pct"] == Fraction(day % 7 - 3, 10)
    assert q["ggp_usd"] == q["ggp_in_avax"] * Fraction(snap.feed.answer, 10**8)
    # Token order does not matter: the GGP side is found by address.
    d = snap.dex
    flipped = dataclasses.replace(snap, dex=dataclasses.replace(d, token0=d.token1, token1=d.token0, reserve0=d.reserve1, reserve1=d.reserve0))
    assert compute_prices.dex_quote(flipped)["ggp_in_avax"] == q["ggp_in_avax"]
    alien = dataclasses.replace(snap, dex=dataclasses.replace(d, token0=snap.addresses["Staking"], token1=snap.addresses["Oracle"]))
    with pytest.raises(PublisherError, match="does not hold GGP"):
        compute_prices.dex_quote(alien)


def test_demo_snapshot_validators(demo, demo_snapshot):
    snap = demo_snapshot
    missing = missing_node(demo.scenario)
    assert snap.validator_source == "glacier"
    assert snap.missing_validators == (missing,)
    assert {v.node_id for v in snap.validators} == expected_nodes(snap) - {missing}
    assert [v.node_id for v in snap.validators] == sorted(v.node_id for v in snap.validators)
    by_node = {node_id(m.node_id): m for m in snap.minipools}
    for v in snap.validators:
        m = by_node[v.node_id]
        assert v.amount_staked == (m.avax_node_op_amt + m.avax_liquid_staker_amt) // 10**9
        assert v.source == "glacier" and v.validation_reward > 0
    assert any(missing in w for w in snap.warnings)


def test_a_read_after_another_asks_for_the_validators_of_its_last_active_nodes_from_its_start(profile, services, demo, rpc):
    """A watch's read asks the provider for the nodes its last read found active without waiting
    for this block's minipools: the same nodes, one fetch; other nodes, their own fetch, and what
    the guess found (its warnings too) is left unread."""
    known = Known()
    first = collect(profile, known=known).snapshot
    groups = (len(expected_nodes(first)) + 24) // 25
    services.reset()
    again = collect(profile, known=known).snapshot
    assert (again.validators, again.missing_validators, again.warnings) == (first.validators, first.missing_validators, first.warnings)
    assert len(services.glacier.hits) == groups
    missing = missing_node(demo.scenario)
    node = next(m.node_id for m in first.minipools if m.status == STAKING and node_id(m.node_id) != missing)
    with checkpoint(rpc):
        send(rpc, demo.addresses["MinipoolManager"], Fn("setStatus(address,uint256)").encode(node, 3))
        moved = collect(profile, known=known).snapshot
        fresh = collect(profile, block=moved.block.number).snapshot
    assert node_id(node) not in {v.node_id for v in moved.validators}
    assert {v.node_id for v in moved.validators} == expected_nodes(moved) - {missing}
    assert (moved.validators, moved.missing_validators, moved.warnings) == (fresh.validators, fresh.missing_validators, fresh.warnings)


def test_a_validation_that_ended_unrecorded_is_not_missing_and_validators_say_it_ended(profile, services, demo, rpc):
    """Past a Staking minipool's period end, before Rialto records it, the provider no longer lists
    the node (the stand-ins follow the node's clock, as Glacier and the P-Chain drop a validator at
    its end): that is no gap in the provider's data, so no warning and not in `missing`, and
    /validators says the validation ended."""
    from publisher.endpoints.context import Context
    from publisher.endpoints.operators import validators
    from publisher.endpoints.registry import resolve

    first = collect(profile).snapshot
    cycle = first.settings.minipool_cycle_duration
    missing = missing_node(demo.scenario)
    staking = [m for m in first.minipools if m.status == STAKING and node_id(m.node_id) != missing]

    def end(m):  # the record's end, else one cycle (or the rest of the duration) after its start
        return m.end_time if m.end_time > m.start_time else m.start_time + min(cycle, m.initial_start_time + m.duration - m.start_time)

    first_end = min(end(m) for m in staking)
    gone = {node_id(m.node_id) for m in staking if end(m) == first_end}
    services.clock = lambda: head(rpc)[1]
    try:
        with checkpoint(rpc):
            mine_at(rpc, first_end)  # the first end's very second: ended (the P-Chain ends it at endTime)
            snap = collect(profile).snapshot
    finally:
        services.clock = None
    assert gone and not gone & {v.node_id for v in snap.validators}
    assert snap.missing_validators == (missing,)  # the seeded gap only
    assert [w for w in snap.warnings if "has no record of" in w] == [w for w in first.warnings if "has no record of" in w]
    ((_, deferred),) = validators(Context(snap))
    body = resolve(deferred)
    rows = body["validators"]
    ended = {r["minipool"]["nodeID"] for r in rows if r["validationEnded"]}
    assert ended == gone and all(r["provider"] is None for r in rows if r["validationEnded"])
    assert body["missing"] == [missing]


def test_demo_snapshot_price_history(demo, demo_snapshot):
    snap = demo_snapshot
    points = snap.price_history
    by_day = {datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d"): (g, a) for t, g, a in demo.scenario.prices}
    assert [p.date for p in points] == sorted(by_day) and len(points) == len(demo.scenario.prices)
    for p in points:
        assert (p.ggp_in_avax, p.avax_usd) == by_day[p.date]
        assert p.block <= snap.block.number
    assert (points[-1].ggp_in_avax, points[-1].avax_usd) == (snap.oracle.price, snap.feed.answer)
    assert not any("price history" in w for w in snap.warnings)


# -- validator API faults ---------------------------------------------------------------------------


def test_glacier_429_twice_then_success(profile, services, demo_snapshot):
    services.glacier.fault = Fault(status=429, times=2, retry_after="1")
    snap = collect(profile).snapshot
    assert snap.validators == demo_snapshot.validators and snap.validator_source == "glacier"
    assert snap.missing_validators == demo_snapshot.missing_validators
    hits = services.glacier.hits
    assert len(hits) == 2 + (len(expected_nodes(snap)) + 24) // 25  # two refusals, then one request per group
    assert hits[1].at - hits[0].at >= 1.0 and hits[2].at - hits[1].at >= 1.0  # Retry-After honoured
    assert services.pchain.hits == []


def test_glacier_down_falls_back_to_pchain(profile, services, demo_snapshot):
    services.glacier.fault = Fault(status=500)
    snap = collect(profile).snapshot
    assert snap.validator_source == "pchain"
    assert [v.node_id for v in snap.validators] == [v.node_id for v in demo_snapshot.validators]
    assert snap.missing_validators == demo_snapshot.missing_validators
    same = ("node_id", "tx_hash", "start_timestamp", "end_timestamp", "amount_staked", "amount_delegated",
            "delegation_fee_pct", "delegator_count", "validation_reward")
    for a, b in zip(snap.validators, demo_snapshot.validators, strict=True):
        assert [getattr(a, f) for f in same] == [getattr(b, f) for f in same]
        assert a.source == "pchain" and a.uptime_pct is not None
    assert len(services.glacier.hits) == 5
    assert any("validator API" in w and "HTTP 500 after 5 attempts" in w and "using P-Chain RPC" in w for w in snap.warnings)


def test_both_validator_sources_down_fail_the_cli(demo, services, tmp_path):
    services.glacier.fault = Fault(status=500)
    services.pchain.fault = Fault(status=503)
    out = tmp_path / "s.json"
    got = run_cli(["snapshot", "--rpc-url", demo.url, "--out", str(out)], {
        "PUBLISHER_VALIDATOR_API_URL": services.glacier.url, "PUBLISHER_VALIDATOR_API_KEY": KEY,
        "PUBLISHER_PCHAIN_RPC_URL": services.pchain.url, "PUBLISHER_PRICE_API_URL": services.prices.url,
    })
    assert got.returncode == 1
    assert got.stderr.strip().splitlines()[-1] == (
        "error: validator data unavailable: validator API failed: HTTP 500 after 5 attempts; "
        "P-Chain RPC failed: HTTP 503 after 5 attempts"
    )
    assert not out.exists()
    assert {h.api_key for h in services.glacier.hits} == {KEY}  # sent on every request
    assert KEY not in got.stdout + got.stderr  # and never printed


def test_cli_snapshot_with_env_sources(demo, services, tmp_path):
    out = tmp_path / "s.json"
    got = run_cli(["snapshot", "--rpc-url", demo.url, "--out", str(out)], {
        "PUBLISHER_VALIDATOR_API_URL": services.glacier.url, "PUBLISHER_PCHAIN_RPC_URL": services.pchain.url,
        "PUBLISHER_PRICE_API_URL": services.prices.url,
    })
    assert got.returncode == 0, got.stderr
    data = json.loads(out.read_text())
    assert data["validator_source"] == "glacier" and data["missing_validators"] == [missing_node(demo.scenario)]
    assert len(data["price_history"]) == len(demo.scenario.prices) and data["price_check"]["status"] == "ok"


def test_malformed_glacier_body_is_a_one_line_error(profile, services):
    services.glacier.fault = Fault(malformed=True)
    with pytest.raises(PublisherError) as err:
        collect(profile)
    assert str(err.value) == "validator API returned a malformed body: not JSON"
    assert services.pchain.hits == []  # a changed API is not papered over by the fallback


def test_endless_pagination_is_bounded(profile, services):
    services.glacier.fault = Fault(page_loop=True)
    with pytest.raises(PublisherError, match=rf"still had a nextPageToken after {MAX_PAGES} pages .*pagination does not end"):
        collect(profile)
    assert len(services.glacier.hits) == MAX_PAGES


# -- feed and price cross-check ---------------------------------------------------------------------


@pytest.mark.parametrize("case, expect", [
    ("stale", r"round 200 is \d+s old at block \d+ \(max 172800s\)"),
    ("zero", "answer 0 is not a positive price"),
    ("negative", "answer -5 is not a positive price"),
    ("answered_before", "round 200 carries a stale answer from round 199"),
], ids=["stale", "zero", "negative", "answered_before"])
def test_bad_feed_round_stops_the_run(feednet, set_round, case, expect):
    t = latest_timestamp(feednet.url)
    answer = {"zero": 0, "negative": -5}.get(case, 2_400_000_000)
    updated = t - 3 * 86_400 if case == "stale" else t
    set_round(200, answer, updated, updated, 199 if case == "answered_before" else 200)
    with pytest.raises(PublisherError, match=rf"^AVAX/USD feed {feednet.addresses['PriceFeed']}: {expect}"):
        collect(devnet_profile(load_profile("devnet"), feednet))


def test_stale_feed_fails_the_cli(feednet, set_round, tmp_path):
    t = latest_timestamp(feednet.url)
    set_round(200, 2_400_000_000, t - 5 * 86_400, t - 5 * 86_400, 200)
    got = run_cli(["snapshot", "--rpc-url", feednet.url, "--out", str(tmp_path / "s.json")],
                  {"PUBLISHER_VALIDATOR_API_URL": feednet.services["validator_api"]})
    assert got.returncode == 1
    assert got.stderr.strip().startswith(f"error: AVAX/USD feed {feednet.addresses['PriceFeed']}: round 200 is")
    assert len(got.stderr.strip().splitlines()) == 1


def test_divergent_price_api_stops_the_run(profile, services):
    services.prices.fault = Fault(divergence_pct=10)
    with pytest.raises(PublisherError, match=r"^price API: AVAX/USD [\d.]+ diverges 10\.00% "):
        collect(profile)


def test_small_divergence_passes_the_cross_check(profile, services):
    services.prices.fault = Fault(divergence_pct=3)
    check = collect(profile).snapshot.price_check
    assert check.status == "ok" and "AVAX/USD within 3.00%" in check.note


def test_a_stale_ggp_price_may_drift_from_the_market_and_says_so(profile, services, demo_snapshot):
    """A stale Oracle price is published labelled, so its drift from the market is a warning; the
    same drift on a fresh price, and any AVAX/USD drift, still stops the run."""
    from publisher.sources import clients
    from publisher.sources.http import HttpCounters

    api = clients.price_api(profile, HttpCounters())
    halved = dataclasses.replace(demo_snapshot, oracle=dataclasses.replace(demo_snapshot.oracle, price=demo_snapshot.oracle.price // 2))
    warnings: list[str] = []
    check = prices.cross_check(api, halved, {"avax": 5, "ggp": 25}, warnings, ggp_stale=True)
    assert check.status == "ok" and "not applied: the Oracle price is stale" in check.note
    assert any(w.startswith("price cross-check: GGP/USD 100.00% from the market's") for w in warnings)
    with pytest.raises(PublisherError, match=r"GGP/USD .* diverges 100\.00%"):
        prices.cross_check(api, halved, {"avax": 5, "ggp": 25}, [], ggp_stale=False)
    services.prices.fault = Fault(divergence_pct=10)
    with pytest.raises(PublisherError, match=r"AVAX/USD .* diverges"):
        prices.cross_check(api, halved, {"avax": 5, "ggp": 25}, [], ggp_stale=True)


def test_price_api_down_is_a_warning(profile, services):
    services.prices.fault = Fault(status=503)
    snap = collect(profile).snapshot
    assert snap.price_check.status == "unavailable" and snap.price_check.avax_usd is None
    assert any(w.startswith("price cross-check skipped: price API") and "HTTP 503 after 5 attempts" in w for w in snap.warnings)
    assert snap.validators  # the run went on


# -- price history ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def chain(demo):
    rpc = RpcClient([demo.url])
    head = int(rpc.request("eth_blockNumber"), 16)
    oracle_logs = rpc.request("eth_getLogs", [{"fromBlock": "0x0", "toBlock": hex(head), "address": demo.addresses["Oracle"], "topics": [history.TOPIC_ORACLE]}])
    return {"head": head, "oracle_blocks": [int(lg["blockNumber"], 16) for lg in oracle_logs]}


def build(url, demo, head, span=32, **kw):
    client = RpcClient([url])
    got = history.build(client, oracle=demo.addresses["Oracle"], feeds=[demo.addresses["PriceFeed"]], head=head, span=span, **kw)
    return got, client.counters


def cursors(chain):
    ob = chain["oracle_blocks"]
    # mid-day (the day's feed update is still to come), the day's next block, late, the head itself
    return [ob[30], ob[30] + 1, ob[60] + 5, chain["head"] - 1, chain["head"]]


def test_incremental_history_reads_only_new_blocks(demo, chain):
    full, full_counters = build(demo.url, demo, chain["head"])
    assert len(full.points) == 75 and full.ranges[0][0] == 0 and full.ranges[-1][1] == chain["head"]
    for cursor in cursors(chain):
        prior, _ = build(demo.url, demo, cursor)
        again, counters = build(demo.url, demo, chain["head"], prior=history_file.PriorHistory(prior.points, cursor))
        assert again.points == full.points, cursor
        assert all(a > cursor for a, _ in again.ranges)
        assert sum(b - a + 1 for a, b in again.ranges) == chain["head"] - cursor  # every new block, once
        assert counters.rpc_calls == 2 * len(again.ranges) < full_counters.rpc_calls


def events_only(points):
    """The history as the price events define it: without the share prices added on top
    (sources/shareprice.py, tested in test_shareprice.py)."""
    return tuple(dataclasses.replace(p, ggavax_assets_per_share=None, ggavax_time=None, ggavax_block=None,
                                     ggavax_source=None) for p in points)


def test_history_resumes_from_a_saved_snapshot(demo, chain, demo_snapshot):
    cursor = chain["oracle_blocks"][40]
    prior, _ = build(demo.url, demo, cursor)
    older = dataclasses.replace(demo_snapshot, price_history=prior.points,
                                block=dataclasses.replace(demo_snapshot.block, number=cursor))
    resumed, _ = build(demo.url, demo, chain["head"], prior=history_file.from_snapshot(older))
    assert resumed.points == events_only(demo_snapshot.price_history) and resumed.ranges[0][0] == cursor + 1


def test_unusable_prior_history_is_rebuilt(demo, chain, demo_snapshot):
    bad = history_file.PriorHistory(demo_snapshot.price_history[::-1], chain["head"])
    got, _ = build(demo.url, demo, chain["head"], prior=bad)
    assert got.points == events_only(demo_snapshot.price_history) and got.ranges[0][0] == 0
    assert got.warnings and "rebuilding" in got.warnings[0]


def test_published_history_loader(tmp_path, demo_snapshot):
    path = tmp_path / "prices" / "history.json"
    assert history_file.load_published(path) is None  # absent: a fresh build
    points = demo_snapshot.price_history
    path.parent.mkdir()
    path.write_text(json.dumps({"points": [{**history_file.exact_fields(p), "ggpInAvax": 0.03} for p in points],
                                "meta": {"block": {"number": demo_snapshot.block.number}}}))
    assert history_file.load_published(path) == history_file.PriorHistory(points, demo_snapshot.block.number)
    path.write_text(json.dumps({"points": [{"date": "2026-01-01", "ggpInAvax": 0.03}]}))
    assert history_file.load_published(path) is None  # no exact values: rebuild rather than guess
    path.write_text("{not json")
    assert history_file.load_published(path) is None


def test_history_halves_refused_ranges(demo, chain, demo_snapshot):
    with LimitedRpc(demo.url, limit=20) as proxy:
        got, _ = build(proxy.url, demo, chain["head"], span=100)
    assert got.points == events_only(demo_snapshot.price_history)
    assert proxy.refused > 0 and all(b - a + 1 <= 20 for a, b in got.ranges)
    assert [a for a, _ in got.ranges[1:]] == [b + 1 for _, b in got.ranges[:-1]]  # contiguous, in order
    assert (got.ranges[0][0], got.ranges[-1][1]) == (0, chain["head"])


def test_price_point_days_follow_event_time(demo_snapshot):
    for p in demo_snapshot.price_history:
        assert isinstance(p, PricePoint)
        assert datetime.fromtimestamp(p.timestamp, UTC).strftime("%Y-%m-%d") == p.date


# -- validator groups in parallel -------------------------------------------------------------------


def test_pooled_groups_keep_their_order_and_raise_the_first_failure_in_order():
    import time as clock

    from publisher.sources.validators import WORKERS, _pooled

    running, most = [0], [0]
    lock = threading.Lock()

    def work(i):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        clock.sleep(0.02 * (i % 3))
        with lock:
            running[0] -= 1
        if i in (3, 5):
            clock.sleep(0.1 if i == 3 else 0)  # the later item fails first
            raise ValueError(f"item {i}")
        return i * 10

    assert _pooled(work, list(range(12))[:3]) == [0, 10, 20]
    with pytest.raises(ValueError, match="item 3"):
        _pooled(work, list(range(40)))
    assert most[0] <= WORKERS
