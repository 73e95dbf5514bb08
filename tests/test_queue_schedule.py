"""The withdrawal queue's funding schedule (compute/queue.py) on the demo snapshot with a queue,
vault and minipools set to known values: strict line order, returns by end time, the pools that
restake, overdue returns, and the states a request can be in."""
from __future__ import annotations

from dataclasses import replace

import pytest

from publisher.compute import queue as Q
from publisher.compute.nodeid import node_id
from publisher.protocol import MinipoolStatus
from publisher.snapshot import UnstakeRequest, Validator, WithdrawQueue

WAD = 10**18
DAY = 86_400
QUEUE = "0x61f908D4992a790A2792D3C36850B4b9eB5849A3"
ALICE, BOB = "0x" + "a1" * 20, "0x" + "b0" * 20


def request(i, avax, *, who=ALICE, fulfilled=False, age=DAY, now, claim_in=6 * DAY, expire_in=20 * DAY):
    t = now - age
    return UnstakeRequest(i, who, avax * WAD, avax * WAD, t, t + claim_in, t + claim_in + expire_in,
                          avax * WAD if fulfilled else 0, fulfilled)


def pool(base, i, avax, end, *, duration=15 * DAY, start=None):
    start = start if start is not None else end - duration
    return replace(base, index=i, node_id="0x" + f"{i:040x}", owner="0x" + "77" * 20, status=MinipoolStatus.STAKING, avax_liquid_staker_amt=avax * WAD,
                   start_time=start, initial_start_time=start, duration=duration, end_time=0)


def validator(m, end):
    return Validator(node_id(m.node_id), "tx", m.start_time, end, 0, 0, "2.0", 0, None, 0, 0, None, "glacier")


@pytest.fixture
def snap(demo_snapshot):
    """The demo snapshot at share price 1 (shares = AVAX), 10 AVAX of queue liquidity, no reward
    stream, no minipools: each test adds what it needs."""
    s = demo_snapshot
    vault = replace(s.ggavax, total_assets=1000 * WAD, staking_total_assets=990 * WAD, total_supply=1000 * WAD,
                    last_rewards_amt=0, last_sync=s.block.timestamp - DAY, rewards_cycle_end=s.block.timestamp - 1)
    settings = replace(s.settings, minipool_cycle_duration=14 * DAY, minipool_cycle_delay_tolerance=DAY)
    return replace(s, ggavax=vault, minipools=(), validators=(), settings=settings)


def with_queue(s, requests):
    return replace(s, withdraw_queue=WithdrawQueue(QUEUE, len(requests), sum(r.allocated_funds for r in requests), 7 * DAY,
                                                   30 * DAY, False, sum(not r.fulfilled for r in requests),
                                                   sum(r.fulfilled for r in requests), 50, WAD // 100, 0, tuple(requests)))


def test_the_line_is_served_in_order_and_stops_at_the_first_request_it_cannot_cover(snap):
    now = snap.block.timestamp
    s = with_queue(snap, [request(0, 5, now=now), request(1, 100, now=now), request(2, 1, now=now)])
    plan = Q.schedule(s)
    assert plan.liquidity == 10 * WAD
    first, second, third = (plan.places[i] for i in range(3))
    assert first.fundable_now and first.funding_time is None and first.position == 1
    # The 1-AVAX request behind the 100-AVAX one waits although the liquidity would cover it.
    assert not second.fundable_now and second.funded_by is None and second.position == 2
    assert not third.fundable_now and third.funded_by is None and third.ahead_avax == 105 * WAD
    assert plan.covered == 1 and plan.shortfall == (101 - 5) * WAD


def test_returns_fund_the_line_at_their_end_times_and_restaking_pools_return_nothing(snap, demo_snapshot):
    now = snap.block.timestamp
    template = demo_snapshot.minipools[0]
    ends = [now + 2 * DAY, now + 5 * DAY, now + 9 * DAY]
    pools = [pool(template, 1, 60, ends[0]), pool(template, 2, 40, ends[1]),
             # Its requested duration has room for two more cycles: the protocol restakes it.
             pool(template, 3, 500, ends[2], duration=60 * DAY, start=ends[2] - 14 * DAY)]
    pools[2] = replace(pools[2], initial_start_time=ends[2] - 14 * DAY)
    s = replace(with_queue(snap, [request(0, 5, now=now), request(1, 60, now=now), request(2, 44, now=now)]),
                minipools=tuple(pools), validators=tuple(validator(m, e) for m, e in zip(pools, ends, strict=True)))
    plan = Q.schedule(s)
    assert [(r.time, r.avax) for r in plan.returns] == [(ends[0], 60 * WAD), (ends[1], 40 * WAD)]
    assert plan.places[1].funding_time == ends[0]  # 5 left + 60 returned covers 60
    assert plan.places[2].funding_time == ends[1]  # 5 + 40 covers 44
    assert plan.covered == 3 and plan.shortfall == 0 and plan.last_funding_time == ends[1]


def test_an_overdue_return_keeps_its_passed_end_and_launched_pools_are_unscheduled(snap, demo_snapshot):
    now = snap.block.timestamp
    template = demo_snapshot.minipools[0]
    late = pool(template, 1, 50, now - 3600)
    launched = replace(pool(template, 2, 70, now + DAY), status=MinipoolStatus.LAUNCHED)
    s = replace(with_queue(snap, [request(0, 30, now=now)]), minipools=(late, launched),
                validators=(validator(late, now - 3600),))
    plan = Q.schedule(s)
    assert plan.returns[0].overdue and plan.places[0].funding_time == now - 3600
    assert plan.unscheduled_avax == 70 * WAD


def test_request_states_follow_the_contract(snap):
    now = snap.block.timestamp
    reqs = [
        request(0, 5, now=now, fulfilled=True, age=DAY),  # funded, before its claimable time
        request(1, 5, now=now, fulfilled=True, age=10 * DAY),  # funded, past its claimable time
        request(2, 5, now=now, fulfilled=True, age=40 * DAY),  # funded, then expired
        request(3, 5, now=now, age=40 * DAY, who=BOB),  # pending past its expiration: still in line
        request(4, 50, now=now, who=BOB),
    ]
    plan = Q.schedule(with_queue(snap, reqs))
    p = plan.places
    assert (p[0].status, p[0].can_claim, p[0].can_cancel) == (Q.RequestStatus.FUNDED, True, True)
    assert (p[1].status, p[1].can_claim, p[1].can_cancel) == (Q.RequestStatus.FUNDED, True, False)
    assert (p[2].status, p[2].can_claim, p[2].can_cancel) == (Q.RequestStatus.EXPIRED, False, False)
    assert (p[3].status, p[3].position, p[3].fundable_now) == (Q.RequestStatus.EXPIRED, 1, True)
    assert (p[4].status, p[4].position, p[4].can_cancel) == (Q.RequestStatus.PENDING, 2, True)


def test_the_reward_stream_adds_liquidity_until_its_cycle_ends(snap, demo_snapshot):
    now = snap.block.timestamp
    template = demo_snapshot.minipools[0]
    # 20 AVAX streamed over 4 days from now: half of it is released by the 2-day return.
    vault = replace(snap.ggavax, last_rewards_amt=20 * WAD, last_sync=now, rewards_cycle_end=now + 4 * DAY)
    ret = pool(template, 1, 1, now + 2 * DAY)
    s = replace(with_queue(snap, [request(0, 21, now=now)]), ggavax=vault, minipools=(ret,),
                validators=(validator(ret, now + 2 * DAY),))
    plan = Q.schedule(s)
    assert plan.places[0].funding_time == now + 2 * DAY  # 10 now + 1 returned + 10 streamed
