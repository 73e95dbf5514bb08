"""The exact fields of a published ``/prices/history``, and reading them back: the points, each
day's ggAVAX share price (sources/shareprice.py) and the vault's state at the cursor block, from
which a later run resumes the history (history.py) and extends the share prices. Nothing of the
chain: the endpoint writes these fields without a node, and ``publisher check`` loads none.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from .. import jsonin
from ..snapshot import LAST_TIME, PricePoint, Snapshot

log = logging.getLogger(__name__)

WAD = 10**18


@dataclass(frozen=True)
class VaultState:
    """The TokenggAVAX storage its share price is computed from, exact."""

    total_released_assets: int
    last_rewards_amt: int
    last_sync: int
    rewards_cycle_end: int
    total_supply: int

    def total_assets(self, now: int) -> int:
        """totalAssets() in a block of time ``now``: the released assets plus the part of the last
        rewards streamed since the sync (all of it from the cycle's end), rounded down."""
        if now >= self.rewards_cycle_end:
            return self.total_released_assets + self.last_rewards_amt
        streamed = self.last_rewards_amt * (now - self.last_sync) // (self.rewards_cycle_end - self.last_sync)
        return self.total_released_assets + streamed

    def assets_per_share(self, now: int) -> int:
        """convertToAssets(1e18) in a block of time ``now`` (1e18 while there are no shares)."""
        supply = self.total_supply
        return WAD if supply == 0 else WAD * self.total_assets(now) // supply

    @classmethod
    def of(cls, snap: Snapshot) -> VaultState:
        v = snap.ggavax
        return cls(v.total_released_assets, v.last_rewards_amt, v.last_sync, v.rewards_cycle_end, v.total_supply)


@dataclass(frozen=True)
class PriorHistory:
    points: tuple[PricePoint, ...]
    cursor: int  # last block the points reflect
    # Where the points come from: a history is resumed only on the same chain, through the same
    # cursor block (a different network, a reset devnet or a reorg means rebuilding).
    network: str | None = None
    chain_id: int | None = None
    cursor_hash: str | None = None
    vault: VaultState | None = None  # ggAVAX at the cursor block, when the history says


# -- the published file -------------------------------------------------------------------------------


def share_fields(p: PricePoint) -> dict:
    """A point's share-price fields, as ``replace`` takes them."""
    return {"ggavax_assets_per_share": p.ggavax_assets_per_share, "ggavax_time": p.ggavax_time,
            "ggavax_block": p.ggavax_block, "ggavax_source": p.ggavax_source}


def exact_fields(p: PricePoint) -> dict:
    """The exact values a published history point carries so a later run can resume from it."""
    share = p.ggavax_assets_per_share
    return {"date": p.date, "ggpInAvaxWei": str(p.ggp_in_avax), "avaxUsdAnswer": str(p.avax_usd),
            "block": p.block, "timestamp": p.timestamp,
            "ggavaxAssetsPerShareWei": None if share is None else str(share), "ggavaxTime": p.ggavax_time,
            "ggavaxBlock": p.ggavax_block, "ggavaxSource": p.ggavax_source}


def state_fields(v: VaultState) -> dict:
    """The vault's state as the published history carries it (at its ``meta.block``)."""
    return {"totalReleasedAssetsWei": str(v.total_released_assets), "lastRewardsAmtWei": str(v.last_rewards_amt),
            "lastSync": v.last_sync, "rewardsCycleEnd": v.rewards_cycle_end, "totalSupplyWei": str(v.total_supply)}


def from_snapshot(snap: Snapshot) -> PriorHistory | None:
    if not snap.price_history:
        return None
    return PriorHistory(snap.price_history, snap.block.number, snap.network, snap.chain_id, snap.block.hash,
                        VaultState.of(snap))


def load_published(path: str | Path) -> PriorHistory | None:
    """The history in a published ``prices/history.json``: ``{"points": [...], "ggavaxState": {...},
    "meta": {"block": {"number": …}}}`` whose points carry ``exact_fields`` and whose state
    ``state_fields`` (a file without the state, or without the share-price block of its points,
    was written by an earlier version: it resumes all the same). None when the file is absent or
    unusable, which costs only a full rebuild."""
    try:
        data = jsonin.loads(Path(path).read_text())
        points = tuple(
            PricePoint(_date(i["date"]), int(i["ggpInAvaxWei"]), int(i["avaxUsdAnswer"]), int(i["block"]), _time(i["timestamp"]),
                       _optional_int(i.get("ggavaxAssetsPerShareWei")), _optional_int(i.get("ggavaxTime")),
                       _optional_int(i.get("ggavaxBlock")), _optional_str(i.get("ggavaxSource")))
            for i in data["points"]
        )
        state = data.get("ggavaxState")
        vault = None if state is None else VaultState(
            int(state["totalReleasedAssetsWei"]), int(state["lastRewardsAmtWei"]), int(state["lastSync"]),
            int(state["rewardsCycleEnd"]), int(state["totalSupplyWei"]))
        meta = data.get("meta", {})
        cursor, cursor_hash = meta.get("block", {}).get("number"), meta.get("block", {}).get("hash")
        network, chain_id = meta.get("network"), meta.get("chainId")
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError, ArithmeticError) as exc:
        log.warning("cannot resume price history from %s (%s): rebuilding it", path, type(exc).__name__)
        return None
    if not points:
        return None
    if not isinstance(cursor, int) or cursor < max(p.block for p in points):
        log.warning("cannot resume price history from %s (no usable cursor): rebuilding it", path)
        return None
    return PriorHistory(points, cursor, network, chain_id, cursor_hash, vault)


def _date(value) -> str:
    """A point's day, YYYY-MM-DD, before the last day a next day follows (the history adds one)."""
    if type(value) is not str or value >= "9999-12-31":
        raise ValueError("not a day of the history")
    datetime.strptime(value, "%Y-%m-%d")  # ValueError when it is no date
    return value


def _time(value) -> int:
    t = int(value)
    if not 0 <= t <= LAST_TIME:
        raise ValueError("a time no date shows")
    return t


def _optional_int(value) -> int | None:
    return None if value is None else int(value)


def _optional_str(value) -> str | None:
    if value is not None and not isinstance(value, str):
        raise TypeError("expected a string")
    return value
