"""The body of ``/rewards/params``: every input of the rewards formula, exact, read from one snapshot.

Wei and wad values are decimal strings, seconds and timestamps are integers, and the block stamp
travels with them, so anyone can recompute any estimate (``rewards.estimate``) from this document
alone; the rewards function does exactly that.

Two inputs are not single on-chain values and are derived here:

- **TEGS** (total eligible GGP staked): the sum of ``getEffectiveGGPStaked`` as it will read at
  the *next* distribution over the stakers ClaimNodeOp would find eligible then, i.e. at
  ``max(cycleStart + RewardsCycleSeconds, block time)`` (a late distribution happens no earlier than
  now): ``rewardsStartTime != 0``, ``distribution - rewardsStartTime >= RewardsEligibilityMinSeconds``
  and a high-water mark above 0. Stakes and high-water marks are taken as they are at the block;
  the effective stake is the on-chain one but for stakers under the 10 % floor whose minipools'
  validation ends before the distribution lift them over it (``stakes_at_distribution``).
  Rialto's off-chain "investor" down-weighting is not modelled.
- **r_v** (validator reward rate): the median annualized potential reward the validator provider
  reports for the protocol's active validators; else the median annualized reward of the most
  recent finished minipools (cycling minipools overwrite theirs, so these are rare); else a
  configured default (see ``validator_rate``).

The next cycle's mint compounds the supply once per inflation interval elapsed from
``InflationIntervalStartTime`` to the distribution time, as ``startRewardsCycle`` does: 30 when the
distribution is on time, more when it is overdue (then the distribution time is the build's block).
No distribution is expected at all while RewardsPool is paused (``startRewardsCycle`` refuses to
start a cycle, so nothing is minted for one), or once the cycle is overdue by more than one whole
rewards cycle (``overdue_bound``): the params then say why (``distributionExpected``,
``noDistributionReason``) and the formula mints nothing. ClaimNodeOp's pause flag stops nothing:
``calculateAndDistributeRewards`` checks only its caller (onlyMultisig), and Ocyticus's
``pauseEverything`` does not set it, so it is no reason here.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

from ..protocol import MinipoolStatus
from ..utc import when
from . import queue as Q
from . import rewards
from .depositor import duration
from .nodeid import node_id
from .validation import validation_end

if TYPE_CHECKING:
    from ..snapshot import Minipool, Snapshot, Staker, Validator

WAD = rewards.WAD
YEAR = rewards.YEAR
RATE_SAMPLES = 20  # most recent finished minipools in the median
RATE_MIN_SAMPLES = 3  # fewer than this: use the configured default
DEFAULT_RATE_PCT = 7.5


def cycle_end_time(snap: Snapshot) -> int:
    return snap.rewards_pool.cycle_start_time + snap.settings.rewards_cycle_seconds


def next_distribution_time(snap: Snapshot) -> int:
    """When the next node-operator distribution is due: the cycle end, or now if it is overdue.
    While no distribution is expected at all (``no_distribution_reason``), the cycle end: the time
    the missing distribution was due, which stays put while the chain stands still."""
    end = cycle_end_time(snap)
    if no_distribution_reason(snap) is not None:
        return end
    return max(end, snap.block.timestamp)


def overdue_bound(snap: Snapshot) -> int:
    """How late a distribution may be and still be forecast as coming: one whole rewards cycle.

    Rialto runs distributions late by hours or days (the living devnet draws up to 3.5 days), and
    such a distribution then mints for the extra inflation intervals, which the forecast follows.
    A distribution a whole cycle late means a cycle passed with none at all: by then the one after
    it would have been due too, and no operational delay explains it. Counted in the protocol's
    own RewardsCycleSeconds, so every network gets the same rule."""
    return snap.settings.rewards_cycle_seconds


def no_distribution_reason(snap: Snapshot) -> str | None:
    """Why no GGP distribution to node operators is expected, in words; None when one is."""
    reasons = []
    if snap.paused.get("RewardsPool"):
        reasons.append("RewardsPool is paused: startRewardsCycle refuses to start a rewards cycle while it is, so no "
                       "GGP is minted for a next one")
    end, bound = cycle_end_time(snap), overdue_bound(snap)
    if snap.block.timestamp > end + bound:
        reasons.append(f"the rewards cycle ended at {when(end)} and no new cycle has started within one whole rewards cycle "
                       f"({duration(bound)}, RewardsCycleSeconds) after it: a distribution this late is not one running "
                       "late, the protocol has stopped distributing")
    return "; ".join(reasons) if reasons else None


def overdue_reason(snap: Snapshot) -> str | None:
    """Why the distribution is overdue (the cycle ended and no new cycle started), or None."""
    end, now = cycle_end_time(snap), snap.block.timestamp
    if now <= end:
        return None
    if no_distribution_reason(snap) is not None:
        # No forecast follows the time any more: words that do not change with every block.
        return (f"the rewards cycle ended at {when(end)} and startRewardsCycle has not run since; no distribution is "
                "expected (see noDistributionReason)")
    return (f"the rewards cycle ended at {when(end)}, {now - end} s before this block, and startRewardsCycle has not "
            f"run: the forecast assumes it runs now, minting for every inflation interval since "
            f"inflationIntervalStartTime, and grows by one interval each {snap.settings.inflation_interval_seconds} s "
            f"it waits.")


def eligible_at(st: Staker, when: int, min_seconds: int) -> bool:
    """ClaimNodeOp.isEligible evaluated at time ``when`` (the rule the function applies too)."""
    return rewards.eligible_at(st.rewards_start_time, st.avax_validating_high_water, when, min_seconds)


def eligibility_reason(st: Staker, when: int, min_seconds: int) -> str | None:
    """Why a staker is not eligible at ``when``, or None when it is."""
    if st.rewards_start_time == 0:
        return "no minipool started: rewardsStartTime is 0"
    if st.avax_validating_high_water == 0:
        return "no AVAX validating this cycle: the high-water mark is 0"
    if st.rewards_start_time > when or when - st.rewards_start_time < min_seconds:
        return f"rewardsStartTime is less than {min_seconds} s (RewardsEligibilityMinSeconds) before the distribution"
    return None


def tegs(snap: Snapshot, stakes: dict[str, DistributionStake] | None = None) -> tuple[int, int]:
    """(Σ effective GGP stake at the next distribution of the stakers eligible then, their count)."""
    when = next_distribution_time(snap)
    min_seconds = snap.settings.rewards_eligibility_min_seconds
    stakes = stakes if stakes is not None else stakes_at_distribution(snap)
    eligible = [st for st in snap.stakers if eligible_at(st, when, min_seconds)]
    return sum(stakes[st.staker_addr].effective for st in eligible), len(eligible)


# ---- effective stake at the distribution --------------------------------------------------------

# Minipools whose liquid-staker AVAX is assigned to their owner (Staking.avaxAssigned).
ASSIGNED_STATUSES = (MinipoolStatus.PRELAUNCH, MinipoolStatus.LAUNCHED, MinipoolStatus.STAKING)


@dataclass(frozen=True)
class DistributionStake:
    """A staker's effective GGP stake as the next distribution will read it, with a note when the
    forecast differs from today's on-chain value or leaves a possibility out."""

    effective: int  # wei
    note: str | None = None


def stakes_at_distribution(snap: Snapshot) -> dict[str, DistributionStake]:
    """Staking.getEffectiveGGPStaked of every staker as it will read at the next distribution.

    Today's value, except for one case the contracts decide differently once time passes: a staker
    under 10 % collateralization (effective stake 0 today) whose minipools' validation ends before
    the distribution unassign enough AVAX to lift it to 10 % or more (all of it: then
    getCollateralizationRatio answers uint max). The 10 % gate, which divides by avaxAssigned, then
    lets the stake count: min(ggpStaked, MaxCollateralizationRatio x high-water mark / price) (the
    high-water mark only changes at a distribution or a validation start). The price and stakes
    stay as they are, as every forecast assumes, and Rialto records each validation end before it
    distributes.
    """
    when = next_distribution_time(snap)
    pools: dict[str, list[Minipool]] = {}
    for m in snap.minipools:
        if m.status in ASSIGNED_STATUSES:
            pools.setdefault(m.owner, []).append(m)
    vals = {v.node_id: v for v in snap.validators}
    out = {}
    for st in snap.stakers:
        if st.avax_assigned > 0 and st.avax_validating_high_water > 0 and st.collateralization_ratio < rewards.TENTH:
            out[st.staker_addr] = _under_the_floor(snap, st, pools.get(st.staker_addr, []), vals, when)
        else:
            out[st.staker_addr] = DistributionStake(st.effective_ggp_staked)
    return out


def _under_the_floor(snap: Snapshot, st: Staker, mine: list[Minipool], vals: dict[str, Validator],
                     when: int) -> DistributionStake:
    """The staker's AVAX assigned at the distribution, and so its effective stake then, by
    replaying Rialto's validation ends of its minipools until the distribution, in order: each end
    unassigns the minipool's AVAX, then MinipoolManager starts another cycle when the duration has
    room for one (MinipoolCycleDuration, MinipoolCycleDelayTolerance) unless the owner's
    collateralization would then be under MinCollateralizationRatio (it reverts; Rialto records
    the end alone). Another cycle assigns the minipool's own AVAX plus the stakers' share of the
    reward again: at least avaxNodeOpAmt, at most that plus half the validator's potential reward,
    so the replay carries the assigned AVAX as a range and says so when the range decides nothing."""
    s = snap.settings
    price = snap.oracle.price
    if sum(m.avax_liquid_staker_amt for m in mine) != st.avax_assigned:
        return DistributionStake(0, "under 10 % collateralization, and its minipools do not account for all of its "
                                    "AVAX assigned: the forecast takes its effective stake as 0, as today")
    ending = _validations_ending(snap, mine, vals, when)
    if not ending or st.ggp_staked == 0:
        return DistributionStake(0)

    def ratio(assigned: int) -> int:  # Staking.getCollateralizationRatio with that much assigned
        return rewards.collateralization_ratio(st.ggp_staked, assigned, price)

    free = rewards.effective_ggp_staked(st.ggp_staked, 0, st.avax_validating_high_water, price, s.max_collateralization_ratio)
    otherwise = (f"Without it the floor may not apply at the distribution, and the effective stake would then be "
                 f"{rewards.whole_tokens(free)} GGP")
    low = high = st.avax_assigned  # AVAX assigned, as a range
    for end, _, m in ending:
        low -= m.avax_liquid_staker_amt
        high -= m.avax_liquid_staker_amt
        if not Q.restakes(snap, m, Q.processing_time(end, snap.block.timestamp)):
            continue  # paused, or no cycle left: it ends for good
        least = low + m.avax_node_op_amt
        if ratio(least) < s.min_collateralization_ratio:
            continue  # another cycle would be refused
        v = vals.get(node_id(m.node_id))
        most = high + m.avax_node_op_amt + (v.validation_reward * 10**9 // 2 if v else 0)
        if v is None or ratio(most) < s.min_collateralization_ratio:
            return DistributionStake(0, (
                f"under 10 % collateralization today; whether {node_id(m.node_id)} starts another cycle when its "
                f"validation ends (at {end}, before the distribution) depends on its reward: the forecast assumes "
                f"it does, keeping the stake under the 10 % floor (effective stake 0). {otherwise}"))
        low, high = least, most  # it cycles
    return _stake_after_the_ends(ratio, low, high, free, otherwise, ending[-1][0])


def _stake_after_the_ends(ratio: Callable[[int], int], low: int, high: int, free: int, otherwise: str,
                          last: int) -> DistributionStake:
    """The effective stake at the distribution once the validations ending before it have ended,
    ``low`` to ``high`` AVAX then assigned; ``free``: the stake with the floor not applying."""
    if ratio(high) < rewards.TENTH:
        if ratio(low) < rewards.TENTH:
            return DistributionStake(0)  # under the floor at the distribution too
        return DistributionStake(0, (
            f"under 10 % collateralization today; after the validation ends before the distribution, its "
            f"collateralization then depends on the rewards its cycling minipools compound: the forecast keeps "
            f"the stake under the 10 % floor (effective stake 0). {otherwise}"))
    if high == 0:
        return DistributionStake(free, (
            f"under 10 % collateralization today, but its minipools' validations all end before the distribution "
            f"(the last at {last}) without another cycle: with no AVAX assigned then, "
            f"Staking.getCollateralizationRatio is uint max, the 10 % floor does not apply, and its effective stake "
            f"is min(ggpStaked, MaxCollateralizationRatio x high-water mark / price) = {rewards.whole_tokens(free)} GGP"))
    return DistributionStake(free, (
        f"under 10 % collateralization today, but validations ending before the distribution (the last at {last}) "
        f"leave at most {rewards.whole_tokens(high)} AVAX assigned then, {rewards.pct(ratio(high)):.4f} % or "
        f"more: above the 10 % floor, its effective stake is min(ggpStaked, MaxCollateralizationRatio x high-water "
        f"mark / price) = {rewards.whole_tokens(free)} GGP"))


def _validations_ending(snap: Snapshot, mine: list[Minipool], vals: dict[str, Validator],
                        when: int) -> list[tuple[int, int, Minipool]]:
    """(end, index, minipool) of the staking minipools whose validation ends before ``when``, in
    order; the others stay assigned through the distribution."""
    ending = []
    for m in mine:
        end = validation_end(m, snap.settings.minipool_cycle_duration, vals) if m.status == MinipoolStatus.STAKING else None
        if end is not None and end < when:
            ending.append((end, m.index, m))
    return sorted(ending)


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


def rewards_params(snapshot: Snapshot, default_rate_pct: float = DEFAULT_RATE_PCT,
                   stakes: dict[str, DistributionStake] | None = None, stale: str | None = None) -> dict:
    """The ``/rewards/params`` document. ``stale``: why the Oracle's GGP price is stale at the
    block by the network's bound (``prices.stale_oracle``), None when it is not."""
    s = snapshot
    st = s.settings
    total, count = tegs(s, stakes)
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
        "ggpPriceStale": stale is not None,
        "ggpPriceStaleReason": stale,
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
        "distributionExpected": no_distribution_reason(s) is None,
        "noDistributionReason": no_distribution_reason(s),
        "overdueBoundSeconds": overdue_bound(s),
        "paused": {name: bool(flag) for name, flag in s.paused.items()},
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
            "rule": "sum of Staking.getEffectiveGGPStaked as it will read at nextDistributionTime over stakers "
                    "eligible then: rewardsStartTime != 0, nextDistributionTime - rewardsStartTime >= "
                    "rewardsEligibilityMinSeconds, avaxValidatingHighWater > 0. Today's value, except for a staker "
                    "under 10 % collateralization whose minipools' validations ending before then unassign enough "
                    "AVAX (all of it, or enough for 10 %) that the 10 % floor no longer holds its stake back "
                    "(see forecastNote in /rewards/{address})",
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
