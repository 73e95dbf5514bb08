"""Node operators: stakers, minipools and the protocol's active validators."""
from __future__ import annotations

from decimal import Decimal

from ..chain.abis import ACTIVE_STATUSES, MINIPOOL_STATUSES
from ..compute.nodeid import node_id
from . import schema as S
from .common import meta, minipool_record, staker_minipools, staker_record, status_counts
from .context import Context
from .registry import Deferred, Param, endpoint
from .units import tokens
from .rewards import ADDRESS_REWARDS, rewards_inputs, staker_rewards

TOKENS = S.NON_NEGATIVE
COUNT = {"type": "integer", "minimum": 0}

STAKER = S.obj({
    "stakerAddr": S.ADDRESS, "avaxAssigned": TOKENS, "avaxStaked": TOKENS, "avaxValidating": TOKENS,
    "avaxValidatingHighWater": TOKENS, "ggpRewards": TOKENS, "ggpStaked": TOKENS,
    "lastRewardsCycleCompleted": COUNT, "rewardsStartTime": S.TIMESTAMP, "ggpLockedUntil": S.TIMESTAMP,
    "collateralizationRatioPct": S.described(S.nullable(S.PERCENT), "GGP staked (in AVAX) over AVAX assigned; null when nothing is assigned"),
    "effectiveRewardsRatioPct": S.PERCENT,
    "effectiveGGPStaked": S.described(TOKENS, "GGP counted for rewards (Staking.getEffectiveGGPStaked)"),
    "eligible": S.described(S.BOOLEAN, "ClaimNodeOp.isEligible at the build block"),
    "minipoolCount": COUNT, "activeMinipoolCount": COUNT,
    "minipoolCounts": S.obj({n: COUNT for n in MINIPOOL_STATUSES}),
})

MINIPOOL = S.obj({
    "index": COUNT, "nodeID": S.NODE_ID, "nodeIDHex": S.ADDRESS, "status": {"enum": list(MINIPOOL_STATUSES)},
    "statusCode": {"type": "integer", "minimum": 0, "maximum": 6}, "duration": COUNT,
    "delegationFee": S.described(COUNT, "P-Chain delegation fee in 1e-4 percent (20000 = 2 %)"),
    "owner": S.ADDRESS, "multisigAddr": S.ADDRESS, "avaxNodeOpAmt": TOKENS, "avaxNodeOpInitialAmt": TOKENS,
    "avaxLiquidStakerAmt": TOKENS, "blsPubkeyAndSig": S.nullable(S.HEX), "txID": S.nullable(S.STRING),
    "creationTime": S.TIMESTAMP, "initialStartTime": S.TIMESTAMP, "startTime": S.TIMESTAMP, "endTime": S.TIMESTAMP,
    "avaxTotalRewardAmt": TOKENS, "errorCode": S.nullable(S.STRING), "ggpSlashAmt": TOKENS,
    "avaxNodeOpRewardAmt": TOKENS, "avaxLiquidStakerRewardAmt": TOKENS, "hardwareProvider": S.nullable(S.HEX),
})

ADDRESS_PARAM = Param("address", "path", "Staker address. Canonical paths use the lower-case hex; the "
                      "checksummed form is accepted and normalized by the CDN and `publisher serve`.",
                      {"type": "string", "pattern": "^0x[0-9a-fA-F]{40}$"}, lowercase=True)


def staker_path(address: str) -> str:
    """One file per staker, keyed by the lower-case address (checksummed URLs are normalized to it)."""
    return address.lower()


@endpoint(
    "/stakers", tag="Node operators", summary="Every GGP staker",
    description="All stakers from Staking.getStakers with the Staker struct fields (token amounts in whole "
                "tokens), their collateralization, effective GGP stake, eligibility and minipool counts.",
    schema=S.obj({"stakers": S.array(STAKER), "count": COUNT, "meta": S.META}),
)
def stakers(ctx: Context):
    def make():
        pools = ctx.cached(staker_minipools)
        rows = [staker_record(st, pools.get(st.staker_addr, [])) for st in ctx.snap.stakers]
        return {"stakers": rows, "count": len(rows), "meta": meta(ctx)}
    yield "/stakers", Deferred((ctx.snap.stakers, ctx.snap.minipools), make)


@endpoint(
    "/stakers/{address}", tag="Node operators", summary="One staker with its minipools",
    description="The staker record of /stakers, its minipools and its rewards view (as /rewards/{address}). "
                "No run timestamp: the file changes only when the staker or the inputs of its estimate do.",
    schema=S.obj({"staker": STAKER, "minipools": S.array(MINIPOOL), "rewards": ADDRESS_REWARDS}),
    params=(ADDRESS_PARAM,),
)
def staker(ctx: Context):
    pools = ctx.cached(staker_minipools)
    shared = ctx.cached(rewards_inputs)
    for st in ctx.snap.stakers:
        mine = pools.get(st.staker_addr, [])
        yield f"/stakers/{staker_path(st.staker_addr)}", Deferred((st, mine, shared), lambda st=st, mine=mine: {
            "staker": staker_record(st, mine), "minipools": [minipool_record(m) for m in mine],
            "rewards": staker_rewards(ctx, st),
        })


@endpoint(
    "/minipools", tag="Node operators", summary="Every minipool",
    description="All minipools by index, status as name and code, NodeID and txID in Avalanche's CB58 form.",
    schema=S.obj({"minipools": S.array(MINIPOOL), "count": COUNT,
                  "countsByStatus": S.obj({n: COUNT for n in MINIPOOL_STATUSES}), "meta": S.META}),
)
def minipools(ctx: Context):
    def make():
        rows = [minipool_record(m) for m in ctx.snap.minipools]
        counts = status_counts(ctx.snap.minipools)
        return {"minipools": rows, "count": len(rows), "countsByStatus": counts, "meta": meta(ctx)}
    yield "/minipools", Deferred(ctx.snap.minipools, make)


@endpoint(
    "/minipools/{nodeID}", tag="Node operators", summary="One minipool",
    description="One minipool by its NodeID (`NodeID-…`).",
    schema=S.obj({"minipool": MINIPOOL}),
    params=(Param("nodeID", "path", "Avalanche NodeID of the minipool", S.NODE_ID),),
)
def minipool(ctx: Context):
    for m in ctx.snap.minipools:
        yield f"/minipools/{node_id(m.node_id)}", Deferred(m, lambda m=m: {"minipool": minipool_record(m)})


PROVIDER = S.obj({
    "source": {"enum": ["glacier", "pchain"]}, "txHash": S.STRING, "startTimestamp": S.TIMESTAMP,
    "endTimestamp": S.TIMESTAMP, "amountStaked": TOKENS, "amountDelegated": TOKENS,
    "delegationFeePct": S.PERCENT, "delegatorCount": COUNT, "uptimePct": S.nullable(S.PERCENT),
    "potentialValidationReward": TOKENS, "potentialDelegationReward": TOKENS,
    "avalanchegoVersion": S.nullable(S.STRING),
})


@endpoint(
    "/validators", tag="Node operators", summary="The protocol's active validators",
    description="Minipools in Launched or Staking joined with the validator data provider's record (uptime, "
                "stake, delegation, period, potential reward in AVAX). `provider` is null for a node the "
                "provider does not list; those NodeIDs are also in `missing`.",
    schema=S.obj({"validators": S.array(S.obj({"minipool": MINIPOOL, "provider": S.nullable(PROVIDER)})),
                  "count": COUNT, "missing": S.array(S.NODE_ID), "source": S.nullable(S.STRING), "meta": S.META}),
)
def validators(ctx: Context):
    s = ctx.snap
    inputs = (s.minipools, s.validators, s.missing_validators, s.validator_source)
    yield "/validators", Deferred(inputs, lambda: validators_body(ctx))


def validators_body(ctx: Context) -> dict:
    s = ctx.snap
    by_node = {v.node_id: v for v in s.validators}
    rows = []
    for m in s.minipools:
        if m.status in ACTIVE_STATUSES:
            v = by_node.get(node_id(m.node_id))
            rows.append({"minipool": minipool_record(m), "provider": None if v is None else {
                "source": v.source, "txHash": v.tx_hash, "startTimestamp": v.start_timestamp,
                "endTimestamp": v.end_timestamp, "amountStaked": tokens(v.amount_staked, 9),
                "amountDelegated": tokens(v.amount_delegated, 9), "delegationFeePct": float(Decimal(v.delegation_fee_pct)),
                "delegatorCount": v.delegator_count,
                "uptimePct": float(Decimal(v.uptime_pct)) if v.uptime_pct is not None else None,
                "potentialValidationReward": tokens(v.validation_reward, 9),
                "potentialDelegationReward": tokens(v.delegation_reward, 9),
                "avalanchegoVersion": v.avalanchego_version,
            }})
    return {"validators": rows, "count": len(rows), "missing": list(s.missing_validators),
            "source": s.validator_source, "meta": meta(ctx)}
