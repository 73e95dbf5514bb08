"""The withdrawal queue at the build block: each open request's state, its place in line, and
when the vault's liquidity is expected to reach it.

The queue pays strictly in line order (request id order) from the vault's liquidity, as the
contract measures it (ggAVAX totalAssets − stakingTotalAssets, floored at 0), stopping at the first
request that liquidity does not cover. The chain has no arrival time for a request; the funding
schedule forecasts one from what the snapshot knows: the liquidity now, the reward stream already
scheduled, and the liquid stakers' AVAX each staking minipool hands back when its validation ends.
Every assumption it makes is published with it (``ASSUMPTIONS``).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from ..protocol import MinipoolStatus
from ..snapshot import Minipool, Snapshot, Staker, UnstakeRequest
from .params import validation_end

MIN_EXPIRATION_DELAY = 3 * 86_400
WAD = 10**18  # the queue's constant floor for a requester's expiration delay


class RequestStatus(StrEnum):
    """A request's state as the contract defines it, at the block's time."""

    PENDING = "pending"  # in line, waiting for liquidity
    FUNDED = "funded"  # AVAX allocated; the requester can claim it at once
    EXPIRED = "expired"  # past its expiration: only reclaimable (shares back), by anyone


ASSUMPTIONS = (
    "requests are served strictly in line order (request id), each needing its expected AVAX, and stop at the first request the liquidity does not cover",
    "the depositor serves the line as soon as AVAX returns, calling as many times as the per-call request limit requires",
    "each staking minipool hands its liquid stakers' AVAX back to the vault at the end of its validation period, on time (the validator provider's end time); one whose requested duration has room for another cycle restakes it instead, when its owner's GGP still covers the minimum collateralization",
    "the vault's current reward stream releases as scheduled until its cycle ends; rewards not yet synced and later syncs are not counted",
    "no new deposits, requests, cancellations or reclaims, no minipool launched from the vault's AVAX, and the share price stays as it is now (a funded request uses its shares' current value in AVAX)",
    "launched minipools that have not started validating, and minipools without a known end time, return nothing within the schedule",
)


@dataclass(frozen=True)
class Return:
    """AVAX a minipool is expected to hand back to the vault."""

    time: int
    avax: int
    node_id: str  # hex, as in the snapshot
    overdue: bool  # its end time has passed but the AVAX has not come back yet


@dataclass(frozen=True)
class Place:
    """What the build derives for one open request: published per requester, so it holds nothing
    that moves with the block's time alone (a file changes only when its request's fate does)."""

    status: RequestStatus
    can_claim: bool
    can_cancel: bool
    position: int | None  # 1-based place in the pending line (None when not pending)
    ahead_avax: int  # expected AVAX of the pending requests before it
    funding_time: int | None  # estimated funding time (None: fundable now, or beyond the known returns)
    fundable_now: bool  # the vault's liquidity covers it (and everything ahead) already
    funded_by: str | None  # "liquidity", "returns" or None (not covered by what is known)


@dataclass(frozen=True)
class Schedule:
    liquidity: int  # what the queue can use now, AVAX wei
    returns: tuple[Return, ...]  # expected returns, by time
    unscheduled_avax: int  # liquid stakers' AVAX out in minipools with no known return
    places: dict[int, Place]  # request id -> its place
    covered: int  # pending requests the liquidity and known returns cover
    shortfall: int  # AVAX still missing for the rest of the line after every known return
    last_funding_time: int | None  # when the last covered request is expected to be funded


def status(r: UnstakeRequest, now: int) -> RequestStatus:
    if now >= r.expiration_time:
        return RequestStatus.EXPIRED
    return RequestStatus.FUNDED if r.fulfilled else RequestStatus.PENDING


def can_cancel(r: UnstakeRequest, now: int, deposits_paused: bool = False) -> bool:
    """Pending: any time. Funded: only before its claimable time, and only while ggAVAX takes
    deposits (the allocated AVAX is deposited back for fresh shares). The requester alone may."""
    return not r.fulfilled or (now < r.claimable_time and not deposits_paused)


def line(snap: Snapshot) -> list[UnstakeRequest]:
    """The pending requests in the order the queue serves them: the order they were filed."""
    q = snap.withdraw_queue
    return [] if q is None else sorted((r for r in q.requests if not r.fulfilled), key=lambda r: r.id)


def queue_liquidity(snap: Snapshot) -> int:
    v = snap.ggavax
    return max(0, v.total_assets - v.staking_total_assets)


def streamed(snap: Snapshot, t: int) -> int:
    """Reward-stream AVAX released by time ``t`` (as TokenggAVAX.totalAssets counts it)."""
    v = snap.ggavax
    if v.rewards_cycle_end <= v.last_sync:
        return v.last_rewards_amt
    return v.last_rewards_amt * (min(t, v.rewards_cycle_end) - v.last_sync) // (v.rewards_cycle_end - v.last_sync)


def expected_returns(snap: Snapshot) -> tuple[tuple[Return, ...], int]:
    """(the returns the schedule counts, by time; the AVAX out in minipools it cannot date)."""
    vals = {v.node_id: v for v in snap.validators}


    now = snap.block.timestamp
    owners = {st.staker_addr: st for st in snap.stakers}
    out: list[Return] = []
    unscheduled = 0
    for m in snap.minipools:
        if m.status == MinipoolStatus.LAUNCHED:
            unscheduled += m.avax_liquid_staker_amt
        if m.status != MinipoolStatus.STAKING or not m.avax_liquid_staker_amt:
            continue
        end = validation_end(snap, m, vals)
        if not end:
            unscheduled += m.avax_liquid_staker_amt
            continue
        if _cycles_again(snap, m, end, owners.get(m.owner)):
            continue
        out.append(Return(end, m.avax_liquid_staker_amt, m.node_id, end <= now))
    out.sort(key=lambda r: (r.time, r.node_id))
    return tuple(out), unscheduled


def _cycles_again(snap: Snapshot, m: Minipool, end: int, owner: Staker | None) -> bool:
    """Whether the protocol restakes this pool at ``end``: its requested duration has room for
    another cycle, and its owner's GGP still covers the minimum collateralization once the pool's
    own AVAX is matched again (the contract refuses the restake otherwise). The rewards the period
    adds to the restaked AVAX are not known in advance and are left out."""
    cycle, tolerance = snap.settings.minipool_cycle_duration, snap.settings.minipool_cycle_delay_tolerance
    if not cycle or end + cycle > m.initial_start_time + m.duration + (tolerance or 0):
        return False
    if owner is None:
        return True
    assigned = owner.avax_assigned - m.avax_liquid_staker_amt + m.avax_node_op_amt
    if assigned <= 0:
        return True
    ratio = owner.ggp_staked * snap.oracle.price // WAD * WAD // assigned
    return ratio >= snap.settings.min_collateralization_ratio


def redeemed(snap: Snapshot, r: UnstakeRequest) -> int:
    """AVAX the vault pays out for a request's shares at today's share price (never below what
    the requester is owed: the surplus is the yield earned while waiting)."""
    v = snap.ggavax
    value = r.shares * v.total_assets // v.total_supply if v.total_supply else r.shares
    return max(value, r.expected_assets)


def schedule(snap: Snapshot) -> Schedule:
    now = snap.block.timestamp
    pending = line(snap)
    returns, unscheduled = expected_returns(snap)
    liquidity = queue_liquidity(snap)
    places: dict[int, Place] = {}
    funded: dict[int, tuple[int | None, str]] = {}
    available, i, last = liquidity, 0, None

    def serve(t: int | None, how: str) -> None:
        nonlocal available, i, last
        while i < len(pending) and available >= pending[i].expected_assets:
            available -= redeemed(snap, pending[i])
            funded[pending[i].id] = (t, how)
            last = t if t is not None else last
            i += 1

    serve(None, "liquidity")
    released = streamed(snap, now)
    for t, group in _by_time(returns):
        # Overdue AVAX is due now; its request keeps the pool's end as its (passed) estimate.
        stream_now = streamed(snap, max(t, now))
        available += sum(r.avax for r in group) + stream_now - released
        released = stream_now
        serve(t, "returns")
    shortfall = sum(r.expected_assets for r in pending[i:]) - available if i < len(pending) else 0
    ahead = 0
    for k, r in enumerate(pending):
        when, how = funded.get(r.id, (None, None))
        places[r.id] = Place(status(r, now), False, True, k + 1, ahead, when, how == "liquidity", how)
        ahead += r.expected_assets
    for r in snap.withdraw_queue.requests if snap.withdraw_queue else ():
        if r.fulfilled:
            st = status(r, now)
            paused = bool(snap.paused.get("TokenggAVAX"))
            places[r.id] = Place(st, st == RequestStatus.FUNDED, can_cancel(r, now, paused), None, 0, None, False, None)
    return Schedule(liquidity, returns, unscheduled, places, i, max(0, shortfall), last)


def _by_time(returns: Iterable[Return]):
    group: list[Return] = []
    for r in returns:
        if group and r.time != group[0].time:
            yield group[0].time, group
            group = []
        group.append(r)
    if group:
        yield group[0].time, group
