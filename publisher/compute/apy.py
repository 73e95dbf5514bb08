"""ggAVAX yield figures (DESIGN §7.9): APY from the share price over a window, and the current
reward stream's APR."""
from __future__ import annotations

from dataclasses import dataclass

from ..snapshot import Snapshot

YEAR = 365 * 86_400


@dataclass(frozen=True)
class Apy:
    after_fees_pct: float | None  # share-price growth, annualized: what a holder earns
    gross_pct: float | None  # before the protocol fee on rewards
    window_seconds: int | None
    from_block: int | None
    stream_apr_pct: float  # current stream: lastRewardsAmt over the rest of its cycle
    note: str


def ggavax_apy(snap: Snapshot) -> Apy:
    v = snap.ggavax
    stream = 0.0
    if snap.block.timestamp < v.rewards_cycle_end and v.total_assets and v.rewards_cycle_end > v.last_sync:
        stream = v.last_rewards_amt / v.total_assets * YEAR / (v.rewards_cycle_end - v.last_sync) * 100
    base = snap.apy_base
    if base is None or base.assets_per_share <= 0:
        return Apy(None, None, None, None, stream, "share price history unavailable at the window start")
    dt = snap.block.timestamp - base.block.timestamp
    if dt <= 0:
        return Apy(None, None, None, None, stream, "window start is not before the build block")
    growth = v.assets_per_share / base.assets_per_share
    after = (growth ** (YEAR / dt) - 1) * 100
    fee = snap.settings.fee_bips / 10_000
    gross = after / (1 - fee) if fee < 1 else None
    note = (f"((X_now / X_then)^(365d / {dt}s) - 1) x 100 with X = convertToAssets(1e18) at blocks "
            f"{base.block.number} and {snap.block.number}; gross = after fees / (1 - FeeBips/10000)")
    return Apy(after, gross, dt, base.block.number, stream, note)
