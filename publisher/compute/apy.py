"""ggAVAX yield figures (DESIGN §7.9): APY from the share price over a window, and the current
reward stream's APR.

The share price X = convertToAssets(1e18) is compared with an earlier reading, in this order:
1. ``archive``: X read at the block nearest ``now − window`` (needs an archive node);
2. ``history``: a daily share price of /prices/history (each day's last block, read from archive
   state or rebuilt from the vault's events, so a first build has it too), the latest at least a
   window old, else the oldest one at least ``MIN_HISTORY_DAYS`` old;
3. ``stream``: while a reward stream with rewards runs, that stream: lastRewardsAmt over
   totalReleasedAssets across the stream's length (lastSync to rewardsCycleEnd), compounded.
   Rewards enter ggAVAX net of the fee, so this too is after fees.
When nothing streams (the stream ended and no sync started another, or the running one streams 0)
the stream's rate would invent a yield, so instead:
4. ``history`` again, the oldest daily share price of any age, with its shorter window stated;
5. ``flat``: the share price cannot have moved since the stream ended (or since the sync that
   started a stream of 0): deposits and withdrawals leave it unchanged, so the APY over that time
   is 0, exactly what the share price did.
Only a vault with no earlier reading and a stream that starts at this very block gives null, with
the reason.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..snapshot import Snapshot
from ..utc import when

YEAR = 365 * 86_400
MIN_HISTORY_DAYS = 7


@dataclass(frozen=True)
class Apy:
    after_fees_pct: float | None  # share-price growth, annualized: what a holder earns
    gross_pct: float | None  # before the protocol fee on rewards
    window_seconds: int | None
    from_block: int | None
    stream_apr_pct: float  # current stream: lastRewardsAmt over the rest of its cycle; 0 when none runs
    method: str | None  # "archive", "history", "stream" or "flat"; None when there is no figure
    note: str
    stream_active: bool = True  # a reward stream with rewards is running at the block


def gross_up(growth: float, fee: float, seconds: int) -> float:
    """APY before fees in percent: gross the per-period growth g up by 1/(1 − fee), then compound.
    (The fee is taken from each reward deposit, so the growth before fees is g/(1 − fee).)"""
    return ((1 + growth / (1 - fee)) ** (YEAR / seconds) - 1) * 100


def stream_active(snap: Snapshot) -> bool:
    """A reward stream with rewards runs at the block: the share price is growing."""
    v = snap.ggavax
    return snap.block.timestamp < v.rewards_cycle_end and v.rewards_cycle_end > v.last_sync and v.last_rewards_amt > 0


def idle_since(snap: Snapshot) -> tuple[int, str] | None:
    """While nothing streams: (since when the share price has stood still, why, in words); None while
    a stream with rewards runs. A sync always starts a stream ending after it, so a block at or past
    rewardsCycleEnd has seen no sync since that end."""
    v = snap.ggavax
    if stream_active(snap) or v.rewards_cycle_end <= 0:  # streaming, or never synced: since when is unknown
        return None
    pending = max(0, v.liquid_avax + v.staking_total_assets - v.total_released_assets - v.last_rewards_amt)
    waiting = (f" {pending / 10**18:.6f} AVAX received since waits for a sync, which would start a new stream."
               if pending else "")
    if snap.block.timestamp >= v.rewards_cycle_end:
        return v.rewards_cycle_end, (f"the ggAVAX reward stream ended at {when(v.rewards_cycle_end)} (rewardsCycleEnd) and "
                                     f"no sync has started another: nothing accrues to ggAVAX and its share price "
                                     f"stands still, so the APY is 0 over any window that starts after "
                                     f"{when(v.rewards_cycle_end)}.{waiting}")
    return v.last_sync, (f"the current ggAVAX reward stream, from the sync at {when(v.last_sync)} to {when(v.rewards_cycle_end)}, "
                         f"streams 0 AVAX: nothing accrues to ggAVAX and its share price stands still, so the APY is "
                         f"0 over any window that starts after {when(v.last_sync)}.{waiting}")


def ggavax_apy(snap: Snapshot) -> Apy:
    v = snap.ggavax
    active = stream_active(snap)
    stream = 0.0
    if active and v.total_assets:
        stream = v.last_rewards_amt / v.total_assets * YEAR / (v.rewards_cycle_end - v.last_sync) * 100
    idle = idle_since(snap)
    fee = snap.settings.fee_bips / 10_000
    now = snap.block.timestamp
    streamable = active and v.total_released_assets > 0
    found = _archive(snap) or _history(snap, MIN_HISTORY_DAYS)
    if found is None and not streamable:
        # Nothing streams: never extrapolate the stream (it would invent a yield); what the share
        # price did over whatever is known, else since it stood still.
        found = _history(snap, 0) or _flat(snap, idle)
    if found is not None:
        then, then_time, from_block, method, source = found
        dt = now - then_time
        growth = v.assets_per_share / then - 1
        if method == "flat":
            note = f"flat: 0 over the {dt}s since {then_time}: {source}"
        else:
            note = (f"{method}: ((X_now / X_then)^(365d / {dt}s) - 1) x 100 with X = convertToAssets(1e18) {source}; "
                    "gross: ((1 + g / (1 - FeeBips/10000))^(365d / dt) - 1) x 100, g = X_now / X_then - 1")
            if idle is not None:
                note += f". Note: {idle[1]}"
    elif streamable:
        dt, from_block, method = v.rewards_cycle_end - v.last_sync, None, "stream"
        growth = v.last_rewards_amt / v.total_released_assets
        note = (f"stream: ((1 + lastRewardsAmt / totalReleasedAssets)^(365d / {dt}s) - 1) x 100 over the reward "
                f"stream from lastSync ({when(v.last_sync)}) to rewardsCycleEnd ({when(v.rewards_cycle_end)}) (no share-price "
                f"history at least {MIN_HISTORY_DAYS} days old); gross: g / (1 - FeeBips/10000), then compounded")
    else:
        why = idle[1] if idle is not None else "no ggAVAX reward stream to extrapolate"
        return Apy(None, None, None, None, stream, None, "no share-price history (no archive state, nothing "
                   f"recorded) and no earlier time the share price is known at: {why}", active)
    after = ((1 + growth) ** (YEAR / dt) - 1) * 100
    gross = gross_up(growth, fee, dt) if fee < 1 else None
    return Apy(after, gross, dt, from_block, stream, method, note, active)


def _flat(snap: Snapshot, idle: tuple[int, str] | None):
    """The share price at the time it has stood still since: the current one (None when that time
    is this block, or a stream with rewards runs)."""
    if idle is None or idle[0] >= snap.block.timestamp:
        return None
    return snap.ggavax.assets_per_share, idle[0], None, "flat", idle[1]


def _archive(snap: Snapshot):
    base = snap.apy_base
    if base is None or base.assets_per_share <= 0 or base.block.timestamp >= snap.block.timestamp:
        return None
    return (base.assets_per_share, base.block.timestamp, base.block.number, "archive",
            f"at blocks {base.block.number} and {snap.block.number}")


def _history(snap: Snapshot, min_days: int):
    """The history's share price that is the latest at least a window old, else the oldest at
    least ``min_days`` old (a shorter window than asked, stated in the response)."""
    now = snap.block.timestamp
    recorded = [(p.ggavax_time, p.ggavax_assets_per_share, p.ggavax_block) for p in snap.price_history
                if p.ggavax_assets_per_share and p.ggavax_time is not None and p.ggavax_time < now]
    full = [r for r in recorded if r[0] <= now - snap.apy_window_days * 86_400]
    short = [r for r in recorded if r[0] <= now - min_days * 86_400]
    if full:
        at, share_price, block = max(full, key=lambda r: r[0])
    elif short:
        at, share_price, block = min(short, key=lambda r: r[0])
    else:
        return None
    where = f"at block {block} ({at})" if block is not None else f"at {at}"
    return (share_price, at, block, "history",
            f"from the price history's daily share price {where} and read at block {snap.block.number}")
