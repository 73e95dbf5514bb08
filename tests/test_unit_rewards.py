"""The rewards formula (compute/rewards.py) and its params (compute/params.py) on snapshots built in
memory: the contracts' wad arithmetic, the cycle's mint, who is eligible at the next distribution,
the validator reward rate and the estimates. Expected values are worked out here."""
from __future__ import annotations

import json
from fractions import Fraction

import pytest
from support import factory as F
from support.factory import DAY, NOW, WAD, avax, replace

from publisher.compute import params as P
from publisher.compute import rewards as R
from publisher.protocol import MinipoolStatus

YEAR = 365 * DAY
PRICE = WAD // 4  # 0.25 AVAX per GGP, the factory's default


# ---- the contracts' arithmetic --------------------------------------------------------------------


def test_collateralization_and_effective_stake_follow_staking():
    assert R.collateralization_ratio(avax(1000), avax(1000), PRICE) == WAD // 4
    assert R.collateralization_ratio(avax(1000), 0, PRICE) == R.UINT256_MAX
    # 10 000 GGP at 0.25 = 2 500 AVAX against 1 000 AVAX validating: 250 %, capped at 150 %.
    assert R.effective_rewards_ratio(avax(10_000), avax(1000), avax(1000), PRICE, 3 * WAD // 2) == 3 * WAD // 2
    assert R.effective_ggp_staked(avax(10_000), avax(1000), avax(1000), PRICE, 3 * WAD // 2) == avax(6000)
    # Under the hard 10 % floor nothing counts; at it, all of it.
    assert R.effective_ggp_staked(avax(399), avax(1000), avax(1000), PRICE, 3 * WAD // 2) == 0
    assert R.effective_ggp_staked(avax(400), avax(1000), avax(1000), PRICE, 3 * WAD // 2) == avax(400)
    assert R.effective_ggp_staked(avax(400), avax(1000), 0, PRICE, 3 * WAD // 2) == 0  # no high-water mark


def test_the_cycle_mint_compounds_per_interval_and_stops_at_the_max_supply():
    assert R.inflation_intervals(1000, 1000 + 5 * DAY - 1, DAY) == 4
    assert R.inflation_intervals(1000, 0, DAY) == 0
    assert R.cycle_mint(avax(1000), avax(100_000), 2 * WAD, 3) == avax(7000)  # doubling: 8x the supply
    assert R.cycle_mint(avax(1000), avax(5000), 2 * WAD, 3) == avax(4000)  # capped: up to the max supply
    assert R.cycle_mint(avax(5000), avax(5000), 2 * WAD, 3) == 0
    assert R.cycle_mint(avax(1000), avax(5000), WAD, 30) == 0  # no inflation
    rate = WAD + WAD // 1000
    mint = R.cycle_mint(avax(20_000_000), avax(22_500_000), rate, 28)
    exact = avax(20_000_000) * (Fraction(rate, WAD) ** 28 - 1)
    assert 0 <= exact - mint <= 28  # one rounding down per interval


def test_the_pool_is_shared_pro_rata_as_claimnodeop_does():
    assert R.share_of_pool(avax(1), avax(4), avax(1000)) == (WAD // 4, avax(250))
    assert R.share_of_pool(avax(1), avax(3), 10) == (WAD // 3, 3)  # both steps round down
    assert R.share_of_pool(0, avax(3), 10) == R.share_of_pool(avax(1), 0, 10) == (0, 0)


# ---- params from a snapshot -----------------------------------------------------------------------


def stakers():
    """Five stakers: two eligible at the next distribution (in 14 days), three not, for three reasons."""
    return [
        F.staker(1, ggp=avax(1000), assigned=avax(1000), rewards_start=NOW - 30 * DAY),  # 25 %: 1 000 effective
        F.staker(2, ggp=avax(20_000), assigned=avax(1000), rewards_start=NOW - DAY),  # 500 %: capped at 6 000
        F.staker(3, ggp=avax(5000), assigned=avax(1000), rewards_start=NOW + 1),  # a second short at the distribution
        F.staker(4, ggp=avax(5000)),  # no minipool: rewardsStartTime 0
        F.staker(5, ggp=avax(5000), assigned=avax(1000), high_water=0),  # nothing validating this cycle
    ]


def test_tegs_counts_the_stakers_eligible_at_the_next_distribution():
    s = F.snapshot(stakers=stakers())
    assert [st.effective_ggp_staked for st in s.stakers[:2]] == [avax(1000), avax(6000)]
    when = P.next_distribution_time(s)
    assert when == NOW + 14 * DAY  # the cycle started 14 days ago and lasts 28
    assert [P.eligible_at(st, when, 14 * DAY) for st in s.stakers] == [True, True, False, False, False]
    assert P.tegs(s) == (avax(7000), 2)
    reasons = [P.eligibility_reason(st, when, 14 * DAY) for st in s.stakers]
    assert reasons[:2] == [None, None]
    assert "RewardsEligibilityMinSeconds" in reasons[2] and "rewardsStartTime is 0" in reasons[3]
    assert "high-water mark is 0" in reasons[4]


def doc_of(s) -> dict:
    """/rewards/params as the function reads it: through its canonical JSON."""
    return json.loads(R.canonical_json(P.rewards_params(s)))


def test_the_params_carry_the_next_mint_and_the_node_operator_pool():
    s = F.snapshot(stakers=stakers())
    doc = doc_of(s)
    p = R.parse_params(doc)
    assert p.intervals == 28 and doc["nextDistributionTime"] == NOW + 14 * DAY and not doc["overdue"]
    assert p.cycle_mint == R.cycle_mint(avax(20_000_000), avax(22_500_000), s.settings.inflation_interval_rate, 28)
    assert p.nodeop_pool == 7 * WAD // 10 * p.cycle_mint // WAD  # ClaimNodeOp's 70 %
    assert doc["tegs"]["wei"] == str(avax(7000)) and doc["tegs"]["stakers"] == 2
    assert doc["forecast"]["nodeOpPoolWei"] == str(p.nodeop_pool)


def test_an_overdue_distribution_mints_for_every_interval_until_now():
    s = F.snapshot(stakers=stakers(), cycle_start=NOW - 31 * DAY - 3600)  # due 3 days and an hour ago
    doc = doc_of(s)
    assert doc["overdue"] and doc["distributionExpected"] and doc["nextDistributionTime"] == NOW
    assert R.parse_params(doc).intervals == 31


@pytest.mark.parametrize("why", ["late", "paused"])
def test_no_distribution_is_expected_a_whole_cycle_late_or_while_rewardspool_is_paused(why):
    if why == "late":
        s = F.snapshot(cycle_start=NOW - 56 * DAY - 1)  # ended 28 days and a second ago
    else:
        s = F.snapshot(paused={"RewardsPool": True})
    doc = doc_of(s)
    assert not doc["distributionExpected"] and doc["noDistributionReason"]
    p = R.parse_params(doc)
    assert p.cycle_mint == p.nodeop_pool == 0
    out = R.estimate(p, avax(1000), avax(1000))
    assert out["ggpPerCycleWei"] == "0" and "no_distribution_expected" in {w["code"] for w in out["warnings"]}


def finished(index: int, pct: int, end: int):
    """A finished minipool of 2 000 AVAX that earned ``pct`` % a year over 14 days."""
    reward = avax(2000) * pct * 14 * DAY // (100 * YEAR)
    return F.minipool(index, status=MinipoolStatus.FINISHED, start=end - 14 * DAY, end=end, reward=reward)


def test_the_validator_rate_is_the_median_of_the_validators_then_the_minipools_then_the_default():
    pools = [F.minipool(i) for i in range(3)]
    vals = tuple(F.validator(m, m.start_time + YEAR, reward_navax=2000 * 10**9 * pct // 100)
                 for m, pct in zip(pools, (5, 8, 6), strict=True))
    s = F.snapshot(minipools=pools, validators=vals)
    assert P.validator_rate(s) == (6 * WAD // 100, "validators", 3)
    # Two validators are too few: the finished minipools' median, then the default.
    done = [finished(10 + i, pct, NOW - i * DAY) for i, pct in enumerate((4, 9, 7, 5))]
    rate, source, n = P.validator_rate(replace(s, validators=vals[:2], minipools=(*pools, *done)))
    assert (source, n) == ("minipools", 4)
    assert abs(rate - 6 * WAD // 100) <= 1  # the mean of 5 % and 7 %, each sample rounded down
    assert P.validator_rate(replace(s, validators=vals[:2])) == (75 * WAD // 1000, "default", 0)
    assert P.pct_to_wad(7.5) == 75 * WAD // 1000


# ---- estimates -----------------------------------------------------------------------------------


def params(**kw):
    return R.parse_params(doc_of(F.snapshot(stakers=stakers(), **kw)))


def test_a_new_operator_joins_the_pool_and_earns_avax_at_the_validator_rate():
    p = params()
    g, a = avax(1000), avax(1000)  # 25 % collateralization: 1 000 GGP effective
    out = R.estimate(p, g, a)
    share = avax(1000) * WAD // (avax(7000) + avax(1000))
    assert out["shareWad"] == str(share) == str(WAD // 8)
    assert out["ggpPerCycleWei"] == str(share * p.nodeop_pool // WAD)
    rate = 75 * WAD // 1000  # no validators or finished minipools: the default 7.5 %
    assert out["avaxPerYearWei"] == str(a * rate * (WAD + 15 * WAD // 100) // WAD**2)  # plus the 15 % commission
    assert out["avaxPerCycleWei"] == str(a * rate * (WAD + 15 * WAD // 100) * 28 * DAY // (WAD**2 * YEAR))
    assert out["collateralizationRatioPct"] == 25.0 and out["warnings"] == []
    ggp_avax = Fraction(int(out["ggpPerCycleWei"]) * PRICE, WAD)  # the GGP's AVAX value, wei
    capital = a + Fraction(g * PRICE, WAD)
    expected_apr = (ggp_avax + int(out["avaxPerCycleWei"])) / capital * Fraction(YEAR, 28 * DAY) * 100
    assert out["aprPct"] == pytest.approx(float(expected_apr), rel=1e-12)
    assert out["usd"]["totalPerCycle"] == pytest.approx(float((ggp_avax + int(out["avaxPerCycleWei"])) * 25 / WAD), rel=1e-12)


def test_an_estimate_says_what_the_protocol_would_refuse():
    p = params()
    codes = {w["code"] for w in R.estimate(p, avax(10), avax(500))["warnings"]}
    assert codes == {"avax_below_minimum", "collateral_below_minimum", "no_ggp_rewards"}
    capped = R.estimate(p, avax(100_000), avax(1000))  # 2 500 %: capped at 150 %
    assert {w["code"] for w in capped["warnings"]} == {"stake_above_cap"}
    assert capped["effectiveGGPStakedWei"] == str(avax(6000))
    assert {w["code"] for w in R.estimate(p, 0, 0)["warnings"]} == {"nothing_staked", "no_avax"}
    paused = R.estimate(params(paused={"MinipoolManager": True}), avax(1000), avax(1000))
    assert paused["ggpPerCycleWei"] == paused["avaxPerCycleWei"] == "0"
    assert "minipool_creation_paused" in {w["code"] for w in paused["warnings"]}
    no_usd = R.estimate(params(avax_usd=None), avax(1000), avax(1000))
    assert no_usd["usd"] is None and "no_usd_price" in {w["code"] for w in no_usd["warnings"]}


def test_an_existing_staker_is_not_counted_twice():
    p = params()
    out = R.operator_estimate(p, ggp_staked=avax(20_000), avax_staked=avax(1000), avax_validating=avax(1000),
                              effective_ggp_staked=avax(6000), eligible_next=True)
    assert out["shareWad"] == str(avax(6000) * WAD // avax(7000))  # already in TEGS
    ineligible = R.operator_estimate(p, ggp_staked=avax(5000), avax_staked=avax(1000), avax_validating=avax(1000),
                                     effective_ggp_staked=avax(1250), eligible_next=False)
    assert ineligible["ggpPerCycleWei"] == "0" and ineligible["avaxPerCycleWei"] != "0"


def test_params_outside_the_formula_are_refused():
    doc = doc_of(F.snapshot())
    for key, value in (("inflationIntervalRateWad", str(2 * WAD + 1)), ("ggpPriceInAvaxWei", "0"),
                       ("rewardsCycleSeconds", 0), ("ggpTotalSupplyWei", str(avax(30_000_000))), ("chainId", True)):
        with pytest.raises(R.ParamsError, match=key):
            R.parse_params({**doc, key: value})
    with pytest.raises(R.ParamsError, match="formatVersion"):
        R.parse_params({**doc, "formatVersion": 2})


def test_withdrawable_ggp_leaves_the_fewest_ggp_that_keep_150_percent():
    """Staking.withdrawGGP's rule worked backwards: after the withdrawal the collateralization (its
    two roundings down included) stays at the maximum ratio, and one wei more would break it."""
    import random

    rng = random.Random(7)
    ratio = 15 * 10**17
    for _ in range(5000):
        price, assigned, staked = rng.randrange(1, 10**18), rng.randrange(1, 10**24), rng.randrange(0, 10**25)
        w = R.withdrawable_ggp(staked, assigned, price, ratio, locked=False)
        assert 0 <= w <= staked
        if w:
            assert R.collateralization_ratio(staked - w, assigned, price) >= ratio
        if w < staked:
            assert R.collateralization_ratio(staked - w - 1, assigned, price) < ratio
    assert R.withdrawable_ggp(10**21, 0, 10**17, ratio, locked=False) == 10**21  # nothing assigned: all of it
    assert R.withdrawable_ggp(10**21, 0, 10**17, ratio, locked=True) == 0  # locked: none
