"""The withdrawal queue as published: every value equals a direct call to the queue at the build
block (web3 with the compiled ABI, not our reader), and the queue's faults: paused, a request
claimed after the pinned block, no code at the address, a malformed answer."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from support.chain import checkpoint, eth_call, header
from web3 import Web3

from publisher.build.pipeline import build
from publisher.build.validate import load_dir, validate
from publisher.chain.abi import Fn
from publisher.chain.reader import Reader
from publisher.chain.rpc import RpcClient
from publisher.collect import collect
from publisher.errors import PublisherError

ARTIFACTS = json.loads((Path(__file__).parents[1] / "devnet/ggp_devnet/artifacts.json").read_text())["contracts"]
WAD = 10**18
pause = Fn("pause()")
claim = Fn("claimUnstake(uint256)")
next_request_id = Fn("nextRequestId()", "uint256")


def body(out: Path, name: str):
    return json.loads((out / name).read_text())


@pytest.fixture(scope="module")
def chain(demo, demo_snapshot):
    w3 = Web3(Web3.HTTPProvider(demo.url))
    queue = w3.eth.contract(address=demo.addresses["WithdrawQueue"], abi=ARTIFACTS["WithdrawQueue"]["abi"])
    vault = w3.eth.contract(address=demo.addresses["TokenggAVAX"], abi=ARTIFACTS["TokenggAVAX"]["abi"])
    block = demo_snapshot.block.number

    def call(contract, name, *args):
        return getattr(contract.functions, name)(*args).call(block_identifier=block)

    return queue, vault, call


def test_the_demo_queue_holds_every_state(built):
    q = body(built, "withdrawals.json")
    assert q["status"] == "ok" and q["reason"] is None
    assert q["pending"]["count"] > 1 and q["funded"]["claimableCount"] > 0 and q["expired"]["count"] > 0
    assert q["schedule"]["coveredCount"] > 0 and q["schedule"]["returns"], "nothing for the forecast to forecast"
    page = (built / "index.html").read_text()
    assert 'id="queue-table"' in page and 'id="chart-queue"' in page and 'href="withdrawals"' in page
    reference = (built / "docs.html").read_text()
    example = next(iter(sorted((built / "withdrawals").iterdir()))).stem
    assert "/withdrawals/{address}" in reference and "/withdrawals/0x" in reference and example


def test_every_queue_value_equals_the_chain(built, chain, demo_snapshot):
    queue, vault, call = chain
    q = body(built, "withdrawals.json")
    now = demo_snapshot.block.timestamp
    params = q["parameters"]
    assert params["nextRequestId"] == call(queue, "nextRequestId")
    assert params["unstakeDelay"] == call(queue, "unstakeDelay")
    assert params["maxExpirationDelay"] == call(queue, "maxExpirationDelay")
    assert params["minExpirationDelay"] == call(queue, "MIN_EXPIRATION_DELAY")
    assert params["paused"] is call(queue, "paused")
    assert params["maxRequestsPerDeposit"] == call(queue, "getMaxRequestsPerStakingDeposit")
    assert params["minOnBehalfShares"] == call(queue, "getMinUnstakeOnBehalfOfAmt") / WAD
    pending = sorted(call(queue, "getAllPendingRequests"))
    fulfilled = sorted(call(queue, "getAllFulfilledRequests"))
    assert q["pending"]["count"] == len(pending) == call(queue, "getPendingRequestsCount")
    assert q["funded"]["count"] == len(fulfilled) == call(queue, "getFulfilledRequestsCount")
    assert q["funded"]["avax"] == call(queue, "totalAllocatedFunds") / WAD
    assert q["expired"]["count"] == call(queue, "getExpiredRequestsCount")
    assert [row["id"] for row in q["schedule"]["line"]] == pending
    records = {i: call(queue, "getRequestInfo", i) for i in pending + fulfilled}
    assert q["pending"]["expectedAvax"] == pytest.approx(sum(records[i][2] for i in pending) / WAD, rel=1e-12)
    # The queue holds the pending requests' shares (fulfilled ones were burnt at fulfilment).
    held = call(vault, "balanceOf", queue.address)
    assert q["sharesHeld"] == held / WAD and held == sum(records[i][1] for i in pending)
    liquidity = max(0, call(vault, "totalAssets") - call(vault, "stakingTotalAssets"))
    assert q["liquidity"]["queueAvax"] == liquidity / WAD
    requesters = {r[0] for r in records.values()}
    assert q["requesters"] == len(requesters)
    # Requests past their expiration that the schedule funds are named in the outlook.
    late = [row for row in q["schedule"]["line"] if row["status"] == "pendingExpired" and row["expiresBeforeFunding"]]
    assert late and f"{len(late)} of the requests the schedule funds" in q["schedule"]["outlook"]
    ggavax = body(built, "ggAvax.json")
    assert (ggavax["withdrawQueue"], ggavax["queuePendingCount"]) == (queue.address, len(pending))
    for who in requesters:
        mine = body(built, f"withdrawals/{who.lower()}.json")
        assert mine["requester"] == who
        assert [r["id"] for r in mine["requests"]] == sorted(call(queue, "getRequestsByOwner", who, 0, 0))
        for r in mine["requests"]:
            requester, shares, expected, requested, claimable, expires, allocated = records[r["id"]]
            assert (r["requester"], r["shares"], r["expectedAvax"], r["allocatedAvax"]) == (requester, shares / WAD, expected / WAD, allocated / WAD)
            assert (r["requestTime"], r["claimableTime"], r["expirationTime"]) == (requested, claimable, expires)
            assert r["fulfilled"] is call(queue, "isFulfilledRequest", r["id"])
            assert r["canClaim"] is call(queue, "canClaimRequest", r["id"])
            expired = now >= expires
            assert r["status"] == ({(True, True): "expiredFunded", (True, False): "pendingExpired",
                                    (False, True): "funded", (False, False): "pending"}[expired, r["fulfilled"]])
            assert (r["position"] is None) is r["fulfilled"]
            if not r["fulfilled"]:
                assert r["position"] == pending.index(r["id"]) + 1


def test_a_requester_without_open_requests_has_no_file(built, demo_snapshot):
    someone = demo_snapshot.stakers[0].staker_addr.lower()
    owners = {r.requester.lower() for r in demo_snapshot.withdraw_queue.requests}
    assert someone not in owners
    assert not (built / f"withdrawals/{someone}.json").exists()


def test_the_open_ids_listed_by_the_sets_read_as_every_id_does(demo, demo_profile, demo_snapshot):
    # The reader lists the open ids from the queue's two set views; past a gas budget it reads every
    # id ever issued instead. Both must give the same record, closed ids and all.
    client = RpcClient([demo.url])
    pinned = demo_snapshot.block.number
    listed = Reader(client, demo_profile).read(block=pinned).withdraw_queue
    every = Reader(client, demo_profile, set_read_gas=0).read(block=pinned).withdraw_queue
    assert listed == every == demo_snapshot.withdraw_queue
    assert listed is not None and len(listed.requests) < listed.next_request_id  # some ids are closed


def test_a_request_filed_for_the_zero_address_is_open_and_the_build_goes_on(demo, demo_profile, rpc, tmp_path):
    """requestUnstakeOnBehalfOf takes any requester, the zero address too: that record is open
    (listed in the pending set, its fields set), not a deleted one. Read either way, the queue
    keeps it, its counts agree, and the build publishes (it used to refuse every run)."""
    from ggp_devnet.seed import deposit_for
    from support.chain import send

    zero = "0x" + "00" * 20
    holder = "0x" + "7e" * 20
    client = RpcClient([demo.url])
    with checkpoint(rpc):
        send(rpc, demo.addresses["TokenggAVAX"], deposit_for.encode(holder, WAD))
        rpc.request("anvil_impersonateAccount", [holder])
        rpc.request("anvil_setBalance", [holder, hex(10 * WAD)])
        for to, data in ((demo.addresses["TokenggAVAX"], Fn("approve(address,uint256)").encode(demo.addresses["WithdrawQueue"], WAD)),
                         (demo.addresses["WithdrawQueue"], Fn("requestUnstakeOnBehalfOf(uint256,address,uint48)").encode(WAD // 100, zero, 0))):
            tx = rpc.request("eth_sendTransaction", [{"from": holder, "to": to, "data": "0x" + data.hex(), "gas": hex(1_000_000)}])
            receipt = None
            while receipt is None:
                receipt = rpc.request("eth_getTransactionReceipt", [tx])
            assert receipt["status"] == "0x1"
        rid = eth_call(client, demo.addresses["WithdrawQueue"], next_request_id) - 1
        listed = Reader(client, demo_profile).read().withdraw_queue
        every = Reader(client, demo_profile, set_read_gas=0).read().withdraw_queue
        snap = collect(demo_profile).snapshot
    assert listed == every == snap.withdraw_queue
    filed = next(r for r in listed.requests if r.id == rid)
    assert int(filed.requester, 16) == 0 and filed.shares == WAD // 100 and not filed.fulfilled
    build(snap, demo_profile, tmp_path / "out")
    (record,) = [r for r in body(tmp_path / "out", f"withdrawals/{zero}.json")["requests"] if r["id"] == rid]
    # No one acts for the zero address: the queue refuses its claim and its cancel (RequestNotFound).
    assert (record["canClaim"], record["canCancel"], record["canReclaim"]) == (False, False, False)
    assert "filed for the zero address" in record["advice"] and "refuses to claim or cancel" in record["advice"]


def test_the_pin_holds_when_a_request_is_claimed_after_it(demo, demo_profile, rpc):
    with checkpoint(rpc):
        pinned = int(header(rpc)["number"], 16)
        before = collect(demo_profile, block=pinned).snapshot.withdraw_queue
        target = next(r for r in before.requests if r.fulfilled and r.expiration_time > int(header(rpc)["timestamp"], 16) + 60)
        rpc.request("anvil_impersonateAccount", [target.requester])
        rpc.request("anvil_setBalance", [target.requester, hex(10 * WAD)])
        tx = rpc.request("eth_sendTransaction", [{"from": target.requester, "to": demo.addresses["WithdrawQueue"],
                                                  "data": "0x" + claim.encode(target.id).hex(), "gas": hex(1_000_000)}])
        receipt = None
        while receipt is None:
            receipt = rpc.request("eth_getTransactionReceipt", [tx])
        assert receipt["status"] == "0x1"
        at_pin = collect(demo_profile, block=pinned).snapshot.withdraw_queue
        latest = collect(demo_profile).snapshot.withdraw_queue
    assert at_pin == before and target in at_pin.requests
    assert target.id not in {r.id for r in latest.requests}
    assert latest.total_allocated_funds == before.total_allocated_funds - target.allocated_funds


def test_a_paused_queue_is_published_as_paused(demo, demo_profile, rpc, tmp_path):
    from support.chain import send

    with checkpoint(rpc):
        send(rpc, demo.addresses["WithdrawQueue"], pause.encode())
        snap = collect(demo_profile).snapshot
    assert snap.withdraw_queue.paused is True
    build(snap, demo_profile, tmp_path / "out")
    assert body(tmp_path / "out", "withdrawals.json")["parameters"]["paused"] is True
    assert "new requests paused" in (tmp_path / "out" / "index.html").read_text()


def test_an_address_without_a_queue_publishes_no_queue(demo_profile, demo_snapshot, tmp_path):
    nowhere = "0x" + "5e" * 20
    profile = dataclasses.replace(demo_profile, withdraw_queue=nowhere)
    snap = collect(profile).snapshot
    assert snap.withdraw_queue is None and "no contract code for WithdrawQueue" in snap.withdraw_queue_note
    assert f"/withdrawals is published as noQueue although the profile names a queue: {snap.withdraw_queue_note}" in snap.warnings
    out = tmp_path / "out"
    build(snap, profile, out)
    q = body(out, "withdrawals.json")
    assert q["status"] == "noQueue" and "no contract code" in q["reason"] and q["pending"] is None
    assert not (out / "withdrawals").exists()
    assert body(out, "ggAvax.json")["withdrawQueue"] is None
    assert validate(load_dir(out)) == []


def test_a_malformed_answer_refuses_the_run(demo, demo_profile, rpc):
    # Code that answers every call with one word: counters decode, the seven-word struct does not.
    with checkpoint(rpc):
        rpc.request("anvil_setCode", [demo.addresses["WithdrawQueue"], "0x600260005260206000f3"])
        assert eth_call(rpc, demo.addresses["WithdrawQueue"], next_request_id) == 2
        with pytest.raises(PublisherError) as err:
            collect(demo_profile)
    assert "WithdrawQueue" in str(err.value)


def test_the_watch_sees_a_claim_and_a_request_deadline(demo, demo_profile, rpc):
    from support.chain import mine_at

    from publisher.watch import Follower

    with checkpoint(rpc):
        snap = collect(demo_profile).snapshot
        follower = Follower(rpc, demo_profile)
        follower.published(snap)
        assert follower.look()[1] is None  # nothing moved
        q, now = snap.withdraw_queue, snap.block.timestamp
        target = next(r for r in q.requests if r.fulfilled and r.expiration_time > now + 60)
        rpc.request("anvil_impersonateAccount", [target.requester])
        rpc.request("anvil_setBalance", [target.requester, hex(10 * WAD)])
        tx = rpc.request("eth_sendTransaction", [{"from": target.requester, "to": demo.addresses["WithdrawQueue"],
                                                  "data": "0x" + claim.encode(target.id).hex(), "gas": hex(1_000_000)}])
        while rpc.request("eth_getTransactionReceipt", [tx]) is None:
            pass
        assert follower.look()[1].startswith("logs")  # the claim is a queue log
        snap = collect(demo_profile).snapshot
        follower.published(snap)
        deadline = follower.examined.deadline
        assert deadline == min([t for r in snap.withdraw_queue.requests for t in (r.claimable_time, r.expiration_time)
                                if t > snap.block.timestamp]
                               + [st.ggp_locked_until for st in snap.stakers if st.ggp_locked_until > snap.block.timestamp])
        mine_at(rpc, deadline - 1)
        assert follower.look()[1] is None
        mine_at(rpc, deadline)
        assert follower.look()[1].startswith("deadline")


def test_funded_requests_cannot_be_cancelled_while_deposits_are_paused(demo_snapshot):
    from publisher.compute import queue as Q

    now = demo_snapshot.block.timestamp
    early = [r for r in demo_snapshot.withdraw_queue.requests if r.fulfilled and now < r.claimable_time]
    assert early, "the demo holds a funded request before its claimable time"
    open_ = Q.schedule(demo_snapshot).places
    paused = Q.schedule(dataclasses.replace(demo_snapshot, paused={**demo_snapshot.paused, "TokenggAVAX": True})).places
    assert all(open_[r.id].can_cancel and not paused[r.id].can_cancel for r in early)


def test_the_dashboard_queue_chart_samples_the_schedule_daily(demo_snapshot, demo_profile):
    """The chart's available AVAX: now, each UTC midnight of the next 30 days and the end, each the
    liquidity plus the returns and less the restaked rewards the schedule expects by then, plus the
    reward stream released by then."""
    from publisher.build.pipeline import context
    from publisher.compute import queue as Q
    from publisher.endpoints.pages import QUEUE_CHART_DAYS, queue_series

    ctx = context(demo_snapshot, demo_profile)
    available, demand = queue_series(ctx)
    now = demo_snapshot.block.timestamp
    end = now + QUEUE_CHART_DAYS * 86_400
    xs = [x for x, _ in available.points]
    assert xs[0] == now and xs[-1] == end and all(x % 86_400 == 0 for x in xs[1:-1])
    assert len(xs) == QUEUE_CHART_DAYS + 2 - (now % 86_400 == 0) and xs == sorted(set(xs))
    sched, vault = Q.schedule(demo_snapshot), Q.books(demo_snapshot)
    assert sched.returns and any(r.time <= end for r in sched.returns), "nothing returns in the chart's month"
    for x, y in available.points:
        back = sum(r.avax for r in sched.returns if max(r.time, now + 1) <= x)
        kept = sum(k.reward for k in sched.restakes if k.time <= x)
        expected = sched.liquidity + back - kept + vault.total_assets(x) - vault.total_assets(now)
        assert y == expected / WAD, x
    assert demand.points == ((now, sum(r.expected_assets for r in Q.line(demo_snapshot)) / WAD),
                             (end, sum(r.expected_assets for r in Q.line(demo_snapshot)) / WAD))
