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
- **r_v** (validator reward rate): the median annualized potential reward the validator provider
  reports for the protocol's active validators; else the median annualized reward of the most
  recent finished minipools (cycling minipools overwrite theirs, so these are rare); else a
  configured default (see ``validator_rate``).

The next cycle's mint compounds the supply once per inflation interval elapsed from
``InflationIntervalStartTime`` to the distribution time, as ``startRewardsCycle`` does: 30 when the
distribution is on time, more when it is overdue (then the distribution time is the build's block).
"""
from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING

from ..protocol import MinipoolStatus
from . import rewards

if TYPE_CHECKING:  # the snapshot module checks its values with this one
    from ..snapshot import Minipool, Snapshot, Staker, Validator

WAD = rewards.WAD
YEAR = rewards.YEAR
RATE_SAMPLES = 20  # most recent finished minipools in the median
RATE_MIN_SAMPLES = 3  # fewer than this: use the configured default
DEFAULT_RATE_PCT = 7.5


def cycle_end_time(snap: Snapshot) -> int:
    return snap.rewards_pool.cycle_start_time + snap.settings.rewards_cycle_seconds


def next_distribution_time(snap: Snapshot) -> int:
    """When the next node-operator distribution is due: the cycle end, or now if it is overdue."""
    return max(cycle_end_time(snap), snap.block.timestamp)


def overdue_reason(snap: Snapshot) -> str | None:
    """Why the distribution is overdue (the cycle ended and no new cycle started), or None."""
    end, now = cycle_end_time(snap), snap.block.timestamp
    if now <= end:
        return None
    paused = " RewardsPool is paused." if snap.paused.get("RewardsPool") else ""
    return (f"the rewards cycle ended at {end}, {now - end} s before this block, and startRewardsCycle has not "
            f"run: the forecast assumes it runs now, minting for every inflation interval since "
            f"inflationIntervalStartTime, and grows by one interval each {snap.settings.inflation_interval_seconds} s "
            f"it waits.{paused}")


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
    if m.status not in (MinipoolStatus.WITHDRAWABLE, MinipoolStatus.FINISHED):
        return None
    staked = m.avax_node_op_amt + m.avax_liquid_staker_amt
    duration = m.end_time - m.start_time
    if m.start_time <= 0 or duration <= 0 or m.avax_total_reward_amt <= 0 or staked <= 0:
        return None
    return m.avax_total_reward_amt * WAD * YEAR // (staked * duration)


def validator_sample(v: Validator) -> int | None:
    """Annualized potential validation reward of one active validator, wad-scaled, rounded down."""
    seconds = v.end_timestamp - v.start_timestamp
    if v.amount_staked <= 0 or seconds <= 0 or v.validation_reward <= 0:
        return None
    return v.validation_reward * WAD * YEAR // (v.amount_staked * seconds)


def median(values: list[int]) -> int:
    """The middle value; an even count takes the floor of the mean of the middle two."""
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) // 2


def validator_rate(snap: Snapshot, default_rate_pct: float = DEFAULT_RATE_PCT) -> tuple[int, str, int]:
    """(r_v as a wad, "validators" | "minipools" | "default", number of samples).

    First the validator provider's potential reward of every active protocol validator
    (validationReward / amountStaked × 365 d / (end − start)); then the most recent ≤ 20
    Withdrawable/Finished minipools by end time (ties by index) that earned a reward (zero-reward
    pools say nothing about the network rate); then the default. Each needs RATE_MIN_SAMPLES.
    """
    live = [r for v in snap.validators if (r := validator_sample(v)) is not None]
    if len(live) >= RATE_MIN_SAMPLES:
        return median(live), "validators", len(live)
    dated = [(m.end_time, m.index, r) for m in snap.minipools if (r := rate_sample(m)) is not None]
    recent = sorted(dated, reverse=True)[:RATE_SAMPLES]
    if len(recent) < RATE_MIN_SAMPLES:
        return pct_to_wad(default_rate_pct), "default", len(recent)
    return median([r for _, _, r in recent]), "minipools", len(recent)


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
        "rewardsCycleEndTime": cycle_end_time(s),
        "inflationIntervalStartTime": s.rewards_pool.inflation_interval_start_time,
        "nextDistributionTime": next_distribution_time(s),
        "overdue": overdue_reason(s) is not None,
        "overdueReason": overdue_reason(s),
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
            "rule": f"'validators': median of the validator provider's potentialRewards.validationRewardAmount / "
                    f"amountStaked x 365 d / (endTimestamp - startTimestamp) over the protocol's active validators; "
                    f"else 'minipools': median of avaxTotalRewardAmt / (avaxNodeOpAmt + avaxLiquidStakerAmt) x "
                    f"365 d / (endTime - startTime) over the most recent <= {RATE_SAMPLES} Withdrawable/Finished "
                    f"minipools with a reward; else 'default'. Each needs {RATE_MIN_SAMPLES} samples",
        },
    }
    doc["forecast"] = rewards.forecast(doc)
    return doc
