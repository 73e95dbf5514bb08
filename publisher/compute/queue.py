"""The withdrawal queue at the build block: each open request's state, what its requester (or
anyone) can do with it now, its place in line, and when the vault's liquidity is expected to
reach it.

The funding schedule replays the contracts' own rules forward from the snapshot, event by event:
each staking minipool's validation ends when the validator provider says (an overdue one in the
next block) and Rialto records it; MinipoolManager restakes it only while it is not paused, the
pool's duration has room for another cycle at the time the end is processed, and its owner's GGP
still covers MinCollateralizationRatio with the AVAX assigned at that moment; otherwise the
stakers' AVAX goes back to the vault. After each event the depositor serves the line: calls of at
most ``maxRequestsPerDeposit`` steps (a closed id still in the line costs a step), each request
redeemed at the share price of that block, the call stopping at the first request the liquidity
does not cover and failing whole when a redemption is worth more than the liquidity left (the
queue's checked subtraction) or than the vault's released assets (the vault's). Every assumption
is published with the schedule (``assumptions``).
"""
from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from ..protocol import MinipoolStatus
from ..utc import when
from . import line as L
from .nodeid import node_id as encode_node_id
from .rewards import collateralization_ratio, mul_wad
from .validation import validation_end

if TYPE_CHECKING:  # annotations only: the snapshot module checks its values with compute/
    from ..snapshot import Minipool, Snapshot, UnstakeRequest, Validator

MIN_EXPIRATION_DELAY = L.MIN_EXPIRATION_DELAY  # the queue's constant floor for a requester's expiration delay
NANO = 10**9  # the validator provider's amounts are nAVAX
MIN_PERIOD = 3600  # Rialto's shortest validation period on the devnet


class RequestStatus(StrEnum):
    """What an open request is at the block's time, in the terms its requester acts on."""

    PENDING = "pending"  # in line for liquidity
    PENDING_EXPIRED = "pendingExpired"  # in line past its expiration: cancel or reclaim (shares back); still fundable
    FUNDED = "funded"  # AVAX allocated: the requester can claim it
    EXPIRED_FUNDED = "expiredFunded"  # funded, then expired: anyone can reclaim it (the AVAX is deposited back as shares)
    STUCK = "stuck"  # funded, then expired, and reclaiming reverts now (``redeposit_blocked``): nothing can be done


STATUS_TEXT = {
    RequestStatus.PENDING: "in line for liquidity; the requester may cancel it (shares back at today's rate)",
    RequestStatus.PENDING_EXPIRED: "past its expiration and still in line: the requester may cancel it, anyone may reclaim it (its original shares go back to the requester), and the depositor may still fund it",
    RequestStatus.FUNDED: "AVAX allocated: the requester can claim it until its expiration",
    RequestStatus.EXPIRED_FUNDED: "funded and past its expiration (funded late, or not claimed in time): anyone can reclaim it, which deposits its AVAX back into ggAVAX for the requester",
    RequestStatus.STUCK: "funded and past its expiration (funded late, or not claimed in time), and reclaiming it reverts now (it deposits the AVAX back into ggAVAX, and ggAVAX deposits are paused, or the amount is too small to mint a share): nothing can be done with it",
}

# The states in which a claim can still pay a request's AVAX: not past its expiration.
CLAIMABLE_IN_TIME = frozenset((RequestStatus.PENDING, RequestStatus.FUNDED))

DEPOSITS_PAUSED = "ggAVAX (TokenggAVAX) deposits are paused: reclaiming a funded request deposits its AVAX back, which reverts"
ZERO_SHARES = ("its AVAX is too little to mint one ggAVAX share: reclaiming or cancelling a funded request deposits "
               "its AVAX back, which reverts (ZeroShares)")


@dataclass(frozen=True)
class Return:
    """AVAX a minipool is expected to hand back to the vault for good."""

    time: int  # end of the validation period
    avax: int  # the liquid stakers' principal it returns
    node_id: str  # hex, as in the snapshot
    overdue: bool  # its end has passed but it was not recorded by the build block
    after_restakes: int  # how many restakes come first (0: its current validation)


@dataclass(frozen=True)
class Restake:
    """A minipool the contracts are expected to start again instead of returning its AVAX."""

    time: int  # when its end is processed
    node_id: str
    avax: int  # the liquid stakers' AVAX it takes again (principal plus their reward)
    reward: int  # the liquid stakers' reward it keeps out of the vault (liquidity drops by this)


@dataclass(frozen=True)
class Place:
    """What the build derives for one open request: published per requester, so it holds nothing
    that moves with the block's time alone (a file changes only when its request's fate does)."""

    status: RequestStatus
    can_claim: bool
    can_cancel: bool
    can_reclaim: bool
    stuck_reason: str | None
    position: int | None  # 1-based place in the pending line (None when not pending)
    ahead_avax: int  # expected AVAX of the pending requests before it
    funding_time: int | None  # estimated funding time (None: fundable now, overdue, or beyond the known returns)
    fundable_now: bool  # the liquidity covers it (and everything ahead) at the depositor's next calls
    depositor_calls: int | None  # fundable now: how many depositor calls reach it (1 = the next)
    funded_by: str | None  # "liquidity", "returns", "stream" (the reward stream's end) or None (not covered)
    expires_first: bool  # in line, and the schedule funds it after its expiration (pendingExpired: funded at all)
    # Covered by the returns of minipools whose validation has ended but whose end is not recorded:
    # funded in the block after Rialto records them, which no one can date (no funding time, then).
    overdue: bool = False
    deposits_paused: bool = False  # ggAVAX takes no deposits: a funded request that expires is stuck
    calls_fund_nothing: bool = False  # the queue's per-call limit is 0: no depositor call funds a request
    blocked_by: int | None = None  # unfunded because the depositor's calls fail whole at this request id (its own, or one the same calls reach)
    redeposit_blocked: str | None = None  # funded: why depositing its AVAX back (its cancel, its reclaim) reverts now


@dataclass(frozen=True)
class Idle:
    """The depositor looks stale (``depositor.depositor_stale``): nothing is funded until it calls.
    Its last call on record, None when none is (a value that changes only when it calls)."""

    last_call_time: int | None


@dataclass(frozen=True)
class Schedule:
    liquidity: int  # what the queue can use now, AVAX wei
    returns: tuple[Return, ...]  # expected returns, by time
    restakes: tuple[Restake, ...]  # expected restakes, by time
    unscheduled_avax: int  # liquid stakers' AVAX out in minipools with no known return
    places: dict[int, Place]  # request id -> its place
    covered: int  # pending requests the liquidity and known returns cover
    shortfall: int  # AVAX still missing for the rest of the line after every known return
    last_funding_time: int | None  # when the last covered request is expected to be funded
    stale_entries: int  # closed ids still in the line (each costs a depositor call a step)
    front_known: bool  # the line's front came from the queue's logs (else: assumed at the first pending id)
    reverted_calls: int  # depositor calls the schedule expects to fail whole (checked subtraction)
    assumptions: tuple[str, ...] = field(default=())
    serves: tuple[tuple[int, int], ...] = ()  # the depositor's serves the minipools bring (Events.serves)
    blocked: int | None = None  # the request where the depositor's calls fail whole, keeping it and those behind unfunded


def assumptions(snap: Snapshot, sched_front_known: bool) -> tuple[str, ...]:
    mm_paused = bool(snap.paused.get("MinipoolManager"))
    out = [
        "the depositor calls in the block after the build block and again right after every minipool end below; "
        "each call takes at most maxRequestsPerDeposit steps (a closed id still in the line costs one), serves "
        "requests strictly in line order, redeems each at the share price of that block, stops at the first "
        "request the liquidity does not cover, and fails whole when a redemption is worth nothing, less than its "
        "request expects, more than the liquidity left or more than the vault's released assets (no one syncs the "
        "vault's rewards in the replay); it calls again while that lets it fund more",
        "Rialto records each staking minipool's end at the end time the validator provider reports (one already "
        "past is recorded in the block after the build block); each validation earns the reward the provider "
        "reports as its potential reward (a restaked period earns at the same rate), and none is slashed; the "
        "depositor also calls when the vault's current reward stream has released all of it",
    ]
    if mm_paused:
        out.append("MinipoolManager is paused: no minipool restakes (recordStakingEndThenMaybeCycle reverts), so "
                   "each hands its liquid stakers' AVAX back at its end")
    else:
        out.append("a minipool restakes when its end is processed if MinipoolManager is not paused, the pool's "
                   "duration has room for another cycle at that time (MinipoolCycleDuration, "
                   "MinipoolCycleDelayTolerance) and its owner's GGP covers MinCollateralizationRatio with the AVAX "
                   "assigned then (after its earlier ends); Rialto starts the next validation at once, for one cycle "
                   "or the rest of the duration, and the pool returns its AVAX at the end of its last cycle")
    out += [
        "the vault's current reward stream releases as scheduled until its cycle ends; rewards not yet synced and "
        "later syncs are not counted",
        "no new deposits, requests, cancellations or reclaims, no minipool launched, and the Oracle's GGP price "
        "stays as it is",
        "launched minipools that have not started validating, and staking minipools without a known end time, "
        "return nothing within the schedule",
    ]
    if not sched_front_known:
        out.append("the queue's logs were not read: closed ids before the first pending request are taken as already "
                   "dropped from the line")
    q = snap.withdraw_queue
    if q is not None and q.max_requests_per_deposit == 0:
        out.append("maxRequestsPerDeposit is 0: the depositor's calls take no step, so they fund no request until "
                   "the queue's admin raises it")
    return tuple(out)


def status(r: UnstakeRequest, now: int, redeposit_reverts: bool) -> RequestStatus:
    """``redeposit_reverts``: depositing a funded request's AVAX back into ggAVAX reverts now
    (``redeposit_blocked``); it decides what a funded request past its expiration is."""
    if now < r.expiration_time:
        return RequestStatus.FUNDED if r.fulfilled else RequestStatus.PENDING
    if not r.fulfilled:
        return RequestStatus.PENDING_EXPIRED
    return RequestStatus.STUCK if redeposit_reverts else RequestStatus.EXPIRED_FUNDED


def redeposit_blocked(r: UnstakeRequest, vault: L.Books, now: int, deposits_paused: bool) -> str | None:
    """Why a funded request's cancel or reclaim, which deposit its allocated AVAX back into ggAVAX
    for fresh shares, reverts at ``now``: deposits paused, or fewer assets than one share is worth
    (ERC-4626's convertToShares rounds down, and a deposit of 0 shares reverts). None: it goes
    through. The share price only rises with the stream, so a blocked one stays blocked: that
    reason first, as reopening deposits does not lift it. ``vault``: the books at ``now``, not as a
    replay of the line leaves them."""
    if vault.to_shares(r.allocated_funds, now) == 0:
        return ZERO_SHARES
    return DEPOSITS_PAUSED if deposits_paused else None


def expiry_clock(requests: Sequence[UnstakeRequest], now: int) -> int:
    """The latest expiration time of ``requests`` at or before ``now`` (0 when none has passed):
    ``now >= r.expiration_time`` answers alike for it and for ``now``, for every request, so what
    reads the time only through ``status`` and that test is the same for both, and changes only
    when an expiration passes."""
    return max((r.expiration_time for r in requests if r.expiration_time <= now), default=0)


def unowned(requester: str) -> bool:
    """A request filed for the zero address (requestUnstakeOnBehalfOf takes it): claimUnstake and
    cancelRequest refuse it (RequestNotFound) whoever calls, so only a reclaim, once it has
    expired, can close it."""
    return int(requester, 16) == 0


def can_claim(r: UnstakeRequest, now: int) -> bool:
    """claimUnstake: the requester, a funded request, before its expiration."""
    return r.fulfilled and now < r.expiration_time and not unowned(r.requester)


def can_cancel(r: UnstakeRequest, now: int, redeposit_reverts: bool) -> bool:
    """cancelRequest: a pending request any time; a funded one only before its claimable time, and
    only where its allocated AVAX can be deposited back for fresh shares."""
    return not unowned(r.requester) and (not r.fulfilled or (now < r.claimable_time and not redeposit_reverts))


def can_reclaim(r: UnstakeRequest, now: int, redeposit_reverts: bool) -> bool:
    """reclaimExpiredRequest (anyone): past the expiration; a funded one deposits its AVAX back."""
    return now >= r.expiration_time and not (r.fulfilled and redeposit_reverts)


def deposits_paused(snap: Snapshot) -> bool:
    return bool(snap.paused.get("TokenggAVAX"))


def line(snap: Snapshot) -> list[UnstakeRequest]:
    """The pending requests in the order the queue serves them: the order they were filed."""
    q = snap.withdraw_queue
    return [] if q is None else sorted((r for r in q.requests if not r.fulfilled), key=lambda r: r.id)


def queue_liquidity(snap: Snapshot) -> int:
    v = snap.ggavax
    return max(0, v.total_assets - v.staking_total_assets)


def restakes(snap: Snapshot, m: Minipool, processed_at: int) -> bool:
    """Whether MinipoolManager's end-and-cycle call would start another cycle for ``m`` when its
    end is processed at ``processed_at``: not paused, and the pool's requested duration (with the
    delay tolerance) still has room for a whole cycle from then. The owner's collateral test comes
    after this (``collateral_allows``). Without the cycle settings (an older ProtocolDAO) no pool
    cycles. One rule for the queue's schedule and the rewards forecast."""
    cycle, tolerance = snap.settings.minipool_cycle_duration, snap.settings.minipool_cycle_delay_tolerance
    if snap.paused.get("MinipoolManager") or not cycle or tolerance is None:
        return False
    return processed_at + cycle <= m.initial_start_time + m.duration + tolerance


def collateral_allows(snap: Snapshot, ggp_staked: int, assigned_after: int) -> bool:
    """recreateMinipool's test: the owner's collateralization with the restaked AVAX assigned."""
    return collateralization_ratio(ggp_staked, assigned_after, snap.oracle.price) >= snap.settings.min_collateralization_ratio


def next_period_end(snap: Snapshot, m: Minipool, start: int) -> int:
    """End of a restaked pool's next validation, started at ``start``: one cycle, or the rest of
    its duration if shorter (and not under Rialto's shortest period)."""
    cycle = snap.settings.minipool_cycle_duration or 0
    left = m.initial_start_time + m.duration - start
    return start + max(min(cycle, left), MIN_PERIOD)


def period_reward(reward: int, principal: int, seconds: int, next_principal: int, next_seconds: int) -> int:
    """A later validation's reward at the rate of the current one (the provider's potential reward)."""
    if principal <= 0 or seconds <= 0:
        return 0
    return reward * next_principal * next_seconds // (principal * seconds)


def liquid_staker_reward(snap: Snapshot, reward: int) -> int:
    """MinipoolManager.recordStakingEnd's split: the stakers' half less the operator's commission."""
    half = reward // 2
    return half - mul_wad(half, snap.settings.minipool_node_commission_fee_pct)


def current_reward(m: Minipool, vals: dict[str, Validator]) -> int:
    """The current validation's reward as the provider reports it (potential), AVAX wei."""
    v = vals.get(encode_node_id(m.node_id))
    return v.validation_reward * NANO if v is not None else 0


def processing_time(end: int, now: int) -> int:
    """When Rialto records an end: at the end time, or in the block after the build block when it
    is overdue already."""
    return end if end > now else now + 1


@dataclass
class _Pool:
    m: Minipool
    end: int
    ls: int  # liquid stakers' AVAX out
    node_op: int
    reward: int  # this period's total reward
    start: int
    restakes: int = 0


def books(snap: Snapshot) -> L.Books:
    v = snap.ggavax
    return L.Books(v.total_released_assets, v.last_rewards_amt, v.last_sync, v.rewards_cycle_end, v.total_supply,
                   v.staking_total_assets)


def line_entries(snap: Snapshot, through: int | None = None) -> tuple[list[L.Entry], bool]:
    """The queue's private line from its front: pending requests and closed ids still in it, up to
    the last pending id (or id ``through - 1``). The front comes from the queue's logs; without
    them it is taken at the first pending id (closed ids before it as already dropped). Returns
    the entries and whether the front was known."""
    q = snap.withdraw_queue
    assert q is not None
    pending = {r.id: r for r in line(snap)}
    first = min(pending) if pending else q.next_request_id
    act = snap.queue_activity
    front = min(act.line_front, first) if act is not None else first
    last = (through - 1) if through is not None else (max(pending) if pending else front - 1)
    open_ids = {r.id for r in q.requests}
    entries = []
    for i in range(front, last + 1):
        r = pending.get(i)
        if r is not None:
            entries.append(L.Entry(i, r.shares, r.expected_assets))
        elif i not in open_ids:
            entries.append(L.Entry(i, None))
    return entries, act is not None


@dataclass(frozen=True)
class Events:
    """What the minipools do to the vault, decided before anyone is served (the line plays no
    part in it): the depositor's serves as (time, staking delta), and the returns and restakes."""

    serves: tuple[tuple[int, int], ...]
    returns: tuple[Return, ...]
    restakes: tuple[Restake, ...]
    unscheduled: int
    stream_serve: int | None = None  # the index in serves of the reward stream's end, when no minipool ends then


def minipool_events(snap: Snapshot) -> Events:
    """The staking minipools' ends in processing order, each restaked or returned as the contracts
    decide then, and the serves they bring: the block after the build block, every end's time, the
    reward stream's end."""
    now = snap.block.timestamp
    v = snap.ggavax
    owners = {st.staker_addr: [st.ggp_staked, st.avax_assigned] for st in snap.stakers}
    pools, unscheduled = _staking_pools(snap)
    returns: list[Return] = []
    restaked: list[Restake] = []
    serves: list[tuple[int, int]] = [(now + 1, 0)]  # the depositor's next call, before anything returns
    # A heap of (processing time, minipool index, insertion order, pool): ends in time order, those
    # of one time by index, as the rest of the module orders them.
    todo: list[tuple[int, int, int, _Pool | None]] = [(processing_time(p.end, now), p.m.index, k, p) for k, p in enumerate(pools)]
    if v.rewards_cycle_end > now + 1:  # the stream's last release: the depositor calls then too
        todo.append((v.rewards_cycle_end, -1, len(todo), None))
    heapq.heapify(todo)
    pushed = len(todo)
    stream = None
    while todo:
        t = todo[0][0]
        delta = 0
        ended: list[_Pool] = []
        while todo and todo[0][0] == t:
            p = heapq.heappop(todo)[3]
            if p is not None:
                ended.append(p)
        for p in ended:
            d, later = _end(snap, p, t, owners, returns, restaked)
            delta += d
            if later is not None:
                heapq.heappush(todo, (later.end, p.m.index, pushed, later))
                pushed += 1
        if not ended:  # only the stream's end is due then
            stream = len(serves)
        serves.append((t, delta))
    returns.sort(key=lambda r: (r.time, r.node_id))
    return Events(tuple(serves), tuple(returns), tuple(restaked), unscheduled, stream)


def _staking_pools(snap: Snapshot) -> tuple[list[_Pool], int]:
    """The staking minipools with liquid stakers' AVAX and a known end, and the liquid stakers'
    AVAX of those without one (launched, or no end known)."""
    vals = {val.node_id: val for val in snap.validators}
    pools: list[_Pool] = []
    unscheduled = 0
    for m in snap.minipools:
        if m.status == MinipoolStatus.LAUNCHED:
            unscheduled += m.avax_liquid_staker_amt
        if m.status != MinipoolStatus.STAKING or not m.avax_liquid_staker_amt:
            continue
        end = validation_end(m, snap.settings.minipool_cycle_duration, vals)
        if not end:
            unscheduled += m.avax_liquid_staker_amt
            continue
        pools.append(_Pool(m, end, m.avax_liquid_staker_amt, m.avax_node_op_amt, current_reward(m, vals), m.start_time))
    return pools, unscheduled


def _end(snap: Snapshot, p: _Pool, t: int, owners: dict[str, list[int]], returns: list[Return],
         restaked: list[Restake]) -> tuple[int, _Pool | None]:
    """One minipool's end processed at ``t``: the vault's staking delta, and the next validation
    when it restakes (recorded in ``returns`` or ``restaked``; the owner's assigned AVAX moves)."""
    owner = owners.setdefault(p.m.owner, [0, 0])
    ls_reward = liquid_staker_reward(snap, p.reward)
    delta = -p.ls  # recordStakingEnd: the principal back; the reward waits for a sync
    owner[1] -= p.ls
    compounded = p.node_op + ls_reward
    if restakes(snap, p.m, t) and collateral_allows(snap, owner[0], owner[1] + compounded):
        owner[1] += compounded
        restaked.append(Restake(t, p.m.node_id, compounded, ls_reward))
        end = next_period_end(snap, p.m, t)
        reward = period_reward(p.reward, p.ls + p.node_op, p.end - p.start, 2 * compounded, end - t)
        return delta + compounded, _Pool(p.m, end, compounded, compounded, reward, t, p.restakes + 1)
    returns.append(Return(p.end, p.ls, p.m.node_id, p.end <= snap.block.timestamp, p.restakes))
    return delta, None


def schedule(snap: Snapshot) -> Schedule:
    """The funding schedule: replays the contracts' rules from the snapshot (module docstring)."""
    now = snap.block.timestamp
    q = snap.withdraw_queue
    paused_deposits = deposits_paused(snap)
    places: dict[int, Place] = {}
    if q is None:
        return Schedule(queue_liquidity(snap), (), (), 0, places, 0, 0, None, 0, False, 0, assumptions(snap, False))
    entries, front_known = line_entries(snap)
    ev = minipool_events(snap)
    vault = books(snap)  # the replay's: serve_line moves it through the calls it plays
    today = books(snap)
    limit = q.max_requests_per_deposit
    served = L.serve_line(vault, entries, len(entries) if limit is None else limit, list(ev.serves))
    pending = line(snap)
    ahead = 0
    covered = 0
    last = None
    for k, r in enumerate(pending):
        when, n, call = served.funded.get(r.id, (None, None, None))
        first = n == 1
        # A later serve in the block after the build's is an overdue end's: the replay records it
        # then, Rialto whenever it does, so its time is no date to publish (it would move each block).
        overdue = when is not None and not first and when <= now + 1
        if when is not None:
            covered += 1
            if not first and not overdue:
                last = when
        st = status(r, now, paused_deposits)
        places[r.id] = Place(
            st, False, can_cancel(r, now, paused_deposits), can_reclaim(r, now, paused_deposits), None, k + 1, ahead,
            None if first or overdue else when, first, call if first else None,
            None if n is None else "liquidity" if first else "stream" if n - 1 == ev.stream_serve else "returns",
            # In line past its expiration, any funding comes after it, dated or not.
            when is not None and (st == RequestStatus.PENDING_EXPIRED
                                  or (st == RequestStatus.PENDING and not overdue and when >= r.expiration_time)),
            overdue=overdue, deposits_paused=paused_deposits, calls_fund_nothing=limit == 0,
            # Unfunded with a call failing whole: at it, at one ahead, or at one behind that the same calls reach.
            blocked_by=served.blocked if when is None and served.blocked is not None else None)
        ahead += r.expected_assets
    for r in q.requests:
        if r.fulfilled:
            why = redeposit_blocked(r, today, now, paused_deposits)
            st = status(r, now, why is not None)
            places[r.id] = Place(st, can_claim(r, now), can_cancel(r, now, why is not None),
                                 can_reclaim(r, now, why is not None), why if st == RequestStatus.STUCK else None,
                                 None, 0, None, False, None, None, False, deposits_paused=paused_deposits,
                                 redeposit_blocked=why)
    uncovered = pending[covered:]
    shortfall = 0
    if uncovered:
        t_end = ev.serves[-1][0]
        shortfall = max(0, sum(r.expected_assets for r in uncovered) - vault.liquidity(t_end))
    stale = sum(1 for e in entries if e.shares is None)
    return Schedule(queue_liquidity(snap), ev.returns, ev.restakes, ev.unscheduled, places, covered, shortfall,
                    last, stale, front_known, served.reverted, assumptions(snap, front_known), ev.serves, served.blocked)


def cached_schedule(ctx) -> Schedule:
    """The build's one schedule (``Context.cached``): /withdrawals, the requester files and the
    pages all read the same replay."""
    return schedule(ctx.snap)


def advice(r: UnstakeRequest, place: Place, window_end: int | None = None, *, window_closed: int | None = None,
           idle: Idle | None = None) -> str:
    """What the requester can do now, and until when, in one or two sentences. ``window_end``: the
    announced end of the withdrawal window while it is ahead; ``window_closed``: that end, once passed;
    ``idle``: the depositor looks stale, so a request in line waits for a call that may not come."""
    st = place.status
    if unowned(r.requester):
        return _unowned_advice(r, place)
    if st in (RequestStatus.FUNDED, RequestStatus.EXPIRED_FUNDED, RequestStatus.STUCK):
        return _funded_advice(r, place, window_end)
    if st == RequestStatus.PENDING_EXPIRED:
        then = _after_expiry(place)
        act = "cancel it (ggAVAX back at today's rate) or reclaim it (anyone can, you included; your original shares back)"
        funding = _funding(place) if place.expires_first else None
        if funding is not None:
            return (f"Its expiration has passed while it waited in line: {funding}. Funded after its expiration, "
                    f"{then}. " + (f"To avoid that, {act} before then." if place.deposits_paused
                                   else f"Until then you may {act}."))
        may = ("The queue's maxRequestsPerDeposit is 0, so the depositor's calls fund no request until its admin "
               "raises it; funded after that" if place.calls_fund_nothing
               else "The depositor may still fund it; funded after its expiration")
        return f"Its expiration has passed while it waited in line: {act}. {may}, {then}."
    cancel = " You may cancel it at any time (ggAVAX back at today's rate)."
    wait = _wait(place, r.id)
    claim = f" Once funded, claim it before it expires at {when(r.expiration_time)}."
    window = window_end if window_end is not None and window_end > r.request_time else None
    funding = _funding(place)
    if place.expires_first:
        wait += _expires_first(r, place)
        claim = ""
    elif window is not None and window < r.expiration_time and (funding is None or (place.funding_time or 0) >= window):
        # A claim cannot come before a funding that is not expected before the window closes (the
        # window named only where it comes before the expiration, the contract's own deadline).
        said = "No funding is expected before" if funding is None else "That is after"
        wait += (f" {said} the announced withdrawal window closes ({when(window)}): after that date, a funding "
                 "depends on the depositor still calling.")
    elif window is not None and window < r.expiration_time:
        # The operator's date comes first; the contract pays a claim until the expiration.
        claim = (f" Once funded, claim it before the announced withdrawal window closes ({when(window)}); the "
                 f"contract pays a claim until it expires at {when(r.expiration_time)}.")
    if window_closed is not None:
        wait += (f" The announced withdrawal window closed at {when(window_closed)}: a funding now depends on the "
                 "depositor still calling.")
    return wait + _idle(r, place, idle) + cancel + claim



def _unowned_advice(r: UnstakeRequest, place: Place) -> str:
    """``advice`` for a request filed for the zero address: only a reclaim can close it."""
    head = "It was filed for the zero address, which no one can act for: the queue refuses to claim or cancel it. "
    if place.can_reclaim:
        return head + "Anyone can reclaim it now, which sends its ggAVAX to the zero address."
    if place.status in (RequestStatus.PENDING, RequestStatus.FUNDED):
        blocked = place.redeposit_blocked
        then = (f"reclaiming it will revert ({blocked.split(':')[0]})" if blocked == ZERO_SHARES
                else "anyone can reclaim it" + (" while ggAVAX takes deposits" if r.fulfilled else "")
                + ", which sends its ggAVAX to the zero address")
        return head + f"Once it expires, at {when(r.expiration_time)}, {then}."
    return head + f"Reclaiming it reverts ({(place.stuck_reason or DEPOSITS_PAUSED).split(':')[0]}): nothing closes it now."


def _funded_advice(r: UnstakeRequest, place: Place, window_end: int | None) -> str:
    """``advice`` for a funded request: claimable, reclaimable, or stuck."""
    st = place.status
    if st == RequestStatus.FUNDED:
        cancel = (f" Until {when(r.claimable_time)} you may also cancel it for ggAVAX instead."
                  if place.can_cancel else "")
        after = (" after that it is stuck: it can no longer be claimed, and reclaiming it reverts while ggAVAX deposits "
                 "are paused." if place.redeposit_blocked == DEPOSITS_PAUSED
                 else " after that it is stuck: it can no longer be claimed, and reclaiming it reverts (its AVAX is too "
                 "little to mint one ggAVAX share)." if place.redeposit_blocked
                 else " after that it can only be reclaimed as ggAVAX.")
        # The window is the operator's date, not the contract's: a claim pays until the expiration.
        note = (f" The announced withdrawal window closes earlier, at {when(window_end)}: claim by then if you can, "
                "though the contract pays a claim until the expiration."
                if window_end is not None and window_end < r.expiration_time else "")
        return (f"Claim it: the AVAX is set aside for you. Claim before it expires at {when(r.expiration_time)};"
                f"{after}{cancel}{note}")
    # Funded and expired: not always unclaimed in time, since a request can be funded after it expired.
    if st == RequestStatus.EXPIRED_FUNDED:
        return ("It is funded and past its expiration: the AVAX can no longer be claimed. Anyone, you included, can "
                "reclaim it, which deposits the AVAX back into ggAVAX and sends you the shares.")
    head = ("Nothing can be done with it now: no call releases it. It is funded and past its expiration, so "
            "claiming it reverts, and so does cancelling it (past its claimable time); reclaiming it reverts ")
    if place.stuck_reason == ZERO_SHARES:
        return (head + "because its AVAX is too little to mint one ggAVAX share (ZeroShares), and the share price "
                "only rises: its AVAX stays set aside in the queue.")
    return (head + f"because {DEPOSITS_PAUSED.split(':')[0]}. Its AVAX stays set aside in the queue: only the "
            "protocol reopening ggAVAX deposits lets it be reclaimed (as ggAVAX), and if they stay paused it stays there.")

def _expires_first(r: UnstakeRequest, place: Place) -> str:
    """What a request in line that expires before its funding is told: what a late funding does,
    and, where it leaves the request stuck, how to avoid it."""
    out = f" It expires at {when(r.expiration_time)}, before that: funded later, {_after_expiry(place)}."
    if place.deposits_paused:
        out += (" To avoid that, cancel it before then, or reclaim it once it expires (your original shares back), "
                "before a funding comes.")
    return out


def idle_matters(place: Place) -> bool:
    """Whether a request's advice says more while the depositor looks stale: one in line that its
    calls could fund (not one they fail at, nor under a per-call limit of 0: said already)."""
    return place.status == RequestStatus.PENDING and place.blocked_by is None and not place.calls_fund_nothing


def _idle(r: UnstakeRequest, place: Place, idle: Idle | None) -> str:
    """What a request in line is told while the depositor looks stale: that nothing is funded until
    it calls, and what to do if the expiration comes first."""
    if idle is None or not idle_matters(place):
        return ""
    since = ("No call of the depositor is on record" if idle.last_call_time is None
             else f"The depositor has made no call since {when(idle.last_call_time)}")
    out = f" {since}, and nothing is funded until it calls."
    if not place.expires_first:  # else what to do by then is said already
        out += (f" If it is still unfunded when it expires at {when(r.expiration_time)}, cancel or reclaim it then: "
                f"funded later, {_after_expiry(place)}.")
    return out


def _wait(place: Place, rid: int) -> str:
    """What a pending request waits for, in a sentence."""
    funding = _funding(place)
    if funding is not None:
        return f"Wait: {funding}."
    if place.blocked_by is not None:
        where = blocked_where(place.blocked_by, rid)
        return (f"Wait or cancel: the depositor's calls fail whole when they reach {where} ({L.REVERTS}), so "
                "it is not funded until that changes" + ("." if place.blocked_by == rid else " or that request leaves the line."))
    if place.calls_fund_nothing:
        return ("Wait or cancel: the queue's maxRequestsPerDeposit is 0, so the depositor's calls fund no request "
                "until its admin raises it.")
    return "Wait or cancel: no minipool return known today covers it."


def blocked_where(blocked: int, rid: int) -> str:
    """Where the depositor's calls fail whole, seen from request ``rid`` (its advice and its page)."""
    if blocked == rid:
        return "this request"
    return f"request #{blocked}, {'ahead of' if blocked < rid else 'behind'} it"


def _after_expiry(place: Place) -> str:
    """What a request funded after its expiration is, as a clause."""
    return L.after_expiry(place.deposits_paused)


def _funding(place: Place) -> str | None:
    """How the schedule funds a request in line, as a clause; None when it does not."""
    if place.fundable_now:
        calls = "next call" if place.depositor_calls == 1 else f"{place.depositor_calls} calls from now"
        return f"the vault's liquidity already covers it, and the depositor's {calls} funds it"
    if place.overdue:
        return ("minipools whose validation has already ended return enough to fund it; the depositor funds it once "
                "Rialto records their ends, which no one can date")
    if place.funding_time is not None:
        source = ("the vault's current reward stream, all released then, is" if place.funded_by == "stream"
                  else "minipool returns are")
        return f"{source} expected to fund it at {when(place.funding_time)}"
    return None


def estimate_params(snap: Snapshot, window_end: int | None, stale_reason: str | None,
                    sched: Schedule | None = None) -> L.Params | None:
    """What /withdrawals/estimate needs to place a new request at the back of the line: the same
    books, minipool events and line (to the last id issued) as the schedule (``sched``, the build's
    own when given: its minipool events are not replayed again)."""
    q = snap.withdraw_queue
    if q is None:
        return None
    entries, front_known = line_entries(snap, through=q.next_request_id)
    v = snap.ggavax
    pending = line(snap)
    return L.Params(
        snap.block.number, snap.block.hash, snap.block.timestamp,
        (v.total_released_assets, v.last_rewards_amt, v.last_sync, v.rewards_cycle_end, v.total_supply,
         v.staking_total_assets),
        q.max_requests_per_deposit, tuple(entries), sched.serves if sched else minipool_events(snap).serves, q.next_request_id,
        len(pending), sum(r.expected_assets for r in pending), q.unstake_delay, q.max_expiration_delay,
        q.paused, deposits_paused(snap), window_end, stale_reason, assumptions(snap, front_known))
