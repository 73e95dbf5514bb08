"""The ggAVAX (stAVAX) vault and the protocol metrics: /ggAvax, /metrics, /metrics/apy."""
from __future__ import annotations

from fractions import Fraction

from ..protocol import ACTIVE_STATUSES, STATUS_LABELS, MinipoolStatus
from ..compute.apy import ggavax_apy
from . import schema as S
from .common import meta, status_counts, usd
from .context import Context
from .registry import endpoint
from .rewards import metrics_fields
from .units import WAD, tokens

AVAX = S.NON_NEGATIVE


def apy(ctx: Context):
    return ggavax_apy(ctx.snap)


def tvl_avax(ctx: Context) -> Fraction:
    """ggAVAX assets + operators' AVAX in Staking minipools + staked GGP at the oracle price (§7.10)."""
    s = ctx.snap
    node_op = sum(m.avax_node_op_amt for m in s.minipools if m.status == MinipoolStatus.STAKING)
    return Fraction(s.ggavax.total_assets + node_op, WAD) + Fraction(s.total_ggp_stake * s.oracle.price, WAD * WAD)


@endpoint(
    "/ggAvax", tag="Liquid staking", summary="The ggAVAX (stAVAX) liquid staking pool",
    description="Amounts in the liquid staking vault (TokenggAVAX), in whole AVAX. `pendingRewards` is AVAX "
                "received but not yet streamed (queued for the next sync); `exchangeRate` is AVAX per ggAVAX; "
                "`availableMinipools` is how many minimum-size minipools the vault can fund now.",
    schema=S.obj({
        "address": S.ADDRESS, "name": S.STRING, "symbol": S.STRING,
        "totalAssets": AVAX, "totalReleasedAssets": AVAX, "stakingTotalAssets": AVAX,
        "amountAvailableForStaking": AVAX, "reserveTarget": AVAX, "liquidAvax": AVAX,
        "pendingRewards": AVAX, "streamingRewardsRemaining": AVAX, "lastRewardsAmt": AVAX,
        "lastSync": S.TIMESTAMP, "rewardsCycleEnd": S.TIMESTAMP, "rewardsCycleLength": S.INTEGER,
        "totalSupply": S.NON_NEGATIVE, "exchangeRate": S.described(S.NON_NEGATIVE, "AVAX per ggAVAX"),
        "feePct": S.PERCENT, "minipoolLiquidStakerAvax": AVAX, "availableMinipools": {"type": "integer", "minimum": 0},
        "depositsPaused": S.BOOLEAN, "meta": S.META,
    }),
)
def ggavax(ctx: Context):
    s = ctx.snap
    v = s.ggavax
    reserve = v.total_assets * s.settings.target_ggavax_reserve_rate // WAD
    pending = max(0, v.liquid_avax + v.staking_total_assets - v.total_released_assets - v.last_rewards_amt)
    streamed = v.total_assets - v.total_released_assets
    yield "/ggAvax", {
        "address": s.addresses["TokenggAVAX"], "name": v.name, "symbol": v.symbol,
        "totalAssets": tokens(v.total_assets), "totalReleasedAssets": tokens(v.total_released_assets),
        "stakingTotalAssets": tokens(v.staking_total_assets),
        "amountAvailableForStaking": tokens(v.amount_available_for_staking),
        "reserveTarget": tokens(reserve), "liquidAvax": tokens(v.liquid_avax),
        "pendingRewards": tokens(pending), "streamingRewardsRemaining": tokens(max(0, v.last_rewards_amt - streamed)),
        "lastRewardsAmt": tokens(v.last_rewards_amt), "lastSync": v.last_sync,
        "rewardsCycleEnd": v.rewards_cycle_end, "rewardsCycleLength": v.rewards_cycle_length,
        "totalSupply": tokens(v.total_supply), "exchangeRate": tokens(v.assets_per_share),
        "feePct": s.settings.fee_bips / 100,
        "minipoolLiquidStakerAvax": tokens(s.total_avax_liquid_staker_amt),
        "availableMinipools": v.amount_available_for_staking // max(1, s.settings.minipool_min_avax_assignment),
        "depositsPaused": bool(s.paused.get("TokenggAVAX")),
        "meta": meta(ctx),
    }


STATUS_KEYS = {f"minipools_{n.lower()}": {"type": "integer", "minimum": 0} for n in STATUS_LABELS}


@endpoint(
    "/metrics", tag="Metrics", summary="Protocol metrics",
    description="Headline numbers in snake_case, as yield aggregators read them. `ggavax_apy` is the ggAVAX "
                "APY after fees in percent (null with `ggavax_apy_note` when the share-price history is "
                "unavailable); `total_assets` is ggAVAX totalAssets in AVAX; `tvl_avax` adds the operators' "
                "AVAX in staking minipools and staked GGP at the oracle price.",
    schema=S.obj({
        "ggavax_apy": S.nullable(S.PERCENT), "ggavax_apy_note": S.STRING, "total_assets": AVAX,
        "ggavax_total_supply": S.NON_NEGATIVE, "ggavax_exchange_rate": S.NON_NEGATIVE,
        "ggp_price_in_avax": S.NON_NEGATIVE, "ggp_price_usd": S.NON_NEGATIVE, "avax_price_usd": S.NON_NEGATIVE,
        "total_ggp_staked": S.NON_NEGATIVE, "effective_ggp_staked": S.NON_NEGATIVE,
        "staker_count": {"type": "integer", "minimum": 0}, "minipool_count": {"type": "integer", "minimum": 0},
        **STATUS_KEYS, "minipools_active": {"type": "integer", "minimum": 0},
        "tvl_avax": S.NON_NEGATIVE, "tvl_usd": S.NON_NEGATIVE,
        "rewards_cycle_count": S.INTEGER, "rewards_cycle_start": S.TIMESTAMP, "rewards_cycle_end": S.TIMESTAMP,
        "ggp_total_supply": S.NON_NEGATIVE, "ggp_max_supply": S.NON_NEGATIVE, "meta": S.META,
        "next_cycle_nodeop_ggp": S.NON_NEGATIVE, "last_cycle_nodeop_ggp": S.NON_NEGATIVE,
        "nodeop_apr_min": S.PERCENT, "nodeop_apr_max": S.PERCENT,
    }),
)
def metrics(ctx: Context):
    s, u, a = ctx.snap, ctx.cached(usd), ctx.cached(apy)
    counts = {f"minipools_{name.lower()}": n for name, n in status_counts(s.minipools).items()}
    tvl = ctx.cached(tvl_avax)
    body = {
        "ggavax_apy": a.after_fees_pct, "ggavax_apy_note": a.note, "total_assets": tokens(s.ggavax.total_assets),
        "ggavax_total_supply": tokens(s.ggavax.total_supply), "ggavax_exchange_rate": tokens(s.ggavax.assets_per_share),
        "ggp_price_in_avax": float(u["ggp_in_avax"]), "ggp_price_usd": float(u["ggp_usd"]), "avax_price_usd": float(u["avax_usd"]),
        "total_ggp_staked": tokens(s.total_ggp_stake),
        "effective_ggp_staked": tokens(sum(st.effective_ggp_staked for st in s.stakers)),
        "staker_count": s.staker_count, "minipool_count": s.minipool_count, **counts,
        "minipools_active": sum(1 for m in s.minipools if m.status in ACTIVE_STATUSES),
        "tvl_avax": float(tvl), "tvl_usd": float(tvl * u["avax_usd"]),
        "rewards_cycle_count": s.rewards_pool.cycle_count, "rewards_cycle_start": s.rewards_pool.cycle_start_time,
        "rewards_cycle_end": s.rewards_pool.cycle_start_time + s.settings.rewards_cycle_seconds,
        "last_cycle_nodeop_ggp": tokens(s.rewards_pool.nodeop_cycle_total),
        "ggp_total_supply": tokens(s.ggp.total_supply), "ggp_max_supply": tokens(s.ggp.max_supply),
        "meta": meta(ctx),
    }
    body.update(metrics_fields(ctx))
    yield "/metrics", body


@endpoint(
    "/metrics/apy", tag="Metrics", summary="ggAVAX APY",
    description="ggAVAX APY from the share price (convertToAssets(1e18)) over the configured window: "
                "`total_apy_after_fees` is what holders earned, `total_apy` grosses it up by the protocol fee. "
                "`stream_apr` is the current reward stream annualized. `method` names the earlier share price "
                "used (`archive` state at the window start, `history` recorded by earlier runs, at least 7 "
                "days back, or the current reward `stream`), `window_days` the span, `note` the formula; "
                "null figures come with the reason in `note`.",
    schema=S.obj({
        "total_apy": S.nullable(S.PERCENT), "total_apy_after_fees": S.nullable(S.PERCENT), "fee_pct": S.PERCENT,
        "window_days": S.nullable(S.NON_NEGATIVE), "from_block": S.nullable(S.INTEGER), "to_block": S.INTEGER,
        "stream_apr": S.PERCENT, "method": S.nullable({"enum": ["archive", "history", "stream"]}),
        "note": S.STRING, "meta": S.META,
    }),
)
def metrics_apy(ctx: Context):
    a, s = ctx.cached(apy), ctx.snap
    yield "/metrics/apy", {
        "total_apy": a.gross_pct, "total_apy_after_fees": a.after_fees_pct, "fee_pct": s.settings.fee_bips / 100,
        "window_days": a.window_seconds / 86_400 if a.window_seconds else None,
        "from_block": a.from_block, "to_block": s.block.number, "stream_apr": a.stream_apr_pct,
        "method": a.method, "note": a.note, "meta": meta(ctx),
    }
