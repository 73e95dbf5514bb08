"""The ggAVAX withdrawal queue: /withdrawals (the line, its totals and funding schedule) and
/withdrawals/{address} (one requester's open requests)."""
from __future__ import annotations

from ..compute import queue as Q
from ..compute.nodeid import node_id
from ..snapshot import PstAvax, UnstakeRequest, WithdrawQueue
from . import schema as S
from .common import meta
from .context import Context
from .registry import Deferred, Each, Param, endpoint
from .units import tokens

AVAX = S.NON_NEGATIVE
COUNT = {"type": "integer", "minimum": 0}
STATUSES = [s.value for s in Q.RequestStatus]

REQUESTER_PARAM = Param("address", "path", "Requester address (who files, claims or cancels the requests). Canonical "
                        "paths use the lower-case hex; the checksummed form is accepted and normalized.",
                        {"type": "string", "pattern": "^0x[0-9a-fA-F]{40}$"}, lowercase=True)

ESTIMATE = {
    "position": S.described(S.nullable({"type": "integer", "minimum": 1}), "place in the pending line, 1 = served next (null when not pending)"),
    "aheadAvax": S.described(AVAX, "expected AVAX of the pending requests ahead of it, whole AVAX"),
    "fundableNow": S.described(S.BOOLEAN, "the vault's liquidity already covers it and every request ahead: it is funded at the depositor's next call"),
    "estimatedFundingTime": S.described(S.nullable(S.TIMESTAMP), "when minipool returns are expected to fund it, unix seconds (null when fundable now, already funded, or beyond the returns known today); in the past when the minipool that funds it is overdue"),
}

REQUEST = S.obj({
    "id": S.described(COUNT, "request id (ids count up from 0 in filing order)"),
    "requester": S.described(S.ADDRESS, "owner of the request: the only one who may claim or cancel it, and the one paid"),
    "status": {"enum": STATUSES, "description": "pending: in line for liquidity; funded: AVAX allocated, claimable at once; expired: past its expiration, only reclaimable (its shares go back to the requester)"},
    "fulfilled": S.described(S.BOOLEAN, "AVAX has been allocated to it (true for funded requests, and for expired ones that were funded first)"),
    "canClaim": S.described(S.BOOLEAN, "the requester can claim the AVAX now (funded and not expired)"),
    "canCancel": S.described(S.BOOLEAN, "the requester can still cancel: a pending request any time, a funded one only before its claimable time and while ggAVAX takes deposits (its AVAX is deposited back)"),
    "shares": S.described(AVAX, "ggAVAX taken when the request was filed, whole tokens"),
    "expectedAvax": S.described(AVAX, "AVAX the requester is paid, fixed when the request was filed, whole AVAX"),
    "allocatedAvax": S.described(AVAX, "AVAX set aside for it (0 until funded), whole AVAX"),
    "requestTime": S.described(S.TIMESTAMP, "when it was filed, unix seconds"),
    "claimableTime": S.described(S.TIMESTAMP, "the advertised earliest payout (request time + the unstake delay); a funded request can be cancelled until then"),
    "expirationTime": S.described(S.TIMESTAMP, "deadline: from then on it can no longer be claimed, only reclaimed as shares"),
    **ESTIMATE,
})

LINE_ROW = S.obj({
    "position": S.described({"type": "integer", "minimum": 1}, "place in line, 1 = served next"),
    "id": S.described(COUNT, "request id"),
    "requester": S.described(S.ADDRESS, "owner of the request"),
    "status": {"enum": ["pending", "expired"], "description": "expired requests stay in line until reclaimed or cancelled: the queue can still fund them (then only reclaimable)"},
    "expectedAvax": S.described(AVAX, "AVAX it needs, whole AVAX"),
    "cumulativeAvax": S.described(AVAX, "AVAX needed to serve the line up to and including it, whole AVAX"),
    "fundableNow": ESTIMATE["fundableNow"],
    "estimatedFundingTime": ESTIMATE["estimatedFundingTime"],
})

RETURN_ROW = S.obj({
    "time": S.described(S.TIMESTAMP, "end of the minipool's validation period, unix seconds"),
    "avax": S.described(AVAX, "liquid stakers' AVAX it hands back, whole AVAX"),
    "nodeID": S.described(S.NODE_ID, "the minipool's NodeID"),
    "overdue": S.described(S.BOOLEAN, "the end has passed and the AVAX has not come back yet"),
})

SUMS = {"count": S.described(COUNT, "requests"), "shares": S.described(AVAX, "ggAVAX, whole tokens"),
        "expectedAvax": S.described(AVAX, "AVAX owed to their requesters, whole AVAX")}


def _queue_state(ctx: Context) -> Q.Schedule:
    return Q.schedule(ctx.snap)


@endpoint(
    "/withdrawals", tag="Liquid staking", summary="The ggAVAX withdrawal queue",
    description="ggAVAX (stAVAX) is redeemed only through the WithdrawQueue contract: a holder files a request, the "
                "queue funds requests strictly in line order when the vault has liquidity, and the requester claims "
                "the AVAX before the request expires. This is the queue at the block: its parameters, pending, funded "
                "and expired requests, the liquidity it can use, and a funding schedule — the AVAX staking minipools "
                "hand back by their end times against the line's cumulative demand, giving each place in line an "
                "estimated funding time under the `assumptions` listed in the body. `status` is `noQueue` (with "
                "`reason`, every other field null) on a network or at a block without a queue.",
    schema=S.obj({
        "status": {"enum": ["ok", "noQueue"], "description": "ok, or noQueue where the network has no queue at this block"},
        "reason": S.described(S.nullable(S.STRING), "why there is no queue (null when there is one)"),
        "address": S.described(S.nullable(S.ADDRESS), "the WithdrawQueue contract"),
        "parameters": S.nullable(S.obj({
            "paused": S.described(S.nullable(S.BOOLEAN), "new requests are refused while paused (claims, cancels and funding go on); null on an implementation without a pause"),
            "unstakeDelay": S.described(COUNT, "seconds from filing to the claimable time, for new requests"),
            "maxExpirationDelay": S.described(COUNT, "longest expiration delay (after the claimable time) a requester may choose, seconds"),
            "minExpirationDelay": S.described(COUNT, "shortest expiration delay: a smaller choice is raised to it, seconds"),
            "nextRequestId": S.described(COUNT, "ids issued so far (the next request's id)"),
            "maxRequestsPerDeposit": S.described(S.nullable(COUNT), "requests one funding call serves at most (null when the view is absent)"),
            "minOnBehalfShares": S.described(S.nullable(AVAX), "smallest request filed on behalf of someone else, ggAVAX (null when the view is absent)"),
        }, description="the queue's settings")),
        "pending": S.nullable(S.obj({**SUMS, "expiredCount": S.described(COUNT, "of which past their expiration (still in line)")},
                                    description="requests in line for liquidity")),
        "funded": S.nullable(S.obj({
            "count": S.described(COUNT, "requests funded and not yet claimed"),
            "avax": S.described(AVAX, "AVAX allocated to them (totalAllocatedFunds), whole AVAX"),
            "claimableCount": S.described(COUNT, "of which claimable now (not expired)"),
            "claimableAvax": S.described(AVAX, "AVAX of those, whole AVAX"),
        }, description="requests funded and awaiting their claim")),
        "expired": S.nullable(S.obj({**SUMS, "fundedCount": S.described(COUNT, "of which funded before expiring (their AVAX goes back into the vault on reclaim)")},
                                    description="requests past their expiration and not reclaimed: their shares go back to the requester on reclaim")),
        "requesters": S.described(S.nullable(COUNT), "addresses with an open request (each has a /withdrawals/{address} file)"),
        "sharesHeld": S.described(S.nullable(AVAX), "ggAVAX the queue holds (the pending requests' shares), whole tokens"),
        "liquidity": S.nullable(S.obj({
            "queueAvax": S.described(AVAX, "what the queue can pay from now: ggAVAX totalAssets − stakingTotalAssets, whole AVAX"),
            "vaultWavax": S.described(AVAX, "WAVAX the vault holds (a payout also needs it there), whole AVAX"),
            "pendingShortfallAvax": S.described(AVAX, "pending demand beyond queueAvax now, whole AVAX"),
        }, description="the vault liquidity that can fund the queue")),
        "schedule": S.nullable(S.obj({
            "assumptions": S.described(S.array(S.STRING), "what the estimates assume; a broken assumption moves them"),
            "returns": S.described(S.array(RETURN_ROW), "AVAX the staking minipools are expected to hand back, by time"),
            "returnsAvax": S.described(AVAX, "their sum, whole AVAX"),
            "unscheduledAvax": S.described(AVAX, "liquid stakers' AVAX out in minipools with no known return time, whole AVAX"),
            "coveredCount": S.described(COUNT, "pending requests the liquidity and the known returns cover"),
            "uncoveredCount": S.described(COUNT, "pending requests beyond them"),
            "shortfallAvax": S.described(AVAX, "AVAX the line still lacks after every known return, whole AVAX"),
            "lastFundingTime": S.described(S.nullable(S.TIMESTAMP), "estimated funding time of the last covered request (null if none waits for a return)"),
            "line": S.described(S.array(LINE_ROW), "the pending line in order, with each place's estimate"),
        }, description="the funding forecast")),
        "pstAvax": S.nullable(S.obj({
            "address": S.described(S.ADDRESS, "the pstAVAX token"),
            "totalSupply": S.described(AVAX, "pstAVAX in circulation = AVAX principal owed to holders, whole tokens"),
            "vaultShares": S.described(AVAX, "ggAVAX it holds as backing, whole tokens"),
        }, description="pstAVAX, whose holders exit through the queue too (null where the network names none)")),
        "meta": S.META,
    }),
)
def withdrawals(ctx: Context):
    s, q = ctx.snap, ctx.snap.withdraw_queue
    if q is None:
        yield "/withdrawals", Deferred((s.withdraw_queue_note or "no withdrawal queue", s.pst_avax), no_queue_body,
                                       meta=meta(ctx))
        return
    sched = ctx.cached(_queue_state)
    line, cumulative = [], 0
    for r in Q.line(s):
        cumulative += r.expected_assets
        line.append((r, cumulative, sched.places[r.id]))
    # The schedule's figures (its places enter through the line's rows) and the vault's WAVAX; the
    # sums are inputs, so that a page's excerpt of the lists keeps them whole.
    outlook = (sched.liquidity, sum(r.avax for r in sched.returns), sched.unscheduled_avax, sched.covered,
               sched.shortfall, sched.last_funding_time, s.ggavax.liquid_avax)
    yield "/withdrawals", Deferred((q, s.block.timestamp, s.pst_avax, outlook, Each(_return_row, sched.returns),
                                    Each(_line_row, tuple(line))), withdrawals_body, meta=meta(ctx))


def no_queue_body(reason: str, pst: PstAvax | None) -> dict:
    empty = dict.fromkeys(("address", "parameters", "pending", "funded", "expired", "requesters", "sharesHeld",
                           "liquidity", "schedule"))
    return {"status": "noQueue", "reason": reason, **empty, "pstAvax": _pst_record(pst)}


def withdrawals_body(q: WithdrawQueue, now: int, pst: PstAvax | None, outlook: tuple, returns: list, line: list) -> dict:
    liquidity, returns_avax, unscheduled, covered, shortfall, last_funding_time, vault_wavax = outlook
    pending = [r for r in q.requests if not r.fulfilled]
    funded = [r for r in q.requests if r.fulfilled]
    claimable = [r for r in funded if now < r.expiration_time]
    expired = [r for r in q.requests if now >= r.expiration_time]
    demand = sum(r.expected_assets for r in pending)
    return {
        "status": "ok", "reason": None, "address": q.address,
        "parameters": {"paused": q.paused, "unstakeDelay": q.unstake_delay, "maxExpirationDelay": q.max_expiration_delay,
                       "minExpirationDelay": Q.MIN_EXPIRATION_DELAY, "nextRequestId": q.next_request_id,
                       "maxRequestsPerDeposit": q.max_requests_per_deposit,
                       "minOnBehalfShares": None if q.min_on_behalf is None else tokens(q.min_on_behalf)},
        "pending": {**_sums(pending), "expiredCount": sum(1 for r in pending if now >= r.expiration_time)},
        "funded": {"count": len(funded), "avax": tokens(q.total_allocated_funds), "claimableCount": len(claimable),
                   "claimableAvax": tokens(sum(r.allocated_funds for r in claimable))},
        "expired": {**_sums(expired), "fundedCount": sum(1 for r in expired if r.fulfilled)},
        "requesters": len({r.requester for r in q.requests}),
        "sharesHeld": tokens(q.shares_held),
        "liquidity": {"queueAvax": tokens(liquidity), "vaultWavax": tokens(vault_wavax),
                      "pendingShortfallAvax": tokens(max(0, demand - liquidity))},
        "schedule": {
            "assumptions": list(Q.ASSUMPTIONS),
            "returns": returns,
            "returnsAvax": tokens(returns_avax),
            "unscheduledAvax": tokens(unscheduled),
            "coveredCount": covered, "uncoveredCount": len(pending) - covered,
            "shortfallAvax": tokens(shortfall), "lastFundingTime": last_funding_time,
            "line": line,
        },
        "pstAvax": _pst_record(pst),
    }


def _pst_record(pst: PstAvax | None) -> dict | None:
    if pst is None:
        return None
    return {"address": pst.address, "totalSupply": tokens(pst.total_supply), "vaultShares": tokens(pst.vault_shares)}


def _line_row(item: tuple[UnstakeRequest, int, Q.Place]) -> dict:
    r, total, place = item
    return {"position": place.position, "id": r.id, "requester": r.requester, "status": place.status.value,
            "expectedAvax": tokens(r.expected_assets), "cumulativeAvax": tokens(total),
            "fundableNow": place.fundable_now, "estimatedFundingTime": place.funding_time}


def _sums(requests: list[UnstakeRequest]) -> dict:
    return {"count": len(requests), "shares": tokens(sum(r.shares for r in requests)),
            "expectedAvax": tokens(sum(r.expected_assets for r in requests))}


def _return_row(r: Q.Return) -> dict:
    return {"time": r.time, "avax": tokens(r.avax), "nodeID": node_id(r.node_id), "overdue": r.overdue}


@endpoint(
    "/withdrawals/{address}", tag="Liquid staking", summary="One requester's withdrawal requests",
    description="Every open request of one requester (pending, funded or expired and not reclaimed), with what it "
                "can do now and where it stands in line: position, the AVAX ahead of it and the estimated funding "
                "time of /withdrawals' schedule. Addresses without an open request have no file (404). No run "
                "timestamp: the file changes only when one of its requests or its estimate does.",
    schema=S.obj({
        "requester": S.described(S.ADDRESS, "the requester"),
        "requests": S.described(S.array(REQUEST), "open requests, by id"),
        "count": S.described(COUNT, "number of open requests"),
        "totals": S.obj({"shares": SUMS["shares"], "expectedAvax": SUMS["expectedAvax"],
                         "allocatedAvax": S.described(AVAX, "AVAX funded for them, whole AVAX"),
                         "claimableAvax": S.described(AVAX, "AVAX the requester can claim now, whole AVAX")},
                        description="sums over the open requests"),
    }),
    params=(REQUESTER_PARAM,),
)
def requester(ctx: Context):
    q = ctx.snap.withdraw_queue
    if q is None:
        return
    sched = ctx.cached(_queue_state)
    mine: dict[str, list[UnstakeRequest]] = {}
    for r in q.requests:
        mine.setdefault(r.requester, []).append(r)
    for who, requests in mine.items():
        # A request's file depends on the request and what the build derived for it, nothing else.
        items = tuple((r, sched.places[r.id]) for r in requests)
        yield f"/withdrawals/{who.lower()}", Deferred((who, items), requester_body)


def requester_body(who: str, items: tuple[tuple[UnstakeRequest, Q.Place], ...]) -> dict:
    rows = [_request_record(r, place) for r, place in items]
    return {"requester": who, "requests": rows, "count": len(rows), "totals": {
        "shares": tokens(sum(r.shares for r, _ in items)),
        "expectedAvax": tokens(sum(r.expected_assets for r, _ in items)),
        "allocatedAvax": tokens(sum(r.allocated_funds for r, _ in items)),
        "claimableAvax": tokens(sum(r.allocated_funds for r, p in items if p.can_claim)),
    }}


def _request_record(r: UnstakeRequest, place: Q.Place) -> dict:
    return {
        "id": r.id, "requester": r.requester, "status": place.status.value, "fulfilled": r.fulfilled,
        "canClaim": place.can_claim, "canCancel": place.can_cancel, "shares": tokens(r.shares),
        "expectedAvax": tokens(r.expected_assets), "allocatedAvax": tokens(r.allocated_funds),
        "requestTime": r.request_time, "claimableTime": r.claimable_time, "expirationTime": r.expiration_time,
        "position": place.position, "aheadAvax": tokens(place.ahead_avax), "fundableNow": place.fundable_now,
        "estimatedFundingTime": place.funding_time,
    }


def queue_totals(ctx: Context) -> dict:
    """The queue's headline figures for /ggAvax (nulls without a queue)."""
    q = ctx.snap.withdraw_queue
    if q is None:
        return {"withdrawQueue": None, "queuePendingCount": None, "queuePendingAvax": None,
                "queueFundedAvax": None, "queueLiquidityAvax": None}
    pending = [r for r in q.requests if not r.fulfilled]
    return {"withdrawQueue": q.address, "queuePendingCount": len(pending),
            "queuePendingAvax": tokens(sum(r.expected_assets for r in pending)),
            "queueFundedAvax": tokens(q.total_allocated_funds), "queueLiquidityAvax": tokens(Q.queue_liquidity(ctx.snap))}
