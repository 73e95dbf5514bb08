"""Node operators: stakers, minipools and the protocol's active validators."""
from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import Decimal

from ..compute import rewards as R
from ..compute.nodeid import node_id
from ..compute.params import DistributionStake
from ..compute.validation import unrecorded_ends
from ..protocol import ACTIVE_STATUSES, STATUS_LABELS, MinipoolStatus
from ..snapshot import Minipool, Staker, Validator
from ..utc import when
from . import schema as S
from . import svg
from .common import meta, minipool_record, staker_minipools, staker_record, status_counts
from .context import Context
from .registry import REL, Check, Deferred, Each, Param, Run, endpoint
from .rewards import ADDRESS_REWARDS, StakerTerms, distribution_stakes, staker_rewards, staker_terms
from .units import tokens
from .vault import METRICS_PATH

STAKERS_PATH = "/stakers"
STAKER_PATH = "/stakers/{address}"
MINIPOOLS_PATH = "/minipools"

TOKENS = S.NON_NEGATIVE
COUNT = {"type": "integer", "minimum": 0}

STAKER = S.obj({
    "stakerAddr": S.described(S.ADDRESS, "the staker (node operator) address"),
    "avaxAssigned": S.described(TOKENS, "liquid stakers' AVAX matched to this operator's minipools, whole AVAX"),
    "avaxStaked": S.described(TOKENS, "the operator's own AVAX in minipools, whole AVAX"),
    "avaxValidating": S.described(TOKENS, "the operator's AVAX in minipools that are validating, whole AVAX; read by CLI tutorials and analysts"),
    "avaxValidatingHighWater": S.described(TOKENS, "highest avaxValidating this reward cycle, whole AVAX; rewards are based on it"),
    "ggpRewards": S.described(TOKENS, "unclaimed GGP rewards, whole GGP"),
    "ggpStaked": S.described(TOKENS, "GGP staked, whole GGP"),
    "lastRewardsCycleCompleted": S.described(COUNT, "the last reward cycle this staker was paid for"),
    "rewardsStartTime": S.described(S.TIMESTAMP, "set when the staker creates a first minipool, back to 0 when a cancel or a distribution finds nothing assigned to it; unix seconds (0: none)"),
    "ggpLockedUntil": S.described(S.TIMESTAMP, "GGP cannot be withdrawn before this time, unix seconds"),
    "collateralizationRatioPct": S.described(S.nullable(S.PERCENT), "GGP staked (in AVAX) over AVAX assigned; null when nothing is assigned"),
    "effectiveRewardsRatioPct": S.described(S.PERCENT, "collateralization used for rewards: GGP (in AVAX) over avaxValidatingHighWater, percent"),
    "effectiveGGPStaked": S.described(TOKENS, "GGP counted for rewards: 0 under 10 % collateralization, capped at the maximum ratio"),
    "eligible": S.described(S.BOOLEAN, "whether the staker would be paid at a distribution now"),
    "minipoolCount": S.described(COUNT, "minipools this staker owns"),
    "activeMinipoolCount": S.described(COUNT, "of those, in Launched or Staking"),
    "minipoolCounts": S.obj({n: S.described(COUNT, f"minipools in status {n}") for n in STATUS_LABELS},
                            description="this staker's minipools per status"),
})

MINIPOOL = S.obj({
    "index": S.described(COUNT, "the minipool's index in MinipoolManager"),
    "nodeID": S.described(S.NODE_ID, "Avalanche NodeID (NodeID-...)"),
    "nodeIDHex": S.described(S.ADDRESS, "the same NodeID as 20 bytes of hex"),
    "status": {"enum": list(STATUS_LABELS), "description": "status name"},
    "statusCode": {"type": "integer", "minimum": 0, "maximum": 6, "description": "status as its number: " + ", ".join(f"{i} {n}" for i, n in enumerate(STATUS_LABELS))},
    "duration": S.described(COUNT, "requested validation period in seconds"),
    "delegationFee": S.described(COUNT, "P-Chain delegation fee in 1e-4 percent (20000 = 2 %)"),
    "owner": S.described(S.ADDRESS, "the node operator (staker) that created it"),
    "multisigAddr": S.described(S.ADDRESS, "the protocol multisig that launches it"),
    "avaxNodeOpAmt": S.described(TOKENS, "the operator's AVAX in it, whole AVAX"),
    "avaxNodeOpInitialAmt": S.described(TOKENS, "the operator's AVAX at creation, whole AVAX"),
    "avaxLiquidStakerAmt": S.described(TOKENS, "liquid stakers' AVAX matched into it, whole AVAX"),
    "blsPubkeyAndSig": S.described(S.nullable(S.HEX), "BLS public key and proof of possession, hex (null if none)"),
    "txID": S.described(S.nullable(S.STRING), "P-Chain AddValidator transaction ID (null before launch)"),
    "creationTime": S.described(S.TIMESTAMP, "created at, unix seconds"),
    "initialStartTime": S.described(S.TIMESTAMP, "first validation start, unix seconds (0: not yet)"),
    "startTime": S.described(S.TIMESTAMP, "current validation period start, unix seconds (0: not yet)"),
    "endTime": S.described(S.TIMESTAMP, "current validation period end, unix seconds (0: not yet)"),
    "avaxTotalRewardAmt": S.described(TOKENS, "validation rewards of the last period, whole AVAX"),
    "errorCode": S.described(S.nullable(S.STRING), "why it is in Error, as recorded by the protocol (null otherwise)"),
    "ggpSlashAmt": S.described(TOKENS, "GGP slashed from the operator for poor uptime, whole GGP"),
    "avaxNodeOpRewardAmt": S.described(TOKENS, "the operator's share of the rewards, whole AVAX"),
    "avaxLiquidStakerRewardAmt": S.described(TOKENS, "liquid stakers' share of the rewards, whole AVAX"),
    "hardwareProvider": S.described(S.nullable(S.HEX), "hardware provider id, hex (null when none)"),
})

ADDRESS_PARAM = Param("address", "path", "Staker address. Canonical paths use the lower-case hex; the "
                      "checksummed form is accepted and normalized by the CDN and `publisher serve`.",
                      {"type": "string", "pattern": "^0x[0-9a-fA-F]{40}$"}, lowercase=True)


def staker_path(address: str) -> str:
    """One file per staker, keyed by the lower-case address (checksummed URLs are normalized to it)."""
    return address.lower()


# ---- checks --------------------------------------------------------------------------------------


def stakers_hold(b: Mapping, run: Run) -> list[str]:
    """The list holds its count of stakers, each with its file, and no effective stake above its
    stake; their stakes add up to /metrics's total."""
    stakers, metrics = b.get(STAKERS_PATH), b.get(METRICS_PATH)
    if not stakers:
        return []
    out = []
    rows = stakers["stakers"]
    if stakers["count"] != len(rows):
        out.append("/stakers: count does not match the list")
    for r in rows:
        if r["effectiveGGPStaked"] > r["ggpStaked"] * (1 + REL):
            out.append(f"/stakers: {r['stakerAddr']} effective stake exceeds its stake")
    if metrics:
        total = sum(r["ggpStaked"] for r in rows)
        if not math.isclose(total, metrics["total_ggp_staked"], rel_tol=1e-6, abs_tol=1e-6):
            out.append(f"/stakers: sum of ggpStaked {total} != total_ggp_staked {metrics['total_ggp_staked']}")
        if metrics["staker_count"] != len(rows):
            out.append(f"/stakers: {len(rows)} stakers but staker_count is {metrics['staker_count']}")
    missing = [r["stakerAddr"] for r in rows if f"/stakers/{r['stakerAddr'].lower()}" not in b]
    if missing and any(p.startswith("/stakers/") for p in b):
        out.append(f"/stakers: {len(missing)} stakers have no /stakers/{{address}} file")
    return out


def minipool_counts(b: Mapping, run: Run) -> list[str]:
    """The status counts add up to the list, and /metrics counts as many."""
    minipools, metrics = b.get(MINIPOOLS_PATH), b.get(METRICS_PATH)
    if not minipools:
        return []
    out = []
    counts = minipools["countsByStatus"]
    if sum(counts.values()) != minipools["count"] or minipools["count"] != len(minipools["minipools"]):
        out.append("/minipools: status counts do not add up to the minipool count")
    if metrics and metrics["minipool_count"] != minipools["count"]:
        out.append("/minipools: count differs from /metrics minipool_count")
    return out


@endpoint(
    STAKERS_PATH, tag="Node operators", summary="Every GGP staker",
    description="All stakers registered in the protocol's Staking contract with their on-chain fields (token amounts in whole "
                "tokens), their collateralization, effective GGP stake, eligibility and minipool counts.",
    schema=S.obj({
        "stakers": S.described(S.array(STAKER), "every staker; read by CLI tutorials and analysts (stakerAddr, avaxValidating and the other Staker fields)"),
        "count": S.described(COUNT, "number of stakers"),
        "meta": S.META,
    }),
    checks=(Check(stakers_hold, {
        STAKERS_PATH: ("count", "stakers[].stakerAddr", "stakers[].ggpStaked", "stakers[].effectiveGGPStaked"),
        METRICS_PATH: ("total_ggp_staked", "staker_count"),
        STAKER_PATH: (),
    }),),
)
def stakers(ctx: Context):
    pools = ctx.cached(staker_minipools)
    items = tuple((st, pools.get(st.staker_addr, ())) for st in ctx.snap.stakers)
    yield "/stakers", Deferred((Each(staker_row, items), len(items)), stakers_body, meta=meta(ctx))


def staker_row(item: tuple[Staker, tuple[Minipool, ...]]) -> dict:
    st, mine = item
    return staker_record(st, mine)


def stakers_body(rows: list, count: int) -> dict:
    return {"stakers": rows, "count": count}


# What a node operator leaving can take out now, by the contracts' rules.
LEAVING = S.obj({
    "withdrawableGGP": S.described(TOKENS, "GGP that Staking.withdrawGGP lets the staker take now, whole GGP: 0 while "
                                           "its GGP is locked (ggpLockedUntil); else all of it when no AVAX is assigned, "
                                           "or what is above the maximum collateralization (MaxCollateralizationRatio, "
                                           "150 % on mainnet) of the AVAX still assigned, at the Oracle's GGP price"),
    "withdrawableGGPWei": S.described(S.WEI, "withdrawableGGP in wei, exact"),
    "ggpKeptBy": {"enum": [None, "lock", "collateral"], "description": "what keeps GGP staked from being withdrawn "
                  "now: the lock, the collateral its assigned AVAX needs, or nothing (null)"},
    "minipoolFunds": S.described(S.array(S.obj({
        "nodeID": S.described(S.NODE_ID, "the minipool's NodeID"),
        "avax": S.described(TOKENS, "AVAX withdrawMinipoolFunds pays: the operator's AVAX and its reward, whole AVAX"),
        "avaxWei": S.described(S.WEI, "avax in wei, exact"),
    })), "the staker's minipools in Withdrawable or Error, whose AVAX MinipoolManager.withdrawMinipoolFunds(nodeID) "
         "pays the owner (it is not stopped by a pause)"),
    "ggpRewardsClaimable": S.described(S.BOOLEAN, "whether it has unclaimed GGP rewards to claim now: "
                                                  "ClaimNodeOp.claimAndRestake checks no pause flag"),
    "advice": S.described(S.STRING, "what the staker can take out now, and what it cannot, in words"),
}, description="what a node operator leaving can take out now")


@endpoint(
    STAKER_PATH, tag="Node operators", summary="One staker with its minipools",
    description="The staker record of /stakers, its minipools, its rewards view (as /rewards/{address}, whose "
                "next-cycle estimate is answered at /rewards/estimate?address=) and what it can take out now "
                "(`leaving`: GGP that withdrawGGP allows, minipools whose AVAX withdrawMinipoolFunds pays, rewards "
                "to claim). No run timestamp: the file changes only when what it is made from does: the staker's "
                "own inputs, the rewards params its view is told with, the Oracle's GGP price, or its GGP lock's "
                "lifting.",
    schema=S.obj({
        "staker": S.described(STAKER, "the staker record, as in /stakers"),
        "minipools": S.described(S.array(MINIPOOL), "the staker's minipools"),
        "rewards": S.described(ADDRESS_REWARDS, "the staker's rewards view, as /rewards/{address}"),
        "leaving": LEAVING,
    }),
    params=(ADDRESS_PARAM,),
)
def staker(ctx: Context):
    pools = ctx.cached(staker_minipools)
    terms = ctx.cached(staker_terms)
    then = ctx.cached(distribution_stakes)
    s = ctx.snap
    now = s.block.timestamp
    rules = (s.oracle.price, s.settings.max_collateralization_ratio)
    for st in ctx.own(s.stakers):
        # The block's time enters as whether the lock still holds: the file changes when it lifts, not each block.
        yield f"/stakers/{staker_path(st.staker_addr)}", Deferred(
            (st, pools.get(st.staker_addr, ()), terms, then[st.staker_addr], rules, now < st.ggp_locked_until), staker_body)


def staker_body(st: Staker, mine: tuple[Minipool, ...], terms: StakerTerms, then: DistributionStake,
                rules: tuple[int, int], locked: bool) -> dict:
    return {"staker": staker_record(st, mine), "minipools": [minipool_record(m) for m in mine],
            "rewards": staker_rewards(st, terms, then), "leaving": leaving_record(st, mine, rules, locked)}


def _floor(wei: int) -> str:
    """GGP wei as whole GGP rounded down to 4 decimals, exactly (an upper bound must not be shown
    above itself); a positive amount below that reads "less than 0.0001", never 0."""
    if 0 < wei < 10**14:
        return "less than 0.0001"
    return f"{wei // 10**18:,}.{wei // 10**14 % 10**4:04d}".rstrip("0").rstrip(".")


def leaving_record(st: Staker, mine: tuple[Minipool, ...], rules: tuple[int, int], locked: bool) -> dict:
    """What the staker can take out now (``LEAVING``); ``rules``: the Oracle's GGP price and the
    maximum collateralization ratio (MaxCollateralizationRatio)."""
    price, max_ratio = rules
    ggp = R.withdrawable_ggp(st.ggp_staked, st.avax_assigned, price, max_ratio, locked)
    free = R.withdrawable_ggp(st.ggp_staked, st.avax_assigned, price, max_ratio, False)  # once the lock lifts
    kept = None if ggp == st.ggp_staked else "lock" if locked else "collateral"
    funds = [(m, m.avax_node_op_amt + m.avax_node_op_reward_amt) for m in mine
             if m.status in (MinipoolStatus.WITHDRAWABLE, MinipoolStatus.ERROR)]
    said = [f"Minipool {node_id(m.node_id)}: withdrawMinipoolFunds pays you {svg.number(tokens(a))} AVAX" for m, a in funds]
    staked, ratio = _floor(st.ggp_staked), f"{svg.number(max_ratio / 10**16)} %"
    collateral = f"collateralizes the AVAX still assigned to your minipools at {ratio} (MaxCollateralizationRatio)"
    if not st.ggp_staked:
        said.append("No GGP is staked to withdraw")
    elif ggp == st.ggp_staked:
        said.append(f"All {staked} GGP you have staked can be withdrawn (withdrawGGP)")
    elif ggp:
        said.append(f"Up to {_floor(ggp)} GGP of your {staked} staked can be withdrawn (withdrawGGP): the rest {collateral}")
    elif locked:
        after = ("all of it" if free == st.ggp_staked else f"up to {_floor(free)} GGP (the rest {collateral})" if free
                 else f"none either: it {collateral} or less")
        said.append(f"None of your {staked} GGP staked can be withdrawn now: it is locked until "
                    f"{when(st.ggp_locked_until)}; after that, {after}")
    else:
        said.append(f"None of your {staked} GGP staked can be withdrawn now: it {collateral} or less")
    # ClaimNodeOp.claimAndRestake checks no pause (its flag is set in the wind-down all the same).
    if st.ggp_rewards:
        said.append(f"Your {svg.number(tokens(st.ggp_rewards))} GGP of rewards can be claimed (ClaimNodeOp.claimAndRestake)")
    advice = ". ".join(said) + "."
    return {"withdrawableGGP": tokens(ggp), "withdrawableGGPWei": str(ggp), "ggpKeptBy": kept,
            "minipoolFunds": [{"nodeID": node_id(m.node_id), "avax": tokens(a), "avaxWei": str(a)} for m, a in funds],
            "ggpRewardsClaimable": st.ggp_rewards > 0, "advice": advice}


@endpoint(
    MINIPOOLS_PATH, tag="Node operators", summary="Every minipool",
    description="All minipools by index, status as name and code, NodeID and txID in Avalanche's CB58 form.",
    schema=S.obj({
        "minipools": S.described(S.array(MINIPOOL), "every minipool, by index"),
        "count": S.described(COUNT, "number of minipools"),
        "countsByStatus": S.obj({n: S.described(COUNT, f"minipools in status {n}") for n in STATUS_LABELS},
                                description="minipools per status"),
        "meta": S.META,
    }),
    checks=(Check(minipool_counts, {MINIPOOLS_PATH: ("countsByStatus", "count", "minipools[]"),
                                    METRICS_PATH: ("minipool_count",)}),),
)
def minipools(ctx: Context):
    s = ctx.snap
    yield "/minipools", Deferred((Each(minipool_record, s.minipools), s.minipools), minipools_body, meta=meta(ctx))


def minipools_body(rows: list, pools: tuple[Minipool, ...]) -> dict:
    return {"minipools": rows, "count": len(pools), "countsByStatus": status_counts(pools)}


@endpoint(
    "/minipools/{nodeID}", tag="Node operators", summary="One minipool",
    description="One minipool by its NodeID (`NodeID-…`).",
    schema=S.obj({"minipool": S.described(MINIPOOL, "the minipool record, as in /minipools")}),
    params=(Param("nodeID", "path", "Avalanche NodeID of the minipool", S.NODE_ID),),
)
def minipool(ctx: Context):
    for m in ctx.own(ctx.snap.minipools):
        yield f"/minipools/{node_id(m.node_id)}", Deferred((m,), minipool_body)


def minipool_body(m: Minipool) -> dict:
    return {"minipool": minipool_record(m)}


PROVIDER = S.obj({
    "source": {"enum": ["glacier", "pchain"], "description": "where the record comes from: the Glacier API or the P-Chain node"},
    "txHash": S.described(S.STRING, "the P-Chain transaction that added the validator"),
    "startTimestamp": S.described(S.TIMESTAMP, "validation start, unix seconds"),
    "endTimestamp": S.described(S.TIMESTAMP, "validation end, unix seconds"),
    "amountStaked": S.described(TOKENS, "AVAX staked by the validator, whole AVAX"),
    "amountDelegated": S.described(TOKENS, "AVAX delegated to it, whole AVAX"),
    "delegationFeePct": S.described(S.PERCENT, "fee it charges delegators, percent"),
    "delegatorCount": S.described(COUNT, "number of delegators"),
    "uptimePct": S.described(S.nullable(S.PERCENT), "uptime as the provider measures it, percent (null when unknown)"),
    "potentialValidationReward": S.described(TOKENS, "reward for the period if uptime suffices, whole AVAX"),
    "potentialDelegationReward": S.described(TOKENS, "delegation fees for the period, whole AVAX"),
    "avalanchegoVersion": S.described(S.nullable(S.STRING), "node software version (null when unknown)"),
})


@endpoint(
    "/validators", tag="Node operators", summary="The protocol's active validators",
    description="Minipools in Launched or Staking joined with the validator data provider's record (uptime, "
                "stake, delegation, period, potential reward in AVAX). `provider` is null for a node the "
                "provider does not list; those NodeIDs are also in `missing`, but for the minipools whose "
                "validation period has ended (`validationEnded`): no provider lists those any more, and "
                "MinipoolManager still says Staking until Rialto records the end.",
    schema=S.obj({
        "validators": S.described(S.array(S.obj({
            "minipool": S.described(MINIPOOL, "the minipool record, as in /minipools"),
            "provider": S.described(S.nullable(PROVIDER), "the provider's validator record; null when it does not list the node"),
            "validationEnded": S.described(S.BOOLEAN, "the minipool's validation period has ended by this block (the "
                                           "provider's end time, else the record's start plus one minipool cycle or "
                                           "the rest of its duration) and MinipoolManager has not recorded the end "
                                           "yet: it no longer validates, and its AVAX returns when Rialto records "
                                           "the end"),
        })), "one per minipool in Launched or Staking"),
        "count": S.described(COUNT, "number of validators listed"),
        "missing": S.described(S.array(S.NODE_ID), "NodeIDs the provider does not list, but for those whose "
                                                   "validation period has ended"),
        "source": S.described(S.nullable(S.STRING), "the validator data provider used (null when none answered)"),
        "meta": S.META,
    }),
)
def validators(ctx: Context):
    s = ctx.snap
    by_node = {v.node_id: v for v in s.validators}
    ended = unrecorded_ends(s.minipools, s.settings.minipool_cycle_duration, s.block.timestamp, by_node)
    active = tuple((m, by_node.get(nid), nid in ended) for m in s.minipools
                   if m.status in ACTIVE_STATUSES for nid in (node_id(m.node_id),))
    yield "/validators", Deferred((Each(validator_row, active), len(active), s.missing_validators, s.validator_source),
                                  validators_body, meta=meta(ctx))


def validators_body(rows: list, count: int, missing: tuple[str, ...], source: str | None) -> dict:
    return {"validators": rows, "count": count, "missing": list(missing), "source": source}


def validator_row(item: tuple[Minipool, Validator | None, bool]) -> dict:
    """An active minipool with the provider's record of its node (None: the provider does not list
    it) and whether its validation period has ended unrecorded."""
    m, v, ended = item
    return {"minipool": minipool_record(m), "validationEnded": ended, "provider": None if v is None else {
        "source": v.source, "txHash": v.tx_hash, "startTimestamp": v.start_timestamp,
        "endTimestamp": v.end_timestamp, "amountStaked": tokens(v.amount_staked, 9),
        "amountDelegated": tokens(v.amount_delegated, 9), "delegationFeePct": float(Decimal(v.delegation_fee_pct)),
        "delegatorCount": v.delegator_count,
        "uptimePct": float(Decimal(v.uptime_pct)) if v.uptime_pct is not None else None,
        "potentialValidationReward": tokens(v.validation_reward, 9),
        "potentialDelegationReward": tokens(v.delegation_reward, 9),
        "avalanchegoVersion": v.avalanchego_version,
    }}
