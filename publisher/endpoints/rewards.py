"""Node-operator rewards: the formula's inputs, the precomputed grid, each staker's own inputs, and
the declarations of the rewards function (/rewards/byStake, /rewards/estimate), all from
``compute/rewards.py``.

A staker's file holds what is its own (stakes, eligibility, unclaimed rewards, the effective stake
the next distribution counts) and no figure divided by the protocol-wide total eligible stake: that
total moves with every stake, and a file holding a share of it would be rewritten for every staker
at each one. The staker's estimate is one GET away at /rewards/estimate?address=, which the
function works out from this file and /rewards/params.

Registration order matters: ``/rewards/{address}`` matches any ``/rewards/<segment>``, so the fixed
paths are declared before it and win in ``registry.match``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from ..compute import params as P
from ..compute import rewards as R
from ..snapshot import Staker
from . import schema as S
from .common import meta, oracle_staleness
from .context import Context
from .registry import Deferred, Param, endpoint, function_endpoint, keyed_records

TAG = "Rewards"
GRID_AVAX = tuple(range(1000, 10_001, 1000))  # whole AVAX
GRID_COLLATERAL_PCT = (0, *range(10, 151, 5))
NODEOP_APR_AVAX = 1000
AMOUNT_PATTERN = r"^[0-9]+(\.[0-9]{1,18})?$"

# ---- schemas -----------------------------------------------------------------------------------

TOKENS = S.NON_NEGATIVE
WAD = S.described(S.WEI, "exact 1e18-scaled ratio (1e18 = 100 %) as a decimal string")
AMOUNT = {"type": "string", "pattern": AMOUNT_PATTERN, "description": "whole tokens as an exact decimal string"}
COUNT = {"type": "integer", "minimum": 0}
WARNING = S.obj({
    "code": S.described(S.STRING, "machine-readable warning code, e.g. collateral_below_minimum"),
    "message": S.described(S.STRING, "the warning in words"),
})
USD = S.nullable(S.obj({
    "ggpPerCycle": S.described(TOKENS, "GGP rewards per cycle in USD"),
    "avaxPerCycle": S.described(TOKENS, "AVAX rewards per cycle in USD"),
    "totalPerCycle": S.described(TOKENS, "both per cycle in USD"),
    "totalPerYear": S.described(TOKENS, "both per year in USD"),
}, description="rewards in USD at the feed's AVAX/USD; null without a feed"))
APR = {"type": "number", "minimum": 0}

EXPECTED = S.described(S.BOOLEAN, "whether a GGP distribution to node operators is expected at all; false when "
                                  "RewardsPool is paused or the rewards cycle ended more than one whole "
                                  "cycle ago with none since (see /rewards/params): every GGP figure is then 0")
NO_DISTRIBUTION = S.described(S.nullable(S.STRING), "why no GGP distribution is expected, in words (null when one is)")

RETURNS = {
    "distributionExpected": EXPECTED,
    "noDistributionReason": NO_DISTRIBUTION,
    "ggpPerCycle": S.described(TOKENS, "GGP rewards per reward cycle, whole GGP (0 when no distribution is expected)"),
    "ggpPerCycleWei": S.described(S.WEI, "ggpPerCycle in wei, exact"),
    "ggpPerYear": S.described(TOKENS, "ggpPerCycle x 365 days / cycleSeconds"),
    "ggpPerYearWei": S.described(S.WEI, "ggpPerYear in wei, exact"),
    "ggpPerCycleInAvax": S.described(TOKENS, "ggpPerCycle valued at the Oracle price"),
    "avaxPerCycle": S.described(TOKENS, "validation rewards per cycle, whole AVAX: validator reward rate x AVAX x (1 + commission) x cycleSeconds / 365 days"),
    "avaxPerCycleWei": S.described(S.WEI, "avaxPerCycle in wei, exact"),
    "avaxPerYear": S.described(TOKENS, "validation rewards per year, whole AVAX"),
    "avaxPerYearWei": S.described(S.WEI, "avaxPerYear in wei, exact"),
    "aprPct": S.described(APR, "(GGP x price + AVAX) per cycle over (AVAX + GGP x price) at stake, "
                               "x 365 days / cycleSeconds, in percent"),
    "ggpAprPct": S.described(APR, "the GGP part of aprPct (0 when no distribution is expected)"),
    "avaxAprPct": S.described(APR, "the AVAX part of aprPct"),
    "validatorRatePct": S.described(S.PERCENT, "the yearly validation reward rate used, percent"),
    "validatorRateSource": {"enum": ["validators", "minipools", "default"], "description": "validators: the validator provider's potential rewards of active minipools; minipools: measured from finished minipools; default: the configured rate"},
    "cycleSeconds": S.described(COUNT, "length of a reward cycle in seconds"),
    "nextDistributionTime": S.described(S.TIMESTAMP, "when the next GGP distribution can happen, unix seconds; when "
                                                      "none is expected, when the missing one was due"),
    "assumptions": S.described(S.array(S.STRING), "what the estimate takes as given, in words"),
    "usd": USD,
    "shareWad": S.described(WAD, "share of the node-operator pool, exact 1e18-scaled ratio"),
    "sharePct": S.described(S.PERCENT, "share of the node-operator pool"),
}

RESULT = S.obj({
    **RETURNS,
    "collateralizationRatioPct": S.described(S.nullable(S.PERCENT), "GGP x price / AVAX matched; null when avaxStaked is 0"),
    "collateralizationRatioWad": S.described(S.nullable(WAD), "collateralizationRatioPct as an exact 1e18-scaled ratio"),
    "effectiveGGPStaked": S.described(TOKENS, "GGP that earns rewards: 0 under 10 % collateralization, capped at "
                                              "MaxCollateralizationRatio"),
    "effectiveGGPStakedWei": S.described(S.WEI, "effectiveGGPStaked in wei, exact"),
    "warnings": S.described(S.array(WARNING), "what the protocol would do with inputs it does not accept as given, "
                                              "and what keeps rewards from coming (no_distribution_expected: no GGP "
                                              "distribution is expected; minipool_creation_paused: MinipoolManager is "
                                              "paused, no minipool can be created, so every reward figure is 0) or "
                                              "makes them uncertain (ggp_price_stale: the Oracle's GGP price is older "
                                              "than the network's bound, and every figure is at that price)"),
}, description="the estimate; identical in the grid and the function")

OPERATOR_ESTIMATE = S.obj({
    **RETURNS,
    "warnings": S.described(S.array(WARNING), "what keeps rewards from coming (no_distribution_expected: no GGP "
                                              "distribution is expected; no_nodeop_rewards: the next cycle mints no "
                                              "GGP for node operators) or makes them uncertain (ggp_price_stale: the "
                                              "Oracle's GGP price is older than the network's bound, and every "
                                              "figure is at that price; no_usd_price: USD values are null)"),
}, description="next-cycle estimate from the staker's own effective stake at the next distribution, against the "
               "total eligible stake of /rewards/params")
ESTIMATE_PATH = "/rewards/estimate"

STAKER_ESTIMATE = S.obj({
    "address": S.described(S.ADDRESS, "the staker, as its /rewards/{address} document names it"),
    "inputs": S.obj({
        "ggpStakedWei": S.described(S.WEI, "GGP staked, wei"),
        "avaxStakedWei": S.described(S.WEI, "own AVAX in minipools, wei (the APR's capital with the GGP's value)"),
        "avaxValidatingWei": S.described(S.WEI, "own AVAX validating, wei (what AVAX rewards accrue on)"),
        "avaxValidatingHighWaterWei": S.described(S.WEI, "highest avaxValidating this cycle, wei (eligibility)"),
        "effectiveGGPStakedNextDistributionWei": S.described(S.WEI, "effective GGP stake the next distribution is "
                                                                    "forecast to count, wei"),
        "rewardsStartTime": S.described(S.TIMESTAMP, "set when the staker creates a first minipool, back to 0 when a cancel or a distribution finds nothing assigned to it; unix seconds"),
    }, description="the staker's inputs, exact, as read from /rewards/{address}"),
    "eligibleNextDistribution": S.described(S.BOOLEAN, "eligible at the params' nextDistributionTime: "
                                                       "rewardsStartTime set and at least rewardsEligibilityMinSeconds "
                                                       "before it, and a high-water mark above 0. The staker's side "
                                                       "only: while distributionExpected is false no distribution "
                                                       "comes to pay it"),
    "meta": S.META,
    "result": OPERATOR_ESTIMATE,
})

BY_STAKE = S.obj({
    "inputs": S.obj({
        "ggpStaked": S.described(AMOUNT, "GGP staked as asked, whole tokens as an exact decimal string"),
        "avaxStaked": S.described(AMOUNT, "own AVAX as asked, whole tokens as an exact decimal string"),
        "ggpStakedWei": S.described(S.WEI, "ggpStaked in wei"),
        "avaxStakedWei": S.described(S.WEI, "avaxStaked in wei"),
    }, description="the query, normalized"),
    "meta": S.META,
    "result": RESULT,
})

GRID_POINT = S.obj({
    "avaxStaked": S.described(AMOUNT, "own AVAX of this point, whole tokens as a decimal string"),
    "ggpStaked": S.described(AMOUNT, "smallest GGP reaching collateralizationPct, whole tokens as a decimal string"),
    "collateralizationPct": S.described(S.PERCENT, "target collateralization the ggpStaked amount reaches"),
    "query": S.described(S.STRING, "query string of /rewards/byStake answering this point"),
    "result": RESULT,
})

_WEI_FIELDS = (
    "ggpPriceInAvaxWei", "ggpTotalSupplyWei", "ggpMaxSupplyWei", "inflationIntervalRateWad",
    "claimNodeOpPctWad", "minCollateralizationRatioWad", "maxCollateralizationRatioWad",
    "minipoolNodeCommissionFeePctWad", "minipoolMinAvaxAssignmentWei", "minipoolMaxAvaxAssignmentWei",
    "minipoolMinAvaxStakingAmtWei",
)
_INT_FIELDS = (
    "ggpPriceTimestamp", "inflationIntervalSeconds", "rewardsCycleSeconds", "rewardsEligibilityMinSeconds",
    "rewardsCycleCount", "rewardsCycleStartTime", "rewardsCycleEndTime", "inflationIntervalStartTime",
    "nextDistributionTime",
)
_WEI_TEXT = {
    "ggpPriceInAvaxWei": "AVAX per GGP from the Oracle, wei (1e18 = 1 AVAX)",
    "ggpTotalSupplyWei": "GGP in existence, wei",
    "ggpMaxSupplyWei": "GGP that can ever exist, wei",
    "inflationIntervalRateWad": "GGP supply growth per inflation interval, 1e18-scaled factor",
    "claimNodeOpPctWad": "share of each mint that goes to node operators, 1e18 = 100 %",
    "minCollateralizationRatioWad": "minimum collateralization to create a minipool, 1e18 = 100 %",
    "maxCollateralizationRatioWad": "collateralization above which GGP earns no more rewards, 1e18 = 100 %",
    "minipoolNodeCommissionFeePctWad": "commission operators earn on liquid stakers' AVAX rewards, 1e18 = 100 %",
    "minipoolMinAvaxAssignmentWei": "smallest liquid-staker AVAX matched into one minipool, wei",
    "minipoolMaxAvaxAssignmentWei": "largest liquid-staker AVAX matched into one minipool, wei",
    "minipoolMinAvaxStakingAmtWei": "smallest total AVAX a minipool validates with, wei",
}
_INT_TEXT = {
    "ggpPriceTimestamp": "when the Oracle price was set, unix seconds",
    "inflationIntervalSeconds": "length of an inflation interval, seconds",
    "rewardsCycleSeconds": "length of a reward cycle, seconds",
    "rewardsEligibilityMinSeconds": "how long a staker must have validated to be paid, seconds",
    "rewardsCycleCount": "reward cycles completed",
    "rewardsCycleStartTime": "start of the current reward cycle, unix seconds",
    "nextDistributionTime": "when the next distribution can happen, unix seconds: the cycle end, or the block's time "
                            "while overdue; when none is expected (distributionExpected false), the cycle end, when "
                            "the missing one was due",
    "rewardsCycleEndTime": "when the current reward cycle ends, unix seconds",
    "inflationIntervalStartTime": "start of the inflation interval count the next cycle mints from, unix seconds",
}
PARAMS = S.obj({
    "formatVersion": {"const": R.PARAMS_FORMAT, "description": "version of this document's format"},
    "network": S.described(S.STRING, "network name: mainnet, fuji or devnet"),
    "chainId": S.described(S.INTEGER, "EVM chain id"),
    "block": S.BLOCK,
    **{k: S.described(S.WEI, _WEI_TEXT[k]) for k in _WEI_FIELDS},
    **{k: S.described(COUNT, _INT_TEXT[k]) for k in _INT_FIELDS},
    "avaxUsdFeed": S.described(S.nullable(S.obj({
        "answer": S.described(S.WEI, "USD per AVAX scaled by 10^decimals"),
        "decimals": S.described(COUNT, "decimals of answer"),
        "updatedAt": S.described(S.TIMESTAMP, "when the feed round was written, unix seconds"),
        "address": S.described(S.ADDRESS, "the feed contract"),
    })), "the AVAX/USD feed round (null without a feed)"),
    "lastCycle": S.obj({
        "totalWei": S.described(S.WEI, "GGP the last cycle distributed in all, wei"),
        "nodeOpTotalWei": S.described(S.WEI, "GGP the last cycle gave node operators, wei"),
    }, description="the last cycle that actually happened"),
    "tegs": S.obj({
        "wei": S.described(S.WEI, "total effective GGP stake of the stakers eligible at the next distribution, wei"),
        "stakers": S.described(COUNT, "how many stakers that total counts"),
        "rule": S.described(S.STRING, "how the total was computed, in words"),
    }, description="the total effective GGP stake the node-operator pool is shared over"),
    "ggpPriceStale": S.described(S.BOOLEAN, "true when the Oracle's GGP price is older than the network's bound "
                                            "(as /prices `stale`): every estimate is at that old price, and says so "
                                            "with the warning ggp_price_stale"),
    "ggpPriceStaleReason": S.described(S.nullable(S.STRING), "why the GGP price is stale, in words (as /prices "
                                                             "`staleReason`; null when it is not)"),
    "overdue": S.described(S.BOOLEAN, "the rewards cycle has ended and the next distribution has not happened yet"),
    "overdueReason": S.described(S.nullable(S.STRING), "why the forecast differs while overdue, in words (null when on time)"),
    "distributionExpected": S.described(S.BOOLEAN, "whether a GGP distribution to node operators is expected at all: "
                                                   "false when RewardsPool is paused, or when the "
                                                   "rewards cycle ended more than overdueBoundSeconds ago and no new "
                                                   "cycle started. While false, the forecast mints nothing "
                                                   "(cycleIntervals, cycleMintWei and nodeOpPoolWei are 0) and every "
                                                   "estimate's GGP is 0"),
    "noDistributionReason": S.described(S.nullable(S.STRING), "why no distribution is expected, in words (null when "
                                                              "one is)"),
    "overdueBoundSeconds": S.described(COUNT, "how long after rewardsCycleEndTime a distribution is still expected: "
                                              "one whole rewards cycle (rewardsCycleSeconds). Rialto runs "
                                              "distributions hours or days late, and the forecast follows them; a "
                                              "cycle that passes with none means distributions have stopped"),
    "paused": {"type": "object", "additionalProperties": S.BOOLEAN,
               "description": "contract name -> paused, as recorded in the protocol's Storage (as /featureFlags); "
                              "the estimates read RewardsPool, ClaimNodeOp (no distribution) and MinipoolManager "
                              "(no minipool can be created)"},
    "validatorRate": S.obj({
        "wad": S.described(WAD, "yearly validation reward rate used, 1e18-scaled"),
        "source": {"enum": ["validators", "minipools", "default"], "description": "validators: the validator provider's potential rewards of active minipools; minipools: measured from finished minipools; default: the configured rate"},
        "samples": S.described(COUNT, "validators or minipools measured"),
        "defaultWad": S.described(WAD, "the configured rate, 1e18-scaled"),
        "rule": S.described(S.STRING, "how the rate was chosen, in words"),
    }, description="the AVAX validation reward rate the estimates use"),
    "forecast": S.obj({
        "cycleIntervals": S.described(COUNT, "inflation intervals from inflationIntervalStartTime to nextDistributionTime: the number the next cycle mints for (0 when no distribution is expected)"),
        "cycleMintWei": S.described(S.WEI, "GGP minted at the next cycle, wei (0 when no distribution is expected)"),
        "nodeOpPoolWei": S.described(S.WEI, "of that, GGP for node operators, wei (0 when no distribution is expected)"),
        "assumptions": S.described(S.array(S.STRING), "what the forecast takes as given, in words"),
    }, description="next cycle's mint and node-operator pool, derived from the fields above"),
})

ADDRESS_REWARDS = S.obj({
    "address": S.described(S.ADDRESS, "the staker address"),
    "ggpStaked": S.described(TOKENS, "GGP staked, whole GGP"),
    "ggpStakedWei": S.described(S.WEI, "ggpStaked in wei"),
    "avaxStaked": S.described(TOKENS, "own AVAX in minipools, whole AVAX"),
    "avaxStakedWei": S.described(S.WEI, "avaxStaked in wei"),
    "avaxAssigned": S.described(TOKENS, "liquid stakers' AVAX matched to this operator, whole AVAX"),
    "avaxValidating": S.described(TOKENS, "own AVAX in validating minipools, whole AVAX"),
    "avaxValidatingWei": S.described(S.WEI, "avaxValidating in wei"),
    "avaxValidatingHighWater": S.described(TOKENS, "highest avaxValidating this cycle, whole AVAX"),
    "avaxValidatingHighWaterWei": S.described(S.WEI, "avaxValidatingHighWater in wei"),
    "collateralizationRatioPct": S.described(S.nullable(S.PERCENT), "null when nothing is assigned"),
    "effectiveGGPStaked": S.described(TOKENS, "GGP counted for rewards at the build block, whole GGP"),
    "effectiveGGPStakedWei": S.described(S.WEI, "effectiveGGPStaked in wei"),
    "ggpRewards": S.described(TOKENS, "unclaimed GGP rewards"),
    "ggpRewardsWei": S.described(S.WEI, "ggpRewards in wei"),
    "lastRewardsCycleCompleted": S.described(COUNT, "the last reward cycle this staker was paid for"),
    "rewardsStartTime": S.described(S.TIMESTAMP, "set when the staker creates a first minipool, back to 0 when a cancel or a distribution finds nothing assigned to it; unix seconds (0: none)"),
    "eligibleNow": S.described(S.BOOLEAN, "whether the staker would be paid at a distribution now"),
    "eligibleNextDistribution": S.described(S.BOOLEAN, "eligible at nextDistributionTime with today's state: the "
                                                       "staker's side only, while distributionExpected is false no "
                                                       "distribution comes to pay it"),
    "effectiveGGPStakedNextDistribution": S.described(TOKENS, "GGP the next distribution is forecast to count for this "
                                                              "staker (the estimate's stake): effectiveGGPStaked, except "
                                                              "under 10 % collateralization when validations ending "
                                                              "before the distribution lift it over the floor (see "
                                                              "forecastNote)"),
    "effectiveGGPStakedNextDistributionWei": S.described(S.WEI, "effectiveGGPStakedNextDistribution in wei"),
    "forecastNote": S.described(S.nullable(S.STRING), "what the forecast for this staker models beyond today's state, "
                                                      "or leaves out, in words (null when nothing)"),
    "ineligibleReason": S.described(S.nullable(S.STRING), "why the staker would not be paid next time, in words (null when eligible)"),
    "nextDistributionTime": S.described(S.TIMESTAMP, "when the next distribution can happen, unix seconds; when none "
                                                      "is expected, when the missing one was due"),
    "distributionExpected": EXPECTED,
    "noDistributionReason": NO_DISTRIBUTION,
    "ggpPriceTimestamp": S.described(S.TIMESTAMP, "when the Oracle GGP price used was set, unix seconds"),
    "estimatePath": S.described(S.STRING, "where this staker's next-cycle estimate is answered: "
                                          f"{ESTIMATE_PATH}?address= with this address (its share of the "
                                          "node-operator pool over the total eligible stake of /rewards/params)"),
})

# ---- shared values -----------------------------------------------------------------------------


def rewards_params(ctx: Context) -> dict:
    return P.rewards_params(ctx.snap, ctx.validator_default_rate_pct, ctx.cached(distribution_stakes),
                            ctx.cached(oracle_staleness))


def distribution_stakes(ctx: Context) -> dict[str, P.DistributionStake]:
    """Every staker's effective stake as the next distribution will read it."""
    return P.stakes_at_distribution(ctx.snap)


@keyed_records
def stakes_in_order(ctx: Context) -> tuple[P.DistributionStake, ...]:
    """The stakes at the next distribution, which every staker's files declare, in staker order."""
    return tuple(ctx.cached(distribution_stakes).values())


def parsed_params(ctx: Context) -> R.Params:
    """The params as the function sees them: parsed from their published JSON, not from the dict."""
    return R.parse_params(json.loads(R.canonical_json(ctx.cached(rewards_params))))


def grid_point(params: R.Params, avax: int, pct: int) -> dict:
    avax_wei = avax * R.WAD
    ggp_wei = R.ggp_for_collateralization(params.price, avax_wei, pct * 10**16)
    ggp, avax_text = R.whole_tokens(ggp_wei), R.whole_tokens(avax_wei)
    return {
        "avaxStaked": avax_text, "ggpStaked": ggp, "collateralizationPct": pct,
        "query": f"ggpStaked={ggp}&avaxStaked={avax_text}",
        "result": R.estimate(params, ggp_wei, avax_wei),
    }


def nodeop_apr(ctx: Context) -> tuple[float, float]:
    """APR (percent) of a 1000-AVAX operator at 10 % and at 150 % collateralization (for /metrics)."""
    p = ctx.cached(parsed_params)
    low, high = (grid_point(p, NODEOP_APR_AVAX, pct)["result"]["aprPct"] for pct in (10, 150))
    return low, high


@dataclass(frozen=True)
class StakerTerms:
    """What a staker's rewards view reads besides the staker, declared as an input of each
    per-staker file: the few values of /rewards/params it shows or decides eligibility by. None of
    them moves with a stake, so one staker's change rewrites no other staker's file (the total
    eligible stake, which does, is read by the function's estimate, not by the file)."""

    next_distribution: int
    eligibility_min_seconds: int
    distribution_expected: bool
    no_distribution_reason: str | None
    price_timestamp: int


def staker_terms(ctx: Context) -> StakerTerms:
    p = ctx.cached(parsed_params)
    return StakerTerms(p.next_distribution, p.eligibility_min_seconds, p.distribution_expected,
                       p.no_distribution_reason, p.price_timestamp)


def staker_rewards(st: Staker, terms: StakerTerms, then: P.DistributionStake) -> dict:
    """Rewards view of one staker (also embedded in /stakers/{address}): its own inputs, exact."""
    when, min_seconds = terms.next_distribution, terms.eligibility_min_seconds
    return {
        "address": st.staker_addr,
        "ggpStaked": R.tokens(st.ggp_staked), "ggpStakedWei": str(st.ggp_staked),
        "avaxStaked": R.tokens(st.avax_staked), "avaxStakedWei": str(st.avax_staked),
        "avaxAssigned": R.tokens(st.avax_assigned),
        "avaxValidating": R.tokens(st.avax_validating), "avaxValidatingWei": str(st.avax_validating),
        "avaxValidatingHighWater": R.tokens(st.avax_validating_high_water),
        "avaxValidatingHighWaterWei": str(st.avax_validating_high_water),
        "collateralizationRatioPct": None if st.collateralization_ratio == R.UINT256_MAX else R.pct(st.collateralization_ratio),
        "effectiveGGPStaked": R.tokens(st.effective_ggp_staked), "effectiveGGPStakedWei": str(st.effective_ggp_staked),
        "ggpRewards": R.tokens(st.ggp_rewards), "ggpRewardsWei": str(st.ggp_rewards),
        "lastRewardsCycleCompleted": st.last_rewards_cycle_completed,
        "rewardsStartTime": st.rewards_start_time,
        "eligibleNow": st.eligible,
        "eligibleNextDistribution": P.eligible_at(st, when, min_seconds),
        "ineligibleReason": P.eligibility_reason(st, when, min_seconds),
        "effectiveGGPStakedNextDistribution": R.tokens(then.effective),
        "effectiveGGPStakedNextDistributionWei": str(then.effective),
        "forecastNote": then.note,
        "nextDistributionTime": when,
        "distributionExpected": terms.distribution_expected,
        "noDistributionReason": terms.no_distribution_reason,
        "ggpPriceTimestamp": terms.price_timestamp,
        "estimatePath": estimate_path(st.staker_addr),
    }


def estimate_path(address: str) -> str:
    return f"{ESTIMATE_PATH}?address={address.lower()}"


def nodeop_apr_note(p: R.Params) -> str | None:
    """Why nodeop_apr_min/max are not the full formula's, or None when they are."""
    if p.minipool_creation_paused:
        return ("MinipoolManager is paused: no minipool can be created, so a new operator earns nothing and both "
                "figures are 0")
    if not p.distribution_expected:
        return ("no GGP distribution is expected (see no_distribution_reason), so the GGP part is 0: both figures "
                "are the AVAX validation rewards alone")
    return None


def metrics_fields(ctx: Context) -> dict:
    """The node-operator fields of /metrics."""
    low, high = nodeop_apr(ctx)
    p = ctx.cached(parsed_params)
    return {"next_cycle_nodeop_ggp": R.tokens(p.nodeop_pool),
            "next_distribution_expected": p.distribution_expected,
            "no_distribution_reason": p.no_distribution_reason,
            "nodeop_apr_min": low, "nodeop_apr_max": high, "nodeop_apr_note": nodeop_apr_note(p)}


def rewards_path(address: str) -> str:
    """Published under the lower-case address, like /stakers/{address}; the CDN and serve map the
    checksummed spelling to it (``Param.lowercase``)."""
    return f"/rewards/{address.lower()}"


# ---- endpoints ---------------------------------------------------------------------------------


@endpoint(
    "/rewards/params", tag=TAG, summary="Inputs of the rewards formula",
    description="Every input of the node-operator rewards formula, exact (wei and 1e18-scaled ratios as "
                "decimal strings), with the block they were read at: Oracle price, GGP supply and inflation "
                "settings, ProtocolDAO settings, AVAX/USD, the total effective GGP stake of stakers eligible at "
                "the next distribution (`tegs`) and the validator reward rate with its source. The rewards function "
                "(/rewards/byStake) evaluates the formula from this document, so anyone can recompute any "
                "estimate. `distributionExpected` is false, with `noDistributionReason`, when no distribution will "
                "come: RewardsPool paused, or the cycle ended more than `overdueBoundSeconds` (one "
                "whole cycle) ago with none since; the forecast then mints nothing.",
    schema=PARAMS,
)
def params_endpoint(ctx: Context):
    yield "/rewards/params", ctx.cached(rewards_params)


@endpoint(
    "/rewards/grid", tag=TAG, summary="Precomputed rewards estimates",
    description="The /rewards/byStake result for avaxStaked in 1000, 2000, ... 10000 AVAX and "
                "collateralization 0 % and 10 % to 150 % in steps of 5 %. `ggpStaked` is the exact smallest "
                "amount reaching that collateralization at the Oracle price; each point's `result` is "
                "byte for byte what the function answers for `query`.",
    schema=S.obj({
        "avaxStaked": S.described(S.array(AMOUNT), "the AVAX sizes of the grid, whole tokens as decimal strings"),
        "collateralizationPct": S.described(S.array(S.PERCENT), "the collateralization steps of the grid, percent"),
        "points": S.described(S.array(GRID_POINT), "one per (avaxStaked, collateralizationPct), AVAX size first"),
        "meta": S.META,
    }),
)
def grid(ctx: Context):
    p = ctx.cached(parsed_params)
    points = [grid_point(p, avax, pct) for avax in GRID_AVAX for pct in GRID_COLLATERAL_PCT]
    yield "/rewards/grid", {
        "avaxStaked": [str(a) for a in GRID_AVAX], "collateralizationPct": list(GRID_COLLATERAL_PCT),
        "points": points, "meta": meta(ctx),
    }


EXAMPLE_STAKE = {"ggpStaked": "10000", "avaxStaked": "1000"}  # the reference's and the calculator's example


def by_stake_example(ctx: Context) -> tuple[str, dict]:
    """What the function answers for the example stake from this build's params."""
    p = ctx.cached(parsed_params)
    q = EXAMPLE_STAKE
    ggp, avax = (int(q[k]) * R.WAD for k in ("ggpStaked", "avaxStaked"))
    body = {"inputs": {**q, "ggpStakedWei": str(ggp), "avaxStakedWei": str(avax)}, "meta": p.stamp(),
            "result": R.estimate(p, ggp, avax)}
    return f"ggpStaked={q['ggpStaked']}&avaxStaked={q['avaxStaked']}", body


function_endpoint(
    "/rewards/byStake", tag=TAG, summary="Rewards estimate for any stake",
    description="Estimated GGP and AVAX rewards and APR of a new node operator staking `ggpStaked` GGP and "
                "`avaxStaked` of its own AVAX (matched 1:1 by liquid stakers), joining the eligible pool "
                "next cycle. Answered by a function from /rewards/params. Amounts are whole-token decimal "
                "strings (up to 18 fractional digits; no sign, exponent or spaces); both are required, given "
                "once, and no other parameter is accepted (400 otherwise). Inputs the protocol would reject "
                "(collateralization under 10 %, AVAX not in minipool-sized steps) still get a result with "
                "`warnings`. While no GGP distribution is expected (`distributionExpected` false, with "
                "`noDistributionReason`) the GGP figures are 0; while MinipoolManager is paused no minipool can be "
                "created and every reward figure is 0; while the Oracle's GGP price is stale (`ggpPriceStale` "
                "in /rewards/params) every figure is at that old price; each comes with its warning. 503 when the "
                "parameters cannot be loaded.",
    schema=BY_STAKE,
    example=by_stake_example,
    params=(
        Param("ggpStaked", "query", "GGP staked, whole tokens (at most the GGP max supply, 22 500 000)",
              {"type": "string", "pattern": R.amount_pattern(R.QUERY_LIMITS["ggpStaked"]),
               "maxLength": R.MAX_AMOUNT_CHARS}, example="1500"),
        Param("avaxStaked", "query", "Own AVAX, whole tokens (at most 1 000 000 000)",
              {"type": "string", "pattern": R.amount_pattern(R.QUERY_LIMITS["avaxStaked"]),
               "maxLength": R.MAX_AMOUNT_CHARS}, example="1000"),
    ),
)


def staker_estimate_example(ctx: Context) -> tuple[str, dict | None]:
    """What the function answers for the reference's example staker (the first one, as /docs's
    address example), from this build's files: the staker's as published, and the params."""
    s = ctx.snap
    if not s.stakers:
        return "", None
    st = s.stakers[0]
    doc = staker_rewards(st, ctx.cached(staker_terms), ctx.cached(distribution_stakes)[st.staker_addr])
    inputs = R.parse_staker(json.loads(R.canonical_json(doc)))
    return f"address={st.staker_addr.lower()}", R.staker_estimate(ctx.cached(parsed_params), inputs)


function_endpoint(
    ESTIMATE_PATH, tag=TAG, summary="Rewards estimate of one staker",
    description="The estimated GGP and AVAX rewards next cycle of an existing staker, with its APR and share of the "
                "node-operator pool: the staker's own inputs, as published in /rewards/{address} (effective GGP "
                "stake the next distribution counts, stakes, rewards start), against the total effective GGP "
                "stake of eligible stakers and the forecast pool of /rewards/params (the total already counts an "
                "eligible staker). Eligibility is judged at the params' `nextDistributionTime`; an ineligible "
                "staker gets no GGP. GGP is 0 with `noDistributionReason` when no distribution is expected. "
                "Answered by the function, so that a change to one stake, which moves the total, rewrites no "
                "other staker's file. `address` is the staker, checksummed or lower-case, given once (400 "
                "otherwise); 404 when no staker has that address; 503 when the params or the staker's file "
                "cannot be loaded.",
    schema=STAKER_ESTIMATE,
    example=staker_estimate_example,
    params=(Param("address", "query", "Staker address, EIP-55 checksummed or lower-case",
                  {"type": "string", "pattern": "^0x[0-9a-fA-F]{40}$"}),),
)


@endpoint(
    "/rewards/{address}", tag=TAG, summary="Rewards of one staker",
    description="Eligibility now and at the next distribution, effective GGP stake now and as the next "
                "distribution will count it, unclaimed `ggpRewards`, last cycle completed: the staker's own "
                "inputs, exact. The estimated GGP next cycle divides the staker's effective stake by the total of "
                "every eligible staker, which moves with any stake: it is answered at `estimatePath` "
                "(/rewards/estimate?address=) from this file and /rewards/params, so this file changes only "
                "when the staker's own inputs do. One file per staker; no run timestamp.",
    schema=ADDRESS_REWARDS,
    params=(Param("address", "path", "Staker address, EIP-55 checksummed or lower-case (both name the same "
                  "resource; the published key is lower-case)",
                  {"type": "string", "pattern": "^0x[0-9a-fA-F]{40}$"}, lowercase=True),),
)
def address_rewards(ctx: Context):
    terms = ctx.cached(staker_terms)
    then = ctx.cached(distribution_stakes)
    for st in ctx.own(ctx.snap.stakers):
        yield rewards_path(st.staker_addr), Deferred((st, terms, then[st.staker_addr]), staker_rewards)

