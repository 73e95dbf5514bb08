"""ggAVAX yield figures (DESIGN §7.9): APY from the share price over a window, and the current
reward stream's APR.

The share price X = convertToAssets(1e18) is compared with an earlier reading, in this order:
1. ``archive``: X read at the block nearest ``now − window`` (needs an archive node);
2. ``history``: a daily share price of /prices/history (each day's last block, read from archive
   state or rebuilt from the vault's events, so a first build has it too), the latest at least a
   window old, else the oldest one at least ``MIN_HISTORY_DAYS`` old;
3. ``stream``: the current reward stream, lastRewardsAmt over totalReleasedAssets across the
   stream's length (lastSync to rewardsCycleEnd), compounded. Rewards enter ggAVAX net of the fee,
   so this too is after fees.
Only a chain with no reward stream at all and no history gives null, with the reason.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..snapshot import Snapshot

YEAR = 365 * 86_400
MIN_HISTORY_DAYS = 7


@dataclass(frozen=True)
class Apy:
    after_fees_pct: float | None  # share-price growth, annualized: what a holder earns
    gross_pct: float | None  # before the protocol fee on rewards
    window_seconds: int | None
    from_block: int | None
    stream_apr_pct: float  # current stream: lastRewardsAmt over the rest of its cycle
    method: str | None  # "archive", "history" or "stream"; None when there is no figure
    note: str


def gross_up(growth: float, fee: float, seconds: int) -> float:
    """APY before fees in percent: gross the per-period growth g up by 1/(1 − fee), then compound.
    (The fee is taken from each reward deposit, so the growth before fees is g/(1 − fee).)"""
    return ((1 + growth / (1 - fee)) ** (YEAR / seconds) - 1) * 100


def ggavax_apy(snap: Snapshot) -> Apy:
    v = snap.ggavax
    stream = 0.0
    if snap.block.timestamp < v.rewards_cycle_end and v.total_assets and v.rewards_cycle_end > v.last_sync:
        stream = v.last_rewards_amt / v.total_assets * YEAR / (v.rewards_cycle_end - v.last_sync) * 100
    fee = snap.settings.fee_bips / 10_000
    now = snap.block.timestamp
    found = _archive(snap) or _history(snap)
    if found is not None:
        then, then_time, from_block, method, source = found
        dt = now - then_time
        growth = v.assets_per_share / then - 1
        note = (f"{method}: ((X_now / X_then)^(365d / {dt}s) - 1) x 100 with X = convertToAssets(1e18) {source}; "
                "gross: ((1 + g / (1 - FeeBips/10000))^(365d / dt) - 1) x 100, g = X_now / X_then - 1")
    else:
        span = v.rewards_cycle_end - v.last_sync
        if v.last_rewards_amt <= 0 or v.total_released_assets <= 0 or span <= 0:
            return Apy(None, None, None, None, stream, None, "no share-price history (no archive state, nothing "
                       "recorded) and no ggAVAX reward stream to extrapolate")
        dt, from_block, method = span, None, "stream"
        growth = v.last_rewards_amt / v.total_released_assets
        note = (f"stream: ((1 + lastRewardsAmt / totalReleasedAssets)^(365d / {dt}s) - 1) x 100 over the reward "
                f"stream from lastSync {v.last_sync} to rewardsCycleEnd {v.rewards_cycle_end} (no share-price "
                f"history at least {MIN_HISTORY_DAYS} days old); gross: g / (1 - FeeBips/10000), then compounded")
    after = ((1 + growth) ** (YEAR / dt) - 1) * 100
    gross = gross_up(growth, fee, dt) if fee < 1 else None
    return Apy(after, gross, dt, from_block, stream, method, note)


def _archive(snap: Snapshot):
    base = snap.apy_base
    if base is None or base.assets_per_share <= 0 or base.block.timestamp >= snap.block.timestamp:
        return None
    return (base.assets_per_share, base.block.timestamp, base.block.number, "archive",
            f"at blocks {base.block.number} and {snap.block.number}")


def _history(snap: Snapshot):
    """The history's share price that is the latest at least a window old, else the oldest at
    least MIN_HISTORY_DAYS old (a shorter window than asked, stated in the response)."""
    now = snap.block.timestamp
    recorded = [(p.ggavax_time, p.ggavax_assets_per_share, p.ggavax_block) for p in snap.price_history
                if p.ggavax_assets_per_share and p.ggavax_time is not None and p.ggavax_time < now]
    full = [r for r in recorded if r[0] <= now - snap.apy_window_days * 86_400]
    short = [r for r in recorded if r[0] <= now - MIN_HISTORY_DAYS * 86_400]
    if full:
        at, share_price, block = max(full, key=lambda r: r[0])
    elif short:
        at, share_price, block = min(short, key=lambda r: r[0])
    else:
        return None
    where = f"at block {block} ({at})" if block is not None else f"at {at}"
    return (share_price, at, block, "history",
            f"from the price history's daily share price {where} and read at block {snap.block.number}")
