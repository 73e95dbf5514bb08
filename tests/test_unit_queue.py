"""The withdrawal queue's line and schedule on snapshots built in memory (no chain): the depositor's
calls and their step limit, closed ids in the line, a call that would revert, returns and
restakes funding the line, each request's status and what can be done with it, and the estimate
before a request. Expected values are worked out here from the contracts' rules."""
from __future__ import annotations

import time

import pytest
from support import factory as F
from support.factory import DAY, NOW, WAD, avax, replace

from publisher.compute import line as L
from publisher.compute import queue as Q
from publisher.protocol import MinipoolStatus
from publisher.snapshot import check

# ---- the line, served against the books ---------------------------------------------------------


def books(*, assets: int, supply: int, staking: int) -> L.Books:
    """Books with no reward stream: totalAssets is ``assets`` at any time."""
    return L.Books(released=assets, rewards=0, last_sync=0, cycle_end=0, supply=supply, staking=staking)


def pending(*ids_and_avax: tuple[int, int]) -> list[L.Entry]:
    return [L.Entry(i, avax(a), avax(a)) for i, a in ids_and_avax]


def test_the_stream_releases_linearly_and_conversions_round_down():
    b = L.Books(released=avax(100), rewards=avax(10), last_sync=1000, cycle_end=2000, supply=avax(50), staking=avax(90))
    assert b.total_assets(1000) == avax(100)
    assert b.total_assets(1250) == avax(1025) // 10  # a quarter of the stream released
    assert b.total_assets(2000) == b.total_assets(10**9) == avax(110)
    assert b.liquidity(1250) == avax(125) // 10
    assert books(assets=avax(10), supply=avax(20), staking=avax(11)).liquidity(0) == 0  # floored, never negative
    # 3 wei of shares at 102.5 AVAX per 50 shares: 6.15 wei, rounded down to 6.
    assert b.to_assets(3, 1250) == 6
    assert b.to_shares(7, 1250) == 7 * 500 // 1025 == 3
    empty = books(assets=0, supply=0, staking=0)
    assert empty.to_assets(5, 0) == empty.to_shares(5, 0) == 5  # an empty vault converts 1:1


def test_a_call_takes_at_most_limit_steps_and_another_call_follows_a_full_one():
    b = books(assets=avax(1000), supply=avax(1000), staking=0)
    served = L.serve_line(b, pending(*((i, 1) for i in range(5))), 2, [(NOW, 0)])
    # Five requests, two per call: calls 1, 1, 2, 2, 3, all in the first serve.
    assert served.funded == {0: (NOW, 1, 1), 1: (NOW, 1, 1), 2: (NOW, 1, 2), 3: (NOW, 1, 2), 4: (NOW, 1, 3)}
    assert served.reverted == 0 and served.serves == 1
    assert (b.released, b.supply) == (avax(995), avax(995))


def test_a_closed_id_still_in_the_line_costs_a_step():
    b = books(assets=avax(1000), supply=avax(1000), staking=0)
    entries = [L.Entry(0, None), L.Entry(1, None), *pending((2, 1), (3, 1))]
    served = L.serve_line(b, entries, 2, [(NOW, 0)])
    assert served.funded == {2: (NOW, 1, 2), 3: (NOW, 1, 2)}  # the first call only dropped 0 and 1


def test_the_line_is_strict_a_call_stops_at_the_first_request_it_cannot_cover():
    b = books(assets=avax(1000), supply=avax(1000), staking=avax(990))  # 10 AVAX liquid
    served = L.serve_line(b, pending((0, 5), (1, 100), (2, 1)), 50, [(NOW, 0), (NOW + DAY, -avax(200))])
    # Request 2 would fit in the 5 AVAX left but waits behind 1; a 200-AVAX return funds both.
    assert served.funded == {0: (NOW, 1, 1), 1: (NOW + DAY, 2, 1), 2: (NOW + DAY, 2, 1)}
    assert b.staking == avax(790) and b.released == avax(1000 - 106)


def test_a_redemption_worth_more_than_the_liquidity_left_reverts_the_whole_call():
    # The share price rose to 1.1 since the request: 10 shares redeem for 11 AVAX, but only 10 are
    # liquid. The liquidity covers what it is owed, so the call goes ahead and fails whole.
    b = books(assets=avax(1100), supply=avax(1000), staking=avax(1090))
    served = L.serve_line(b, pending((0, 10)), 50, [(NOW, 0), (NOW + DAY, -avax(1))])
    assert served.reverted == 1  # the first serve
    assert served.funded == {0: (NOW + DAY, 2, 1)}  # 11 liquid the next day: it pays 11
    assert b.released == avax(1089) and b.supply == avax(990)


def test_a_reverted_call_leaves_the_books_and_the_line_as_they_were():
    b = books(assets=avax(1100), supply=avax(1000), staking=avax(1080))  # 20 liquid
    # Request 0 redeems 5.5 of 20; request 1 (10 shares, 11 AVAX) meets 14.5 liquid: fine; request 2
    # (5 shares, 5.5 AVAX owed 5) meets 3.5: the liquidity does not cover what it is owed: the call stops.
    served = L.serve_line(b, [L.Entry(0, avax(5), avax(5)), L.Entry(1, avax(10), avax(10)), L.Entry(2, avax(5), avax(5))],
                          50, [(NOW, 0)])
    assert served.reverted == 0 and set(served.funded) == {0, 1}
    assert b.released == avax(1100) - avax(165) // 10 and b.supply == avax(985)
    # Now a line whose second redemption overdraws: 8 shares (8.8 AVAX owed 8) with 9 liquid left
    # after the first: 9 >= 8 owed, 8.8 <= 9 paid: fine. Make it 8.5 liquid: 8.8 > 8.5, the call reverts,
    # and the first redemption of the same call is undone with it.
    c = books(assets=avax(1100), supply=avax(1000), staking=avax(1100) - avax(96) // 10)
    served = L.serve_line(c, [L.Entry(0, WAD, WAD), L.Entry(1, avax(8), avax(8))], 50, [(NOW, 0)])
    assert served.reverted == 1 and served.funded == {}
    assert (c.released, c.supply) == (avax(1100), avax(1000))


def test_a_redemption_worth_less_than_expected_reverts():
    b = books(assets=avax(900), supply=avax(1000), staking=0)  # the share price fell to 0.9
    served = L.serve_line(b, pending((0, 10)), 50, [(NOW, 0)])
    assert served.reverted == 1 and served.funded == {}


# ---- request status and actions ------------------------------------------------------------------

T = NOW - DAY  # filed a day before the block: claimable at +7 days, expires 14 days after that


@pytest.mark.parametrize(("fulfilled", "now", "paused", "status", "claim", "cancel", "reclaim"), [
    (False, NOW, False, Q.RequestStatus.PENDING, False, True, False),
    (False, T + 21 * DAY, False, Q.RequestStatus.PENDING_EXPIRED, False, True, True),
    (False, T + 21 * DAY, True, Q.RequestStatus.PENDING_EXPIRED, False, True, True),  # its shares go back, no deposit
    (True, NOW, False, Q.RequestStatus.FUNDED, True, True, False),  # before its claimable time: cancellable
    (True, NOW, True, Q.RequestStatus.FUNDED, True, False, False),  # cancelling deposits, and deposits are paused
    (True, T + 8 * DAY, False, Q.RequestStatus.FUNDED, True, False, False),  # claimable: no longer cancellable
    (True, T + 21 * DAY, False, Q.RequestStatus.EXPIRED_FUNDED, False, False, True),
    (True, T + 21 * DAY, True, Q.RequestStatus.STUCK, False, False, False),
])
def test_each_state_of_a_request_and_what_can_be_done_with_it(fulfilled, now, paused, status, claim, cancel, reclaim):
    r = F.request(0, avax(3), requested=T, fulfilled=fulfilled)
    assert (r.claimable_time, r.expiration_time) == (T + 7 * DAY, T + 21 * DAY)
    assert Q.status(r, now, paused) == status
    assert (Q.can_claim(r, now), Q.can_cancel(r, now, paused), Q.can_reclaim(r, now, paused)) == (claim, cancel, reclaim)


def test_a_funded_request_too_small_to_mint_a_share_cannot_be_cancelled_or_reclaimed():
    """Cancel and reclaim deposit a funded request's AVAX back into ggAVAX, and a deposit worth less
    than one share mints 0 and reverts (ZeroShares): at a share price above 1, 1 wei is stuck for
    good, deposits open or not, while 2 wei (one share) goes through."""
    dear = F.vault(released=avax(1050), supply=avax(1000), staking=avax(1000))  # 1.05 AVAX a share
    for wei, blocked in ((1, True), (2, False)):
        soon = F.request(0, wei, shares=1, fulfilled=True)  # before its claimable time
        late = F.request(1, wei, shares=1, requested=T, fulfilled=True)
        late = replace(late, expiration_time=NOW - 1)
        plan = Q.schedule(F.snapshot(ggavax=dear, requests=[soon, late]))
        a, b = plan.places[0], plan.places[1]
        assert a.status == Q.RequestStatus.FUNDED and a.can_claim and a.can_cancel is not blocked
        assert b.status == (Q.RequestStatus.STUCK if blocked else Q.RequestStatus.EXPIRED_FUNDED)
        assert b.can_reclaim is not blocked and (b.stuck_reason == Q.ZERO_SHARES) is blocked
        assert ("you may also cancel" in Q.advice(soon, a)) is not blocked
        assert ("too little to mint one ggAVAX share" in Q.advice(late, b)) is blocked
    # Judged on the books as they are, not as the replay of the line leaves them: a request in line
    # that a reward stream funds later (each funding burns shares) changes nothing of it.
    streaming = F.vault(released=avax(1050), rewards=avax(500), last_sync=NOW - DAY, cycle_end=NOW + 13 * DAY,
                        supply=avax(1000), staking=avax(700))
    dust = replace(F.request(0, 1, shares=1, requested=T, fulfilled=True), expiration_time=NOW - 1)
    alone = Q.schedule(F.snapshot(ggavax=streaming, requests=[dust])).places[0]
    waiting = F.request(1, avax(525), shares=avax(500))  # redeemed at the stream's end, at a higher price
    plan = Q.schedule(F.snapshot(ggavax=streaming, requests=[dust, waiting]))
    assert plan.places[1].funding_time is not None  # the stream funds it later
    assert alone.status == plan.places[0].status == Q.RequestStatus.STUCK and not plan.places[0].can_reclaim
    # Too little to mint a share stays so when deposits reopen: that reason, not the pause, is given.
    paused = Q.schedule(F.snapshot(ggavax=streaming, requests=[dust], paused={"TokenggAVAX": True})).places[0]
    assert paused.stuck_reason == Q.ZERO_SHARES


def test_the_expiry_clock_answers_every_expiration_test_as_the_time_does_and_moves_only_when_one_passes():
    rs = [F.request(i, avax(1), requested=T + i * DAY // 3, fulfilled=i % 2 == 1) for i in range(6)]
    ends = sorted(r.expiration_time for r in rs)
    times = sorted({t + d for t in [0, NOW, *ends] for d in (-1, 0, 1)})
    for now in times:
        clock = Q.expiry_clock(rs, now)
        for r in rs:
            assert (clock >= r.expiration_time) == (now >= r.expiration_time), (now, r.id)
            for paused in (False, True):
                assert Q.status(r, clock, paused) == Q.status(r, now, paused), (now, r.id)
    # Between two expirations the clock stands still: a body keyed by it is not made again.
    assert Q.expiry_clock(rs, ends[1]) == Q.expiry_clock(rs, ends[2] - 1) == ends[1]
    assert Q.expiry_clock(rs, ends[0] - 1) == 0 and Q.expiry_clock((), NOW) == 0


# ---- the schedule on a snapshot -------------------------------------------------------------------


def at_par(**kw):
    """A snapshot at a share price of 1 with 10 AVAX liquid and no reward stream."""
    return F.snapshot(ggavax=F.vault(released=avax(1000), supply=avax(1000), staking=avax(990)), **kw)


def test_places_in_line_and_the_first_call_on_a_factory_snapshot():
    s = at_par(requests=[F.request(0, avax(5)), F.request(1, avax(100)), F.request(2, avax(1)),
                         F.request(3, avax(2), fulfilled=True)])
    check(s)
    plan = Q.schedule(s)
    assert plan.liquidity == avax(10)
    first, second, third, funded = (plan.places[i] for i in range(4))
    assert (first.position, first.ahead_avax, first.fundable_now, first.depositor_calls, first.funded_by) == (1, 0, True, 1, "liquidity")
    assert (second.position, second.fundable_now, second.funded_by, second.funding_time) == (2, False, None, None)
    assert (third.position, third.ahead_avax) == (3, avax(105))
    assert funded.status == Q.RequestStatus.FUNDED and funded.position is None and funded.can_claim
    assert plan.covered == 1 and plan.shortfall == avax(101 - 5)
    assert not plan.front_known and plan.stale_entries == 0 and plan.reverted_calls == 0


def staking_pool(index, liquid, end, *, owner_n=1, initial_start=None, duration=60 * DAY):
    start = initial_start if initial_start is not None else end - 14 * DAY
    m = F.minipool(index, owner=F.addr(0x5000 + owner_n), liquid=avax(liquid), start=start, duration=duration)
    return m, F.validator(m, end)


def test_returns_fund_the_line_at_their_end_times():
    a, va = staking_pool(1, 60, NOW + 2 * DAY)
    b, vb = staking_pool(2, 40, NOW + 5 * DAY)
    s = at_par(requests=[F.request(0, avax(5)), F.request(1, avax(60)), F.request(2, avax(44)), F.request(3, avax(50))],
               minipools=[a, b], validators=(va, vb), paused={"MinipoolManager": True})
    plan = Q.schedule(s)
    assert [(r.time, r.avax, r.after_restakes, r.overdue) for r in plan.returns] == [
        (NOW + 2 * DAY, avax(60), 0, False), (NOW + 5 * DAY, avax(40), 0, False)]
    assert plan.places[1].funding_time == NOW + 2 * DAY  # 5 left + 60 returned covers 60
    assert plan.places[2].funding_time == NOW + 5 * DAY  # 5 + 40 covers 44
    assert plan.places[3].funding_time is None  # 1 AVAX left after every known return
    assert plan.covered == 3 and plan.shortfall == avax(49) and plan.last_funding_time == NOW + 5 * DAY


def test_a_pool_restakes_while_its_duration_has_room_and_returns_at_its_last_cycle():
    # Started 13 days ago for 60 days: its current validation ends tomorrow, then 14-day cycles while
    # another whole one fits in the duration plus the 1-day tolerance.
    initial = NOW - 13 * DAY
    m, v = staking_pool(1, 500, NOW + DAY, initial_start=initial)
    owner = F.staker(1, ggp=avax(100_000), assigned=avax(500))
    s = at_par(requests=[F.request(0, avax(400))], minipools=[m], validators=(v,), stakers=[owner])
    check(s)
    ends, t = [], NOW + DAY
    while t + 14 * DAY <= initial + 60 * DAY + DAY:  # MinipoolManager's room test at each end
        ends.append(t)
        t += min(14 * DAY, initial + 60 * DAY - t)
    plan = Q.schedule(s)
    assert [k.time for k in plan.restakes] == ends == [NOW + DAY, NOW + 15 * DAY, NOW + 29 * DAY]
    assert [(r.time, r.avax, r.after_restakes) for r in plan.returns] == [(t, avax(500), 3)]
    assert plan.places[0].funding_time == t and plan.places[0].funded_by == "returns"
    # Paused, or an owner whose GGP would not cover 10 % of the AVAX assigned again: it returns tomorrow.
    for other in (replace(s, paused={**s.paused, "MinipoolManager": True}),
                  replace(s, stakers=(F.staker(1, ggp=avax(199), assigned=avax(500)),), total_ggp_stake=avax(199))):
        plan = Q.schedule(other)
        assert not plan.restakes and [r.time for r in plan.returns] == [NOW + DAY]
        assert plan.places[0].funding_time == NOW + DAY


def test_an_overdue_end_is_processed_in_the_block_after_and_launched_pools_return_nothing_known():
    late, v = staking_pool(1, 50, NOW - 2 * DAY)
    launched = F.minipool(2, status=MinipoolStatus.LAUNCHED, liquid=avax(70))
    s = at_par(requests=[F.request(0, avax(30))], minipools=[late, launched], validators=(v,),
               paused={"MinipoolManager": True})
    plan = Q.schedule(s)
    assert plan.returns[0].overdue and plan.returns[0].time == NOW - 2 * DAY
    # The replay records it in the block after the build block, Rialto whenever it does: the request
    # it funds gets no date, rather than one that would move with every block.
    place = plan.places[0]
    assert place.overdue and place.funding_time is None and not place.fundable_now and place.funded_by == "returns"
    assert plan.last_funding_time is None and plan.covered == 1
    assert "once Rialto records their ends" in Q.advice(s.withdraw_queue.requests[0], place)
    hour = NOW + 3600
    later = Q.schedule(F.snapshot(now=hour, ggavax=F.vault(now=hour, released=avax(1000), supply=avax(1000), staking=avax(990)),
                                  requests=[F.request(0, avax(30))], minipools=[late, launched], validators=(v,),
                                  paused={"MinipoolManager": True}))
    assert later.places[0] == place  # an hour later: the same place, so the same requester file
    assert plan.unscheduled_avax == avax(70)
    # The estimate before a request follows the same rule: no date, and a caveat saying why.
    p = Q.estimate_params(s, None, None, plan)
    assert p is not None
    out = L.estimate(p, avax=avax(30))
    assert out["awaitsOverdueReturns"] and out["estimatedFundingTime"] is None and not out["fundableNow"]
    assert any("Rialto records their ends" in c for c in out["caveats"])


def test_a_limit_of_zero_requests_per_call_funds_nothing():
    """maxRequestsPerStakingDeposit 0 (no lower bound in the setter): the depositor's loop takes no
    step, so nothing is funded, though the liquidity covers the line; None (no such view) is no limit."""
    reqs = [F.request(0, avax(5)), F.request(1, avax(1))]
    zero = at_par(withdraw_queue=F.queue(reqs, max_requests_per_deposit=0))
    plan = Q.schedule(zero)
    assert plan.covered == 0 and not any(p.fundable_now for p in plan.places.values())
    assert any("maxRequestsPerDeposit is 0" in a for a in plan.assumptions)
    text = Q.advice(reqs[0], plan.places[0])
    assert "maxRequestsPerDeposit is 0" in text and "no minipool return" not in text
    p = Q.estimate_params(zero, None, None)
    assert p is not None and p.limit == 0
    out = L.estimate(p, avax=avax(1))
    assert not out["fundableNow"] and out["estimatedFundingTime"] is None
    assert any("maxRequestsPerDeposit is 0" in c for c in out["caveats"])
    assert not any("no minipool return" in c for c in out["caveats"])
    unlimited = Q.schedule(at_par(withdraw_queue=F.queue(reqs, max_requests_per_deposit=None)))
    assert all(p.fundable_now for p in unlimited.places.values())


def test_a_request_the_reward_streams_end_funds_is_not_said_to_wait_for_minipools():
    v = F.vault(released=avax(1000), supply=avax(1000), staking=avax(990), rewards=avax(20), last_sync=NOW - 5 * DAY,
                cycle_end=NOW + 5 * DAY)
    r = F.request(0, avax(25))  # 10 AVAX liquid now, 20 more once the stream has released it all
    place = Q.schedule(F.snapshot(ggavax=v, requests=[r])).places[0]
    assert (place.funding_time, place.funded_by) == (NOW + 5 * DAY, "stream")
    assert "reward stream" in Q.advice(r, place) and "minipool" not in Q.advice(r, place)
    m, val = staking_pool(1, 50, NOW + 2 * DAY)
    later = Q.schedule(F.snapshot(ggavax=v, requests=[F.request(0, avax(70))], minipools=[m], validators=(val,),
                                  paused={"MinipoolManager": True})).places[0]
    assert later.funded_by == "returns"  # the stream's end and a minipool's return both needed: the last is a return


def test_advice_for_a_funding_after_the_announced_window_says_so():
    r = F.request(0, avax(30), requested=NOW, expiration_delay=60 * DAY)
    m, v = staking_pool(1, 50, NOW + 20 * DAY)
    s = at_par(requests=[r], minipools=[m], validators=(v,), paused={"MinipoolManager": True})
    place = Q.schedule(s).places[0]
    assert place.funding_time == NOW + 20 * DAY and not place.expires_first
    after = Q.advice(r, place, window_end=NOW + 10 * DAY)
    assert "after the announced withdrawal window closes" in after and "and before the announced" not in after
    before = Q.advice(r, place, window_end=NOW + 30 * DAY)
    assert "after the announced" not in before and "claim it before the announced withdrawal window closes" in before
    # A window after the expiration is no deadline of the claim; nothing at all is expected before a
    # window when no known return covers the request.
    assert "window" not in Q.advice(r, place, window_end=r.expiration_time + DAY)
    uncovered = Q.schedule(at_par(requests=[r])).places[0]
    assert uncovered.funding_time is None and not uncovered.fundable_now and not uncovered.overdue
    text = Q.advice(r, uncovered, window_end=NOW + 30 * DAY)
    assert "No funding is expected before the announced withdrawal window closes" in text
    assert "claim it before the announced" not in text and text.endswith(f"before it expires at {Q.when(r.expiration_time)}.")
    assert "window" not in Q.advice(r, uncovered, window_end=r.expiration_time + DAY)  # it expires first


def test_after_the_announced_window_a_pending_requests_advice_says_a_funding_depends_on_the_depositor():
    r = F.request(0, avax(30), requested=NOW, expiration_delay=60 * DAY)
    m, v = staking_pool(1, 50, NOW + 20 * DAY)
    place = Q.schedule(at_par(requests=[r], minipools=[m], validators=(v,), paused={"MinipoolManager": True})).places[0]
    assert "window" not in Q.advice(r, place)
    text = Q.advice(r, place, window_closed=NOW - DAY)
    assert f"window closed at {Q.when(NOW - DAY)}: a funding now depends on the depositor still calling" in text
    assert "You may cancel it at any time" in text


def test_the_windows_last_day_is_less_than_a_day_left_as_the_dashboard_says():
    from publisher.endpoints.withdrawals import window_record

    end = {"key": "withdrawalWindowEnd", "time": NOW + 3600, "passed": False}
    assert "(less than a day left)" in window_record([{**end, "daysLeft": 0}])["note"]
    assert "(1 day left)" in window_record([{**end, "daysLeft": 1}])["note"]


def test_the_estimate_tells_a_funding_after_the_announced_window_from_a_claim_before_it():
    """Nothing can be claimed before it is funded: a new request funded only after the window is told
    so, never to claim before the window closes; one funded now whose expiration is later is."""
    s = at_par(requests=[F.request(0, avax(5))])
    early = Q.estimate_params(s, NOW + 5 * DAY, None)
    assert early is not None
    now = L.estimate(early, avax=avax(1))  # the liquidity covers it: funded at the next call
    # Funded at the depositor's next call, which no one can date: claim by the window if it comes in time.
    assert now["fundableNow"] and any("claim it before the window closes, if the depositor's call that funds it comes "
                                      "in time" in c for c in now["caveats"])
    later = L.estimate(early, avax=avax(50))  # beyond the liquidity, no return known
    assert not any("claim it before the window closes" in c or "claim before the window closes" in c for c in later["caveats"])
    assert any("not expected to be funded before the announced withdrawal window closes" in c for c in later["caveats"])
    closed = L.estimate(Q.estimate_params(s, NOW - DAY, None), avax=avax(1))
    said = [c for c in closed["caveats"] if "window has closed" in c]
    assert said and "only if the depositor still funds it" in said[0] and "still take requests and pay" not in said[0]


def test_a_funded_requests_advice_keeps_the_contracts_deadline_apart_from_the_announced_window():
    """The window is the operator's date: a claim still pays until the request's own expiration, so
    "after that" in the advice is the expiration, and the window is a separate, earlier date."""
    r = F.request(0, avax(5), fulfilled=True)
    place = Q.schedule(at_par(requests=[r])).places[0]
    text = Q.advice(r, place, window_end=r.expiration_time - DAY)
    assert f"Claim before it expires at {Q.when(r.expiration_time)}; after that it can only be reclaimed" in text
    assert "window closes earlier" in text and "the contract pays a claim until the expiration" in text
    assert "window" not in Q.advice(r, place, window_end=r.expiration_time + DAY)  # the expiration comes first


def test_a_funded_requests_advice_says_it_is_stuck_after_expiry_while_deposits_are_paused():
    r = F.request(0, avax(5), fulfilled=True)
    open_ = Q.schedule(at_par(requests=[r]))
    paused = Q.schedule(at_par(requests=[r], paused={"TokenggAVAX": True}))
    assert "only be reclaimed as ggAVAX" in Q.advice(r, open_.places[0])
    text = Q.advice(r, paused.places[0])
    assert "stuck" in text and "reclaimed as ggAVAX" not in text and "cancel" not in text


def test_a_stuck_requests_advice_says_no_call_releases_it_and_what_would():
    r = F.request(0, avax(5), requested=NOW - 30 * DAY, fulfilled=True)  # expired 9 days ago, funded
    place = Q.schedule(at_par(requests=[r], paused={"TokenggAVAX": True})).places[0]
    assert place.status == Q.RequestStatus.STUCK and not (place.can_claim or place.can_cancel or place.can_reclaim)
    text = Q.advice(r, place)
    # Each call the requester could try reverts, and only the protocol can change that.
    assert "no call releases it" in text and "claiming it reverts" in text
    assert "cancelling it (past its claimable time)" in text and "reclaiming it reverts because ggAVAX" in text
    assert "only the protocol reopening ggAVAX deposits lets it be reclaimed" in text
    assert "if they stay paused it stays there" in text


def test_the_window_asks_what_each_request_allows_by_then():
    from publisher.endpoints.withdrawals import window_asks, window_record

    def rec(status, expires, fundable=False, funding=None):
        return {"status": status, "expirationTime": expires, "fundableNow": fundable, "estimatedFundingTime": funding,
                "requester": F.addr(0xB000)}

    claim, line, reclaim = ("claim each request once it is funded (before its own expiration)",
                            "cancel or reclaim your expired requests still in line",
                            "reclaim your expired funded requests (their AVAX goes back into ggAVAX for you)")
    funded, pending = rec("funded", NOW + 10 * DAY), rec("pending", NOW + 10 * DAY)
    assert window_asks([funded]) == window_asks([pending]) == [claim]
    # By a time past their expiration, a pending one is expired in line, a funded one reclaimable or stuck.
    later = NOW + 20 * DAY
    assert window_asks([pending], later) == [line]
    assert window_asks([funded], later) == [reclaim]
    assert window_asks([funded], later, deposits_paused=True) == []
    assert window_asks([funded, rec("pendingExpired", NOW - DAY)], later, True) == [line]
    assert window_asks([rec("stuck", NOW - DAY)]) == []
    # A requester's own words in the window's note; none to ask: its requests are stuck.
    end = [{"key": "withdrawalWindowEnd", "time": NOW + 5 * DAY, "passed": False, "daysLeft": 5}]
    assert "(5 days left): before then, claim each request once it is funded (before its own expiration) and cancel or reclaim" in window_record(
        end, asks=[claim, line])["note"]
    assert "(5 days left): no call can change your open requests by then: they are stuck" in window_record(end, asks=[])["note"]
    # From now until then: what each allows now and what it will allow then, together.
    assert window_asks([funded], later, True, until=True) == [claim]
    assert window_asks([pending], later, until=True) == [claim, line]
    # In line, but funded before its expiration (at the next call, or at a date before it): nothing
    # expires in line; claim it, or, unclaimed by its expiration, reclaim it (nothing while deposits are paused).
    for soon in (rec("pending", NOW + 10 * DAY, fundable=True), rec("pending", NOW + 10 * DAY, funding=NOW + 2 * DAY)):
        assert window_asks([soon], later, until=True) == [claim, reclaim]
        assert window_asks([soon], later, True, until=True) == [claim]
        assert window_asks([soon], later) == [reclaim]
    assert window_asks([rec("pending", NOW + 10 * DAY, funding=NOW + 11 * DAY)], later, until=True) == [claim, line]
    assert "claim funded requests before then and before their own expiration" in window_record(end)["note"]
    assert "(5 days left): you have no open request: to withdraw ggAVAX, file a request (requestUnstake) early" in window_record(end, asks=[], open_requests=False)["note"]
    assert "file a request (requestUnstake) early enough" in window_record(end)["note"]


def test_closed_ids_from_the_logs_cost_the_depositor_a_call():
    reqs = [F.request(2, avax(1)), F.request(3, avax(1))]
    s = at_par(withdraw_queue=F.queue(reqs, max_requests_per_deposit=2), line_front=0)
    plan = Q.schedule(s)
    assert plan.front_known and plan.stale_entries == 2  # ids 0 and 1 were closed but are still in the line
    assert plan.places[2].depositor_calls == plan.places[3].depositor_calls == 2
    unknown = Q.schedule(replace(s, queue_activity=None))  # without the logs the front is the first pending id
    assert not unknown.front_known and unknown.stale_entries == 0 and unknown.places[2].depositor_calls == 1
    assert any("logs were not read" in a for a in unknown.assumptions)


def test_a_call_redeeming_more_than_the_released_assets_fails_whole():
    """The reward stream's AVAX is liquidity (totalAssets counts it) but joins totalReleasedAssets
    only when the vault's rewards are synced, and redeemAVAX subtracts from those, checked: a call
    whose redemptions pass them reverts whole, funding nothing, those ahead included. The schedule,
    a request's advice and the estimate before a request say so, not that no return covers it."""
    streamed = F.vault(released=avax(100), rewards=avax(50), supply=avax(150), staking=0)  # the stream has ended
    ahead, behind = F.request(0, avax(80)), F.request(1, avax(40))  # 120 AVAX: liquid, but 20 more than released
    s = F.snapshot(ggavax=streamed, requests=[ahead, behind])
    plan = Q.schedule(s)
    assert plan.liquidity == avax(150) and plan.reverted_calls and plan.blocked == 1
    assert [(plan.places[i].fundable_now, plan.places[i].blocked_by) for i in (0, 1)] == [(False, 1), (False, 1)]
    text = Q.advice(behind, plan.places[1])
    assert "fail whole when they reach this request" in text and "released assets" in text and "no minipool return" not in text
    assert "request #1, behind it" in Q.advice(ahead, plan.places[0])  # its calls reach #1 too
    # 20 AVAX behind fits what is released: both funded by the next call.
    fits = Q.schedule(F.snapshot(ggavax=streamed, requests=[ahead, F.request(1, avax(20))]))
    assert fits.blocked is None and all(place.fundable_now for place in fits.places.values())
    # Before a request: 100 AVAX can be redeemed, 120 cannot, though 150 are liquid.
    p = Q.estimate_params(F.snapshot(ggavax=streamed, requests=[]), None, None)
    assert p is not None
    assert L.estimate(p, avax=avax(100))["fundableNow"]
    too_much = L.estimate(p, avax=avax(120))
    assert not too_much["fundableNow"] and too_much["estimatedFundingTime"] is None
    assert any("would fail whole when they reach it" in c and "released assets" in c for c in too_much["caveats"])
    assert not any("no minipool return" in c for c in too_much["caveats"])
    assert L.estimate(p, avax=avax(120), resume=L.resume_point(p)) == too_much


def test_closed_ids_stay_in_the_line_while_no_request_is_pending():
    """The depositor's loop stops once nothing is pending, so closed ids at the front stay there and
    each costs a step of the calls that fund the next request: at one step a call, three closed ids
    and a new request take four calls, from the function's resume point as from the line itself."""
    s = at_par(withdraw_queue=F.queue([], next_request_id=3, max_requests_per_deposit=1), line_front=0)
    p = Q.estimate_params(s, None, None)
    assert p is not None and [e.shares for e in p.entries] == [None, None, None]
    whole = L.estimate(p, avax=avax(1))
    assert (whole["fundableNow"], whole["depositorCalls"]) == (True, 4)
    assert L.estimate(p, avax=avax(1), resume=L.resume_point(p)) == whole


def test_a_call_that_would_revert_is_counted_and_funds_nothing():
    # Filed at a share price of 1, redeemed at 1.1: 11 AVAX against 10 liquid.
    s = F.snapshot(ggavax=F.vault(released=avax(1100), supply=avax(1000), staking=avax(1090)),
                   requests=[F.request(0, avax(10))])
    plan = Q.schedule(s)
    assert plan.liquidity == avax(10) and plan.reverted_calls == 1
    assert plan.covered == 0 and not plan.places[0].fundable_now


def test_an_expired_pending_request_is_flagged_and_advice_says_what_to_do():
    old = F.request(0, avax(2), requested=NOW - 30 * DAY)  # expired 9 days ago, still in line
    soon = F.request(1, avax(50), requested=NOW - 20 * DAY)  # expires tomorrow; nothing funds it in time
    m, v = staking_pool(1, 60, NOW + 3 * DAY)
    s = at_par(requests=[old, soon], minipools=[m], validators=(v,), paused={"MinipoolManager": True})
    plan = Q.schedule(s)
    assert plan.places[0].status == Q.RequestStatus.PENDING_EXPIRED and plan.places[0].can_reclaim
    assert plan.places[1].funding_time == NOW + 3 * DAY > soon.expiration_time
    assert plan.places[1].expires_first
    assert "cancel it" in Q.advice(old, plan.places[0])
    assert "before that" in Q.advice(soon, plan.places[1])


def test_advice_gives_the_contracts_times_to_the_second():
    """The contract compares times to the second (a reclaim reverts until ``now >= expirationTime``):
    a time shown to the minute would send a requester 17 s early. On a whole minute, no seconds."""
    r = F.request(0, avax(50), requested=NOW - NOW % 60 - 20 * DAY + 17)  # expires tomorrow, 17 s past a minute
    assert r.expiration_time % 60 == 17
    place = Q.schedule(at_par(requests=[r], paused={"MinipoolManager": True})).places[0]
    stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(r.expiration_time))
    assert f"expires at {stamp}" in Q.advice(r, place)
    whole = F.request(0, avax(50), requested=NOW - NOW % 60 - 20 * DAY)
    place = Q.schedule(at_par(requests=[whole], paused={"MinipoolManager": True})).places[0]
    assert f"expires at {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(whole.expiration_time))}" in Q.advice(whole, place)


def test_an_expired_request_still_in_line_is_flagged_when_the_schedule_funds_it_and_told_it_would_be_stuck():
    """The depositor may fund a request past its expiration (no check in the contract): it then
    lands funded and expired, never claimable, and stuck while ggAVAX deposits are paused. Its
    requester is told before it happens, while cancel and reclaim still give the shares back."""
    old = F.request(0, avax(2), requested=NOW - 30 * DAY)  # expired 9 days ago, covered by the 10 liquid
    place = Q.schedule(at_par(requests=[old])).places[0]
    assert place.status == Q.RequestStatus.PENDING_EXPIRED and place.fundable_now and place.expires_first
    text = Q.advice(old, place)
    assert "next call funds it" in text and "could only be reclaimed, as ggAVAX" in text and "Until then you may cancel" in text
    paused = Q.schedule(at_par(requests=[old], paused={"TokenggAVAX": True})).places[0]
    assert paused.expires_first and paused.can_cancel and paused.can_reclaim  # a pending request's shares go back
    text = Q.advice(old, paused)
    assert "it would be stuck" in text and "To avoid that, cancel it" in text and "as ggAVAX" not in text
    # Nothing funds it: no flag, and the advice says only that the depositor may.
    unfunded = F.request(0, avax(50), requested=NOW - 30 * DAY)
    place = Q.schedule(at_par(requests=[unfunded], paused={"TokenggAVAX": True})).places[0]
    assert place.status == Q.RequestStatus.PENDING_EXPIRED and not place.expires_first
    text = Q.advice(unfunded, place)
    assert "The depositor may still fund it" in text and "stuck" in text


def test_funded_after_its_expiration_a_request_is_told_it_would_be_stuck_while_deposits_are_paused():
    """The same consequence in every branch that warns of a funding after the expiration: a pending
    request whose funding is dated past it, and an expired one the depositor cannot fund yet."""
    soon = F.request(1, avax(50), requested=NOW - 20 * DAY)  # expires tomorrow; a return 3 days out funds it
    m, v = staking_pool(1, 60, NOW + 3 * DAY)
    paused = {"MinipoolManager": True, "TokenggAVAX": True}
    place = Q.schedule(at_par(requests=[soon], minipools=[m], validators=(v,), paused=paused)).places[1]
    assert place.expires_first and place.status == Q.RequestStatus.PENDING
    text = Q.advice(soon, place)
    assert "funded later, it would be stuck" in text and "as ggAVAX" not in text
    old = F.request(0, avax(2), requested=NOW - 30 * DAY)
    zero = Q.schedule(at_par(withdraw_queue=F.queue([old], max_requests_per_deposit=0))).places[0]
    assert zero.status == Q.RequestStatus.PENDING_EXPIRED and not zero.expires_first
    text = Q.advice(old, zero)
    assert "maxRequestsPerDeposit is 0" in text and "may still fund it" not in text and "as ggAVAX" in text


def test_no_queue_gives_an_empty_schedule():
    plan = Q.schedule(F.snapshot())
    assert plan.places == {} and plan.covered == 0 and plan.liquidity == avax(10_500 - 9_000)


# ---- the estimate before a request ---------------------------------------------------------------


def test_an_estimate_places_a_new_request_at_the_back_of_the_line():
    s = at_par(requests=[F.request(0, avax(4)), F.request(1, avax(3))])
    p = Q.estimate_params(s, None, None)
    assert p is not None and p.pending_count == 2 and p.pending_avax == avax(7)
    now_ok = L.estimate(p, avax=avax(2))
    assert (now_ok["position"], now_ok["fundableNow"], now_ok["depositorCalls"]) == (3, True, 1)
    assert now_ok["expectedAvaxWei"] == str(avax(2)) and now_ok["claimableTime"] == NOW + 7 * DAY
    assert now_ok["expirationTime"] == NOW + 7 * DAY + L.MIN_EXPIRATION_DELAY  # raised to the queue's floor
    too_much = L.estimate(p, avax=avax(4))  # 7 + 4 > 10 liquid, and no return is known
    assert not too_much["fundableNow"] and too_much["estimatedFundingTime"] is None
    assert any("no minipool return" in c for c in too_much["caveats"])
    # The same answer from the resume point the function uses.
    assert L.estimate(p, avax=avax(4), resume=L.resume_point(p)) == too_much
    # A round trip through the published document changes nothing.
    assert L.parse_params(L.document(p)) == p


def test_an_estimate_names_what_the_queue_would_refuse():
    s = at_par(withdraw_queue=F.queue([], paused=True), paused={"TokenggAVAX": True})
    p = Q.estimate_params(s, window_end=NOW - 1, stale_reason="no call for 3 days")
    out = L.estimate(p, shares=0, expiration_delay=40 * DAY)
    text = " ".join(out["caveats"])
    for words in ("the queue is paused", "deposits are paused", "window has closed", "looks stale",
                  "refuses a request for 0 shares", "above its maximum of 2592000 seconds"):
        assert words in text, words


@pytest.mark.parametrize("ends_in_days", [20, 45])
def test_an_estimate_expiring_before_its_funding_names_the_delay_that_would_not(ends_in_days):
    """At the shortest expiration delay (the estimate's default) the request would expire before
    the return that funds it: the caveat names the delay that keeps it claimable then, and an
    estimate with that delay is not expired at its funding; beyond the queue's maximum, it says no
    delay would do."""
    m, v = staking_pool(1, 50, NOW + ends_in_days * DAY)
    s = at_par(withdraw_queue=F.queue([]), minipools=[m], validators=(v,), paused={"MinipoolManager": True})
    p = Q.estimate_params(s, None, None)
    assert p is not None
    out = L.estimate(p, avax=avax(30))
    assert out["expiresBeforeFunding"] and out["estimatedFundingTime"] is not None
    said = [c for c in out["caveats"] if "expire before it is funded" in c]
    assert len(said) == 1, out["caveats"]
    need = out["estimatedFundingTime"] - out["claimableTime"] + 1
    if need > p.max_expiration_delay:
        assert "even with the longest expiration delay" in said[0] and f"{p.max_expiration_delay} s" in said[0]
        assert "could only be reclaimed" in said[0]
        # While ggAVAX deposits are paused, a request funded after it expired is stuck, not reclaimable.
        paused = Q.estimate_params(replace(s, paused={**s.paused, "TokenggAVAX": True}), None, None)
        assert paused is not None
        assert any("even with the longest" in c and "it would be stuck" in c for c in L.estimate(paused, avax=avax(30))["caveats"])
        return
    advised = int(said[0].split("at least ")[1].split(" s")[0])
    assert need <= advised <= p.max_expiration_delay and advised % DAY == 0
    again = L.estimate(p, avax=avax(30), expiration_delay=advised)
    assert not again["expiresBeforeFunding"] and again["estimatedFundingTime"] == out["estimatedFundingTime"]
    assert again["expirationTime"] - again["estimatedFundingTime"] >= DAY  # a day to claim it once funded
    assert not any("expire" in c for c in again["caveats"])


def test_shares_worth_nothing_are_taken_by_the_queue_but_a_call_reaching_them_reverts():
    """requestUnstake refuses 0 shares only; below a share price of 1, one share is worth 0 AVAX,
    and redeeming it reverts the depositor's whole call: the schedule funds neither it nor anything
    behind it, and the estimate before such a request says so."""
    half = F.vault(released=avax(500), supply=avax(1000), staking=avax(400))
    s = F.snapshot(ggavax=half, withdraw_queue=F.queue([]))
    p = Q.estimate_params(s, None, None)
    assert p is not None
    out = L.estimate(p, shares=1)
    assert out["expectedAvaxWei"] == "0" and not out["fundableNow"] and out["estimatedFundingTime"] is None
    assert any("reverts until they are worth something" in c for c in out["caveats"]), out["caveats"]
    assert not any("no minipool return" in c or "refuses a request for 0 shares" in c for c in out["caveats"])
    assert L.estimate(p, shares=3)["fundableNow"]  # 3 shares are worth 1 wei at 0.5: funded by the next call
    # In line, such a request blocks every call that reaches it: the schedule and an estimate behind it agree.
    worthless = F.request(0, 0, shares=1)
    fair = F.request(1, avax(1), shares=avax(2))  # worth its AVAX at 0.5: funded by the next call alone
    assert Q.schedule(F.snapshot(ggavax=half, withdraw_queue=F.queue([fair]))).places[1].fundable_now
    blocked = F.snapshot(ggavax=half, withdraw_queue=F.queue([worthless, fair]))
    plan = Q.schedule(blocked)
    assert not any(place.fundable_now for place in plan.places.values()) and plan.reverted_calls
    # Each says where the calls fail and why, not that no known return covers it.
    assert plan.blocked == 0 and [plan.places[i].blocked_by for i in (0, 1)] == [0, 0]
    first, second = (Q.advice(r, plan.places[r.id]) for r in (worthless, fair))
    assert "fail whole when they reach this request" in first and "request #0, ahead of it" in second
    assert "no minipool return" not in first + second
    behind = Q.estimate_params(blocked, None, None, plan)
    assert behind is not None
    est = L.estimate(behind, avax=avax(1))
    assert not est["fundableNow"] and est["estimatedFundingTime"] is None
    assert any("fail whole at request #0 ahead of it" in c for c in est["caveats"]), est["caveats"]
    assert not any("no minipool return" in c for c in est["caveats"])
    # Once it is worth a wei (the share price back at 1), nothing is blocked.
    assert Q.schedule(F.snapshot(ggavax=F.vault(released=avax(1000), supply=avax(1000), staking=avax(900)),
                                 withdraw_queue=F.queue([worthless, fair]))).blocked is None


def test_an_uncovered_estimate_while_deposits_are_paused_does_not_wait_for_new_deposits():
    for paused, words in (({"TokenggAVAX": True}, "for ggAVAX deposits to reopen"), ({}, "or for new deposits")):
        p = Q.estimate_params(at_par(withdraw_queue=F.queue([]), paused=paused), None, None)
        assert p is not None
        out = L.estimate(p, avax=avax(30))  # beyond the 10 AVAX liquid, and no minipool returns
        assert out["estimatedFundingTime"] is None and not out["fundableNow"]
        assert any("no minipool return known today covers it" in c and words in c for c in out["caveats"]), out["caveats"]


def test_an_estimate_with_a_delay_the_queue_refuses_says_so_and_nothing_of_a_funding():
    s = at_par(withdraw_queue=F.queue([]))
    p = Q.estimate_params(s, NOW + 5 * DAY, None)
    assert p is not None
    out = L.estimate(p, avax=avax(1), expiration_delay=p.max_expiration_delay + 1)
    assert out["expirationDelay"] == p.max_expiration_delay + 1  # kept as asked: the queue would refuse it
    assert [c for c in out["caveats"] if "refuses" in c] and not [c for c in out["caveats"] if "window" in c or "expire" in c]
    fine = L.estimate(p, avax=avax(1), expiration_delay=p.max_expiration_delay)
    assert not any("refuses" in c for c in fine["caveats"]) and any("window" in c for c in fine["caveats"])


def test_the_estimates_edges_a_review_found():
    m, v = staking_pool(1, 50, NOW + 37 * DAY - 3600)  # funds it an hour before the longest delay ends
    s = at_par(withdraw_queue=F.queue([]), minipools=[m], validators=(v,), paused={"MinipoolManager": True})
    p = Q.estimate_params(s, None, None)
    assert p is not None and p.max_expiration_delay == 30 * DAY and p.unstake_delay == 7 * DAY
    out = L.estimate(p, avax=avax(30))
    said = next(c for c in out["caveats"] if "expire before it is funded" in c)
    assert f"at least {30 * DAY} s" in said and "but only for 3600 s after the estimated funding" in said
    # A delay the queue refuses: nothing funded, nothing dated.
    refused = L.estimate(p, avax=avax(1), expiration_delay=p.max_expiration_delay + 1)
    assert not refused["fundableNow"] and refused["estimatedFundingTime"] is None and refused["depositorCalls"] is None
    # Shares worth nothing under a per-call limit of 0: both are said.
    half = F.vault(released=avax(500), supply=avax(1000), staking=avax(400))
    zero = Q.estimate_params(F.snapshot(ggavax=half, withdraw_queue=F.queue([], max_requests_per_deposit=0)), None, None)
    assert zero is not None
    text = " ".join(L.estimate(zero, shares=1)["caveats"])
    assert "worth 0 AVAX" in text and "maxRequestsPerDeposit is 0" in text and "no minipool return" not in text


def test_a_window_at_the_expiration_itself_is_no_earlier_deadline():
    r = F.request(0, avax(30), requested=NOW, expiration_delay=60 * DAY)
    uncovered = Q.schedule(at_par(requests=[r])).places[0]
    assert "window" not in Q.advice(r, uncovered, window_end=r.expiration_time)
    assert "No funding is expected before the announced" in Q.advice(r, uncovered, window_end=r.expiration_time - 1)


def test_a_request_in_line_is_told_what_to_do_by_its_expiration_while_the_depositor_looks_stale():
    """The depositor's next call funds it, but the depositor has not called for weeks: the advice
    says so and what to do if the expiration comes first (a funding after it is too late, and
    leaves it stuck while ggAVAX deposits are paused); the requester's file says it only while the
    depositor looks stale, and a requester with nothing in line is not told."""
    from publisher.endpoints import withdrawals as W
    from publisher.endpoints.context import Context
    from publisher.snapshot import QueueActivity

    waiting, funded = F.request(0, avax(1), requested=NOW - 5 * DAY), F.request(1, avax(1), fulfilled=True)
    funded = replace(funded, requester="0x" + "cd" * 20)
    s = at_par(requests=[waiting, funded], paused={"TokenggAVAX": True})
    place = Q.schedule(s).places[0]
    assert place.fundable_now and place.deposits_paused
    called = NOW - 21 * DAY
    text = Q.advice(waiting, place, idle=Q.Idle(called))
    assert text.startswith("Wait: the vault's liquidity already covers it, and the depositor's next call funds it.")
    assert f"The depositor has made no call since {Q.when(called)}, and nothing is funded until it calls." in text
    assert (f"If it is still unfunded when it expires at {Q.when(waiting.expiration_time)}, cancel or reclaim it then: "
            f"funded later, {L.after_expiry(True)}.") in text
    assert "No call of the depositor is on record" in Q.advice(waiting, place, idle=Q.Idle(None))
    assert "depositor has made no call" not in Q.advice(waiting, place)

    def files(last_call: int) -> dict[str, tuple]:
        snap = replace(s, queue_activity=QueueActivity(s.block.number, 0, 99, last_call, None, None))
        return {who: value.inputs for who, value in W.requester_files(Context(snap, depositor_max_age=2 * DAY))}

    stale, fresh = files(called), files(NOW - 60)
    mine, theirs = f"/withdrawals/{waiting.requester.lower()}", f"/withdrawals/{funded.requester.lower()}"
    said = {k: W.requester_body(*v[mine])["requests"][0]["advice"] for k, v in (("stale", stale), ("fresh", fresh))}
    assert "The depositor has made no call since" in said["stale"] and "depositor has made no call" not in said["fresh"]
    assert stale[theirs] == fresh[theirs]  # funded: nothing waits for the depositor, its file is as it was
