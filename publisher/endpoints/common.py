"""Values several endpoints share, computed once per build through ``Context.cached``."""
from __future__ import annotations

from collections.abc import Sequence

from ..compute.nodeid import node_id, tx_id
from ..compute.prices import stale_oracle, usd_prices
from ..compute.rewards import UINT256_MAX
from ..errors import PublisherError
from ..protocol import ACTIVE_STATUSES, STATUS_LABELS
from ..snapshot import Minipool, Staker
from .context import Context
from .units import pct_wad, tokens


def status_counts(minipools) -> dict[str, int]:
    """Minipools per status name, every status present (zero when none)."""
    counts = dict.fromkeys(STATUS_LABELS, 0)
    for m in minipools:
        counts[STATUS_LABELS[m.status]] += 1
    return counts


def meta(ctx: Context) -> dict:
    s = ctx.snap
    return {"network": s.network, "chainId": s.chain_id,
            "block": {"number": s.block.number, "hash": s.block.hash, "timestamp": s.block.timestamp}}


def usd(ctx: Context) -> dict:
    """Exact AVAX/USD, GGP/AVAX and GGP/USD (compute/prices.py); the API needs the feed."""
    values = usd_prices(ctx.snap)
    if values is None:
        raise PublisherError("no AVAX/USD feed in the snapshot: configure avax_usd_feed for this network")
    return values


def oracle_staleness(ctx: Context) -> str | None:
    """Why the Oracle's GGP price is stale at this block (None when it is not)."""
    return stale_oracle(ctx.snap, ctx.oracle_max_age)


def staker_minipools(ctx: Context) -> dict[str, tuple[Minipool, ...]]:
    """Each owner's minipools, as tuples: they are inputs of the owner's files."""
    out: dict[str, list[Minipool]] = {}
    for m in ctx.snap.minipools:
        out.setdefault(m.owner, []).append(m)
    return {owner: tuple(pools) for owner, pools in out.items()}


def minipool_record(m: Minipool) -> dict:
    code = bytes.fromhex(m.error_code[2:]).rstrip(b"\0")
    return {
        "index": m.index,
        "nodeID": node_id(m.node_id),
        "nodeIDHex": m.node_id,
        "status": STATUS_LABELS[m.status] if m.status < len(STATUS_LABELS) else "Unknown",
        "statusCode": m.status,
        "duration": m.duration,
        "delegationFee": m.delegation_fee,
        "owner": m.owner,
        "multisigAddr": m.multisig_addr,
        "avaxNodeOpAmt": tokens(m.avax_node_op_amt),
        "avaxNodeOpInitialAmt": tokens(m.avax_node_op_initial_amt),
        "avaxLiquidStakerAmt": tokens(m.avax_liquid_staker_amt),
        "blsPubkeyAndSig": m.bls_pubkey_and_sig if len(m.bls_pubkey_and_sig) > 2 else None,
        "txID": tx_id(m.tx_id),
        "creationTime": m.creation_time,
        "initialStartTime": m.initial_start_time,
        "startTime": m.start_time,
        "endTime": m.end_time,
        "avaxTotalRewardAmt": tokens(m.avax_total_reward_amt),
        "errorCode": code.decode("ascii", "replace") if code else None,
        "ggpSlashAmt": tokens(m.ggp_slash_amt),
        "avaxNodeOpRewardAmt": tokens(m.avax_node_op_reward_amt),
        "avaxLiquidStakerRewardAmt": tokens(m.avax_liquid_staker_reward_amt),
        "hardwareProvider": m.hardware_provider if int(m.hardware_provider, 16) else None,
    }


def staker_record(st: Staker, pools: Sequence[Minipool]) -> dict:
    counts = status_counts(pools)
    return {
        "stakerAddr": st.staker_addr,
        "avaxAssigned": tokens(st.avax_assigned),
        "avaxStaked": tokens(st.avax_staked),
        "avaxValidating": tokens(st.avax_validating),
        "avaxValidatingHighWater": tokens(st.avax_validating_high_water),
        "ggpRewards": tokens(st.ggp_rewards),
        "ggpStaked": tokens(st.ggp_staked),
        "lastRewardsCycleCompleted": st.last_rewards_cycle_completed,
        "rewardsStartTime": st.rewards_start_time,
        "ggpLockedUntil": st.ggp_locked_until,
        # getCollateralizationRatio answers uint256 max when nothing is assigned: no ratio.
        "collateralizationRatioPct": None if st.collateralization_ratio == UINT256_MAX else pct_wad(st.collateralization_ratio),
        "effectiveRewardsRatioPct": pct_wad(st.effective_rewards_ratio),
        "effectiveGGPStaked": tokens(st.effective_ggp_staked),
        "eligible": st.eligible,
        "minipoolCount": len(pools),
        "activeMinipoolCount": sum(1 for m in pools if m.status in ACTIVE_STATUSES),
        "minipoolCounts": counts,
    }
