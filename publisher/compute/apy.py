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
    if base is not None and base.assets_per_share > 0:
        then, then_time, from_block = base.assets_per_share, base.block.timestamp, base.block.number
        source = f"at blocks {base.block.number} and {snap.block.number}"
    else:
        # No state at the window start (e.g. a node without archive): the share price earlier runs
        # recorded in the published history, the latest one at least a window old.
        target = snap.block.timestamp - snap.apy_window_days * 86_400
        recorded = [p for p in snap.price_history
                    if p.ggavax_assets_per_share and p.ggavax_time is not None and p.ggavax_time <= target]
        if not recorded:
            return Apy(None, None, None, None, stream, "share price unavailable at the window start (no archive "
                       "state and no recorded history that old)")
        point = max(recorded, key=lambda p: p.ggavax_time)
        then, then_time, from_block = point.ggavax_assets_per_share, point.ggavax_time, None
        source = f"recorded in the price history at {then_time} and read at block {snap.block.number}"
    dt = snap.block.timestamp - then_time
    if dt <= 0:
        return Apy(None, None, None, None, stream, "window start is not before the build block")
    growth = v.assets_per_share / then
    after = (growth ** (YEAR / dt) - 1) * 100
    fee = snap.settings.fee_bips / 10_000
    gross = after / (1 - fee) if fee < 1 else None
    note = (f"((X_now / X_then)^(365d / {dt}s) - 1) x 100 with X = convertToAssets(1e18) {source}; "
            "gross = after fees / (1 - FeeBips/10000)")
    return Apy(after, gross, dt, from_block, stream, note)
