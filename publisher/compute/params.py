"""The body of ``/rewards/params``: every input of the rewards formula, exact, read from one snapshot.

Wei and wad values are decimal strings, seconds and timestamps are integers, and the block stamp
travels with them, so anyone can recompute any estimate (``rewards.estimate``) from this document
alone; the rewards function does exactly that.

Two inputs are not single on-chain values and are derived here:

- **TEGS** (total eligible GGP staked): the sum of on-chain ``getEffectiveGGPStaked`` over the
  stakers ClaimNodeOp would find eligible at the *next* distribution, i.e. at
  ``max(cycleStart + RewardsCycleSeconds, block time)`` (a late distribution happens no earlier than
  now): ``rewardsStartTime != 0``, ``distribution - rewardsStartTime >= RewardsEligibilityMinSeconds``
  and a high-water mark above 0. Stakes and high-water marks are taken as they are at the block;
  Rialto's off-chain "investor" down-weighting is not modelled.
- **r_v** (validator reward rate): the median annualized reward of the most recent finished
  minipools, or a configured default when there are too few (see ``validator_rate``).
"""
from __future__ import annotations

from decimal import Decimal

from ..snapshot import Minipool, Snapshot, Staker
from . import rewards

WAD = rewards.WAD
YEAR = rewards.YEAR
WITHDRAWABLE, FINISHED = 3, 4
RATE_SAMPLES = 20  # most recent finished minipools in the median
RATE_MIN_SAMPLES = 3  # fewer than this: use the configured default
DEFAULT_RATE_PCT = 7.5


def next_distribution_time(snap: Snapshot) -> int:
    """When the next node-operator distribution is due: the cycle end, or now if it is overdue."""
    end = snap.rewards_pool.cycle_start_time + snap.settings.rewards_cycle_seconds
    return max(end, snap.block.timestamp)


def eligible_at(st: Staker, when: int, min_seconds: int) -> bool:
    """ClaimNodeOp.isEligible evaluated at time ``when``."""
    start = st.rewards_start_time
    return start != 0 and start <= when and when - start >= min_seconds and st.avax_validating_high_water > 0


def eligibility_reason(st: Staker, when: int, min_seconds: int) -> str | None:
    """Why a staker is not eligible at ``when``, or None when it is."""
    if st.rewards_start_time == 0:
        return "no minipool started: rewardsStartTime is 0"
    if st.avax_validating_high_water == 0:
        return "no AVAX validating this cycle: the high-water mark is 0"
    if st.rewards_start_time > when or when - st.rewards_start_time < min_seconds:
        return f"rewardsStartTime is less than {min_seconds} s (RewardsEligibilityMinSeconds) before the distribution"
    return None


def tegs(snap: Snapshot) -> tuple[int, int]:
    """(Σ effective GGP stake of stakers eligible at the next distribution, their count)."""
    when = next_distribution_time(snap)
    min_seconds = snap.settings.rewards_eligibility_min_seconds
    eligible = [st for st in snap.stakers if eligible_at(st, when, min_seconds)]
    return sum(st.effective_ggp_staked for st in eligible), len(eligible)


def rate_sample(m: Minipool) -> int | None:
    """Annualized validation reward of one finished minipool cycle, wad-scaled, rounded down."""
    if m.status not in (WITHDRAWABLE, FINISHED):
        return None
    staked = m.avax_node_op_amt + m.avax_liquid_staker_amt
    duration = m.end_time - m.start_time
    if m.start_time <= 0 or duration <= 0 or m.avax_total_reward_amt <= 0 or staked <= 0:
        return None
    return m.avax_total_reward_amt * WAD * YEAR // (staked * duration)


def validator_rate(snap: Snapshot, default_rate_pct: float = DEFAULT_RATE_PCT) -> tuple[int, str, int]:
    """(r_v as a wad, "minipools" | "default", number of samples).

    Median of the most recent ≤ 20 Withdrawable/Finished minipools by end time (ties by index) that
    earned a reward; an even count takes the floor of the mean of the middle two. Zero-reward pools
    (poor uptime) are left out: they say nothing about the network rate.
    """
    dated = [(m.end_time, m.index, r) for m in snap.minipools if (r := rate_sample(m)) is not None]
    recent = sorted(dated, reverse=True)[:RATE_SAMPLES]
    if len(recent) < RATE_MIN_SAMPLES:
        return pct_to_wad(default_rate_pct), "default", len(recent)
    values = sorted(r for _, _, r in recent)
    mid = len(values) // 2
    median = values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) // 2
    return median, "minipools", len(values)


def pct_to_wad(pct: float) -> int:
    """7.5 -> 0.075e18, exactly as written (via the shortest decimal of the float)."""
    return int(Decimal(repr(float(pct))) * 10**16)


def rewards_params(snapshot: Snapshot, default_rate_pct: float = DEFAULT_RATE_PCT) -> dict:
    s = snapshot
    st = s.settings
    total, count = tegs(s)
    rate, source, samples = validator_rate(s, default_rate_pct)
    feed = None
    if s.feed is not None and s.feed.answer > 0:
        feed = {"answer": str(s.feed.answer), "decimals": s.feed.decimals, "updatedAt": s.feed.updated_at,
                "address": s.feed.address}
    doc = {
        "formatVersion": rewards.PARAMS_FORMAT,
        "network": s.network,
        "chainId": s.chain_id,
        "block": {"number": s.block.number, "hash": s.block.hash, "timestamp": s.block.timestamp},
        "ggpPriceInAvaxWei": str(s.oracle.price),
        "ggpPriceTimestamp": s.oracle.timestamp,
        "avaxUsdFeed": feed,
        "ggpTotalSupplyWei": str(s.ggp.total_supply),
        "ggpMaxSupplyWei": str(s.ggp.max_supply),
        "inflationIntervalRateWad": str(st.inflation_interval_rate),
        "inflationIntervalSeconds": st.inflation_interval_seconds,
        "rewardsCycleSeconds": st.rewards_cycle_seconds,
        "rewardsEligibilityMinSeconds": st.rewards_eligibility_min_seconds,
        "rewardsCycleCount": s.rewards_pool.cycle_count,
        "rewardsCycleStartTime": s.rewards_pool.cycle_start_time,
        "nextDistributionTime": next_distribution_time(s),
        "claimNodeOpPctWad": str(st.claiming_contract_pct.get("ClaimNodeOp", 0)),
        "minCollateralizationRatioWad": str(st.min_collateralization_ratio),
        "maxCollateralizationRatioWad": str(st.max_collateralization_ratio),
        "minipoolNodeCommissionFeePctWad": str(st.minipool_node_commission_fee_pct),
        "minipoolMinAvaxAssignmentWei": str(st.minipool_min_avax_assignment),
        "minipoolMaxAvaxAssignmentWei": str(st.minipool_max_avax_assignment),
        "minipoolMinAvaxStakingAmtWei": str(st.minipool_min_avax_staking_amt),
        "lastCycle": {
            "totalWei": str(s.rewards_pool.cycle_total_amt),
            "nodeOpTotalWei": str(s.rewards_pool.nodeop_cycle_total),
        },
        "tegs": {
            "wei": str(total),
            "stakers": count,
            "rule": "sum of Staking.getEffectiveGGPStaked over stakers eligible at nextDistributionTime: "
                    "rewardsStartTime != 0, nextDistributionTime - rewardsStartTime >= "
                    "rewardsEligibilityMinSeconds, avaxValidatingHighWater > 0",
        },
        "validatorRate": {
            "wad": str(rate),
            "source": source,
            "samples": samples,
            "defaultWad": str(pct_to_wad(default_rate_pct)),
            "rule": f"median of avaxTotalRewardAmt / (avaxNodeOpAmt + avaxLiquidStakerAmt) x 365 d / "
                    f"(endTime - startTime) over the most recent <= {RATE_SAMPLES} Withdrawable/Finished "
                    f"minipools with a reward; the default when fewer than {RATE_MIN_SAMPLES}",
        },
    }
    doc["forecast"] = rewards.forecast(doc)
    return doc
