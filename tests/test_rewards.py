"""The rewards formula against the devnet contracts, its properties, and the rewards endpoints."""
from __future__ import annotations

import dataclasses
import json
import math
import random
import time
from fractions import Fraction

import jsonschema
import pytest
from eth_utils import to_checksum_address
from ggp_devnet import devnet_profile, running
from ggp_devnet.seed import DEPLOYER
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from publisher.chain import abis
from publisher.chain.rpc import RpcClient
from publisher.collect import collect
from publisher.compute import params as P
from publisher.compute import rewards as R
from publisher.config import load_profile
from publisher.endpoints import registry, units
from publisher.endpoints import rewards as E
from publisher.endpoints.context import Context

WAD = R.WAD
TENTH = R.TENTH
DAY = 86_400


@pytest.fixture(scope="module")
def doc(demo_snapshot):
    return P.rewards_params(demo_snapshot)


@pytest.fixture(scope="module")
def params(doc):
    return R.parse_params(json.loads(R.canonical_json(doc)))


@pytest.fixture(scope="module")
def rendered(demo_snapshot):
    """Every rewards endpoint rendered from the demo snapshot: {url path: body}."""
    ctx = Context(demo_snapshot)
    out = {}
    for path in ("/rewards/params", "/rewards/grid", "/rewards/{address}"):
        for url, body in registry.load_all()[path].render(ctx):
            out[url] = registry.resolve(body)  # per-staker bodies are deferred until a build needs them
    return out


def _call(rpc: RpcClient, to: str, fn, *args, block: str):
    data = rpc.request("eth_call", [{"to": to, "data": "0x" + fn.encode(*args).hex()}, block])
    return fn.decode(bytes.fromhex(data[2:]))


# ---- effective stake and collateralization equal the contracts --------------------------------


def _formula(snap, s):
    price, max_ratio = snap.oracle.price, snap.settings.max_collateralization_ratio
    return (
        R.collateralization_ratio(s.ggp_staked, s.avax_assigned, price),
        R.effective_rewards_ratio(s.ggp_staked, s.avax_assigned, s.avax_validating_high_water, price, max_ratio),
        R.effective_ggp_staked(s.ggp_staked, s.avax_assigned, s.avax_validating_high_water, price, max_ratio),
    )


def test_effective_stake_and_collateralization_equal_chain_for_every_staker(demo_snapshot):
    snap = demo_snapshot
    regimes = set()
    for s in snap.stakers:
        collat, ratio, eff = _formula(snap, s)
        assert (collat, ratio, eff) == (s.collateralization_ratio, s.effective_rewards_ratio, s.effective_ggp_staked), s.staker_addr
        if s.avax_validating_high_water == 0:
            regimes.add("no high water")
        elif collat < TENTH:
            regimes.add("below 10 %")
        elif collat > snap.settings.max_collateralization_ratio:
            regimes.add("above cap")
        else:
            regimes.add("in range")
    # The comparison means something only if every branch of the contract was exercised.
    assert regimes == {"no high water", "below 10 %", "above cap", "in range"}


def test_effective_stake_equals_direct_eth_call(demo_snapshot, rpc):
    snap = demo_snapshot
    block = hex(snap.block.number)
    staking = snap.addresses["Staking"]
    picked = {}
    for s in snap.stakers:
        collat = _formula(snap, s)[0]
        key = (s.avax_validating_high_water > 0, collat < TENTH, collat > snap.settings.max_collateralization_ratio)
        picked.setdefault(key, s)
    assert len(picked) >= 4
    for s in picked.values():
        collat, ratio, eff = _formula(snap, s)
        assert _call(rpc, staking, abis.getEffectiveGGPStaked, s.staker_addr, block=block) == eff
        assert _call(rpc, staking, abis.getCollateralizationRatio, s.staker_addr, block=block) == collat
        assert _call(rpc, staking, abis.getEffectiveRewardsRatio, s.staker_addr, block=block) == ratio


def test_eligibility_rule_matches_claimnodeop_now(demo_snapshot):
    snap = demo_snapshot
    now, min_s = snap.block.timestamp, snap.settings.rewards_eligibility_min_seconds
    for s in snap.stakers:
        assert P.eligible_at(s, now, min_s) == s.eligible, s.staker_addr
        assert (P.eligibility_reason(s, now, min_s) is None) == s.eligible
    assert any(s.eligible for s in snap.stakers) and not all(s.eligible for s in snap.stakers)


def test_tegs_counts_stakers_eligible_at_next_distribution(demo_snapshot, doc):
    snap = demo_snapshot
    end = snap.rewards_pool.cycle_start_time + snap.settings.rewards_cycle_seconds
    assert doc["nextDistributionTime"] == max(end, snap.block.timestamp)
    when, min_s = doc["nextDistributionTime"], snap.settings.rewards_eligibility_min_seconds
    counted = [s for s in snap.stakers
               if s.rewards_start_time and s.avax_validating_high_water and when - s.rewards_start_time >= min_s]
    # Each at its effective stake as the distribution will read it: today's, but for a staker under
    # the 10 % floor whose minipools all end before then (the demo has one).
    then = P.stakes_at_distribution(snap)
    assert int(doc["tegs"]["wei"]) == sum(then[s.staker_addr].effective for s in counted) > 0
    changed = [s for s in counted if then[s.staker_addr].effective != s.effective_ggp_staked]
    assert changed and all(s.collateralization_ratio < TENTH and then[s.staker_addr].note for s in changed)
    assert doc["tegs"]["stakers"] == len(counted)
    # Anyone eligible now is still eligible later with the same state.
    assert {s.staker_addr for s in snap.stakers if s.eligible} <= {s.staker_addr for s in counted}


def _under_the_floor(snap, durations, statuses=(2, 2), ends_before=6 * DAY):
    """The demo snapshot with one more staker under the 10 % floor (7.5 % of its 2000 AVAX
    assigned; each minipool alone would be 15 %), whose two minipools started together
    ``ends_before + 14 days`` before the next distribution (so their 14-day validations end
    ``ends_before`` before it), eligible then."""
    when = P.next_distribution_time(snap)
    price = snap.oracle.price
    addr = to_checksum_address("0x" + "7e" * 20)
    ggp = 150 * WAD * WAD // price
    start = when - ends_before - 14 * DAY
    pools = []
    for i, (duration, status) in enumerate(zip(durations, statuses, strict=True)):
        template = snap.minipools[0]
        pools.append(dataclasses.replace(
            template, index=len(snap.minipools) + i, node_id=to_checksum_address("0x" + f"{0x70 + i:02x}" * 20),
            status=status, duration=duration, owner=addr, avax_node_op_amt=1000 * WAD, avax_node_op_initial_amt=1000 * WAD,
            avax_liquid_staker_amt=1000 * WAD, initial_start_time=start if status == 2 else 0,
            start_time=start if status == 2 else 0, end_time=0))
    collat = R.collateralization_ratio(ggp, 2000 * WAD, price)
    assert collat < TENTH
    st = dataclasses.replace(snap.stakers[0], staker_addr=addr, avax_assigned=2000 * WAD, avax_staked=2000 * WAD,
                             avax_validating=2000 * WAD, avax_validating_high_water=2000 * WAD, ggp_staked=ggp,
                             rewards_start_time=start - DAY, effective_ggp_staked=0, collateralization_ratio=collat,
                             effective_rewards_ratio=0, eligible=True)
    return dataclasses.replace(snap, stakers=(*snap.stakers, st), minipools=(*snap.minipools, *pools)), st


@pytest.mark.parametrize("case", ["all end", "one ends"])
def test_under_the_floor_the_forecast_models_minipools_that_end_for_good(demo_snapshot, case):
    """Both minipools end before the distribution with no cycle left: nothing assigned, the floor
    does not apply. Or one ends and the other is still Prelaunch: 1000 AVAX assigned, 15 %."""
    snap, st = _under_the_floor(demo_snapshot, (14 * DAY, 14 * DAY), statuses=(2, 2) if case == "all end" else (2, 0))
    assert snap.settings.minipool_cycle_duration == 14 * DAY and snap.settings.minipool_cycle_delay_tolerance == DAY
    then = P.stakes_at_distribution(snap)[st.staker_addr]
    free = R.effective_ggp_staked(st.ggp_staked, 0, st.avax_validating_high_water, snap.oracle.price,
                                  snap.settings.max_collateralization_ratio)
    assert free == R.effective_ggp_staked(st.ggp_staked, 1000 * WAD, st.avax_validating_high_water, snap.oracle.price,
                                          snap.settings.max_collateralization_ratio)  # the contract at 1000 assigned
    assert then.effective == free > 0 and abs(free - st.ggp_staked) <= 2 * WAD  # min(G, 1.5·HW/P) = G here
    assert ("without another cycle" if case == "all end" else "leave at most 1000 AVAX assigned") in then.note
    base, _ = P.tegs(demo_snapshot)
    assert P.tegs(snap) == (base + free, P.tegs(demo_snapshot)[1] + 1)
    body = registry.resolve(dict(registry.load_all()["/rewards/{address}"].render(Context(snap)))[E.rewards_path(st.staker_addr)])
    assert body["effectiveGGPStaked"] == 0 and body["effectiveGGPStakedNextDistributionWei"] == str(free)
    assert body["forecastNote"] == then.note
    params = R.parse_params(json.loads(R.canonical_json(P.rewards_params(snap))))
    assert int(R.staker_estimate(params, R.parse_staker(body))["result"]["ggpPerCycleWei"]) > 0


@pytest.mark.parametrize("case", ["may cycle", "not validating", "ends after"])
def test_under_the_floor_the_forecast_keeps_zero_when_avax_stays_assigned(demo_snapshot, case):
    if case == "may cycle":  # 60-day minipools: another cycle fits, and 15 % per minipool allows it
        snap, st = _under_the_floor(demo_snapshot, (60 * DAY, 60 * DAY))
    elif case == "not validating":
        snap, st = _under_the_floor(demo_snapshot, (14 * DAY, 14 * DAY), statuses=(1, 0))
    else:
        snap, st = _under_the_floor(demo_snapshot, (14 * DAY, 14 * DAY), ends_before=-DAY)
    then = P.stakes_at_distribution(snap)[st.staker_addr]
    assert then.effective == 0
    assert P.tegs(snap)[0] == P.tegs(demo_snapshot)[0]
    if case == "may cycle":  # said, with what it would earn otherwise
        assert "starts another cycle" in then.note and "would then be" in then.note
    else:
        assert then.note is None


# ---- inflation: the formula's mint equals RewardsPool ------------------------------------------


def test_mint_so_far_equals_get_inflation_amt(demo_snapshot):
    snap, st = demo_snapshot, demo_snapshot.settings
    rp = snap.rewards_pool
    elapsed = (snap.block.timestamp - rp.inflation_interval_start_time) // st.inflation_interval_seconds
    assert elapsed > 0
    assert R.compound(rp.inflation_current_supply, st.inflation_interval_rate, elapsed) == rp.inflation_new_supply
    assert R.cycle_mint(rp.inflation_current_supply, snap.ggp.max_supply, st.inflation_interval_rate, elapsed) \
        == rp.inflation_new_supply - rp.inflation_current_supply


@pytest.fixture(scope="module")
def own_devnet():
    """A separate devnet this module may move in time (inside evm_snapshot / evm_revert)."""
    with running("demo") as net:
        yield net


def test_cycle_mint_and_nodeop_pool_equal_the_contracts_after_a_full_cycle(own_devnet):
    net = own_devnet
    snap = collect(devnet_profile(load_profile("devnet"), net)).snapshot
    doc = P.rewards_params(snap)
    p = R.parse_params(doc)
    assert p.intervals == 30
    rpc = RpcClient([net.url])
    a = net.addresses
    checkpoint = rpc.request("evm_snapshot", [])
    try:
        t = snap.rewards_pool.inflation_interval_start_time + p.intervals * snap.settings.inflation_interval_seconds
        rpc.request("evm_setNextBlockTimestamp", [hex(t)])
        rpc.request("evm_mine", [])
        head = rpc.request("eth_getBlockByNumber", ["latest", False])
        assert int(head["timestamp"], 16) == t
        current, new = _call(rpc, a["RewardsPool"], abis.getInflationAmt, block=head["number"])
        assert current == p.ggp_supply
        assert new - current == p.cycle_mint == int(doc["forecast"]["cycleMintWei"]) > 0
        # The real mint: start the cycle (the devnet owner plays Rialto) and read what was recorded.
        rpc.request("evm_setNextBlockTimestamp", [hex(t + 1)])
        tx = rpc.request("eth_sendTransaction", [{"from": DEPLOYER, "to": a["RewardsPool"], "gas": hex(5_000_000),
                                                  "data": "0x" + abis.Fn("startRewardsCycle()").encode().hex()}])
        receipt = _receipt(rpc, tx)
        assert receipt["status"] == "0x1"
        block = receipt["blockNumber"]
        assert _call(rpc, a["RewardsPool"], abis.getRewardsCycleTotalAmt, block=block) == p.cycle_mint
        assert _call(rpc, a["ClaimNodeOp"], abis.getRewardsCycleTotal, block=block) == p.nodeop_pool
    finally:
        assert rpc.request("evm_revert", [checkpoint]) is True


def _receipt(rpc: RpcClient, tx: str) -> dict:
    for _ in range(200):  # automine may still be sealing the block
        receipt = rpc.request("eth_getTransactionReceipt", [tx])
        if receipt:
            return receipt
        time.sleep(0.02)
    raise AssertionError(f"transaction {tx} was not mined")


def _send(rpc: RpcClient, to: str, data: bytes) -> dict:
    tx = rpc.request("eth_sendTransaction", [{"from": DEPLOYER, "to": to, "gas": hex(50_000_000), "data": "0x" + data.hex()}])
    receipt = _receipt(rpc, tx)
    assert receipt["status"] == "0x1"
    return receipt


def test_rounding_matches_the_contracts_on_awkward_numbers(own_devnet):
    """Odd wei amounts and an odd price, where every intermediate floor matters."""
    net, rng = own_devnet, random.Random(2024)
    rpc, a = RpcClient([net.url]), own_devnet.addresses
    price = rng.randrange(10**15, 3 * 10**18) | 1
    max_ratio = 15 * 10**17
    rows = []
    for _ in range(60):
        # Small amounts (below 1 AVAX) too: there the inner floors change the result.
        assigned = rng.choice([0, rng.randrange(1, 10**15), rng.randrange(1, 10**22), rng.randrange(1, 10**24)])
        hw = rng.choice([0, assigned, rng.randrange(1, 10**15), rng.randrange(1, 10**24)])
        ggp = rng.choice([0, rng.randrange(1, 10**25), assigned * 10**18 // price // 10 + rng.randrange(-3, 4) if assigned else 7])
        rows.append(("0x" + rng.randbytes(20).hex(), assigned, 0, hw, hw, 0, max(ggp, 0), 0, 0, 0))
    checkpoint = rpc.request("evm_snapshot", [])
    try:
        _send(rpc, a["Oracle"], abis.Fn("setGGPPriceInAVAX(uint256,uint256)").encode(price, 1))
        block = _send(rpc, a["Staking"], abis.Fn(f"setStakers({abis.STAKER}[])").encode(rows))["blockNumber"]
        for addr, assigned, _, _, hw, _, ggp, *_ in rows:
            who = to_checksum_address(addr)
            assert _call(rpc, a["Staking"], abis.getCollateralizationRatio, who, block=block) \
                == R.collateralization_ratio(ggp, assigned, price)
            assert _call(rpc, a["Staking"], abis.getEffectiveRewardsRatio, who, block=block) \
                == R.effective_rewards_ratio(ggp, assigned, hw, price, max_ratio)
            assert _call(rpc, a["Staking"], abis.getEffectiveGGPStaked, who, block=block) \
                == R.effective_ggp_staked(ggp, assigned, hw, price, max_ratio)
    finally:
        assert rpc.request("evm_revert", [checkpoint]) is True


def test_contract_math_by_hand():
    # divWad(mulWad(G, P), A): the inner floor matters (1 wei x 0.3 -> 0), and so does the outer.
    assert R.collateralization_ratio(1, 7, 3 * WAD // 10) == 0
    assert R.collateralization_ratio(10, 7, 3 * WAD // 10) == 3 * WAD // 7
    assert R.collateralization_ratio(1000 * WAD, 1000 * WAD, WAD // 3) == 333_333_333_333_333_333
    assert R.collateralization_ratio(1, 0, WAD) == R.UINT256_MAX
    assert R.share_of_pool(1, 3, WAD) == (333_333_333_333_333_333, 333_333_333_333_333_333)
    # Two steps, each rounding down: 2/3 first, then x 7 (a one-step split would give ...666).
    assert R.share_of_pool(2, 3, 7 * WAD) == (666_666_666_666_666_666, 4_666_666_666_666_666_662)
    assert R.share_of_pool(0, 3, WAD) == (0, 0) and R.share_of_pool(5, 0, WAD) == (0, 0)
    assert R.compound(10**18, 2 * 10**18, 3) == 8 * 10**18


def test_cycle_mint_is_capped_at_max_supply():
    rate = 1000133680617113500
    supply = 22_499_990 * WAD
    assert R.compound(supply, rate, 30) - supply > 10 * WAD
    assert R.cycle_mint(supply, 22_500_000 * WAD, rate, 30) == 10 * WAD
    assert R.cycle_mint(22_500_000 * WAD, 22_500_000 * WAD, rate, 30) == 0


# ---- the formula ------------------------------------------------------------------------------


def _synthetic(**over) -> dict:
    """A params document with round numbers, for checks by hand."""
    doc = {
        "formatVersion": 1, "network": "test", "chainId": 1,
        "block": {"number": 1, "hash": "0x" + "00" * 32, "timestamp": 1_000_000},
        "ggpPriceInAvaxWei": str(5 * 10**16), "ggpPriceTimestamp": 1_000_000,
        "avaxUsdFeed": {"answer": "2000000000", "decimals": 8, "updatedAt": 1_000_000, "address": "0x" + "11" * 20},
        "ggpTotalSupplyWei": str(18_000_000 * WAD), "ggpMaxSupplyWei": str(22_500_000 * WAD),
        "inflationIntervalRateWad": "1000133680617113500", "inflationIntervalSeconds": DAY,
        "rewardsCycleSeconds": 30 * DAY, "rewardsEligibilityMinSeconds": 15 * DAY, "rewardsCycleCount": 1,
        "rewardsCycleStartTime": 1_000_000, "nextDistributionTime": 1_000_000 + 30 * DAY,
        "inflationIntervalStartTime": 1_000_000,
        "claimNodeOpPctWad": str(7 * 10**17), "minCollateralizationRatioWad": str(10**17),
        "maxCollateralizationRatioWad": str(15 * 10**17), "minipoolNodeCommissionFeePctWad": "0",
        "minipoolMinAvaxAssignmentWei": str(1000 * WAD), "minipoolMaxAvaxAssignmentWei": str(1000 * WAD),
        "minipoolMinAvaxStakingAmtWei": str(2000 * WAD),
        "tegs": {"wei": str(1_500_000 * WAD)}, "validatorRate": {"wad": str(75 * 10**15), "source": "default"},
    }
    doc.update(over)
    return doc


def test_worked_example_of_the_protocol_notes():
    # A = 1000, P = 0.05, G = 10 000 (50 %), TEGS = 1.5 M, R = 50 000, r_v = 7.5 %, commission 0.
    mint = R.parse_params(_synthetic()).cycle_mint
    pct = 50_000 * WAD * WAD // mint  # ClaimNodeOp share that makes the pool 50 000 GGP
    p = R.parse_params(_synthetic(claimNodeOpPctWad=str(pct)))
    assert abs(p.nodeop_pool - 50_000 * WAD) < WAD
    r = R.estimate(p, 10_000 * WAD, 1000 * WAD)
    assert r["collateralizationRatioPct"] == 50.0 and r["effectiveGGPStaked"] == 10_000
    assert r["sharePct"] == pytest.approx(0.662, abs=1e-3)
    assert r["ggpPerCycle"] == pytest.approx(331.1, abs=0.1)
    assert r["ggpPerCycleInAvax"] == pytest.approx(16.56, abs=0.01)
    assert r["avaxPerCycle"] == pytest.approx(6.16, abs=0.01)
    # The notes use x12 (18.2 %); DESIGN §7.8 annualizes by 365 d / cycleSeconds: x12.17.
    assert r["aprPct"] == pytest.approx((331.1 * 0.05 + 6.164) / 1500 * 365 / 30 * 100, rel=1e-3)
    assert r["ggpAprPct"] + r["avaxAprPct"] == pytest.approx(r["aprPct"], rel=1e-12)
    assert r["usd"]["totalPerCycle"] == pytest.approx((331.1 * 0.05 + 6.164) * 20, rel=1e-3)
    assert r["warnings"] == []


def test_share_uses_the_contracts_two_step_rounding():
    p = R.parse_params(_synthetic(tegs={"wei": str(3 * WAD + 1)}))
    r = R.estimate(p, 40_000 * WAD, 1000 * WAD)  # 200 %, capped at 150 %: G_eff = 30 000 GGP
    g_eff = int(r["effectiveGGPStakedWei"])
    assert g_eff == 30_000 * WAD
    percentage = g_eff * WAD // (3 * WAD + 1 + g_eff)
    assert r["shareWad"] == str(percentage)
    assert r["ggpPerCycleWei"] == str(percentage * p.nodeop_pool // WAD)
    assert int(r["ggpPerCycleWei"]) < g_eff * p.nodeop_pool // (3 * WAD + 1 + g_eff)  # one-step would differ


def test_avax_rewards_include_the_commission():
    base = R.estimate(R.parse_params(_synthetic()), 0, 2000 * WAD)
    paid = R.estimate(R.parse_params(_synthetic(minipoolNodeCommissionFeePctWad=str(15 * 10**16))), 0, 2000 * WAD)
    assert int(base["avaxPerYearWei"]) == 2000 * WAD * 75 // 1000  # 7.5 % of 2000 AVAX
    assert int(paid["avaxPerYearWei"]) == 2000 * WAD * 75 * 115 // 100_000
    exact = Fraction(2000 * WAD) * Fraction(75, 1000) * Fraction(115, 100) * 30 * DAY / R.YEAR
    assert int(paid["avaxPerCycleWei"]) == math.floor(exact)


@pytest.mark.parametrize("ggp, avax, codes", [
    (0, 0, {"nothing_staked", "no_avax"}),
    (10_000 * WAD, 0, {"no_avax"}),
    (0, 1000 * WAD, {"collateral_below_minimum", "no_ggp_rewards"}),
    (20_000 * WAD, 500 * WAD, {"avax_below_minimum", "stake_above_cap"}),
    (10_000 * WAD, 1500 * WAD, {"avax_not_assignable"}),
    (100_000 * WAD, 1000 * WAD, {"stake_above_cap"}),
    (10_000 * WAD, 1000 * WAD, set()),
])
def test_warnings_explain_what_the_protocol_would_do(ggp, avax, codes):
    r = R.estimate(R.parse_params(_synthetic()), ggp, avax)
    assert {w["code"] for w in r["warnings"]} == codes
    assert all(w["message"] for w in r["warnings"])
    json.loads(R.canonical_json(r))  # finite, serializable
    if avax == 0:
        assert r["collateralizationRatioPct"] is None and r["aprPct"] == 0.0 and r["ggpPerCycleWei"] == "0"


def test_no_feed_gives_null_usd_and_a_warning():
    r = R.estimate(R.parse_params(_synthetic(avaxUsdFeed=None)), 10_000 * WAD, 1000 * WAD)
    assert r["usd"] is None and "no_usd_price" in {w["code"] for w in r["warnings"]}


def test_display_numbers_follow_the_units_rule():
    for wei in (0, 1, 10**18, 123456789123456789123456789, 2**200 + 12345):
        assert R.tokens(wei) == units.tokens(wei)
        assert R.pct(wei) == units.pct_wad(wei)
    body = {"b": [1.5, "é", None], "a": {"z": 1, "y": True}}
    assert R.canonical_json(body) == units.dumps(body)


# ---- properties -------------------------------------------------------------------------------

AVAX = st.integers(0, 10**9).map(lambda n: n * WAD) | st.integers(0, 10**9 * WAD)
GGP = st.integers(0, 22_500_000 * WAD)


@st.composite
def param_docs(draw, base=None):
    """The demo params with the market-dependent inputs varied."""
    doc = dict(base)
    doc["ggpPriceInAvaxWei"] = str(draw(st.integers(10**12, 10 * WAD)))
    doc["tegs"] = {"wei": str(draw(st.integers(0, 10**7 * WAD)))}
    doc["validatorRate"] = {"wad": str(draw(st.integers(0, 2 * 10**17))), "source": "minipools"}
    doc["minipoolNodeCommissionFeePctWad"] = str(draw(st.sampled_from([0, 15 * 10**16])))
    doc["ggpTotalSupplyWei"] = str(draw(st.integers(18_000_000 * WAD, 22_500_000 * WAD)))
    if draw(st.booleans()):
        doc["avaxUsdFeed"] = None
    return R.parse_params(doc)


def _cap_ggp(p: R.Params, avax: int) -> int:
    """Smallest GGP whose ratio reaches MaxCollateralizationRatio (beyond it nothing changes)."""
    return R.ggp_for_collateralization(p.price, avax, p.max_ratio)


PROPS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPS
@given(data=st.data(), avax=AVAX.filter(lambda a: a >= WAD))
def test_no_ggp_below_ten_percent(doc, data, avax):
    p = data.draw(param_docs(doc))
    top = R.ggp_for_collateralization(p.price, avax, TENTH)  # the first GGP amount at 10 %
    ggp = data.draw(st.integers(0, max(top - 1, 0)))
    r = R.estimate(p, ggp, avax)
    assert R.collateralization_ratio(ggp, avax, p.price) < TENTH
    assert r["effectiveGGPStakedWei"] == "0" and r["ggpPerCycleWei"] == "0" and r["ggpAprPct"] == 0.0
    assert "no_ggp_rewards" in {w["code"] for w in r["warnings"]}


@PROPS
@given(data=st.data(), avax=AVAX.filter(lambda a: a >= WAD))
def test_no_gain_above_the_cap(doc, data, avax):
    p = data.draw(param_docs(doc))
    cap = _cap_ggp(p, avax)
    more = data.draw(st.integers(cap, cap + 10**8 * WAD))
    at_cap, above = R.estimate(p, cap, avax), R.estimate(p, more, avax)
    for key in ("effectiveGGPStakedWei", "shareWad", "ggpPerCycleWei", "avaxPerCycleWei"):
        assert at_cap[key] == above[key]
    assert above["aprPct"] <= at_cap["aprPct"]  # more capital, same rewards


@PROPS
@given(data=st.data(), avax=AVAX)
def test_ggp_is_monotone_in_ggp_staked(doc, data, avax):
    p = data.draw(param_docs(doc))
    g1, g2 = sorted(data.draw(st.lists(GGP, min_size=2, max_size=2)))
    r1, r2 = R.estimate(p, g1, avax), R.estimate(p, g2, avax)
    assert int(r1["effectiveGGPStakedWei"]) <= int(r2["effectiveGGPStakedWei"])
    assert int(r1["ggpPerCycleWei"]) <= int(r2["ggpPerCycleWei"])


@PROPS
@given(data=st.data(), ggp=GGP, avax=AVAX)
def test_apr_is_finite_and_non_negative(doc, data, ggp, avax):
    p = data.draw(param_docs(doc))
    r = R.estimate(p, ggp, avax)
    for key in ("aprPct", "ggpAprPct", "avaxAprPct", "sharePct", "ggpPerCycle", "avaxPerCycle"):
        assert math.isfinite(r[key]) and r[key] >= 0, key
    assert r["aprPct"] == pytest.approx(r["ggpAprPct"] + r["avaxAprPct"], rel=1e-9, abs=1e-12)
    R.canonical_json(r)  # refuses NaN/Infinity


@PROPS
@given(data=st.data())
def test_malformed_params_raise_params_error_only(doc, data):
    bad = json.loads(json.dumps(doc))
    key = data.draw(st.sampled_from(sorted(bad)))
    junk = st.none() | st.booleans() | st.integers(-2**300, 2**300) | st.text(max_size=90) | st.floats() | \
        st.lists(st.integers(), max_size=3) | st.dictionaries(st.text(max_size=5), st.integers(), max_size=3)
    if data.draw(st.booleans()):
        del bad[key]
    else:
        bad[key] = data.draw(junk)
    try:
        R.parse_params(bad)
    except R.ParamsError:
        pass


# ---- endpoints --------------------------------------------------------------------------------


def test_every_rendered_body_validates_against_its_schema(rendered, demo_snapshot):
    for url, body in rendered.items():
        ep = registry.match(url)
        assert ep is not None and ep.tag == "Rewards", url
        jsonschema.Draft202012Validator(ep.schema).validate(body)
    addresses = [u for u in rendered if u.startswith("/rewards/0x")]
    assert len(addresses) == len(demo_snapshot.stakers)
    assert registry.match("/rewards/params").path == "/rewards/params"  # not shadowed by /rewards/{address}
    assert registry.match("/rewards/grid").path == "/rewards/grid"


def _subschemas(schema: dict, where: str):
    """(schema, where) of each schema nested one level in ``schema``."""
    for key, sub in schema.items():
        if isinstance(sub, dict) and key == "properties":
            yield from ((s, f"{where}.{name}") for name, s in sub.items())
        elif isinstance(sub, dict):
            yield sub, f"{where}/{key}"
        elif isinstance(sub, list):
            yield from ((s, f"{where}/{key}") for s in sub if isinstance(s, dict))


def test_schemas_are_strict():
    def walk(schema, where):
        assert "prefixItems" not in schema, where
        if schema.get("type") == "object" and "properties" in schema:
            assert schema.get("required"), where
            assert schema.get("additionalProperties") is False, where
        for sub, at in _subschemas(schema, where):
            walk(sub, at)
    for path in ("/rewards/params", "/rewards/grid", "/rewards/{address}", "/rewards/byStake"):
        ep = registry.load_all()[path]
        jsonschema.Draft202012Validator.check_schema(ep.schema)
        walk(ep.schema, path)
        assert ep.summary and ep.description and ep.tag == "Rewards"
    assert registry.load_all()["/rewards/byStake"].is_function
    assert [p.name for p in registry.load_all()["/rewards/byStake"].params] == ["ggpStaked", "avaxStaked"]


def test_params_body_is_the_params_document(rendered, doc):
    assert rendered["/rewards/params"] == doc
    assert R.parse_params(json.loads(units.dumps(doc))).tegs == int(doc["tegs"]["wei"])


def test_grid_points_reach_their_collateralization_exactly(rendered, params):
    grid = rendered["/rewards/grid"]
    assert len(grid["points"]) == 10 * 30
    for point in grid["points"]:
        avax = int(point["avaxStaked"]) * WAD
        ggp = _wei(point["ggpStaked"])
        target = point["collateralizationPct"] * 10**16
        assert point["result"]["collateralizationRatioWad"] == str(target)
        if ggp:  # the smallest such amount
            assert R.collateralization_ratio(ggp - 1, avax, params.price) < target
        assert point["query"] == f"ggpStaked={point['ggpStaked']}&avaxStaked={point['avaxStaked']}"
        assert units.dumps(point["result"]) == R.canonical_json(R.estimate(params, ggp, avax))


def _wei(text: str) -> int:
    whole, _, frac = text.partition(".")
    return int(whole) * WAD + int(frac.ljust(18, "0") or 0)


def test_grid_apr_curve_rises_to_the_cap(rendered):
    points = [p for p in rendered["/rewards/grid"]["points"] if p["avaxStaked"] == "1000"]
    ggp = [int(p["result"]["ggpPerCycleWei"]) for p in points]
    assert ggp[0] == 0 and ggp[1] > 0 and ggp == sorted(ggp)


def test_nodeop_apr_for_metrics(demo_snapshot, rendered):
    ctx = Context(demo_snapshot)
    low, high = E.nodeop_apr(ctx)
    by_pct = {p["collateralizationPct"]: p["result"]["aprPct"] for p in rendered["/rewards/grid"]["points"]
              if p["avaxStaked"] == "1000"}
    assert (low, high) == (by_pct[10], by_pct[150])
    assert 0 < low < high < 100
    fields = E.metrics_fields(ctx)
    assert fields["nodeop_apr_min"] == low and fields["nodeop_apr_max"] == high
    assert fields["next_cycle_nodeop_ggp"] == units.tokens(int(rendered["/rewards/params"]["forecast"]["nodeOpPoolWei"]))


def test_per_address_estimates_share_the_pool(rendered, demo_snapshot, params):
    bodies = {b["address"]: b for u, b in rendered.items() if u.startswith("/rewards/0x")}
    total, eligible, modelled = 0, 0, 0
    for s in demo_snapshot.stakers:
        body = bodies[s.staker_addr]
        assert rendered[f"/rewards/{s.staker_addr.lower()}"] is body
        assert body["eligibleNow"] == s.eligible
        assert body["effectiveGGPStakedWei"] == str(s.effective_ggp_staked)
        assert body["ggpRewardsWei"] == str(s.ggp_rewards)
        assert "estimate" not in body and body["estimatePath"] == f"/rewards/estimate?address={s.staker_addr.lower()}"
        got = int(R.staker_estimate(params, R.parse_staker(body))["result"]["ggpPerCycleWei"])
        then = int(body["effectiveGGPStakedNextDistributionWei"])
        if body["forecastNote"] is None:
            assert then == s.effective_ggp_staked
        else:  # under the floor today, nothing assigned at the distribution: min(G, 1.5·HW/P)
            assert s.collateralization_ratio < TENTH and s.effective_ggp_staked == 0
            modelled += then == R.effective_ggp_staked(s.ggp_staked, 0, s.avax_validating_high_water,
                                                       demo_snapshot.oracle.price, params.max_ratio) > 0
        if body["eligibleNextDistribution"]:
            assert body["ineligibleReason"] is None
            assert got == then * WAD // params.tegs * params.nodeop_pool // WAD
            eligible += 1
        else:
            assert got == 0 and body["ineligibleReason"]
        total += got
    # Everyone's share of the same pool: together the pool, short only by each share's rounding.
    assert eligible == json.loads(units.dumps(rendered["/rewards/params"]))["tegs"]["stakers"]
    assert params.nodeop_pool - eligible * (params.nodeop_pool // WAD + 1) <= total <= params.nodeop_pool
    assert modelled >= 1


def test_validator_rate_is_the_median_of_the_validators_potential_rewards(demo_snapshot, doc):
    samples = sorted(
        math.floor(Fraction(v.validation_reward, v.amount_staked) * Fraction(R.YEAR, v.end_timestamp - v.start_timestamp) * WAD)
        for v in demo_snapshot.validators)
    n = len(samples)
    assert n >= 3
    median = samples[n // 2] if n % 2 else (samples[n // 2 - 1] + samples[n // 2]) // 2
    assert doc["validatorRate"] == {**doc["validatorRate"], "wad": str(median), "source": "validators", "samples": n}
    # The stand-ins report potential rewards at the devnet's 7.5 %, rounded down to nAVAX.
    assert 0.0749999 < median / WAD <= 0.075


def test_validator_rate_is_the_median_of_recent_finished_minipools(demo_snapshot):
    # Without validator data (provider down), finished minipools are the next source.
    doc = P.rewards_params(dataclasses.replace(demo_snapshot, validators=()))
    samples = []
    for m in demo_snapshot.minipools:
        if m.status in (3, 4) and m.start_time > 0 and m.end_time > m.start_time and m.avax_total_reward_amt > 0:
            rate = Fraction(m.avax_total_reward_amt, m.avax_node_op_amt + m.avax_liquid_staker_amt) \
                * Fraction(R.YEAR, m.end_time - m.start_time)
            samples.append((m.end_time, m.index, math.floor(rate * WAD)))
    recent = sorted(r for *_, r in sorted(samples, reverse=True)[:20])
    assert len(recent) >= 3
    n = len(recent)
    median = recent[n // 2] if n % 2 else (recent[n // 2 - 1] + recent[n // 2]) // 2
    assert doc["validatorRate"] == {**doc["validatorRate"], "wad": str(median), "source": "minipools", "samples": n}
    # The devnet's history was generated at 7.5 % with ±7 % noise.
    assert 0.069 < median / WAD < 0.08


def test_validator_rate_falls_back_to_the_default(demo_snapshot):
    finished = [m for m in demo_snapshot.minipools if P.rate_sample(m) is not None][:2]
    few = dataclasses.replace(demo_snapshot, minipools=tuple(finished), validators=demo_snapshot.validators[:2])
    assert P.validator_rate(few, 7.5) == (75 * 10**15, "default", 2)
    assert P.validator_rate(few, 8.25)[0] == 825 * 10**14
    doc = P.rewards_params(few, 7.5)
    assert doc["validatorRate"]["source"] == "default"
    assert R.estimate(doc, 0, 1000 * WAD)["validatorRateSource"] == "default"
