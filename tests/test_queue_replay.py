"""Every published funding estimate against the chain replaying it (support/replay.py): from the
build block, each staking minipool's validation ends at its end time through the devnet's real
contract calls, the contracts deciding what restakes and what the depositor's calls fund. Each
pending request's published estimate must be the block time the replay funds it, to the second;
a request fundable now must be funded by the depositor call the build names; one the known
returns do not cover must stay unfunded. The published restakes and returns must be the
contracts' own.

Cases: the demo; the demo with MinipoolManager paused; the demo 3.5 days on with nothing
processed; the demo with the Oracle's GGP price divided by 10; a per-call limit of 3 with closed
ids at the line's front; the wound-down scenario; the living devnet through a wind-down with new
requests filed after it. Each case's published and replayed times are written to
``benchmarks/results/queue_replay.json``'s neighbour in the test's tmp dir for inspection.
"""
from __future__ import annotations

import dataclasses
import json
import re
from contextlib import contextmanager

import pytest
from ggp_devnet import devnet_profile, running_live
from ggp_devnet import operator as O
from ggp_devnet.seed import Sender, cancel_request, claim_unstake, manual_mining, reclaim_expired
from support.chain import checkpoint, header
from support.replay import replay

from publisher.build.pipeline import build
from publisher.chain.abi import Fn
from publisher.chain.rpc import RpcClient, RpcError
from publisher.collect import collect
from publisher.compute import queue as Q
from publisher.compute.nodeid import node_id
from publisher.config import load_profile

DAY = 86_400
set_max_per_deposit = Fn("setMaxRequestsPerStakingDeposit(uint256)")


def published_against_replay(net, profile, tmp_path, name: str) -> dict:
    """Build the API at the head, replay the chain from there, and compare; returns the table."""
    snap = collect(profile).snapshot
    out = tmp_path / name / "out"
    build(snap, profile, out)
    body = json.loads((out / "withdrawals.json").read_text())
    flags_are_the_contracts(net, snap, out)
    got = replay(net.url, net.addresses, snap)
    sched = body["schedule"]
    rows = []
    for row in sched["line"]:
        funded = got.funded.get(row["id"])
        rows.append({"id": row["id"], "fundableNow": row["fundableNow"], "depositorCalls": row["depositorCalls"],
                     "published": row["estimatedFundingTime"], "overdue": row["awaitsOverdueReturns"], "replayed": funded})
    (tmp_path / f"{name}.json").write_text(json.dumps(rows, indent=1))
    first = snap.block.timestamp + 1
    for r in rows:
        funded = r["replayed"]
        if r["fundableNow"]:
            assert funded == (first, 1, r["depositorCalls"]), (name, r)
        elif r["overdue"]:  # undated: funded once the overdue ends are recorded, which the replay does next block
            assert r["published"] is None and funded is not None and funded[0] == first and funded[1] > 1, (name, r)
        elif r["published"] is not None:
            assert funded is not None and funded[0] == r["published"] and funded[1] > 1, (name, r)
        else:
            assert funded is None, (name, r)
    same(name, "restakes", {(k["time"], k["nodeID"]) for k in sched["restakes"]}, {(t, node_id(n)) for t, n in got.restaked})
    same(name, "returns", {(r["time"], r["nodeID"]) for r in sched["returns"]}, {(t, node_id(n)) for t, n in got.returned})
    assert sched["revertedCalls"] == got.reverted_calls, name
    return {"snapshot": snap, "body": body, "replay": got, "rows": rows, "out": out}


def flags_are_the_contracts(net, snap, out) -> None:
    """canClaim, canCancel and canReclaim of every open request are what the requester's own
    eth_call of claimUnstake, cancelRequest and reclaimExpiredRequest answers at the build block."""
    client = RpcClient([net.url], max_attempts=1)
    queue = net.addresses["WithdrawQueue"]

    def succeeds(who: str, fn: Fn, i: int) -> bool:
        tx = {"from": who, "to": queue, "data": "0x" + fn.encode(i).hex(), "gas": hex(3_000_000), "gasPrice": "0x0"}
        try:
            client.request("eth_call", [tx, hex(snap.block.number)])
        except RpcError:
            return False
        return True

    seen = 0
    for who in {r.requester for r in snap.withdraw_queue.requests}:
        for r in json.loads((out / "withdrawals" / f"{who.lower()}.json").read_text())["requests"]:
            calls = {"canClaim": claim_unstake, "canCancel": cancel_request, "canReclaim": reclaim_expired}
            assert {k: succeeds(who, fn, r["id"]) for k, fn in calls.items()} == {k: r[k] for k in calls}, r
            seen += 1
    assert seen == len(snap.withdraw_queue.requests)


def same(case: str, what: str, published: set, replayed: set) -> None:
    assert published == replayed, (f"{case}: {what} published only {sorted(published - replayed)}, "
                                   f"replayed only {sorted(replayed - published)}")


@contextmanager
def changed(net, change):
    """The demo chain with ``change(op, sender, now)`` applied in one block a second after the head;
    afterwards the chain is exactly as before."""
    client = RpcClient([net.url], max_attempts=2)
    with checkpoint(client):
        now = int(header(client)["timestamp"], 16)
        with manual_mining(client):
            sender = Sender(client, clock=now)
            op = O.Operator(client, net.addresses, sender)
            change(op, sender, now)
            sender.check()
        yield


def test_the_demo(demo, demo_profile, tmp_path):
    got = published_against_replay(demo, demo_profile, tmp_path, "demo")
    assert sum(r["published"] is not None for r in got["rows"]) >= 3, "the demo must date some requests by returns"
    assert any(r["fundableNow"] for r in got["rows"])


def test_the_demo_with_minipool_manager_paused(demo, demo_profile, tmp_path):
    def pause(op, sender, now):
        with sender.one_block(now + 1):
            op.pause("MinipoolManager", True)

    with changed(demo, pause):
        got = published_against_replay(demo, demo_profile, tmp_path, "mm-paused")
    assert not got["body"]["schedule"]["restakes"] and got["body"]["pauses"]["minipoolManager"]
    assert got["replay"].returned


def test_the_demo_moved_3_5_days_without_processing(demo, demo_profile, tmp_path):
    feed = collect(demo_profile).snapshot.feed

    def later(op, sender, now):
        with sender.one_block(now + int(3.5 * DAY)):  # the AVAX/USD feed, a third party's, goes on
            op.set_feed(feed.answer)

    with changed(demo, later):
        got = published_against_replay(demo, demo_profile, tmp_path, "overdue")
    assert any(r["overdue"] for r in got["body"]["schedule"]["returns"])


def test_the_demo_with_the_oracle_price_divided_by_10(demo, demo_profile, tmp_path):
    snap0 = collect(demo_profile).snapshot

    def cheap(op, sender, now):
        with sender.one_block(now + 1):
            op.send("Oracle", O.set_price.encode(snap0.oracle.price // 10, sender.next_block_time()), "oracle price / 10")

    with changed(demo, cheap):  # the price API would refuse a tenth of the market's price: not asked
        got = published_against_replay(demo, dataclasses.replace(demo_profile, price_api_url=None), tmp_path, "price-10")
    plain = Q.schedule(snap0)
    assert len(got["body"]["schedule"]["restakes"]) < len(plain.restakes), "a tenth of the price refuses some restakes"


def test_a_per_call_limit_of_0_funds_nothing(demo, demo_profile, tmp_path):
    """The setter has no lower bound: at 0 the depositor's loop takes no step, and the chain funds
    nothing however liquid the vault is."""
    def zero(op, sender, now):
        with sender.one_block(now + 1):
            op.send("WithdrawQueue", set_max_per_deposit.encode(0), "limit 0")

    with changed(demo, zero):
        got = published_against_replay(demo, demo_profile, tmp_path, "limit-0")
    assert got["rows"] and not any(r["fundableNow"] or r["published"] or r["replayed"] for r in got["rows"])
    assert any("maxRequestsPerDeposit is 0" in a for a in got["body"]["schedule"]["assumptions"])
    assert "maxRequestsPerDeposit is 0" in got["body"]["schedule"]["outlook"]


def test_a_per_call_limit_of_3_with_closed_ids_at_the_front(demo, demo_profile, tmp_path):
    snap0 = collect(demo_profile).snapshot
    line = Q.line(snap0)

    def stale_front(op, sender, now):
        with sender.one_block(now + 1):
            op.send("WithdrawQueue", set_max_per_deposit.encode(3), "limit 3")
            for r in line[:2]:
                op.cancel_request(r.requester, r.id)

    with changed(demo, stale_front):
        got = published_against_replay(demo, demo_profile, tmp_path, "limit-3")
    sched = got["body"]["schedule"]
    assert sched["staleEntries"] >= 2 and sched["lineFrontKnown"]
    calls = [r["depositorCalls"] for r in got["rows"] if r["fundableNow"]]
    # The closed ids use up the next call's steps: the first request the liquidity covers needs two.
    assert calls and calls[0] >= 2, calls


@pytest.fixture(scope="module")
def wound(wound_devnet):
    return wound_devnet, devnet_profile(load_profile("devnet"), wound_devnet)  # the replay reverts what it mines


def test_the_wound_down_scenario(wound, tmp_path):
    net, profile = wound
    got = published_against_replay(net, profile, tmp_path, "wound-down")
    body, out = got["body"], got["out"]
    assert body["pauses"]["ggavaxDeposits"] and body["funded"]["stuckCount"] > 0
    assert not body["schedule"]["restakes"]
    # Stuck requests are published as stuck, with the reason, and the dashboard counts only what
    # can be claimed.
    requests = [r for f in (out / "withdrawals").glob("0x*.json") for r in json.loads(f.read_text())["requests"]]
    stuck = [r for r in requests if r["status"] == "stuck"]
    assert len(stuck) == body["funded"]["stuckCount"] and all(r["stuckReason"] and not r["canReclaim"] for r in stuck)
    claimable = [r for r in requests if r["canClaim"]]
    assert body["funded"]["claimableCount"] == len(claimable)
    page = (out / "index.html").read_text()
    shown = re.search(r'<td id="queue-claimable">(\d+) requests', page)
    assert shown and int(shown.group(1)) == len(claimable)
    assert f'<td id="queue-stuck">{len(stuck)} requests' in page


def test_the_living_devnet_through_a_wind_down_with_requests_after_it(tmp_path):
    with running_live(seed=2) as (net, live):
        start = live.now
        live.wind_down_at = start + 6 * DAY
        live.run(days=9, pace=0)
        live.file_requests(3, live.now + 3600)
        profile = devnet_profile(load_profile("devnet"), net)
        got = published_against_replay(net, profile, tmp_path, "living")
    assert got["body"]["pauses"]["minipoolManager"]
    assert len(got["rows"]) >= 3
