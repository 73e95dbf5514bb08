"""Node-operator rewards: the formula of DESIGN §7.1–7.8 in exact integer (wei) arithmetic.

Standard library only and no imports from the rest of the package: this module is shipped as is,
next to the function handler, in the Lambda zip. The build (grid, per-address estimates) and the
function both evaluate it, so they cannot disagree.

Wherever a quantity is defined on-chain the contracts' order of operations and rounding are
mirrored (solmate ``mulWadDown``/``divWadDown``): collateralization, effective stake, the cycle
mint and the pro-rata share. Derived figures (per year, APR, USD) are computed from those exact
integers; display numbers are the correctly rounded double of the exact value, so the same inputs
always give the same bytes.

Inputs come from the ``/rewards/params`` document (``parse_params``); ``estimate`` answers one
hypothetical operator, ``operator_estimate`` an existing staker, and ``staker_estimate`` an existing
staker from its published inputs (``/rewards/{address}``, read by ``parse_staker``) — the one place a
staker's share of the pool is worked out, so a change to one stake rewrites no other staker's file.
"""
from __future__ import annotations

import json
from collections.abc import Callable

WAD = 10**18
WAD2 = WAD * WAD
TENTH = WAD // 10  # Staking's hard-coded 10 % floor, not the DAO's MinCollateralizationRatio
YEAR = 365 * 86_400
UINT256_MAX = 2**256 - 1
PARAMS_FORMAT = 1
APR_SCALE = YEAR * 100  # per second -> per year, ratio -> percent
MAX_INTERVALS = 100_000  # rate^N is a loop: bound it for hostile params


class ParamsError(ValueError):
    """The params document is missing a field or holds a value the formula cannot use."""


# ---- contract math -----------------------------------------------------------------------------


def mul_wad(x: int, y: int) -> int:
    return x * y // WAD


def div_wad(x: int, y: int) -> int:
    return x * WAD // y


def collateralization_ratio(ggp_staked: int, avax_assigned: int, price: int) -> int:
    """Staking.getCollateralizationRatio: uint256 max when nothing is assigned."""
    if avax_assigned == 0:
        return UINT256_MAX
    return div_wad(mul_wad(ggp_staked, price), avax_assigned)


def withdrawable_ggp(ggp_staked: int, avax_assigned: int, price: int, max_ratio: int, locked: bool) -> int:
    """The most GGP Staking.withdrawGGP lets a staker take now, wei: nothing while its GGP is locked;
    else all but the fewest GGP whose collateralization of the AVAX still assigned stays at
    ``max_ratio`` (mainnet's 150 %) or above, worked backwards through its two roundings down."""
    if locked:
        return 0
    if avax_assigned == 0:
        return ggp_staked
    in_avax = -(-max_ratio * avax_assigned // WAD)  # the least mul_wad(ggp, price) whose div_wad by assigned reaches it
    keep = -(-in_avax * WAD // price)  # the least ggp whose mul_wad by price reaches that
    return max(0, ggp_staked - keep)


def effective_rewards_ratio(ggp_staked: int, avax_assigned: int, high_water: int, price: int, max_ratio: int) -> int:
    """Staking.getEffectiveRewardsRatio: 0 without a high-water mark or under 10 %, capped at the max."""
    if high_water == 0:
        return 0
    if collateralization_ratio(ggp_staked, avax_assigned, price) < TENTH:
        return 0
    return min(div_wad(mul_wad(ggp_staked, price), high_water), max_ratio)


def effective_ggp_staked(ggp_staked: int, avax_assigned: int, high_water: int, price: int, max_ratio: int) -> int:
    """Staking.getEffectiveGGPStaked = divWad(mulWad(HW, ratio), price)."""
    ratio = effective_rewards_ratio(ggp_staked, avax_assigned, high_water, price, max_ratio)
    return div_wad(mul_wad(high_water, ratio), price)


def ggp_for_collateralization(price: int, avax_wei: int, target_wad: int) -> int:
    """Smallest GGP (wei) whose on-chain collateralization (floor(floor(G·P/1e18)·1e18/A)) reaches
    ``target_wad``, the inverse of ``collateralization_ratio``: G = ceil(ceil(t·A/1e18)·1e18/P).
    Exactly ``target_wad`` for A ≥ 1 AVAX, P ≤ 1 AVAX."""
    if target_wad == 0:
        return 0
    x = -(-target_wad * avax_wei // WAD)
    return -(-x * WAD // price)


def eligible_at(rewards_start_time: int, high_water: int, when: int, min_seconds: int) -> bool:
    """ClaimNodeOp.isEligible evaluated at time ``when``."""
    start = rewards_start_time
    return start != 0 and start <= when and when - start >= min_seconds and high_water > 0


def compound(supply: int, rate: int, intervals: int) -> int:
    """RewardsPool.getInflationAmt's new supply: one rounding-down wad multiply per interval."""
    for _ in range(intervals):
        supply = mul_wad(supply, rate)
    return supply


def inflation_intervals(start: int, when: int, interval_seconds: int) -> int:
    """RewardsPool.getInflationIntervalsElapsed at time ``when``: whole intervals since the start
    (the cycle start mints for all of them, so a late distribution mints more)."""
    return max(when - start, 0) // interval_seconds


def cycle_mint(supply: int, max_supply: int, rate: int, intervals: int) -> int:
    """GGP minted at a cycle start after ``intervals`` inflation intervals, capped at MAX_SUPPLY."""
    new = supply
    for _ in range(intervals):
        new = mul_wad(new, rate)
        # With rate >= 1 the supply never falls again, so once past the cap the answer is known:
        # stopping here keeps extreme params (2x per interval, 100 000 intervals) from compounding
        # numbers of tens of thousands of digits.
        if new > max_supply and rate >= WAD:
            break
    if new > max_supply:
        return max(max_supply - supply, 0)
    return new - supply


def share_of_pool(effective: int, pool_effective: int, pool_rewards: int) -> tuple[int, int]:
    """ClaimNodeOp's pro-rata split: percentage = divWad(eff, total), reward = mulWad(percentage, R)."""
    if effective == 0 or pool_effective == 0:
        return 0, 0
    percentage = div_wad(effective, pool_effective)
    return percentage, mul_wad(percentage, pool_rewards)


# ---- params ------------------------------------------------------------------------------------


class Params:
    """A validated ``/rewards/params`` document, with the next cycle's mint worked out once."""

    __slots__ = (
        "assumptions",
        "avax_cycle_den",
        "avax_rate_num",
        "avax_usd",
        "avax_usd_decimals",
        "block",
        "chain_id",
        "commission",
        "cycle_mint",
        "cycle_seconds",
        "cycle_start",
        "distribution_expected",
        "doc",
        "eligibility_min_seconds",
        "ggp_max_supply",
        "ggp_supply",
        "inflation_interval_seconds",
        "inflation_rate",
        "inflation_start",
        "intervals",
        "max_assignment",
        "max_ratio",
        # worked out once, used by every estimate
        "meta",
        "min_assignment",
        "min_ratio",
        "min_staking_amt",
        "minipool_creation_paused",
        "network",
        "next_distribution",
        "no_distribution_reason",
        "nodeop_pct",
        "nodeop_pool",
        "price",
        "price_stale_reason",
        "price_timestamp",
        "tegs",
        "usd_den",
        "validator_rate",
        "validator_rate_pct",
        "validator_rate_source",
    )

    # The slots' types (a class of slots rather than a dataclass: it is built field by field as
    # each is checked, and attribute access stays cheap on the function's hot path).
    doc: dict
    network: str
    validator_rate_source: str
    block: dict
    meta: dict
    avax_usd: int | None
    validator_rate_pct: float
    assumptions: list[str]
    chain_id: int
    price: int
    price_timestamp: int
    avax_usd_decimals: int
    ggp_supply: int
    ggp_max_supply: int
    inflation_rate: int
    inflation_interval_seconds: int
    cycle_seconds: int
    eligibility_min_seconds: int
    cycle_start: int
    next_distribution: int
    nodeop_pct: int
    min_ratio: int
    max_ratio: int
    commission: int
    min_assignment: int
    max_assignment: int
    min_staking_amt: int
    tegs: int
    validator_rate: int
    inflation_start: int
    intervals: int
    cycle_mint: int
    nodeop_pool: int
    avax_rate_num: int
    avax_cycle_den: int
    usd_den: int
    distribution_expected: bool
    no_distribution_reason: str | None
    minipool_creation_paused: bool
    price_stale_reason: str | None

    def stamp(self) -> dict:
        """Where the params come from: the same shape as every endpoint's ``meta``."""
        return self.meta


def _field(doc: dict, key: str):
    if key not in doc:
        raise ParamsError(f"params field {key!r} is missing")
    return doc[key]


def _uint(doc: dict, key: str, *, lo: int = 0, hi: int = UINT256_MAX) -> int:
    """An exact integer written as a decimal string (wei, wad)."""
    v = _field(doc, key)
    if not isinstance(v, str) or not (0 < len(v) <= 78) or not v.isascii() or not v.isdigit():
        raise ParamsError(f"params field {key!r} must be a decimal integer string")
    n = int(v)
    if not lo <= n <= hi:
        raise ParamsError(f"params field {key!r} is out of range [{lo}, {hi}]")
    return n


def _int(doc: dict, key: str, *, lo: int = 0, hi: int = 2**63 - 1) -> int:
    """A JSON integer (seconds, timestamps, counts)."""
    v = _field(doc, key)
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise ParamsError(f"params field {key!r} must be an integer in [{lo}, {hi}]")
    return v


def _str(doc: dict, key: str) -> str:
    v = _field(doc, key)
    if not isinstance(v, str) or len(v) > 200:
        raise ParamsError(f"params field {key!r} must be a short string")
    return v


def _obj(doc: dict, key: str) -> dict:
    v = _field(doc, key)
    if not isinstance(v, dict):
        raise ParamsError(f"params field {key!r} must be an object")
    return v


def parse_params(doc) -> Params:
    """Validate a ``/rewards/params`` document; unknown fields are ignored (forward compatible)."""
    if isinstance(doc, Params):
        return doc
    if not isinstance(doc, dict):
        raise ParamsError("params document must be a JSON object")
    if doc.get("formatVersion") != PARAMS_FORMAT:
        raise ParamsError(f"params formatVersion must be {PARAMS_FORMAT}")
    p = Params()
    p.doc = doc
    p.network = _str(doc, "network")
    p.chain_id = _int(doc, "chainId")
    block = _obj(doc, "block")
    p.block = {"number": _int(block, "number"), "hash": _str(block, "hash"), "timestamp": _int(block, "timestamp")}
    p.price = _uint(doc, "ggpPriceInAvaxWei", lo=1)
    p.price_timestamp = _int(doc, "ggpPriceTimestamp")
    feed = _field(doc, "avaxUsdFeed")
    if feed is None:
        p.avax_usd, p.avax_usd_decimals = None, 0
    elif isinstance(feed, dict):
        p.avax_usd = _uint(feed, "answer", lo=1)
        p.avax_usd_decimals = _int(feed, "decimals", hi=36)
    else:
        raise ParamsError("params field 'avaxUsdFeed' must be an object or null")
    p.ggp_max_supply = _uint(doc, "ggpMaxSupplyWei")
    p.ggp_supply = _uint(doc, "ggpTotalSupplyWei", hi=p.ggp_max_supply)
    p.inflation_rate = _uint(doc, "inflationIntervalRateWad", lo=WAD, hi=2 * WAD)
    p.inflation_interval_seconds = _int(doc, "inflationIntervalSeconds", lo=1)
    p.cycle_seconds = _int(doc, "rewardsCycleSeconds", lo=1)
    p.eligibility_min_seconds = _int(doc, "rewardsEligibilityMinSeconds")
    p.cycle_start = _int(doc, "rewardsCycleStartTime")
    p.next_distribution = _int(doc, "nextDistributionTime")
    p.nodeop_pct = _uint(doc, "claimNodeOpPctWad", hi=WAD)
    p.min_ratio = _uint(doc, "minCollateralizationRatioWad")
    p.max_ratio = _uint(doc, "maxCollateralizationRatioWad", lo=1)
    p.commission = _uint(doc, "minipoolNodeCommissionFeePctWad", hi=WAD)
    p.min_assignment = _uint(doc, "minipoolMinAvaxAssignmentWei")
    p.max_assignment = _uint(doc, "minipoolMaxAvaxAssignmentWei")
    p.min_staking_amt = _uint(doc, "minipoolMinAvaxStakingAmtWei")
    tegs = _obj(doc, "tegs")
    p.tegs = _uint(tegs, "wei")
    rate = _obj(doc, "validatorRate")
    p.validator_rate = _uint(rate, "wad", hi=WAD)
    p.validator_rate_source = _str(rate, "source")
    p.inflation_start = _int(doc, "inflationIntervalStartTime")
    # Optional: params published before these fields expect a distribution, know of no pause, and
    # say nothing of the price's age.
    expected, why, paused = doc.get("distributionExpected", True), doc.get("noDistributionReason"), doc.get("paused", {})
    stale, old = doc.get("ggpPriceStale", False), doc.get("ggpPriceStaleReason")
    if not (type(expected) is type(stale) is bool and isinstance(paused, dict) and {type(why), type(old)} <= {str, type(None)}):
        raise ParamsError("params fields distributionExpected, noDistributionReason, paused, ggpPriceStale(Reason): wrong type")
    p.distribution_expected = expected
    p.no_distribution_reason = None if expected else (why or "no distribution is expected")[:2000]
    p.price_stale_reason = (old or "too old")[:2000] if stale else None
    p.minipool_creation_paused = paused.get("MinipoolManager") is True
    if p.distribution_expected:
        p.intervals = inflation_intervals(p.inflation_start, p.next_distribution, p.inflation_interval_seconds)
        if p.intervals > MAX_INTERVALS:
            raise ParamsError("inflation intervals to nextDistributionTime are implausibly many")
    else:
        p.intervals = 0  # no cycle starts: nothing is minted
    p.cycle_mint = cycle_mint(p.ggp_supply, p.ggp_max_supply, p.inflation_rate, p.intervals)
    p.nodeop_pool = mul_wad(p.nodeop_pct, p.cycle_mint)
    p.meta = {"network": p.network, "chainId": p.chain_id, "block": p.block}
    p.validator_rate_pct = pct(p.validator_rate)
    p.avax_rate_num = p.validator_rate * (WAD + p.commission)
    p.avax_cycle_den = WAD2 * YEAR
    p.usd_den = WAD2 * 10**p.avax_usd_decimals
    if p.distribution_expected:
        timing = (f"the distribution runs at nextDistributionTime ({p.next_distribution}), minting for the "
                  f"{p.intervals} inflation intervals elapsed since inflationIntervalStartTime ({p.inflation_start})")
    else:
        timing = f"no GGP distribution is expected ({p.no_distribution_reason}), so every GGP reward is 0"
    p.assumptions = [
        timing,
        "the Oracle GGP price, every stake and the total eligible GGP stake stay as they are at the params block until then",
        "every eligible staker shares one pool pro rata: no investor weighting (the protocol operator's "
        "off-chain down-weighting of listed addresses is not modelled)",
        # While MinipoolManager is paused no minipool is created or renewed: the estimates' AVAX is 0.
        f"MinipoolManager is paused: no minipool can be created or renew its validation, so the estimates count no "
        f"AVAX reward (a validation still running pays its reward at its end, which they leave out; the validation "
        f"reward rate, {_dec(p.validator_rate, 16, 4)} % a year, source: {p.validator_rate_source}, applies to none)"
        if p.minipool_creation_paused else
        f"AVAX rewards accrue at the validation reward rate of {_dec(p.validator_rate, 16, 4)} % a year "
        f"(source: {p.validator_rate_source})",
    ]
    return p


def forecast(params) -> dict:
    """The next cycle's mint and node-operator pool (DESIGN §7.4), as published in /rewards/params."""
    p = parse_params(params)
    return {"cycleIntervals": p.intervals, "cycleMintWei": str(p.cycle_mint), "nodeOpPoolWei": str(p.nodeop_pool),
            "assumptions": list(p.assumptions)}


# ---- estimates ---------------------------------------------------------------------------------


def estimate(params, ggp_staked_wei: int, avax_staked_wei: int) -> dict:
    """Rewards of a hypothetical new operator staking ``ggp_staked_wei`` GGP and ``avax_staked_wei``
    of its own AVAX, matched 1:1 by liquid stakers (L = A, and HW = L once its minipools validate).

    The operator joins the eligible pool: share = G_eff / (TEGS + G_eff). Inputs the protocol would
    reject still get an answer, with ``warnings`` saying what the protocol would do (and why no
    rewards come: no distribution expected, MinipoolManager paused).
    """
    p = parse_params(params)
    g, a = _amount(ggp_staked_wei, "ggp_staked_wei"), _amount(avax_staked_wei, "avax_staked_wei")
    collat = collateralization_ratio(g, a, p.price)
    g_eff = effective_ggp_staked(g, a, a, p.price, p.max_ratio)
    share, ggp_cycle = share_of_pool(g_eff, p.tegs + g_eff, p.nodeop_pool)
    # MinipoolManager paused: no minipool can be created, nothing validates, nothing is earned.
    out = _returns(p, g, a, 0, 0) if p.minipool_creation_paused else _returns(p, g, a, a, ggp_cycle)
    out["collateralizationRatioPct"] = None if a == 0 else pct(collat)
    out["collateralizationRatioWad"] = None if a == 0 else str(collat)
    out["effectiveGGPStaked"] = tokens(g_eff)
    out["effectiveGGPStakedWei"] = str(g_eff)
    out["sharePct"] = pct(share)
    out["shareWad"] = str(share)
    out["warnings"] = _warnings(p, g, a, collat, g_eff)
    return out


def operator_estimate(params, *, ggp_staked: int, avax_staked: int, avax_validating: int,
                      effective_ggp_staked: int, eligible_next: bool) -> dict:
    """Next-cycle estimate for an existing staker from its own on-chain effective stake.

    TEGS already counts the staker when it is eligible at the next distribution, so the share is
    G_eff / TEGS (no second count); an ineligible staker gets no GGP. AVAX rewards accrue on the
    AVAX validating now (own AVAX equals the matched liquid-staker AVAX), while APR is over all
    capital at stake: ``avax_staked`` plus the GGP's AVAX value.
    """
    p = parse_params(params)
    g_eff = effective_ggp_staked if eligible_next else 0
    share, ggp_cycle = share_of_pool(g_eff, max(p.tegs, g_eff), p.nodeop_pool)
    # MinipoolManager paused: no validation renews, so none accrues at the rate (the assumptions say so).
    out = _returns(p, ggp_staked, avax_staked, 0 if p.minipool_creation_paused else avax_validating, ggp_cycle)
    out["sharePct"] = pct(share)
    out["shareWad"] = str(share)
    out["warnings"] = warnings = []
    _standing_warnings(lambda code, message: warnings.append({"code": code, "message": message}), p)
    return out


_STAKER_WEI = ("ggpStakedWei", "avaxStakedWei", "avaxValidatingWei", "avaxValidatingHighWaterWei",
               "effectiveGGPStakedNextDistributionWei")


class StakerInputs:
    """What the estimate of an existing staker reads of its ``/rewards/{address}`` document."""

    __slots__ = ("address", "avax_staked", "avax_validating", "effective_next", "ggp_staked", "high_water",
                 "rewards_start_time")

    address: str
    ggp_staked: int
    avax_staked: int
    avax_validating: int
    high_water: int
    effective_next: int
    rewards_start_time: int

    def document(self) -> dict:
        """The inputs as an estimate echoes them (exact, wei as decimal strings)."""
        return {"ggpStakedWei": str(self.ggp_staked), "avaxStakedWei": str(self.avax_staked),
                "avaxValidatingWei": str(self.avax_validating), "avaxValidatingHighWaterWei": str(self.high_water),
                "effectiveGGPStakedNextDistributionWei": str(self.effective_next),
                "rewardsStartTime": self.rewards_start_time}


def parse_staker(doc) -> StakerInputs:
    """Validate the inputs of a ``/rewards/{address}`` document; other fields are ignored."""
    if not isinstance(doc, dict):
        raise ParamsError("staker document must be a JSON object")
    s = StakerInputs()
    address = _str(doc, "address")
    if len(address) != 42 or not address.startswith("0x") or not all(c in _HEXDIGITS for c in address[2:]):
        raise ParamsError("staker field 'address' must be a 0x-prefixed 20-byte hex address")
    s.address = address
    s.ggp_staked, s.avax_staked, s.avax_validating, s.high_water, s.effective_next = (_uint(doc, k) for k in _STAKER_WEI)
    s.rewards_start_time = _int(doc, "rewardsStartTime")
    return s


_HEXDIGITS = frozenset("0123456789abcdefABCDEF")


def staker_estimate(params, staker: StakerInputs) -> dict:
    """The next-cycle estimate of an existing staker from its published inputs and the params:
    eligibility at the params' nextDistributionTime, then ``operator_estimate`` (its share of the
    pool over the params' total eligible stake). What the function answers for ``address=``."""
    p = parse_params(params)
    eligible = eligible_at(staker.rewards_start_time, staker.high_water, p.next_distribution, p.eligibility_min_seconds)
    return {
        "address": staker.address,
        "inputs": staker.document(),
        "eligibleNextDistribution": eligible,
        "meta": p.stamp(),
        "result": operator_estimate(p, ggp_staked=staker.ggp_staked, avax_staked=staker.avax_staked,
                                    avax_validating=staker.avax_validating,
                                    effective_ggp_staked=staker.effective_next, eligible_next=eligible),
    }


def _returns(p: Params, g: int, capital_avax: int, earning_avax: int, ggp_cycle: int) -> dict:
    """Per cycle and per year in GGP, AVAX and USD, and the APR split (DESIGN §7.6–7.8)."""
    ggp_year = ggp_cycle * YEAR // p.cycle_seconds
    # r_v · A · (1 + commission) per year; per cycle × cycleSeconds / 365 d, floored once.
    avax_annual = earning_avax * p.avax_rate_num
    avax_cycle = avax_annual * p.cycle_seconds // p.avax_cycle_den
    avax_year = avax_annual // WAD2
    ggp_value = ggp_cycle * p.price  # AVAX value of the GGP, scaled by 1e36
    avax_value = avax_cycle * WAD
    # APR over the capital at stake (own AVAX + GGP valued in AVAX), per year, in percent.
    apr_den = (capital_avax * WAD + g * p.price) * p.cycle_seconds
    out: dict = {
        "distributionExpected": p.distribution_expected,
        "noDistributionReason": p.no_distribution_reason,
        "ggpPerCycle": tokens(ggp_cycle),
        "ggpPerCycleWei": str(ggp_cycle),
        "ggpPerYear": tokens(ggp_year),
        "ggpPerYearWei": str(ggp_year),
        "ggpPerCycleInAvax": ggp_value / WAD2,
        "avaxPerCycle": tokens(avax_cycle),
        "avaxPerCycleWei": str(avax_cycle),
        "avaxPerYear": tokens(avax_year),
        "avaxPerYearWei": str(avax_year),
        "aprPct": _ratio((ggp_value + avax_value) * APR_SCALE, apr_den),
        "ggpAprPct": _ratio(ggp_value * APR_SCALE, apr_den),
        "avaxAprPct": _ratio(avax_value * APR_SCALE, apr_den),
        "validatorRatePct": p.validator_rate_pct,
        "validatorRateSource": p.validator_rate_source,
        "cycleSeconds": p.cycle_seconds,
        "nextDistributionTime": p.next_distribution,
        "assumptions": p.assumptions,
        "usd": None,
    }
    if p.avax_usd is not None:
        usd_cycle = (ggp_value + avax_value) * p.avax_usd
        out["usd"] = {
            "ggpPerCycle": ggp_value * p.avax_usd / p.usd_den,
            "avaxPerCycle": avax_value * p.avax_usd / p.usd_den,
            "totalPerCycle": usd_cycle / p.usd_den,
            "totalPerYear": usd_cycle * YEAR / (p.usd_den * p.cycle_seconds),
        }
    return out


def _warnings(p: Params, g: int, a: int, collat: int, g_eff: int) -> list[dict]:
    out = []

    def warn(code: str, message: str) -> None:
        out.append({"code": code, "message": message})

    _stake_warnings(warn, p, g, a, collat, g_eff)
    _protocol_warnings(warn, p)
    return out


def _stake_warnings(warn: Callable[[str, str], None], p: Params, g: int, a: int, collat: int, g_eff: int) -> None:
    """What the stake asked about would meet: nothing staked, a minipool the protocol would refuse,
    a collateralization earning no GGP or GGP beyond the cap."""
    if a == 0:
        if g == 0:
            warn("nothing_staked", "ggpStaked and avaxStaked are both 0: nothing earns rewards and the APR is 0")
        warn("no_avax", "avaxStaked is 0: without a minipool there is no collateralization, no effective "
                        "GGP stake and no rewards")
    else:
        lo = max(p.min_assignment, -(-p.min_staking_amt // 2))
        if a < lo:
            warn("avax_below_minimum", f"avaxStaked {_dec(a)} AVAX is below the minipool minimum of {_dec(lo)} "
                                       "AVAX: the protocol would not create this minipool")
        elif p.max_assignment >= lo > 0 and not _splits(a, lo, p.max_assignment):
            size = f"{_dec(lo)} AVAX" if lo == p.max_assignment else f"{_dec(lo)} to {_dec(p.max_assignment)} AVAX"
            warn("avax_not_assignable", f"avaxStaked {_dec(a)} AVAX cannot be split into minipools of {size} "
                                        "each (MinipoolMin/MaxAVAXAssignment): the estimate is for the amount as given")
        if collat < p.min_ratio:
            warn("collateral_below_minimum", f"collateralization {_dec(collat, 16, 4)} % is below "
                                             f"MinCollateralizationRatio {_dec(p.min_ratio, 16, 4)} %: "
                                             "the protocol would not create this minipool")
        if collat < TENTH:
            warn("no_ggp_rewards", f"collateralization {_dec(collat, 16, 4)} % is below 10 %: the effective "
                                   "GGP stake is 0, so the operator earns no GGP rewards")
        if collat > p.max_ratio:
            warn("stake_above_cap", f"collateralization {_dec(collat, 16, 4)} % is above MaxCollateralizationRatio "
                                    f"{_dec(p.max_ratio, 16, 4)} %: the {_dec(g - g_eff)} GGP beyond the cap "
                                    "earns no GGP rewards")


def _protocol_warnings(warn: Callable[[str, str], None], p: Params) -> None:
    """What a new operator's stake would meet at the params' block: paused creation, a distribution
    too soon to be eligible for, and what any staker meets (``_standing_warnings``)."""
    if p.minipool_creation_paused:
        warn("minipool_creation_paused", "MinipoolManager is paused: no minipool can be created now, so a new "
                                         "operator validates nothing and earns no AVAX or GGP rewards; every reward "
                                         "figure is 0")
    left = p.next_distribution - p.block["timestamp"]
    if p.distribution_expected and left < p.eligibility_min_seconds:
        warn("misses_next_distribution", f"the next distribution is {left} s after the params block, less than "
                                         f"RewardsEligibilityMinSeconds ({p.eligibility_min_seconds} s): a minipool "
                                         "created now is not eligible for it, so the first GGP arrives one cycle later")
    _standing_warnings(warn, p)


def _standing_warnings(warn: Callable[[str, str], None], p: Params) -> None:
    """What any staker, new or existing, meets at the params' block: no distribution expected,
    nothing minted for operators, no USD price, a stale GGP price."""
    if not p.distribution_expected:
        warn("no_distribution_expected", f"no GGP distribution to node operators is expected "
                                         f"({p.no_distribution_reason}), so GGP rewards are 0")
    if p.nodeop_pool == 0 and p.distribution_expected:
        warn("no_nodeop_rewards", "the next cycle mints no GGP for node operators (supply cap reached or "
                                  "inflation off)")
    if p.avax_usd is None:
        warn("no_usd_price", "no AVAX/USD price in the params: USD values are null")
    if p.price_stale_reason is not None:
        warn("ggp_price_stale", f"the GGP price is stale: {p.price_stale_reason}")


def _splits(amount: int, lo: int, hi: int) -> bool:
    """Can ``amount`` be split into minipools whose sizes each lie in [lo, hi]?"""
    k = -(-amount // hi)  # fewest pools
    return k * lo <= amount


def _amount(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer (wei)")
    return value


# ---- numbers -----------------------------------------------------------------------------------


def _ratio(num: int, den: int) -> float:
    """num/den as the correctly rounded double (int true division is); 0 when den is 0."""
    return num / den if den else 0.0


def tokens(wei: int) -> float:
    """Wei in whole tokens (the units rule's display number)."""
    return wei / WAD


def pct(wad: int) -> float:
    """A 1e18-scaled ratio in percent."""
    return wad / 10**16


def _dec(value: int, scale: int = 18, places: int = 6) -> str:
    """Exact decimal text of value / 10^scale, cut (not rounded) to ``places`` decimals."""
    whole, frac = divmod(value, 10**scale)
    frac_text = str(frac).rjust(scale, "0")[:places].rstrip("0")
    return f"{whole}.{frac_text}" if frac_text else str(whole)


def whole_tokens(wei: int) -> str:
    """Exact whole-token decimal string of a wei amount (the query format of /rewards/byStake)."""
    return _dec(wei, 18, 18)


# /rewards/byStake query bounds, whole tokens: GGP cannot exceed its fixed MAX_SUPPLY; no operator
# can hold more AVAX than its 720 M supply cap, so 1e9 leaves room and keeps the numbers sane.
QUERY_LIMITS = {"ggpStaked": 22_500_000, "avaxStaked": 1_000_000_000}
MAX_AMOUNT_CHARS = 64


def amount_pattern(max_whole: int) -> str:
    """Regex of whole-token decimal strings (up to 18 fractional digits, leading zeros allowed)
    whose value is at most ``max_whole``: the published schema states exactly what the function
    accepts, so a client validating against it is never surprised by a 400."""
    digits = str(max_whole)
    below = [f"[0-9]{{1,{len(digits) - 1}}}"] if len(digits) > 1 else []
    for i, d in enumerate(digits):
        if d != "0":
            low = f"[0-{int(d) - 1}]" if d != "1" else "0"
            rest = len(digits) - i - 1
            below.append(digits[:i] + low + (f"[0-9]{{{rest}}}" if rest else ""))
    return (f"^0*(?:(?:{'|'.join(below)})(?:\\.[0-9]{{1,18}})?|{digits}(?:\\.0{{1,18}})?)$")


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def error_body(code: str, message: str) -> dict:
    """The API's one error body: the function's, `publisher serve`'s and the CDN's 404 document."""
    return {"error": {"code": code, "message": message}}


def canonical_json(body) -> bytes:
    """Canonical JSON bytes: sorted keys, compact, UTF-8, NaN/Infinity refused, trailing newline.
    The API's one serialization rule (publisher.endpoints.units.dumps writes the same bytes). One
    encoder for every call: a build encodes tens of thousands of bodies."""
    return (_CANONICAL.encode(body) + "\n").encode()


def canonical_value(value) -> bytes:
    """``canonical_json`` without the trailing newline: a value inside a document."""
    return _CANONICAL.encode(value).encode()
