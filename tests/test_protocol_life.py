"""The devnet contracts' time behaviour against an independent Python computation: the rewards
cycle start minting for every elapsed inflation interval, Rialto's per-staker distribution, the
end of a validation period (AVAX split, slashing), cycling, pause switches and the below-10 % rule.

Each test moves the demo chain inside ``checkpoint`` (evm_snapshot / evm_revert), so the shared
session devnet is left as it was.
"""
from __future__ import annotations

from eth_utils import keccak
from ggp_devnet import operator as O
from ggp_devnet.scenarios import LAUNCHED, STAKING, WITHDRAWABLE
from ggp_devnet.seed import DEPLOYER
from support.chain import DAY, WAD, checkpoint, div_wad, eth_call, head, mul_wad, send

from publisher.chain import abis
from publisher.chain.abi import Fn
from publisher.chain.rpc import RpcError
from publisher.compute import rewards as R

YEAR = 365 * DAY
set_uint = Fn("setUint(string,uint256)")
ggp_rewards = Fn("getGGPRewards(address)", "uint256")
avax_validating = Fn("getAVAXValidating(address)", "uint256")
staker_of = Fn("getStaker(int256)", abis.STAKER)
index_of = Fn("getIndexOf(address)", "int256")


def send_at(rpc, t: int, to: str, data: bytes) -> dict:
    rpc.request("evm_setNextBlockTimestamp", [hex(t)])
    return send(rpc, to, data)


def staker(demo, rpc, addr: str) -> dict:
    a = demo.addresses
    row = eth_call(rpc, a["Staking"], staker_of, eth_call(rpc, a["Staking"], index_of, addr))
    return dict(zip((k for k, _ in abis.STAKER_FIELDS), row, strict=True))


def pools(demo, rpc) -> list[dict]:
    a = demo.addresses
    count = eth_call(rpc, a["MinipoolManager"], abis.getMinipoolCount)
    return [dict(zip((k for k, _ in abis.MINIPOOL_FIELDS), eth_call(rpc, a["MinipoolManager"], abis.getMinipool, i), strict=True))
            for i in range(count)]


def reverts(rpc, to: str, data: bytes, error: str) -> bool:
    """The call reverts with the custom error ``error`` (e.g. "ContractPaused()")."""
    try:
        rpc.request("eth_call", [{"from": DEPLOYER, "to": to, "data": "0x" + data.hex()}, "latest"])
    except RpcError as exc:
        return (exc.data or "").startswith("0x" + keccak(text=error)[:4].hex())
    return False


def test_late_cycle_start_mints_every_elapsed_interval_and_resets_the_start(demo, rpc):
    a = demo.addresses
    _, now = head(rpc)
    start = eth_call(rpc, a["RewardsPool"], abis.getRewardsCycleStartTime)
    infl_start = eth_call(rpc, a["RewardsPool"], abis.getInflationIntervalStartTime)
    rate = eth_call(rpc, a["ProtocolDAO"], abis.dao_setting["InflationIntervalRate"])
    count = eth_call(rpc, a["RewardsPool"], abis.getRewardsCycleCount)
    with checkpoint(rpc):
        t = max(now, start + 30 * DAY) + int(3.5 * DAY)  # three and a half days overdue
        supply = eth_call(rpc, a["TokenGGP"], abis.totalSupply)
        send_at(rpc, t, a["RewardsPool"], O.start_rewards_cycle.encode())
        n = (t - infl_start) // DAY
        assert n >= 33
        expected = supply
        for _ in range(n):
            expected = expected * rate // WAD
        mint = expected - supply
        assert eth_call(rpc, a["TokenGGP"], abis.totalSupply) == supply + mint
        assert eth_call(rpc, a["RewardsPool"], abis.getRewardsCycleTotalAmt) == mint
        assert eth_call(rpc, a["ClaimNodeOp"], abis.getRewardsCycleTotal) == mul_wad(7 * 10**17, mint)
        assert eth_call(rpc, a["RewardsPool"], abis.getInflationIntervalStartTime) == t
        assert eth_call(rpc, a["RewardsPool"], abis.getRewardsCycleStartTime) == t
        assert eth_call(rpc, a["RewardsPool"], abis.getRewardsCycleCount) == count + 1


def test_distribution_share_math_and_resets(demo, rpc):
    a = demo.addresses
    _, now = head(rpc)
    start = eth_call(rpc, a["RewardsPool"], abis.getRewardsCycleStartTime)
    with checkpoint(rpc):
        t = max(now, start + 30 * DAY) + 60
        send_at(rpc, t, a["RewardsPool"], O.start_rewards_cycle.encode())
        total = eth_call(rpc, a["ClaimNodeOp"], abis.getRewardsCycleTotal)
        cycle = eth_call(rpc, a["RewardsPool"], abis.getRewardsCycleCount)
        rows = eth_call(rpc, a["Staking"], abis.getStakers, 0, 0)
        eligible = [r[0] for r in rows if eth_call(rpc, a["ClaimNodeOp"], abis.isEligible, r[0])]
        effective = {addr: eth_call(rpc, a["Staking"], abis.getEffectiveGGPStaked, addr) for addr in eligible}
        tegs = sum(effective.values())
        kinds = {"assigned": 0, "unassigned": 0}
        for addr in eligible:
            before = staker(demo, rpc, addr)
            send(rpc, a["ClaimNodeOp"], O.distribute.encode(addr, tegs))
            after = staker(demo, rpc, addr)
            assert after["ggpRewards"] - before["ggpRewards"] == mul_wad(div_wad(effective[addr], tegs), total)
            assert after["avaxValidatingHighWater"] == before["avaxValidating"]
            assert after["lastRewardsCycleCompleted"] == cycle
            assert after["rewardsStartTime"] == (0 if before["avaxAssigned"] == 0 else before["rewardsStartTime"])
            kinds["assigned" if before["avaxAssigned"] else "unassigned"] += 1
        assert all(kinds.values()), kinds  # both start-time branches are exercised
        # Once per staker per cycle.
        assert reverts(rpc, a["ClaimNodeOp"], O.distribute.encode(eligible[0], tegs), "RewardsAlreadyDistributedToStaker(address)")


def test_staking_end_splits_rewards_cycles_the_pool_and_resets_its_record(demo, rpc):
    a = demo.addresses
    _, now = head(rpc)
    price, _ = eth_call(rpc, a["Oracle"], abis.getGGPPriceInAVAX)

    def collateralized(owner: str) -> bool:  # the contract refuses to cycle a pool under 10 %
        st = staker(demo, rpc, owner)
        return st["ggpStaked"] * price // WAD >= (st["avaxAssigned"] + 100 * WAD) // 5

    # A Staking pool with room for another cycle after this one ends.
    m = next(p for p in pools(demo, rpc) if p["status"] == STAKING and p["duration"] >= 90 * DAY and collateralized(p["owner"]))
    owner, nid = m["owner"], m["nodeID"]
    with checkpoint(rpc):
        send(rpc, a["ProtocolDAO"], set_uint.encode("MinipoolNodeCommissionFeePct", 15 * 10**16))
        t = max(now, m["startTime"] + 14 * DAY) + 60
        end = t - 30
        principal = m["avaxNodeOpAmt"] + m["avaxLiquidStakerAmt"]
        reward = O.network_reward(principal, end - m["startTime"], 750) + 1  # odd: the halves round
        before = staker(demo, rpc, owner)
        staking_assets = eth_call(rpc, a["TokenggAVAX"], abis.stakingTotalAssets)
        ls_total = eth_call(rpc, a["MinipoolManager"], abis.getTotalAVAXLiquidStakerAmt)
        send_at(rpc, t, a["MinipoolManager"], O.record_end_cycle.encode(nid, end, reward))
        half = reward // 2
        ls_reward = half - half * 15 * 10**16 // WAD
        compounded = m["avaxNodeOpAmt"] + ls_reward
        got = eth_call(rpc, a["MinipoolManager"], abis.getMinipoolByNodeID, nid)
        got = dict(zip((k for k, _ in abis.MINIPOOL_FIELDS), got, strict=True))
        # Cycled: back to Launched with both principals compounded by the stakers' reward …
        assert got["status"] == LAUNCHED
        assert got["avaxNodeOpAmt"] == got["avaxLiquidStakerAmt"] == compounded
        # … and this period's record overwritten (it survives only in events).
        assert (got["startTime"], got["endTime"], got["avaxTotalRewardAmt"], got["avaxNodeOpRewardAmt"],
                got["avaxLiquidStakerRewardAmt"], got["txID"]) == (0, 0, 0, 0, 0, b"\0" * 32)
        assert got["initialStartTime"] == m["initialStartTime"]
        after = staker(demo, rpc, owner)
        assert after["avaxAssigned"] == before["avaxAssigned"] - m["avaxLiquidStakerAmt"] + compounded
        assert after["avaxValidating"] == before["avaxValidating"] - m["avaxLiquidStakerAmt"]
        assert after["avaxStaked"] == before["avaxStaked"] + ls_reward
        assert after["avaxValidatingHighWater"] == before["avaxValidatingHighWater"]
        # ggAVAX got the principal back and lent the compounded amount out again.
        assert eth_call(rpc, a["TokenggAVAX"], abis.stakingTotalAssets) == staking_assets - m["avaxLiquidStakerAmt"] + compounded
        assert eth_call(rpc, a["MinipoolManager"], abis.getTotalAVAXLiquidStakerAmt) == ls_total - m["avaxLiquidStakerAmt"] + compounded


def test_zero_reward_slashes_the_expected_reward_in_ggp(demo, rpc):
    a = demo.addresses
    _, now = head(rpc)
    m = next(p for p in pools(demo, rpc) if p["status"] == STAKING
             and staker(demo, rpc, p["owner"])["ggpStaked"] > 100 * WAD)
    owner, nid = m["owner"], m["nodeID"]
    price, _ = eth_call(rpc, a["Oracle"], abis.getGGPPriceInAVAX)
    with checkpoint(rpc):
        t = max(now, m["startTime"] + 14 * DAY) + 60
        end = t - 30
        before = staker(demo, rpc, owner)
        total_stake = eth_call(rpc, a["Staking"], abis.getTotalGGPStake)
        send_at(rpc, t, a["MinipoolManager"], O.record_end.encode(nid, end, 0))
        expected_avax = m["avaxLiquidStakerAmt"] * 10**17 // WAD * (end - m["startTime"]) // YEAR
        slash = min(before["ggpStaked"], expected_avax * WAD // price)
        got = dict(zip((k for k, _ in abis.MINIPOOL_FIELDS), eth_call(rpc, a["MinipoolManager"], abis.getMinipoolByNodeID, nid), strict=True))
        assert got["status"] == WITHDRAWABLE and got["ggpSlashAmt"] == slash > 0
        assert got["avaxTotalRewardAmt"] == got["avaxNodeOpRewardAmt"] == got["avaxLiquidStakerRewardAmt"] == 0
        assert staker(demo, rpc, owner)["ggpStaked"] == before["ggpStaked"] - slash
        assert eth_call(rpc, a["Staking"], abis.getTotalGGPStake) == total_stake - slash


def test_pause_switches_stop_the_protocol_actions(demo, rpc):
    a = demo.addresses
    _, now = head(rpc)
    start = eth_call(rpc, a["RewardsPool"], abis.getRewardsCycleStartTime)
    owner = next(st[0] for st in eth_call(rpc, a["Staking"], abis.getStakers, 0, 0) if st[6] > 20_000 * WAD // 10)
    create = O.create_minipool.encode(owner, "0x" + "ab" * 20, 30 * DAY, 20_000, 1000 * WAD)
    deposit = O.deposit_for.encode(owner, 10 * WAD)
    with checkpoint(rpc):
        rpc.request("evm_setNextBlockTimestamp", [hex(max(now, start + 30 * DAY) + 60)])
        rpc.request("evm_mine", [])
        calls = [("MinipoolManager", create), ("TokenggAVAX", deposit)]
        for name, data in calls:
            assert not reverts(rpc, a[name], data, "ContractPaused()")
        assert eth_call(rpc, a["RewardsPool"], Fn("canStartRewardsCycle()", "bool"))
        for name in ("MinipoolManager", "TokenggAVAX", "RewardsPool"):
            send(rpc, a["Storage"], O.set_paused.encode(name, True))
        for name, data in calls:
            assert reverts(rpc, a[name], data, "ContractPaused()")
        assert reverts(rpc, a["RewardsPool"], O.start_rewards_cycle.encode(), "UnableToStartRewardsCycle()")


def test_below_ten_percent_the_gate_uses_avax_assigned(demo, rpc):
    """A staker whose minipools ended mid-cycle (HW > 0, nothing assigned) earns on
    min(G, 1.5·HW/P) even when G·P/HW is under 10 %: the gate divides by avaxAssigned."""
    a = demo.addresses
    price, _ = eth_call(rpc, a["Oracle"], abis.getGGPPriceInAVAX)
    hw = 1000 * WAD
    ggp = hw // 20 * WAD // price  # 5 % of the high-water mark
    row = (to := "0x" + "5a" * 20, 0, 1000 * WAD, 0, hw, 0, ggp, 0, 1, 0)
    with checkpoint(rpc):
        send(rpc, a["Staking"], Fn(f"setStakers({abis.STAKER}[])").encode([row]))
        assert eth_call(rpc, a["Staking"], abis.getCollateralizationRatio, to) == R.UINT256_MAX
        got = eth_call(rpc, a["Staking"], abis.getEffectiveGGPStaked, to)
        assert got == R.effective_ggp_staked(ggp, 0, hw, price, 15 * 10**17) > 0
        assert abs(got - ggp) <= hw // price + 2  # min(G, 1.5·HW/P) up to the ratio's rounding
        # The same stake with the AVAX still assigned is under the gate: nothing.
        send(rpc, a["Staking"], Fn(f"setStakers({abis.STAKER}[])").encode([(to, hw, *row[2:])]))
        assert eth_call(rpc, a["Staking"], abis.getEffectiveGGPStaked, to) == 0 == R.effective_ggp_staked(ggp, hw, hw, price, 15 * 10**17)
