"""Forecasts against what the living devnet then pays.

The demo chain is run forward by the protocol operator (devnet/ggp_devnet/live.py); a build is made
at some block, then the operator runs the GGP distribution the way Rialto does, and every staker's
published next-cycle forecast must equal, to the wei, what the distribution paid it. The same after
the distribution is overdue. AVAX: the validation rewards the devnet pays cycling minipools match
the published validator rate's forecast.
"""
from __future__ import annotations

import json
from contextlib import contextmanager
from fractions import Fraction

from eth_utils import to_checksum_address
from ggp_devnet import devnet_profile, running_live
from ggp_devnet.live import planned_end
from ggp_devnet.scenarios import DAY, STAKING
from ggp_devnet.seed import manual_mining
from support.estimates import published_estimate

from publisher.build.pipeline import build
from publisher.chain import abis
from publisher.chain.reader import registry_key
from publisher.collect import collect
from publisher.config import load_profile

WAD = 10**18
YEAR = 365 * DAY


@contextmanager
def live_devnet(seed: int, zero_reward_odds: float | None = None):
    with running_live(seed, zero_reward_odds=zero_reward_odds) as (net, live):
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
        forecast = int(published_estimate(read, addr)["ggpPerCycleWei"])
        assert forecast == dist.paid.get(addr, 0), addr
        paid_some += forecast > 0
    return paid_some


def record_validation_ends(live, until: int) -> int:
    """What Rialto does until a distribution at ``until``: record each validation end that falls
    before it, in order (cycling the minipool when its duration has room and its owner's collateral
    allows). Returns how many it recorded."""
    op = live.op
    cycle_len, tolerance = op.setting("MinipoolCycleDuration"), op.setting("MinipoolCycleDelayTolerance")
    ended = 0
    with manual_mining(live.client):
        while True:
            pending = sorted((planned_end(m, cycle_len), m["index"], m) for m in op.minipools() if m["status"] == STAKING)
            pending = [p for p in pending if p[0] < until]
            if not pending:
                return ended
            end, _, m = pending[0]
            when = max(end, live.now + 1)
            owners = {st["stakerAddr"]: st for st in op.stakers()}
            with live.sender.one_block(when):
                live._end(m, end, when, owners[m["owner"]], cycle_len, tolerance)
            live.sender.check()
            ended += 1


def test_ggp_forecast_equals_the_distribution_to_the_wei(tmp_path):
    with live_devnet(seed=3, zero_reward_odds=0) as (_net, live, profile):  # no slashing between build and distribution
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
        assert record_validation_ends(live, due) > 5
        dist = live.distribute_at(due)
        assert check_every_staker_is_paid_its_forecast(read, dist, stakers, due) >= 10
        # The metrics headline is the same pool.
        assert read("/metrics")["next_cycle_nodeop_ggp"] == dist.nodeop_total / WAD


def test_a_paused_claimnodeop_still_distributes_the_forecast(tmp_path):
    """No contract checks ClaimNodeOp's pause flag (mainnet's calculateAndDistributeRewards is
    onlyMultisig, and Ocyticus.pauseEverything does not set it): with it alone paused a
    distribution is still forecast, and it then pays every staker its forecast to the wei."""
    with live_devnet(seed=3, zero_reward_odds=0) as (_net, live, profile):  # no slashing between build and distribution
        for _ in range(4):
            live.step()
        with manual_mining(live.client):
            with live.sender.one_block(live.now + 60):
                live.op.pause("ClaimNodeOp", True)
            live.sender.check()
        read = publish(profile, tmp_path / "out")
        params = read("/rewards/params")
        assert params["paused"]["ClaimNodeOp"] is True and params["paused"]["RewardsPool"] is False
        assert params["distributionExpected"] is True and params["noDistributionReason"] is None
        assert int(params["forecast"]["nodeOpPoolWei"]) > 0
        flags = read("/featureFlags")
        assert flags["paused"]["ClaimNodeOp"] is True
        assert flags["flags"]["rewardsDistribution"] is True and flags["flags"]["rewardsEstimator"] is True
        due = params["nextDistributionTime"]
        stakers = [st["stakerAddr"] for st in live.op.stakers()]
        assert record_validation_ends(live, due) > 5
        dist = live.distribute_at(due)  # the calls go through with the flag set
        assert check_every_staker_is_paid_its_forecast(read, dist, stakers, due) >= 10
        assert live.op.call("Storage", abis.storage_getBool, registry_key("contract.paused", "ClaimNodeOp"))  # all along


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


def test_a_staker_under_the_floor_whose_minipools_all_end_is_paid_its_forecast(tmp_path):
    """Under 10 % collateralization its effective stake is 0 today, but its only minipool's
    validation ends before the distribution without another cycle: nothing is assigned then, the
    contract's 10 % gate (which divides by avaxAssigned) no longer applies, and the distribution
    pays it on min(G, 1.5·HW/P). The forecast says so, and every staker, TEGS included, is paid
    its forecast to the wei after Rialto records every validation end that falls before it."""
    with live_devnet(seed=3, zero_reward_odds=0) as (net, live, profile):  # no slashing between build and distribution
        op = live.op
        while not live.distributions:  # a cycle just started: a whole cycle ahead
            live.step()
        owner, node = to_checksum_address(b"\x5b" * 20), to_checksum_address(b"\x6c" * 20)
        t = live.now + 60
        price = op.call("Oracle", abis.getGGPPriceInAVAX)[0]
        with manual_mining(live.client):
            with live.sender.one_block(t):
                op.stake_ggp(owner, 120 * WAD * WAD // price)  # 12 % of 1000 AVAX
                op.create_minipool(owner, node, 14 * DAY, 1000 * WAD)  # one cycle: no second one
            with live.sender.one_block(t + 60):
                op.launch(node)
            with live.sender.one_block(t + 120):
                op.start(node, b"\x01" * 32, t + 120)
            live.sender.check()
        for _ in range(3):
            live.step()
        # GGP falls by a quarter: the staker is under the 10 % floor.
        live.ggp_price = live.ggp_price * 3 // 4 // 10**12 * 10**12
        with manual_mining(live.client):
            with live.sender.one_block(live.now + 60):
                op.set_prices(live.ggp_price, live.avax_usd)
            live.sender.check()
        net.scenario.prices.append((live.now, live.ggp_price, live.avax_usd))
        live._refresh_standins()

        read = publish(profile, tmp_path / "out")
        mine = read(f"/rewards/{owner.lower()}")
        assert mine["collateralizationRatioPct"] < 10 and mine["effectiveGGPStaked"] == 0
        assert mine["eligibleNextDistribution"] is True
        assert mine["effectiveGGPStakedNextDistribution"] > 0
        assert "without another cycle" in mine["forecastNote"] and "10 % floor does not apply" in mine["forecastNote"]
        forecast = int(published_estimate(read, owner)["ggpPerCycleWei"])
        assert forecast > 0
        due = read("/rewards/params")["nextDistributionTime"]

        assert record_validation_ends(live, due) > 5
        assert op.call("Staking", abis.getCollateralizationRatio, owner) == 2**256 - 1  # nothing assigned
        stakers = [st["stakerAddr"] for st in op.stakers()]
        dist = live.distribute_at(due)
        assert dist.paid[owner.lower()] == forecast
        assert check_every_staker_is_paid_its_forecast(read, dist, stakers, due) >= 10


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


def test_the_depositor_funds_the_line_in_the_block_a_minipool_ends():
    """The queue lives: the first ends fund the line the scenario left waiting, each funding is
    in the block of a validation end mined at that end's own time (or of an errored pool's
    return), and no funding leaves a request the vault could still cover at the line's front."""
    from eth_abi import decode
    from eth_utils import keccak
    from ggp_devnet import operator as O
    from support.chain import eth_call, eth_calls, header
    from support.queue import all_pending, check_views_agree, is_fulfilled, is_pending, liquidity, requests_

    from publisher.chain.abi import event_topic

    with running_live(seed=6) as (net, live):
        waiting = sorted(r.id for r in net.scenario.queue.requests if r.fate == "pending")
        covered = waiting[: net.scenario.queue.covered]
        for _ in range(14):
            live.step()
        a, client = net.addresses, live.client
        q = a["WithdrawQueue"]
        assert len(live.fundings) >= 10
        first_block = live.fundings[0].block
        assert [f.request_id for f in live.fundings if f.block == first_block][: len(covered)] == covered
        assert [f.request_id for f in live.fundings] == sorted(f.request_id for f in live.fundings)  # in line order
        ends = {keccak(text=sig)[:4]: sig for sig in (O.record_end.signature, O.record_end_cycle.signature)}
        at_end = 0
        for block in sorted({f.block for f in live.fundings}):
            funded = [f for f in live.fundings if f.block == block]
            ts = int(header(client, block)["timestamp"], 16)
            assert all(f.time == ts for f in funded)
            for f in funded:
                assert eth_call(client, q, is_pending, f.request_id, block=block - 1)
                assert eth_call(client, q, is_fulfilled, f.request_id, block=block)
            # The validation ends in this block are reported with this block's time as their end.
            txs = client.request("eth_getBlockByNumber", [hex(block), True])["transactions"]
            end_times = [decode(["address", "uint256", "uint256"], bytes.fromhex(tx["input"][10:]))[1]
                         for tx in txs if tx["to"] and tx["to"].lower() == a["MinipoolManager"].lower()
                         and bytes.fromhex(tx["input"][2:10]) in ends]
            assert all(t == ts for t in end_times)
            at_end += bool(end_times)
            # Served as far as the liquidity goes: the line's front is beyond it, or the line is empty.
            pending = eth_call(client, q, all_pending, block=block)
            if pending:
                front = eth_call(client, q, requests_, min(pending), block=block)
                assets, held = eth_calls(client, [(a["TokenggAVAX"], O.abis.convertToAssets, (front[1],)),
                                                  (a["WAVAX"], O.abis.balanceOf, (a["TokenggAVAX"],))], block)
                assert front[2] > liquidity(client, a, block) or assets > held
        assert at_end >= len({f.block for f in live.fundings}) - 2  # the rest: errored pools' AVAX back
        # The holders' side happened too, and the queue was paused once (days 5 to 7).
        for event in ("UnstakeClaimed(uint256,address,uint256)", "RequestCancelled(uint256,address,uint256)",
                      "ExpiredSharesReturned(uint256,address,uint256)", "ContractPaused(address)", "ContractUnpaused(address)"):
            found = client.request("eth_getLogs", [{"address": q, "fromBlock": hex(first_block), "toBlock": "latest",
                                                    "topics": [event_topic(event)]}])
            assert found, event
        check_views_agree(client, a)
