"""Forecasts against what the living devnet then pays.

The demo chain is run forward by the protocol operator (publisher/devnet/live.py); a build is made
at some block, then the operator runs the GGP distribution the way Rialto does, and every staker's
published next-cycle forecast must equal, to the wei, what the distribution paid it. The same after
the distribution is overdue. AVAX: the validation rewards the devnet pays cycling minipools match
the published validator rate's forecast.
"""
from __future__ import annotations

import json
from contextlib import contextmanager
from fractions import Fraction

from publisher.chain import abis
from publisher.collect import collect, devnet_profile
from publisher.config import load_profile
from publisher.devnet.live import running_live
from publisher.devnet.scenarios import DAY
from publisher.pipeline import build

WAD = 10**18
YEAR = 365 * DAY


@contextmanager
def live_devnet(seed: int):
    with running_live(seed) as (net, live):
        yield net, live, devnet_profile(load_profile("devnet"), net)


def publish(profile, out) -> dict:
    """Build at the latest block; returns a reader of the published files."""
    build(collect(profile).snapshot, profile, out)
    return lambda path: json.loads((out / (path.lstrip("/") + ".json")).read_text())


def check_every_staker_is_paid_its_forecast(read, dist, snap_stakers, when: int) -> int:
    params = read("/rewards/params")
    assert dist.time == when
    assert str(dist.nodeop_total) == params["forecast"]["nodeOpPoolWei"]
    assert str(dist.tegs) == params["tegs"]["wei"]
    paid_some = 0
    for addr in snap_stakers:
        forecast = int(read(f"/rewards/{addr.lower()}")["estimate"]["ggpPerCycleWei"])
        assert forecast == dist.paid.get(addr, 0), addr
        paid_some += forecast > 0
    return paid_some


def test_ggp_forecast_equals_the_distribution_to_the_wei(tmp_path):
    with live_devnet(seed=3) as (_net, live, profile):
        for _ in range(4):
            live.step()
        read = publish(profile, tmp_path / "out")
        params = read("/rewards/params")
        assert params["overdue"] is False and params["overdueReason"] is None
        due = params["nextDistributionTime"]
        assert due == params["rewardsCycleEndTime"] > params["block"]["timestamp"]
        # On time: exactly one cycle of inflation intervals.
        assert params["forecast"]["cycleIntervals"] == (due - params["inflationIntervalStartTime"]) // DAY == 30
        stakers = [st["stakerAddr"] for st in live.op.stakers()]
        dist = live.distribute_at(due)
        assert check_every_staker_is_paid_its_forecast(read, dist, stakers, due) >= 10
        # The metrics headline is the same pool.
        assert read("/metrics")["next_cycle_nodeop_ggp"] == dist.nodeop_total / WAD


def test_overdue_ggp_forecast_equals_the_late_distribution_to_the_wei(tmp_path):
    with live_devnet(seed=4) as (_net, live, profile):
        live.lateness[live.op.call("RewardsPool", abis.getRewardsCycleCount)] = 10 * DAY
        end = live.op.call("RewardsPool", abis.getRewardsCycleStartTime) + 30 * DAY
        while live.now < end + 3 * DAY + DAY // 2:
            live.step()
        read = publish(profile, tmp_path / "out")
        params = read("/rewards/params")
        now = params["block"]["timestamp"]
        assert params["overdue"] is True and "startRewardsCycle has not run" in params["overdueReason"]
        assert params["nextDistributionTime"] == now
        intervals = params["forecast"]["cycleIntervals"]
        assert intervals == (now - params["inflationIntervalStartTime"]) // DAY >= 33
        stakers = [st["stakerAddr"] for st in live.op.stakers()]
        # Rialto runs it in the next block, the same inflation interval: the build's forecast holds.
        assert (now + 1 - params["inflationIntervalStartTime"]) // DAY == intervals
        dist = live.distribute_at(now + 1)
        assert check_every_staker_is_paid_its_forecast(read, dist, stakers, now + 1) >= 10


def test_cycling_minipools_are_paid_the_published_rate(tmp_path):
    with live_devnet(seed=5) as (_net, live, profile):
        live.step()
        read = publish(profile, tmp_path / "out")
        rate = read("/rewards/params")["validatorRate"]
        assert rate["source"] == "validators" and rate["samples"] >= 10
        r_v = int(rate["wad"])
        start = len(live.payments)
        for _ in range(20):
            live.step()
        paid = [p for p in live.payments[start:] if p.reward > 0]
        assert len(paid) >= 10 and len({p.node_id for p in paid}) >= 10
        # Stated rounding: the provider reports potential rewards in whole nAVAX, so the rate read
        # from them is low by less than 1 part in 1e9; the forecast for a period is within that.
        for p in paid:
            forecast = Fraction(p.principal * r_v * p.seconds, WAD * YEAR)
            assert abs(forecast - p.reward) <= p.reward * Fraction(1, 10**9) + 10**9, p
        # And the chain holds what was paid: each cycled pool compounded the stakers' half.
        pools = {m["nodeID"]: m for m in live.op.minipools()}
        cycled = [p for p in paid if pools[p.node_id]["avaxLiquidStakerAmt"] == p.principal // 2 + p.reward // 2]
        assert cycled


def test_same_seed_same_chain():
    heads = []
    for _ in range(2):
        with running_live(seed=7) as (_net, live):
            for _ in range(20):
                live.step()
            head = live.client.request("eth_getBlockByNumber", ["latest", False])
            heads.append((head["number"], head["hash"], [(p.node_id, p.reward) for p in live.payments],
                          [(d.time, d.tegs, sorted(d.paid.items())) for d in live.distributions]))
    assert heads[0] == heads[1]
    assert heads[0][2] and heads[0][3]  # the run paid AVAX and distributed GGP
