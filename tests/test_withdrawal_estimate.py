"""/withdrawals/estimate: a request's estimate before it is filed, answered by the function from
/withdrawals/params with the code the build's schedule serves the line with.

Held to the build's own schedule (the same request appended to the snapshot's line), and to the
chain: the request is filed on the devnet right after the build block, and the chain replays the
schedule from there (support/replay.py)."""
from __future__ import annotations

import dataclasses
import json

import pytest
from ggp_devnet import operator as O
from ggp_devnet.seed import Sender, manual_mining
from support.chain import checkpoint, header
from support.replay import replay

from publisher.chain import abis
from publisher.chain.rpc import RpcClient
from publisher.collect import collect
from publisher.compute import line as L
from publisher.compute import queue as Q
from publisher.serve import Site
from publisher.snapshot import UnstakeRequest

WAD = 10**18


def ask(out, query: str) -> tuple[int, dict]:
    status, _, body = Site(out).get("/withdrawals/estimate", query, "GET")
    return status, json.loads(body)


def appended(snap, shares: int, expected: int):
    """The snapshot with a request for ``shares`` filed at its block, at the back of the line."""
    q = snap.withdraw_queue
    t = snap.block.timestamp
    r = UnstakeRequest(q.next_request_id, "0x" + "ee" * 20, shares, expected, t, t + q.unstake_delay,
                       t + q.unstake_delay + L.MIN_EXPIRATION_DELAY, 0, False)
    act = snap.queue_activity
    return dataclasses.replace(snap, withdraw_queue=dataclasses.replace(
        q, next_request_id=q.next_request_id + 1, pending_count=q.pending_count + 1, requests=(*q.requests, r)),
        queue_activity=act)


@pytest.mark.parametrize("avax", ["1", "60", "450", "1500", "100000"])
def test_the_estimate_is_the_schedule_with_the_request_at_the_back(built, demo_snapshot, avax):
    status, body = ask(built, f"amount={avax}")
    assert status == 200, body
    res = body["result"]
    shares, expected = int(res["sharesWei"]), int(res["expectedAvaxWei"])
    v = demo_snapshot.ggavax
    # An amount of AVAX to receive: the fewest shares worth at least it (previewWithdraw, rounded up).
    assert shares == -(-int(avax) * WAD * v.total_supply // v.total_assets)
    assert expected >= int(avax) * WAD > (shares - 1) * v.total_assets // v.total_supply
    place = Q.schedule(appended(demo_snapshot, shares, expected)).places[demo_snapshot.withdraw_queue.next_request_id]
    assert (res["position"], res["fundableNow"], res["depositorCalls"], res["estimatedFundingTime"]) == (
        place.position, place.fundable_now, place.depositor_calls, place.funding_time)
    assert res["aheadAvaxWei"] == str(place.ahead_avax)
    # The same amount asked as shares gives the same answer.
    status, by_shares = ask(built, f"amount={shares / WAD:.18f}&unit=ggavax")
    assert status == 200 and by_shares["result"]["estimatedFundingTime"] == res["estimatedFundingTime"]


def test_the_estimates_span_the_line(built):
    """Behind the demo's whole line: a small request waits for the returns that fund the line,
    a larger one for later ones, and one beyond every known return gets no date."""
    small, large, huge = (ask(built, f"amount={a}")[1]["result"] for a in ("1", "450", "20000"))
    assert small["position"] == large["position"] > 1 and not small["fundableNow"]
    assert small["estimatedFundingTime"] <= large["estimatedFundingTime"]
    assert not huge["refused"]  # some holder could file it: the demo's 23 000 ggAVAX are outside the queue
    assert huge["estimatedFundingTime"] is None and any("no minipool return" in c for c in huge["caveats"])


@pytest.mark.parametrize(("query", "needle"), [
    ("", "amount is required: whole tokens, e.g. amount=1000"),
    ("amount=1&unit=eth", "unit must be avax or ggavax"),
    ("amount=-1", "sign"),
    ("amount=1&expirationDelay=1e5", "whole seconds"),
    ("amount=1&foo=2", "unknown parameter"),
    ("amount=1&amount=2", "more than once"),
])
def test_bad_input_is_a_400_naming_it(built, query, needle):
    status, body = ask(built, query)
    assert status == 400 and needle in body["error"]["message"], body


def test_the_expiration_delay_follows_the_queue(built):
    p = L.parse_params(json.loads((built / "withdrawals" / "params.json").read_text()))
    res = ask(built, "amount=10&expirationDelay=60")[1]["result"]
    assert res["expirationDelay"] == L.MIN_EXPIRATION_DELAY  # raised to the minimum, as the queue does
    assert res["claimableTime"] == p.block_time + p.unstake_delay
    assert res["expirationTime"] == res["claimableTime"] + L.MIN_EXPIRATION_DELAY
    res = ask(built, f"amount=10&expirationDelay={p.max_expiration_delay}")[1]["result"]
    assert res["expirationTime"] == res["claimableTime"] + p.max_expiration_delay


@pytest.mark.parametrize("avax", [60, 450])
def test_the_chain_funds_the_filed_request_when_the_estimate_says(demo, demo_profile, built, avax):
    """File the request right after the build block, replay the chain from there: the request is
    funded at the estimated time (or by the depositor's first calls when fundable now)."""
    status, body = ask(built, f"amount={avax}")
    assert status == 200, body
    res = body["result"]
    shares = int(res["sharesWei"])
    client = RpcClient([demo.url], max_attempts=2)
    with checkpoint(client):
        now = int(header(client)["timestamp"], 16)
        holders = [who for who, _ in demo.scenario.deposits]
        with manual_mining(client):
            sender = Sender(client, clock=now)
            op = O.Operator(client, demo.addresses, sender)
            held = op.calls([("TokenggAVAX", abis.balanceOf, (who,)) for who in holders])
            holder = next(who for who, n in zip(holders, held, strict=True) if n >= shares)
            with sender.one_block(now + 1):
                op.request_unstake(holder, shares, 0)
            sender.check()
        snap = collect(demo_profile).snapshot
        new_id = max(r.id for r in snap.withdraw_queue.requests)
        got = replay(demo.url, demo.addresses, snap)
    funded = got.funded.get(new_id)
    if res["fundableNow"]:
        assert funded is not None and funded[1] == 1
    else:
        assert funded is not None and funded[0] == res["estimatedFundingTime"], (res, funded)


def test_resuming_where_the_line_reaches_the_back_gives_the_same_answer(built, demo_snapshot):
    """The function serves a request from the serve where the line first reaches the back; the
    whole line from the front gives the same answer, whatever the amount or the per-call limit."""
    p = L.parse_params(json.loads((built / "withdrawals" / "params.json").read_text()))
    for params in (p, dataclasses.replace(p, limit=2), dataclasses.replace(p, limit=1)):
        resume = L.resume_point(params)
        for avax in (1, 7, 60, 200, 450, 1200, 3000, 10**5):
            for delay in (None, 30 * 86_400):
                kwargs = {"avax": avax * WAD, "expiration_delay": delay}
                assert L.estimate(params, resume=resume, **kwargs) == L.estimate(params, **kwargs), (params.limit, avax)


def test_a_delay_beyond_the_queues_maximum_is_answered_with_its_refusal(built):
    status, body = ask(built, "amount=1&expirationDelay=99999999999")
    assert status == 200 and any("refuses an expiration delay above its maximum" in c for c in body["result"]["caveats"])


def test_nothing_to_redeem_is_answered_with_the_queues_refusal(built):
    status, body = ask(built, "amount=0&unit=ggavax")
    assert status == 200 and body["result"]["expectedAvaxWei"] == "0"
    assert any("the queue refuses a request for 0 shares" in c for c in body["result"]["caveats"])


def test_more_ggavax_than_anyone_holds_is_refused(built, demo_snapshot):
    """A request takes its shares from the one filing it: more than the supply outside the queue
    (the pending requests' shares are the queue's) cannot be filed."""
    q, v = demo_snapshot.withdraw_queue, demo_snapshot.ggavax
    outside = v.total_supply - sum(r.shares for r in q.requests if not r.fulfilled)
    for wei, refused in ((outside, False), (outside + 1, True)):
        status, body = ask(built, f"amount={wei // WAD}.{wei % WAD:018d}&unit=ggavax")
        assert status == 200 and body["result"]["refused"] is refused, wei
        assert any("no one holds that much ggAVAX" in c for c in body["result"]["caveats"]) is refused


def test_a_paused_queue_funds_no_estimate(built):
    """requestUnstake reverts while the queue is paused: the estimate dates no funding and says why,
    where the same request to the open queue is fundable."""
    params = L.parse_params(json.loads((built / "withdrawals" / "params.json").read_text()))
    open_queue = L.estimate(dataclasses.replace(params, queue_paused=False), avax=WAD)
    paused = L.estimate(dataclasses.replace(params, queue_paused=True), avax=WAD)
    assert open_queue["fundableNow"] or open_queue["estimatedFundingTime"] is not None
    assert paused["refused"] is True and open_queue["refused"] is False
    assert paused["fundableNow"] is False and paused["depositorCalls"] is None
    assert paused["estimatedFundingTime"] is None and paused["expiresBeforeFunding"] is False
    assert "the queue is paused: new requests are refused until it is unpaused" in paused["caveats"]
    assert not any("no minipool return" in c for c in paused["caveats"])  # refused, not waiting
