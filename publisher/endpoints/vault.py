"""The ggAVAX (stAVAX) vault and the protocol metrics: /ggAvax, /metrics, /metrics/apy."""
from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from ..compute.apy import ggavax_apy
from ..protocol import ACTIVE_STATUSES, STATUS_LABELS, MinipoolStatus
from . import schema as S
from .common import meta, oracle_staleness, status_counts, usd
from .context import Context
from .registry import Bound, Check, Limits, Run, endpoint
from .rewards import metrics_fields
from .units import WAD, tokens
from .withdrawals import queue_totals

AVAX = S.NON_NEGATIVE
VAULT_PATH = "/ggAvax"
METRICS_PATH = "/metrics"
APY_PATH = "/metrics/apy"


# ---- checks --------------------------------------------------------------------------------------


def vault_holds(b: Mapping, run: Run) -> list[str]:
    """The vault holding more for staking than in all."""
    out = []
    vault = b.get(VAULT_PATH)
    if vault and vault["amountAvailableForStaking"] > vault["totalAssets"]:
        out.append("/ggAvax: amountAvailableForStaking exceeds totalAssets")
    return out


def rates_in_range(b: Mapping, run: Run) -> list[str]:
    """Rates outside [0, 100) %."""
    out = []
    for path, keys in ((METRICS_PATH, ("ggavax_apy",)), (APY_PATH, ("total_apy", "total_apy_after_fees"))):
        for k in keys:
            v = (b.get(path) or {}).get(k)
            if v is not None and not 0 <= v < 100:
                out.append(f"{path}: {k} = {v} is outside [0, 100): refusing to publish an anomaly")
    return out


def staker_drop(old: Mapping, new: Mapping, limits: Limits) -> list[str]:
    """A staker count that dropped more than the bound since the previous run."""
    try:
        os_, ns = old[METRICS_PATH]["staker_count"], new[METRICS_PATH]["staker_count"]
        if os_ and (os_ - ns) / os_ * 100 > limits.max_staker_drop_pct:
            return [f"staker count dropped from {os_} to {ns} (bound {limits.max_staker_drop_pct}%)"]
    except (KeyError, ValueError, TypeError, ZeroDivisionError):
        pass  # a previous run we cannot read bounds nothing
    return []


def apy(ctx: Context):
    return ggavax_apy(ctx.snap)


def tvl_avax(ctx: Context) -> Fraction:
    """ggAVAX assets + operators' AVAX in Staking minipools + staked GGP at the oracle price (§7.10)."""
    s = ctx.snap
    node_op = sum(m.avax_node_op_amt for m in s.minipools if m.status == MinipoolStatus.STAKING)
    return Fraction(s.ggavax.total_assets + node_op, WAD) + Fraction(s.total_ggp_stake * s.oracle.price, WAD * WAD)


@endpoint(
    VAULT_PATH, tag="Liquid staking", summary="The ggAVAX (stAVAX) liquid staking pool",
    description="Amounts in the liquid staking vault (TokenggAVAX), in whole AVAX. `pendingRewards` is AVAX "
                "received but not yet streamed (queued for the next sync); `exchangeRate` is AVAX per ggAVAX; "
                "`availableMinipools` is how many minimum-size minipools the vault can fund now (0 while MinipoolManager is "
                "paused: no minipool can be created).",
    schema=S.obj({
        "address": S.described(S.ADDRESS, "the ggAVAX token (vault) contract"),
        "name": S.described(S.STRING, "token name"),
        "symbol": S.described(S.STRING, "token symbol"),
        "totalAssets": S.described(AVAX, "AVAX the vault holds for ggAVAX holders, including rewards streamed so far"),
        "totalReleasedAssets": S.described(AVAX, "AVAX the vault counted at its last sync, before the current reward stream"),
        "stakingTotalAssets": S.described(AVAX, "AVAX lent out to minipools that are staking"),
        "amountAvailableForStaking": S.described(AVAX, "AVAX the vault would lend to new minipools now, past its reserve: "
                                                 "the contract's amountAvailableForStaking(), which no pause changes "
                                                 "(while MinipoolManager is paused no minipool is created, and this AVAX "
                                                 "stays the withdrawal queue's liquidity)"),
        "reserveTarget": S.described(AVAX, "AVAX kept liquid for withdrawals (totalAssets x the target reserve rate)"),
        "liquidAvax": S.described(AVAX, "AVAX held by the vault itself (not in minipools)"),
        "pendingRewards": S.described(AVAX, "AVAX received but not yet streamed; queued for the next sync"),
        "streamingRewardsRemaining": S.described(AVAX, "AVAX of the current reward stream not yet released"),
        "lastRewardsAmt": S.described(AVAX, "AVAX being streamed in the current reward cycle"),
        "lastSync": S.described(S.TIMESTAMP, "the vault's last sync, unix seconds"),
        "rewardsCycleEnd": S.described(S.TIMESTAMP, "end of the current reward stream, unix seconds"),
        "rewardsCycleLength": S.described(S.INTEGER, "length of a reward stream in seconds"),
        "totalSupply": S.described(S.NON_NEGATIVE, "ggAVAX in circulation, whole tokens"),
        "exchangeRate": S.described(S.NON_NEGATIVE, "AVAX per ggAVAX"),
        "feePct": S.described(S.PERCENT, "protocol fee on liquid-staking rewards, percent"),
        "minipoolLiquidStakerAvax": S.described(AVAX, "liquid stakers' AVAX matched into minipools"),
        "availableMinipools": {"type": "integer", "minimum": 0, "description": "how many minimum-size minipools the vault "
                               "can fund now: 0 while MinipoolManager is paused (no minipool can be created)"},
        "depositsPaused": S.described(S.BOOLEAN, "true while deposits into the vault are paused"),
        "withdrawQueue": S.described(S.nullable(S.ADDRESS), "the WithdrawQueue contract, the only way to redeem ggAVAX (null where the network has none); see /withdrawals"),
        "queuePendingCount": S.described(S.nullable({"type": "integer", "minimum": 0}), "requests waiting in the withdrawal queue"),
        "queuePendingAvax": S.described(S.nullable(AVAX), "AVAX those requests are owed"),
        "queueFundedAvax": S.described(S.nullable(AVAX), "AVAX set aside for funded requests not yet claimed"),
        "queueLiquidityAvax": S.described(S.nullable(AVAX), "what the queue can pay from now (totalAssets − stakingTotalAssets)"),
        "meta": S.META,
    }),
    checks=(Check(vault_holds, {VAULT_PATH: ("amountAvailableForStaking", "totalAssets")}),),
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
        "availableMinipools": 0 if s.paused.get("MinipoolManager")
        else v.amount_available_for_staking // max(1, s.settings.minipool_min_avax_assignment),
        "depositsPaused": bool(s.paused.get("TokenggAVAX")),
        **queue_totals(ctx),
        "meta": meta(ctx),
    }


STATUS_KEYS = {f"minipools_{n.lower()}": {"type": "integer", "minimum": 0, "description": f"minipools in status {n}"}
               for n in STATUS_LABELS}


@endpoint(
    METRICS_PATH, tag="Metrics", summary="Protocol metrics",
    description="Headline numbers in snake_case, as yield aggregators read them. `ggavax_apy` is the ggAVAX "
                "APY after fees in percent, what the share price did (0 once nothing streams: see "
                "`ggavax_apy_note`); `total_assets` is ggAVAX totalAssets in AVAX; `tvl_avax` adds the operators' "
                "AVAX in staking minipools and staked GGP at the oracle price. `next_distribution_expected` says "
                "whether a GGP distribution to node operators is coming at all, with `no_distribution_reason`.",
    schema=S.obj({
        "ggavax_apy": S.described(S.nullable(S.PERCENT), "ggAVAX APY after fees, percent: the share price's growth over the window, annualized (0 once nothing has streamed over the window); null only when the share price is known at no earlier time and a stream starts at this block; read by the Balancer backend (divides by 100) and DefiLlama (as percent)"),
        "ggavax_apy_note": S.described(S.STRING, "how ggavax_apy was computed, whether the reward stream has ended, or why it is null"),
        "total_assets": S.described(AVAX, "ggAVAX totalAssets in whole AVAX; read by DefiLlama for TVL"),
        "ggavax_total_supply": S.described(S.NON_NEGATIVE, "ggAVAX in circulation, whole tokens"),
        "ggavax_exchange_rate": S.described(S.NON_NEGATIVE, "AVAX per ggAVAX"),
        "ggp_price_in_avax": S.described(S.NON_NEGATIVE, "AVAX per GGP (protocol Oracle)"),
        "ggp_price_usd": S.described(S.NON_NEGATIVE, "USD per GGP"),
        "ggp_price_stale": S.described(S.BOOLEAN, "true when the Oracle's GGP price is older than the network's bound: ggp_price_in_avax, ggp_price_usd and the GGP part of tvl_avax/tvl_usd are that old price"),
        "ggp_price_stale_reason": S.described(S.nullable(S.STRING), "why, in words (null when the price is not stale)"),
        "avax_price_usd": S.described(S.NON_NEGATIVE, "USD per AVAX (Chainlink feed)"),
        "total_ggp_staked": S.described(S.NON_NEGATIVE, "GGP staked by all node operators, whole tokens"),
        "effective_ggp_staked": S.described(S.NON_NEGATIVE, "GGP that counts for rewards (collateralization capped), whole tokens"),
        "staker_count": {"type": "integer", "minimum": 0, "description": "number of GGP stakers"},
        "minipool_count": {"type": "integer", "minimum": 0, "description": "number of minipools ever created"},
        **STATUS_KEYS,
        "minipools_active": {"type": "integer", "minimum": 0, "description": "minipools in Launched or Staking"},
        "tvl_avax": S.described(S.NON_NEGATIVE, "total value locked in AVAX: ggAVAX assets + operators' AVAX in staking minipools + staked GGP at the Oracle price"),
        "tvl_usd": S.described(S.NON_NEGATIVE, "tvl_avax in USD"),
        "rewards_cycle_count": S.described(S.INTEGER, "GGP reward cycles completed so far"),
        "rewards_cycle_start": S.described(S.TIMESTAMP, "start of the current GGP reward cycle, unix seconds"),
        "rewards_cycle_end": S.described(S.TIMESTAMP, "when the current cycle ends and the next distribution can happen, unix seconds"),
        "ggp_total_supply": S.described(S.NON_NEGATIVE, "GGP in existence, whole tokens"),
        "ggp_max_supply": S.described(S.NON_NEGATIVE, "GGP that can ever exist, whole tokens"),
        "meta": S.META,
        "next_cycle_nodeop_ggp": S.described(S.NON_NEGATIVE, "GGP the next distribution gives node operators, whole tokens (0 when no distribution is expected)"),
        "next_distribution_expected": S.described(S.BOOLEAN, "whether a GGP distribution to node operators is expected at all (/rewards/params distributionExpected): false when RewardsPool is paused or the rewards cycle ended more than one whole cycle ago with none since"),
        "no_distribution_reason": S.described(S.nullable(S.STRING), "why no distribution is expected, in words (null when one is)"),
        "last_cycle_nodeop_ggp": S.described(S.NON_NEGATIVE, "GGP the last distribution gave node operators, whole tokens"),
        "nodeop_apr_min": S.described(S.PERCENT, "APR of a 1000-AVAX node operator at 10 % collateralization, percent (see nodeop_apr_note)"),
        "nodeop_apr_max": S.described(S.PERCENT, "APR of a 1000-AVAX node operator at 150 % collateralization, percent (see nodeop_apr_note)"),
        "nodeop_apr_note": S.described(S.nullable(S.STRING), "why nodeop_apr_min/max are not the full formula, in words: the AVAX rewards alone while no distribution is expected, 0 while MinipoolManager is paused (no minipool can be created); null otherwise"),
    }),
    checks=(Check(rates_in_range, {METRICS_PATH: ("ggavax_apy",), APY_PATH: ("total_apy", "total_apy_after_fees")}),),
    bounds=(Bound(staker_drop, {METRICS_PATH: ("staker_count",)}),),
)
def metrics(ctx: Context):
    s, u, a = ctx.snap, ctx.cached(usd), ctx.cached(apy)
    stale = ctx.cached(oracle_staleness)
    counts = {f"minipools_{name.lower()}": n for name, n in status_counts(s.minipools).items()}
    tvl = ctx.cached(tvl_avax)
    body = {
        "ggavax_apy": a.after_fees_pct, "ggavax_apy_note": a.note, "total_assets": tokens(s.ggavax.total_assets),
        "ggavax_total_supply": tokens(s.ggavax.total_supply), "ggavax_exchange_rate": tokens(s.ggavax.assets_per_share),
        "ggp_price_in_avax": float(u["ggp_in_avax"]), "ggp_price_usd": float(u["ggp_usd"]), "avax_price_usd": float(u["avax_usd"]),
        "ggp_price_stale": stale is not None, "ggp_price_stale_reason": stale,
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
    APY_PATH, tag="Metrics", summary="ggAVAX APY",
    description="ggAVAX APY from the share price (convertToAssets(1e18)) over the configured window: "
                "`total_apy_after_fees` is what holders earned, `total_apy` grosses it up by the protocol fee. "
                "`stream_apr` is the current reward stream annualized (0 when none runs, `stream_active` false). "
                "`method` names the earlier share price used (`archive` state at the window start, the daily share "
                "price of /prices/history (`history`), at least 7 days back, or the current reward `stream`; when "
                "nothing streams, never the stream: the history of any age, else `flat`, the time since which the "
                "share price has stood still), `window_days` the span, `note` the formula and, once the stream has "
                "ended, that the APY falls to 0; null figures come with the reason in `note`.",
    schema=S.obj({
        "total_apy": S.described(S.nullable(S.PERCENT), "APY before the protocol fee, percent (null only when the share price is known at no earlier time); read by DeltaPrime"),
        "total_apy_after_fees": S.described(S.nullable(S.PERCENT), "APY ggAVAX holders earned, percent (null only when the share price is known at no earlier time); read by the Balancer yield worker (x 100 to basis points)"),
        "fee_pct": S.described(S.PERCENT, "protocol fee on liquid-staking rewards, percent"),
        "window_days": S.described(S.nullable(S.NON_NEGATIVE), "days between the two share prices compared"),
        "from_block": S.described(S.nullable(S.INTEGER), "block of the earlier share price (null when none is available)"),
        "to_block": S.described(S.INTEGER, "block of the current share price"),
        "stream_apr": S.described(S.PERCENT, "the current reward stream annualized, percent; 0 when no stream with rewards runs"),
        "stream_active": S.described(S.BOOLEAN, "whether a ggAVAX reward stream with rewards runs at this block; false once the stream has ended with no sync since (or streams 0): nothing accrues and the share price stands still"),
        "method": S.described(S.nullable({"enum": ["archive", "history", "stream", "flat"]}),
                              "archive: share prices read from the node's state a window apart; history: the daily share price of /prices/history; stream: the current reward stream compounded (only while it runs); flat: nothing has streamed since the stream ended (or since a sync that streams 0), so the share price stood still and the APY is 0; null: no APY"),
        "note": S.described(S.STRING, "how the APY was computed, whether the reward stream has ended, or why it is null, in words"),
        "meta": S.META,
    }),
)
def metrics_apy(ctx: Context):
    a, s = ctx.cached(apy), ctx.snap
    yield "/metrics/apy", {
        "total_apy": a.gross_pct, "total_apy_after_fees": a.after_fees_pct, "fee_pct": s.settings.fee_bips / 100,
        "window_days": a.window_seconds / 86_400 if a.window_seconds else None,
        "from_block": a.from_block, "to_block": s.block.number, "stream_apr": a.stream_apr_pct,
        "stream_active": a.stream_active,
        "method": a.method, "note": a.note, "meta": meta(ctx),
    }
