"""The withdrawal queue's funding schedule (compute/queue.py) on the demo snapshot with a queue,
vault and minipools set to known values: strict line order, returns by end time, the pools that
restake, overdue returns, and the states a request can be in."""
from __future__ import annotations

from dataclasses import replace

import pytest

from publisher.compute import queue as Q
from publisher.compute.nodeid import node_id
from publisher.protocol import MinipoolStatus
from publisher.snapshot import QueueActivity, UnstakeRequest, Validator, WithdrawQueue

WAD = 10**18
DAY = 86_400
QUEUE = "0x61f908D4992a790A2792D3C36850B4b9eB5849A3"
ALICE, BOB, OWNER = "0x" + "a1" * 20, "0x" + "b0" * 20, "0x" + "77" * 20


def request(i, avax, *, who=ALICE, fulfilled=False, age=DAY, now, claim_in=6 * DAY, expire_in=20 * DAY):
    t = now - age
    return UnstakeRequest(i, who, avax * WAD, avax * WAD, t, t + claim_in, t + claim_in + expire_in,
                          avax * WAD if fulfilled else 0, fulfilled)


def pool(base, i, avax, end, *, duration=15 * DAY, start=None):
    start = start if start is not None else end - duration
    return replace(base, index=i, node_id="0x" + f"{i:040x}", owner="0x" + "77" * 20, status=MinipoolStatus.STAKING, avax_liquid_staker_amt=avax * WAD,
                   avax_node_op_amt=avax * WAD, start_time=start, initial_start_time=start, duration=duration, end_time=0)


def validator(m, end):
    return Validator(node_id(m.node_id), "tx", m.start_time, end, 0, 0, "2.0", 0, None, 0, 0, None, "glacier")


@pytest.fixture
def snap(demo_snapshot):
    """The demo snapshot at share price 1 (shares = AVAX), 10 AVAX of queue liquidity, no reward
    stream, no minipools: each test adds what it needs."""
    s = demo_snapshot
    vault = replace(s.ggavax, total_assets=1000 * WAD, total_released_assets=1000 * WAD, staking_total_assets=990 * WAD, total_supply=1000 * WAD,
                    last_rewards_amt=0, last_sync=s.block.timestamp - DAY, rewards_cycle_end=s.block.timestamp - 1)
    settings = replace(s.settings, minipool_cycle_duration=14 * DAY, minipool_cycle_delay_tolerance=DAY)
    return replace(s, ggavax=vault, minipools=(), validators=(), settings=settings, queue_activity=None)


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


def owner(demo_snapshot, ggp, assigned, addr=OWNER):
    return replace(demo_snapshot.stakers[0], staker_addr=addr, ggp_staked=ggp * WAD, avax_assigned=assigned * WAD)


def test_returns_fund_the_line_at_their_end_times_and_a_restaked_pool_returns_at_its_last_cycle(snap, demo_snapshot):
    now = snap.block.timestamp
    template = demo_snapshot.minipools[0]
    ends = [now + 2 * DAY, now + 5 * DAY, now + 9 * DAY]
    pools = [pool(template, 1, 60, ends[0]), pool(template, 2, 40, ends[1]),
             # Its requested duration has room for two more cycles: the protocol restakes it twice.
             pool(template, 3, 500, ends[2], duration=41 * DAY, start=ends[2] - 14 * DAY)]
    price = snap.oracle.price
    rich = owner(demo_snapshot, 600 * WAD // price * 10, 600)  # far above the 10 % minimum
    s = replace(with_queue(snap, [request(0, 5, now=now), request(1, 60, now=now), request(2, 44, now=now),
                                  request(3, 400, now=now)]),
                minipools=tuple(pools), stakers=(rich,),
                validators=tuple(validator(m, e) for m, e in zip(pools, ends, strict=True)))
    plan = Q.schedule(s)
    last = ends[2] - 14 * DAY + 41 * DAY  # cycles of 14 days from its end, the last one cut to the duration
    assert [(r.time, r.avax, r.after_restakes) for r in plan.returns] == [
        (ends[0], 60 * WAD, 0), (ends[1], 40 * WAD, 0), (last, 500 * WAD, 2)]
    assert [k.time for k in plan.restakes] == [ends[2], ends[2] + 14 * DAY]
    assert plan.places[1].funding_time == ends[0]  # 5 left + 60 returned covers 60
    assert plan.places[2].funding_time == ends[1]  # 5 + 40 covers 44
    assert plan.places[3].funding_time == last  # only the restaked pool's last return covers 400
    assert plan.covered == 4 and plan.shortfall == 0 and plan.last_funding_time == last


def test_a_paused_minipool_manager_restakes_nothing(snap, demo_snapshot):
    now = snap.block.timestamp
    m = pool(demo_snapshot.minipools[0], 1, 500, now + DAY, duration=60 * DAY, start=now - 13 * DAY)
    rich = owner(demo_snapshot, 10**6, 500)
    s = replace(with_queue(snap, [request(0, 400, now=now)]), minipools=(m,), stakers=(rich,),
                validators=(validator(m, now + DAY),))
    running = Q.schedule(s)
    assert running.restakes and running.places[0].funding_time == m.start_time + 60 * DAY - 4 * DAY
    paused = replace(s, paused={**s.paused, "MinipoolManager": True})
    plan = Q.schedule(paused)
    assert not plan.restakes and plan.places[0].funding_time == now + DAY
    assert any("MinipoolManager is paused" in a for a in plan.assumptions)


def test_an_overdue_end_is_processed_in_the_next_block_and_may_miss_its_cycle(snap, demo_snapshot):
    now = snap.block.timestamp
    template = demo_snapshot.minipools[0]
    # Due 2 days ago with one cycle's room plus the 1-day tolerance from its end: processed now, too late.
    late = pool(template, 1, 50, now - 2 * DAY, duration=14 * DAY + 14 * DAY, start=now - 16 * DAY)
    launched = replace(pool(template, 2, 70, now + DAY), status=MinipoolStatus.LAUNCHED)
    rich = owner(demo_snapshot, 10**6, 50)
    s = replace(with_queue(snap, [request(0, 30, now=now)]), minipools=(late, launched), stakers=(rich,),
                validators=(validator(late, now - 2 * DAY),))
    plan = Q.schedule(s)
    assert not plan.restakes and plan.returns[0].overdue
    assert plan.places[0].overdue and plan.places[0].funding_time is None  # recorded whenever Rialto does
    assert plan.unscheduled_avax == 70 * WAD
    # On time, the same pool would have restaked.
    assert Q.restakes(s, late, late.start_time + 14 * DAY)


def test_the_restake_collateral_test_sees_the_owners_earlier_ends(snap, demo_snapshot):
    now = snap.block.timestamp
    template = demo_snapshot.minipools[0]
    price = snap.oracle.price
    first = pool(template, 1, 1000, now + DAY)  # ends for good (no room for a cycle)
    second = pool(template, 2, 1000, now + 2 * DAY, duration=60 * DAY, start=now - 12 * DAY)
    # 2000 AVAX assigned today at 7.1 %: after the first pool's end, 1000 at 14.2 %.
    ggp = 2000 * WAD * 71 // 1000 * WAD // price // WAD
    s = replace(with_queue(snap, [request(0, 5, now=now)]), minipools=(first, second),
                stakers=(owner(demo_snapshot, ggp, 2000),),
                validators=(validator(first, now + DAY), validator(second, now + 2 * DAY)))
    plan = Q.schedule(s)
    assert {k.node_id for k in plan.restakes} == {second.node_id}
    # Ending first, it meets the owner at 7.1 %: refused, it returns its AVAX.
    early = replace(s, validators=(validator(first, now + 3 * DAY), validator(second, now + 2 * DAY)))
    assert not Q.schedule(early).restakes


def test_each_request_is_redeemed_at_the_share_price_of_its_funding_block(snap, demo_snapshot):
    now = snap.block.timestamp
    # Shares worth 2 AVAX each: a request of 5 expected AVAX (filed at 1) takes 10 of the 15 liquid.
    vault = replace(snap.ggavax, total_released_assets=2000 * WAD, total_assets=2000 * WAD, staking_total_assets=1985 * WAD)
    reqs = [replace(request(0, 5, now=now)), request(1, 6, now=now)]
    reqs[1] = replace(reqs[1], shares=3 * WAD)  # worth 6 now
    plan = Q.schedule(replace(with_queue(snap, reqs), ggavax=vault))
    assert plan.places[0].fundable_now
    assert not plan.places[1].fundable_now  # 15 - 10 = 5 left, it needs 6


def test_a_redemption_worth_more_than_the_liquidity_left_reverts_the_whole_call(snap):
    now = snap.block.timestamp
    vault = replace(snap.ggavax, total_released_assets=2000 * WAD, total_assets=2000 * WAD, staking_total_assets=1991 * WAD)
    reqs = [request(0, 1, now=now), request(1, 6, now=now)]
    reqs[1] = replace(reqs[1], shares=4 * WAD)  # expects 6, worth 8 at funding; 9 - 2 = 7 left after the first
    plan = Q.schedule(replace(with_queue(snap, reqs), ggavax=vault))
    assert plan.reverted_calls == 1
    assert not plan.places[0].fundable_now and not plan.places[1].fundable_now  # the first one is undone too


def test_closed_ids_still_in_the_line_cost_the_depositor_call_steps(snap):
    now = snap.block.timestamp
    reqs = [request(i, 1, now=now) for i in (2, 3, 5, 6)]
    q = with_queue(snap, reqs).withdraw_queue
    q = replace(q, next_request_id=7, max_requests_per_deposit=3)
    activity = QueueActivity(snap.block.number, 0, None, None, None, None)  # ids 0, 1 and 4 were closed in line
    plan = Q.schedule(replace(snap, withdraw_queue=q, queue_activity=activity))
    assert plan.stale_entries == 3 and plan.front_known
    assert [plan.places[i].depositor_calls for i in (2, 3, 5, 6)] == [1, 2, 2, 3]
    # Without the logs the closed ids before the first pending one are taken as dropped.
    plan = Q.schedule(replace(snap, withdraw_queue=q, queue_activity=None))
    assert plan.stale_entries == 1 and not plan.front_known
    assert [plan.places[i].depositor_calls for i in (2, 3, 5, 6)] == [1, 1, 2, 2]


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
    S = Q.RequestStatus
    assert (p[0].status, p[0].can_claim, p[0].can_cancel, p[0].can_reclaim) == (S.FUNDED, True, True, False)
    assert (p[1].status, p[1].can_claim, p[1].can_cancel) == (S.FUNDED, True, False)
    assert (p[2].status, p[2].can_claim, p[2].can_cancel, p[2].can_reclaim) == (S.EXPIRED_FUNDED, False, False, True)
    assert (p[3].status, p[3].position, p[3].fundable_now, p[3].can_reclaim) == (S.PENDING_EXPIRED, 1, True, True)
    assert (p[4].status, p[4].position, p[4].can_cancel) == (S.PENDING, 2, True)
    # ggAVAX deposits paused: the expired funded request is stuck, a funded one can no longer be cancelled.
    paused = Q.schedule(replace(with_queue(snap, reqs), paused={**snap.paused, "TokenggAVAX": True})).places
    assert (paused[2].status, paused[2].can_reclaim, paused[2].stuck_reason) == (S.STUCK, False, Q.DEPOSITS_PAUSED)
    assert (paused[0].can_claim, paused[0].can_cancel) == (True, False)
    assert paused[3].can_reclaim and paused[3].can_cancel  # a pending request moves no AVAX


def test_the_reward_stream_adds_liquidity_until_its_cycle_ends(snap, demo_snapshot):
    now = snap.block.timestamp
    template = demo_snapshot.minipools[0]
    # 20 AVAX streamed over 4 days from now: half of it is released by the 2-day return.
    vault = replace(snap.ggavax, last_rewards_amt=20 * WAD, last_sync=now, rewards_cycle_end=now + 4 * DAY)
    ret = pool(template, 1, 1, now + 2 * DAY)
    s = replace(with_queue(snap, [request(0, 21, now=now)]), ggavax=vault, minipools=(ret,),
                validators=(validator(ret, now + 2 * DAY),))
    plan = Q.schedule(s)
    # At the return, 10 now + 1 returned + 10 streamed = 21 cover the 21 expected, but the shares are
    # worth 21.21 then: the call reverts. At the stream's end 31 are liquid.
    assert plan.reverted_calls == 1
    assert plan.places[0].funding_time == now + 4 * DAY
