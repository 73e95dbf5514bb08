"""The ggAVAX withdrawal queue: /withdrawals (the line, its totals and funding schedule) and
/withdrawals/{address} (one requester's open requests and the receipt of every request it ever
filed)."""
from __future__ import annotations

import re
from collections.abc import Mapping

from ..compute import line as L
from ..compute import queue as Q
from ..compute.nodeid import node_id
from ..snapshot import PstAvax, QueueStep, Receipt, Snapshot, UnstakeRequest, WithdrawQueue
from ..utc import when
from . import schema as S
from .announcements import ANNOUNCEMENTS_SCHEMA, WINDOW_END, announcement_records
from .common import meta
from .context import Context
from .depositor import DEPOSITOR_SCHEMA, Shown, depositor_inputs, depositor_record
from .registry import REL, Bound, Check, Deferred, Each, Limits, Param, Run, endpoint, keyed_records
from .units import tokens

AVAX = S.NON_NEGATIVE
COUNT = {"type": "integer", "minimum": 0}
STATUSES = [s.value for s in Q.RequestStatus]
LINE_STATUSES = [Q.RequestStatus.PENDING.value, Q.RequestStatus.PENDING_EXPIRED.value]

REQUESTER_PARAM = Param("address", "path", "Requester address (who files, claims or cancels the requests). Canonical "
                        "paths use the lower-case hex; the checksummed form is accepted and normalized.",
                        {"type": "string", "pattern": "^0x[0-9a-fA-F]{40}$"}, lowercase=True)

ESTIMATE = {
    "position": S.described(S.nullable({"type": "integer", "minimum": 1}), "place in the pending line, 1 = served next (null for a funded request; a pendingExpired one keeps its place)"),
    "aheadAvax": S.described(AVAX, "expected AVAX of the pending requests ahead of it, whole AVAX (0 for a funded request)"),
    "fundableNow": S.described(S.BOOLEAN, "the vault's liquidity already covers it and every request ahead: the depositor's next calls fund it (how many: depositorCalls)"),
    "depositorCalls": S.described(S.nullable({"type": "integer", "minimum": 1}), "when fundable now: the number of depositor calls that reach it, 1 = the next call (each call takes at most maxRequestsPerDeposit steps, and a closed id still in the line costs one); null otherwise"),
    "estimatedFundingTime": S.described(S.nullable(S.TIMESTAMP), "when the schedule's replay of the contracts funds it (a minipool's end, processed, or the reward stream's end), unix seconds; null when fundable now, already funded, waiting for overdue returns (awaitsOverdueReturns), or not funded by the schedule (beyond the returns known today, a per-call limit of 0, or calls that revert)"),
    "awaitsOverdueReturns": S.described(S.BOOLEAN, "covered by the returns of minipools whose validation has ended but whose end Rialto has not recorded yet: the depositor funds it in the block after they are recorded, which no one can date (estimatedFundingTime is null)"),
    "expiresBeforeFunding": S.described(S.BOOLEAN, "a request in line that the schedule funds after its expiration (a pending one whose expiration comes before its funding, or a pendingExpired one that the schedule funds at all): funded then, it could not be claimed, only reclaimed, and it is stuck while ggAVAX deposits are paused"),
}
STATUS_DOC = "; ".join(f"{s.value}: {Q.STATUS_TEXT[s]}" for s in Q.RequestStatus)

REQUEST = S.obj({
    "id": S.described(COUNT, "request id (ids count up from 0 in filing order)"),
    "requester": S.described(S.ADDRESS, "owner of the request: the only one who may claim or cancel it, and the one paid"),
    "status": {"enum": STATUSES, "description": STATUS_DOC},
    "fulfilled": S.described(S.BOOLEAN, "AVAX has been allocated to it (true for funded requests, and for expired ones funded before or after their expiration)"),
    "canClaim": S.described(S.BOOLEAN, "the requester's claimUnstake succeeds at the block: funded and not expired"),
    "canCancel": S.described(S.BOOLEAN, "the requester's cancelRequest succeeds at the block: a pending request any time, a funded one only before its claimable time and while ggAVAX takes deposits (its AVAX is deposited back)"),
    "canReclaim": S.described(S.BOOLEAN, "anyone's reclaimExpiredRequest succeeds at the block: past its expiration, and for a funded request only while ggAVAX takes deposits (its AVAX is deposited back as shares)"),
    "stuckReason": S.described(S.nullable(S.STRING), "why a stuck request can be neither claimed nor reclaimed now: ggAVAX deposits paused, or its AVAX too little to mint one share (null otherwise)"),
    "redepositBlocked": S.described(S.nullable(S.STRING), "a funded request's: why cancelling or reclaiming it, which deposit its AVAX back into ggAVAX, reverts now (so once it expires it is stuck); null when they go through, and for a request in line"),
    "advice": S.described(S.STRING, "what the requester can do now, and until when"),
    "shares": S.described(AVAX, "ggAVAX taken when the request was filed, whole tokens"),
    "expectedAvax": S.described(AVAX, "AVAX a claim pays the requester, fixed when the request was filed, whole AVAX; "
                                      "past its expiration no claim can pay it (reclaimed, or cancelled while still in line, it returns ggAVAX)"),
    "allocatedAvax": S.described(AVAX, "AVAX set aside for it (0 until funded), whole AVAX"),
    "requestTime": S.described(S.TIMESTAMP, "when it was filed, unix seconds"),
    "claimableTime": S.described(S.TIMESTAMP, "the advertised earliest payout (request time + the unstake delay), though the contract pays a claim as soon as the request is funded; a funded request can be cancelled until then while ggAVAX takes deposits (a cancel deposits its AVAX back)"),
    "expirationTime": S.described(S.TIMESTAMP, "deadline to claim: from then on a funded request can no longer be claimed, only reclaimed (its AVAX deposited back into ggAVAX for the requester), and while ggAVAX deposits are paused not even that: it is stuck; a pending one stays in line, where it can be cancelled, reclaimed as its original ggAVAX, or still funded (and then only reclaimed, or stuck while deposits are paused)"),
    **ESTIMATE,
    "blockedBy": S.described(S.nullable(COUNT), "in line and not funded because the depositor's calls fail whole when "
                             "they reach this request id (this one, one ahead of it, or one behind it that the same "
                             "calls reach): not funded until that changes; null otherwise"),
    "callsFundNothing": S.described(S.BOOLEAN, "the queue's maxRequestsPerDeposit is 0: no depositor call funds a request "
                                    "until the queue's admin raises it"),
})

LINE_ROW = S.obj({
    "position": S.described({"type": "integer", "minimum": 1}, "place in line, 1 = served next"),
    "id": S.described(COUNT, "request id"),
    "requester": S.described(S.ADDRESS, "owner of the request"),
    "status": {"enum": LINE_STATUSES, "description": "pendingExpired requests stay in line until reclaimed or cancelled: the queue can still fund them (then only reclaimable, and stuck while ggAVAX deposits are paused)"},
    "expectedAvax": S.described(AVAX, "AVAX it needs, whole AVAX"),
    "cumulativeAvax": S.described(AVAX, "sum of the expected AVAX of the line up to and including it, whole AVAX (a funding redeems at the share price of its block, so it may need somewhat more liquidity; the excess goes back to the vault)"),
    "fundableNow": ESTIMATE["fundableNow"],
    "depositorCalls": ESTIMATE["depositorCalls"],
    "estimatedFundingTime": ESTIMATE["estimatedFundingTime"],
    "awaitsOverdueReturns": ESTIMATE["awaitsOverdueReturns"],
    "expiresBeforeFunding": ESTIMATE["expiresBeforeFunding"],
})

RETURN_ROW = S.obj({
    "time": S.described(S.TIMESTAMP, "end of the minipool's validation period, unix seconds"),
    "avax": S.described(AVAX, "liquid stakers' AVAX it hands back (their principal; the reward waits for a rewards sync), whole AVAX"),
    "nodeID": S.described(S.NODE_ID, "the minipool's NodeID"),
    "overdue": S.described(S.BOOLEAN, "the end has passed and the AVAX has not come back yet"),
    "afterRestakes": S.described(COUNT, "restakes before this return (0: the current validation's end)"),
})

RESTAKE_ROW = S.obj({
    "time": S.described(S.TIMESTAMP, "when the end is processed and the minipool starts again, unix seconds"),
    "nodeID": S.described(S.NODE_ID, "the minipool's NodeID"),
    "avax": S.described(AVAX, "liquid stakers' AVAX it takes again (principal plus their reward), whole AVAX"),
    "rewardAvax": S.described(AVAX, "the liquid stakers' reward it keeps out of the vault: the queue's liquidity drops by this, whole AVAX"),
})

# A receipt: one request's life from the queue's logs (sources/queuelog.py), amounts in whole tokens
# and exact wei (a later run resumes from them: queuelog.receipt_from_record reads them back).
TX = {"type": "string", "pattern": "^0x[0-9a-f]{64}$", "description": "transaction hash"}
STEP = {"block": S.described(COUNT, "block number"), "time": S.described(S.TIMESTAMP, "that block's time, unix seconds"),
        "tx": S.described(TX, "the transaction")}


def _amount(name: str, what: str) -> dict:
    return {name: S.described(AVAX, f"{what}, whole tokens"), f"{name}Wei": S.described(S.WEI, f"{what}, wei, exact")}


OUTCOMES = ["open", "claimed", "cancelled", "reclaimed"]
RECEIPT = S.obj({
    "id": S.described(COUNT, "request id"),
    "outcome": {"enum": OUTCOMES, "description": "open: not closed at the block (see requests for what it can do); claimed: its "
                "requester took the AVAX; cancelled: its requester took the shares back; reclaimed: it expired and "
                "someone reclaimed it, the shares going back to the requester"},
    "claimableTime": S.described(S.TIMESTAMP, "the advertised earliest payout its UnstakeRequested event named, unix seconds"),
    "requested": S.obj({**STEP, **_amount("shares", "ggAVAX taken"), **_amount("expectedAvax", "AVAX it was to pay")},
                       description="filed (UnstakeRequested)"),
    "funded": S.nullable(S.obj({**STEP, **_amount("avax", "AVAX set aside for it")},
                               description="funded by the depositor (RequestFulfilled); null if it never was")),
    "claimed": S.nullable(S.obj({**STEP, **_amount("avax", "AVAX paid to the requester")},
                                description="claimed (UnstakeClaimed); null otherwise")),
    "cancelled": S.nullable(S.obj({**STEP, **_amount("sharesReturned", "ggAVAX sent back to the requester"),
                                   **_amount("sharesBurnt", "ggAVAX burnt because the rate rose while it waited (ExcessSharesBurnt)")},
                                  description="cancelled by its requester (RequestCancelled); null otherwise")),
    "reclaimed": S.nullable(S.obj({**STEP, **_amount("avax", "AVAX its ExpiredFundsReclaimed event names (a funded request's "
                                                     "allocation, deposited back; a pending one's expected AVAX, though none moved)"),
                                   **_amount("sharesReturned", "ggAVAX sent back to the requester")},
                                  description="reclaimed after it expired (ExpiredFundsReclaimed, ExpiredSharesReturned); null otherwise")),
}, description="one request's life as the queue's logs tell it, each step with its block, time and transaction")
RECEIPTS_SUMMARY = S.nullable(S.obj({
    "complete": S.described(S.BOOLEAN, "every request's receipt up to the block was read from the queue's logs (false: they "
                            "could not be read this run: the receipts are an earlier run's, without the steps since, or "
                            "none; the requester files may miss requests and steps)"),
    "count": S.described(COUNT, "requests on record, open and closed: each is a receipt in its requester's "
                         "/withdrawals/{address} file"),
    **{k: S.described(COUNT, f"of which {k}") for k in OUTCOMES},
}, description="the receipts of every request ever filed, published in the requester files"))
REQUESTER_PATH = "/withdrawals/{address}"
NEVER_REQUESTED = "no withdrawal request was ever filed by {address}"  # serve's 404 for a requester without a file
# ... and for one without a calendar: where no window's end is announced, a requester whose
# requests are all closed has none either (``calendar.requester_calendar``).
NO_CALENDAR = ("no calendar for {address}: it never filed a withdrawal request, or its requests are all closed "
               "and no end of the withdrawal window is announced")
ADDRESS = S.ADDRESS["pattern"]

SUMS = {"count": S.described(COUNT, "requests"), "shares": S.described(AVAX, "ggAVAX, whole tokens"),
        "expectedAvax": S.described(AVAX, "AVAX their claims pay, fixed when each was filed, whole AVAX (a request "
                                          "past its expiration can no longer be claimed)")}

QUEUE_PATH = "/withdrawals"
VAULT_PATH = "/ggAvax"  # vault.VAULT_PATH (vault.py imports this module)


# ---- checks --------------------------------------------------------------------------------------


_REQUESTER_FILE = re.compile(r"^/withdrawals/0x[0-9a-f]{40}$")  # not /withdrawals/params, nor the pages


def queue_holds(b: Mapping, run: Run) -> list[str]:
    """The queue's totals add up, a file for every requester on record, /ggAvax names the same queue."""
    queue, vault = b.get(QUEUE_PATH), b.get(VAULT_PATH)
    if not queue:
        return []
    out = []
    # One JSON file per requester (each has its page, /withdrawals/{address}.html, beside it).
    files = sum(1 for p in b if _REQUESTER_FILE.match(p))
    if queue["status"] != "ok":
        return _no_queue_invariants(files, vault)
    pending, funded, sched = queue["pending"], queue["funded"], queue["schedule"]
    if sched["coveredCount"] + sched["uncoveredCount"] != pending["count"] or len(sched["line"]) != pending["count"]:
        out.append("/withdrawals: the schedule's line does not hold every pending request")
    if funded["claimableCount"] > funded["count"] or funded["claimableAvax"] > funded["avax"] * (1 + REL):
        out.append("/withdrawals: more claimable than funded")
    # A file for every address with a request on record, open or closed (its receipts).
    ever = queue.get("requestersEver", queue["requesters"])
    if files and files != ever:
        out.append(f"/withdrawals: {ever} requesters on record but {files} requester files")
    if ever < queue["requesters"]:
        out.append(f"/withdrawals: {queue['requesters']} requesters with an open request but {ever} on record")
    counts = queue.get("receipts")
    if counts and counts["count"] != sum(counts[k] for k in ("open", "claimed", "cancelled", "reclaimed")):
        out.append("/withdrawals: the receipts' outcomes do not add up to their count")
    if vault and (vault.get("queuePendingCount"), vault.get("withdrawQueue")) != (pending["count"], queue["address"]):
        out.append("/ggAvax: queue totals differ from /withdrawals")
    return out


def _no_queue_invariants(files: int, vault: dict | None) -> list[str]:
    out = []
    if files:
        out.append(f"/withdrawals: no queue, but {files} requester files")
    if vault and vault.get("withdrawQueue") is not None:
        out.append("/withdrawals: no queue, but /ggAvax names one")
    return out


def queue_gone(old: Mapping, new: Mapping, limits: Limits) -> list[str]:
    """A queue the last run published that this run would publish as noQueue (its requesters'
    files deleted): like a staker count that drops, refused unless forced."""
    try:
        was, now = old[QUEUE_PATH], new[QUEUE_PATH]
        if was["status"] == "ok" and now["status"] != "ok":
            return [f"the withdrawal queue {was['address']} of the last run is gone: /withdrawals would be "
                    f"{now['status']} ({now['reason']})"]
    except (KeyError, ValueError, TypeError):
        pass  # a previous run we cannot read bounds nothing
    return []


QUEUE_HOLDS = Check(queue_holds, {
    QUEUE_PATH: ("status", "address", "requesters", "requestersEver", "pending.count", "funded.count", "funded.avax",
                 "funded.claimableCount", "funded.claimableAvax", "schedule.coveredCount", "schedule.uncoveredCount",
                 "schedule.line[]", "receipts.count", "receipts.open", "receipts.claimed", "receipts.cancelled",
                 "receipts.reclaimed"),
    VAULT_PATH: ("queuePendingCount", "withdrawQueue"),
    REQUESTER_PATH: (),
})


@endpoint(
    QUEUE_PATH, tag="Liquid staking", summary="The ggAVAX withdrawal queue",
    description="ggAVAX (stAVAX) is redeemed only through the WithdrawQueue contract: a holder files a request, the "
                "depositor's calls fund requests strictly in line order from the vault's liquidity, and the requester claims "
                "the AVAX before the request expires. This is the queue at the block: its parameters, pending, funded "
                "and expired requests, the liquidity it can use, and a funding schedule — the AVAX staking minipools "
                "hand back by their end times against the line's cumulative demand, giving each place in line an "
                "estimated funding time under the `assumptions` listed in the body. `status` is `noQueue` (with "
                "`reason`; the queue's own fields null, while `announcements`, `window`, `pstAvax` and `meta` are still given) on a "
                "network or at a block without a queue.",
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
            "maxRequestsPerDeposit": S.described(S.nullable(COUNT), "steps one depositor call takes at most: a request funded, or a closed id still in line dropped (null when the view is absent)"),
            "minOnBehalfShares": S.described(S.nullable(AVAX), "smallest request filed on behalf of someone else, ggAVAX (null when the view is absent)"),
        }, description="the queue's settings")),
        "pending": S.nullable(S.obj({**SUMS, "expiredCount": S.described(COUNT, "of which past their expiration (still in line)")},
                                    description="requests in line for liquidity")),
        "funded": S.nullable(S.obj({
            "count": S.described(COUNT, "requests funded and not yet closed"),
            "avax": S.described(AVAX, "AVAX allocated to them (totalAllocatedFunds), whole AVAX"),
            "claimableCount": S.described(COUNT, "of which their requesters can claim now (not expired)"),
            "claimableAvax": S.described(AVAX, "AVAX of those, whole AVAX"),
            "reclaimableCount": S.described(COUNT, "of which expired, and anyone can reclaim them now (their AVAX goes back into ggAVAX as the requester's shares)"),
            "reclaimableAvax": S.described(AVAX, "AVAX of those, whole AVAX"),
            "stuckCount": S.described(COUNT, "of which expired, and reclaiming them reverts now: neither claim nor reclaim works"),
            "stuckAvax": S.described(AVAX, "AVAX of those, whole AVAX"),
            "stuckReason": S.described(S.nullable(S.STRING), "why they are stuck (null when none is)"),
        }, description="requests funded and not yet closed: claimable, or past their expiration (reclaimable or stuck)")),
        "pauses": S.nullable(S.obj({
            "queueRequests": S.described(S.nullable(S.BOOLEAN), "the queue refuses new requests (null on an implementation without a pause)"),
            "ggavaxDeposits": S.described(S.BOOLEAN, "TokenggAVAX refuses deposits: a funded request can then be neither cancelled nor reclaimed (both deposit its AVAX back)"),
            "minipoolManager": S.described(S.BOOLEAN, "MinipoolManager is paused: no minipool restakes, each hands its AVAX back at its end"),
        }, description="the pause flags the queue's rules depend on, at the block")),
        "expired": S.nullable(S.obj({**SUMS, "fundedCount": S.described(COUNT, "of which funded, before or after expiring (their AVAX goes back into the vault on reclaim)")},
                                    description="requests past their expiration and not reclaimed: a pending one's original shares go back to the requester on reclaim, a funded one's AVAX is deposited back as new shares (its original shares were redeemed at its funding); `shares` and `expectedAvax` sum the requests as filed")),
        "requesters": S.described(S.nullable(COUNT), "addresses with an open request (each has a /withdrawals/{address} file)"),
        "requestersEver": S.described(S.nullable(COUNT), "addresses with a request on record, open or closed: each has a "
                                      "/withdrawals/{address} file (its open requests and receipts)"),
        "receipts": RECEIPTS_SUMMARY,
        "sharesHeld": S.described(S.nullable(AVAX), "ggAVAX the queue holds (the pending requests' shares), whole tokens"),
        "liquidity": S.nullable(S.obj({
            "queueAvax": S.described(AVAX, "what the queue can pay from now: ggAVAX totalAssets − stakingTotalAssets, whole AVAX"),
            "vaultWavax": S.described(AVAX, "WAVAX the vault holds (a funding redeems from it, so it needs the WAVAX there), whole AVAX"),
            "pendingShortfallAvax": S.described(AVAX, "the pending requests' expected AVAX beyond queueAvax now, whole AVAX"),
        }, description="the vault liquidity that can fund the queue")),
        "schedule": S.nullable(S.obj({
            "assumptions": S.described(S.array(S.STRING), "what the estimates assume; a broken assumption moves them"),
            "outlook": S.described(S.STRING, "what the line waits for, in one paragraph"),
            "stale": S.described(S.BOOLEAN, "the estimates rest on a depositor that looks stale (depositor.staleReason): every funding waits for its next call"),
            "staleReason": S.described(S.nullable(S.STRING), "why (null when not stale)"),
            "returns": S.described(S.array(RETURN_ROW), "AVAX the staking minipools are expected to hand back, by time"),
            "restakes": S.described(S.array(RESTAKE_ROW), "minipools the contracts are expected to start again instead, by time"),
            "staleEntries": S.described(COUNT, "closed ids still in the queue's line up to its last pending request: each costs a depositor call one step"),
            "lineFrontKnown": S.described(S.BOOLEAN, "the line's front was read from the queue's logs (false: closed ids before the first pending one are assumed dropped)"),
            "revertedCalls": S.described(COUNT, "depositor calls the replay expects to fail whole: a redemption worth 0 AVAX, less than its request expects, more than the liquidity left (the queue's checked subtraction), or more than the vault's released assets (the vault's checked subtraction: the reward stream's AVAX is released only when synced)"),
            "returnsAvax": S.described(AVAX, "their sum, whole AVAX"),
            "unscheduledAvax": S.described(AVAX, "liquid stakers' AVAX out in minipools with no known return time, whole AVAX"),
            "coveredCount": S.described(COUNT, "pending requests the liquidity and the known returns cover"),
            "uncoveredCount": S.described(COUNT, "pending requests beyond them"),
            "shortfallAvax": S.described(AVAX, "AVAX the line still lacks after every known return, whole AVAX"),
            "lastFundingTime": S.described(S.nullable(S.TIMESTAMP), "estimated funding time of the last covered request (null if none waits for a return that can be dated)"),
            "line": S.described(S.array(LINE_ROW), "the pending line in order, with each place's estimate"),
        }, description="the funding forecast")),
        "depositor": S.nullable(DEPOSITOR_SCHEMA),
        "announcements": ANNOUNCEMENTS_SCHEMA,
        "window": S.obj({
            "closesAt": S.described(S.nullable(S.TIMESTAMP), "when the announced withdrawal window closes, unix seconds (null when none is announced)"),
            "closed": S.described(S.BOOLEAN, "the announced window has closed at the block's time"),
            "note": S.described(S.STRING, "what the announced window means for a holder now, and what the contracts still allow"),
        }, description="the announced withdrawal window (an announcement, not a contract rule)"),
        "pstAvax": S.nullable(S.obj({
            "address": S.described(S.ADDRESS, "the pstAVAX token"),
            "totalSupply": S.described(AVAX, "pstAVAX in circulation = AVAX principal owed to holders, whole tokens"),
            "vaultShares": S.described(AVAX, "ggAVAX it holds as backing, whole tokens"),
        }, description="pstAVAX, whose holders exit through the queue too (null where the network names none)")),
        "meta": S.META,
    }),
    checks=(QUEUE_HOLDS,),
    bounds=(Bound(queue_gone, {QUEUE_PATH: ("status", "address", "reason")}),),
)
def withdrawals(ctx: Context):
    s, q = ctx.snap, ctx.snap.withdraw_queue
    announced = announcement_records(ctx.announcements, s.block.timestamp)
    if q is None:
        yield "/withdrawals", Deferred((s.withdraw_queue_note or "no withdrawal queue", s.pst_avax, announced),
                                       no_queue_with_receipts, meta=meta(ctx))
        return
    sched = ctx.cached(Q.cached_schedule)
    line, cumulative = [], 0
    for r in Q.line(s):
        cumulative += r.expected_assets
        line.append((r, cumulative, sched.places[r.id]))
    # The schedule's figures (its places enter through the line's rows) and the vault's WAVAX; the
    # sums are inputs, so that a page's excerpt of the lists keeps them whole.
    outlook = (sched.liquidity, sum(r.avax for r in sched.returns), sched.unscheduled_avax, sched.covered,
               sched.shortfall, sched.last_funding_time, s.ggavax.liquid_avax, sched.stale_entries,
               sched.front_known, sched.reverted_calls, sched.assumptions,
               sum(1 for p in sched.places.values() if p.fundable_now), len(sched.returns),
               sum(1 for p in sched.places.values() if p.overdue),
               sum(1 for p in sched.places.values() if p.expires_first and p.status == Q.RequestStatus.PENDING_EXPIRED),
               sched.blocked)
    # The body reads the block's time only to tell which requests expired: keyed by the last
    # expiration passed, not the time itself, it is made again only when one passes.
    # What each funded request is (claimable, reclaimable or stuck, and why), as the schedule says.
    fates = tuple((r.id, sched.places[r.id].status.value, sched.places[r.id].stuck_reason) for r in q.requests if r.fulfilled)
    yield "/withdrawals", Deferred((ctx.cached(receipts_inputs), q, Q.expiry_clock(q.requests, s.block.timestamp), s.pst_avax, outlook, queue_pauses(s), fates, depositor_inputs(ctx), announced,
                                    Each(_return_row, sched.returns),
                                    Each(_restake_row, sched.restakes), Each(_line_row, tuple(line))),
                                   withdrawals_with_receipts, meta=meta(ctx))


def queue_pauses(s: Snapshot) -> tuple[bool | None, bool, bool]:
    """What is paused that the way out goes through: the queue's requests, ggAVAX deposits (which a
    funded request's cancel and reclaim make; a funding does not), the MinipoolManager (which hands
    AVAX back at a minipool's end)."""
    assert s.withdraw_queue is not None
    return s.withdraw_queue.paused, Q.deposits_paused(s), bool(s.paused.get("MinipoolManager"))


def pauses_record(pauses: tuple[bool | None, bool, bool]) -> dict:
    """/withdrawals' ``pauses`` (``queue_pauses``)."""
    queue_paused, deposits_paused, mm_paused = pauses
    return {"queueRequests": queue_paused, "ggavaxDeposits": deposits_paused, "minipoolManager": mm_paused}


def parameters_record(q: WithdrawQueue) -> dict:
    """/withdrawals' ``parameters``."""
    return {"paused": q.paused, "unstakeDelay": q.unstake_delay, "maxExpirationDelay": q.max_expiration_delay,
            "minExpirationDelay": Q.MIN_EXPIRATION_DELAY, "nextRequestId": q.next_request_id,
            "maxRequestsPerDeposit": q.max_requests_per_deposit,
            "minOnBehalfShares": None if q.min_on_behalf is None else tokens(q.min_on_behalf)}


def receipts_inputs(ctx: Context) -> tuple:
    """What /withdrawals says of the receipts (``receipts_fields``' arguments): whether the logs
    were read, the count of each outcome, and the addresses with a request on record."""
    s = ctx.snap
    counts = dict.fromkeys(OUTCOMES, 0)
    for r in s.queue_receipts:
        counts[r.closed or "open"] += 1
    ever = {r.requester.lower() for r in s.queue_receipts}
    ever |= {r.requester.lower() for r in s.withdraw_queue.requests} if s.withdraw_queue else set()
    return s.queue_activity is not None, tuple(counts.values()), len(ever)


def receipts_fields(complete: bool, counts: tuple, ever: int) -> dict:
    return {"requestersEver": ever,
            "receipts": {"complete": complete, "count": sum(counts), **dict(zip(OUTCOMES, counts, strict=True))}}


def withdrawals_with_receipts(receipts: tuple, *inputs) -> dict:
    """/withdrawals (``withdrawals_body`` of the other inputs) with what it says of the receipts."""
    return {**withdrawals_body(*inputs), **receipts_fields(*receipts)}


def no_queue_with_receipts(*inputs) -> dict:
    return {**no_queue_body(*inputs), "requestersEver": None, "receipts": None}


def no_queue_body(reason: str, pst: PstAvax | None, announced: list) -> dict:
    empty = dict.fromkeys(("address", "parameters", "pending", "funded", "pauses", "expired", "requesters",
                           "sharesHeld", "liquidity", "schedule", "depositor"))
    return {"status": "noQueue", "reason": reason, **empty, "announcements": announced,
            "window": window_record(announced), "pstAvax": _pst_record(pst)}


def withdrawals_body(q: WithdrawQueue, now: int, pst: PstAvax | None, outlook: tuple, pauses: tuple, fates: tuple,
                     depositor: tuple, announced: list, returns: list, restakes: list, line: list) -> dict:
    (liquidity, returns_avax, unscheduled, covered, shortfall, last_funding_time, vault_wavax, stale, front_known,
     reverted, assumptions, fundable_now, return_count, overdue, expired_funded, blocked) = outlook
    _, deposits_paused, mm_paused = pauses
    pending = [r for r in q.requests if not r.fulfilled]
    funded = [r for r in q.requests if r.fulfilled]
    fate = {rid: (st, why) for rid, st, why in fates}
    by_status: dict[str, list[UnstakeRequest]] = {}
    for r in funded:
        by_status.setdefault(fate[r.id][0], []).append(r)
    claimable, reclaimable, stuck = (by_status.get(k, []) for k in (Q.RequestStatus.FUNDED, Q.RequestStatus.EXPIRED_FUNDED, Q.RequestStatus.STUCK))
    claimable = [r for r in claimable if not Q.unowned(r.requester)]  # no one claims for the zero address
    stuck_reasons = list(dict.fromkeys(fate[r.id][1] for r in stuck))
    expired = [r for r in q.requests if now >= r.expiration_time]
    demand = sum(r.expected_assets for r in pending)
    return {
        "status": "ok", "reason": None, "address": q.address, "parameters": parameters_record(q),
        "pending": {**_sums(pending), "expiredCount": sum(1 for r in pending if now >= r.expiration_time)},
        "funded": {"count": len(funded), "avax": tokens(q.total_allocated_funds),
                   "claimableCount": len(claimable), "claimableAvax": tokens(sum(r.allocated_funds for r in claimable)),
                   "reclaimableCount": len(reclaimable), "reclaimableAvax": tokens(sum(r.allocated_funds for r in reclaimable)),
                   "stuckCount": len(stuck), "stuckAvax": tokens(sum(r.allocated_funds for r in stuck)),
                   "stuckReason": "; ".join(stuck_reasons) if stuck else None},
        "pauses": pauses_record(pauses),
        "expired": {**_sums(expired), "fundedCount": sum(1 for r in expired if r.fulfilled)},
        "requesters": len({r.requester for r in q.requests}),
        "sharesHeld": tokens(q.shares_held),
        "liquidity": {"queueAvax": tokens(liquidity), "vaultWavax": tokens(vault_wavax),
                      "pendingShortfallAvax": tokens(max(0, demand - liquidity))},
        "schedule": {
            "assumptions": list(assumptions),
            "outlook": _outlook(len(pending), fundable_now, covered, last_funding_time, shortfall, return_count,
                                deposits_paused, mm_paused, depositor[0], overdue, q.max_requests_per_deposit == 0,
                                expired_funded, blocked),
            "stale": depositor[1] is not None, "staleReason": depositor[1],
            "returns": returns,
            "returnsAvax": tokens(returns_avax),
            "restakes": restakes,
            "unscheduledAvax": tokens(unscheduled),
            "coveredCount": covered, "uncoveredCount": len(pending) - covered,
            "shortfallAvax": tokens(shortfall), "lastFundingTime": last_funding_time,
            "staleEntries": stale, "lineFrontKnown": front_known, "revertedCalls": reverted,
            "line": line,
        },
        "depositor": depositor_record(*depositor),
        "announcements": announced,
        "window": window_record(announced, len(claimable)),
        "pstAvax": _pst_record(pst),
    }


def _outlook(pending: int, now: int, covered: int, last: int | None, shortfall: int, returns: int,
             deposits_paused: bool, mm_paused: bool, activity: Shown | None, overdue: int, no_steps: bool,
             expired_funded: int, blocked: int | None = None) -> str:
    """What the line waits for, in words. ``expired_funded``: the requests past their expiration that
    the schedule funds (they land funded and expired); ``blocked``: the request where the depositor's
    calls fail whole, which keeps it, every one behind it and those ahead that the same calls reach
    unfunded."""
    if not pending:
        return "The line is empty: nothing waits for funding."
    parts = []
    if now:
        parts.append(f"{now} of {pending} pending request{'s' if pending != 1 else ''} can be funded from the vault's "
                     f"liquidity now: {'they wait' if now > 1 else 'it waits'} only for the depositor's next "
                     f"call{'s' if now > 1 else ''}")
    if overdue:
        parts.append(f"{overdue} wait{'s' if overdue == 1 else ''} for the returns of minipools whose validation has "
                     "ended: the depositor funds them once Rialto records those ends, which no one can date")
    later = covered - now - overdue
    if later:
        parts.append(f"{later} wait{'s' if later == 1 else ''} for minipool returns, the last expected at {when(last) if last else 'the known returns'}")
    rest = pending - covered
    if rest and no_steps:
        parts.append(f"{rest} wait{'s' if rest == 1 else ''} for the queue's admin: maxRequestsPerDeposit is 0, so the "
                     "depositor's calls fund no request")
    elif rest and blocked is not None:
        parts.append(f"{rest} {'waits' if rest == 1 else 'wait'} on request #{blocked}, where the depositor's calls fail "
                     f"whole ({L.REVERTS}): a call that reaches it funds nothing, those ahead of it in the call "
                     "included, until that changes or it leaves the line")
    elif rest:
        why = []
        if not returns:
            why.append("no minipool return is expected" + (" (MinipoolManager is paused and no minipool is staking)" if mm_paused else ""))
        why.append("new ggAVAX deposits are paused" if deposits_paused else "only new ggAVAX deposits or unscheduled returns can fund them")
        parts.append(f"{rest} {'is' if rest == 1 else 'are'} beyond every known return, {tokens(shortfall)} AVAX short: "
                     + "; ".join(why))
    if expired_funded:
        one = expired_funded == 1
        parts.append(f"{expired_funded} of the requests the schedule funds {'is' if one else 'are'} already past "
                     f"{'its' if one else 'their'} expiration, and a request funded after its expiration "
                     + ("is stuck while ggAVAX deposits are paused (not claimable, and reclaiming it reverts): cancel "
                        "or reclaim such a request first" if deposits_paused else "can only be reclaimed, as ggAVAX"))
    calls = ("Nothing is funded until the depositor calls depositFromStaking: "
             + (f"its last call on record was at {when(activity.last_call_time)} (block {activity.last_call_block})"
                if activity is not None and activity.last_call_time is not None
                else "no call of it is on record" if activity is not None else "its calls are unknown (the queue's logs were not read)"))
    return "; ".join(parts) + ". " + calls + "."


# What a requester can do before the announced window closes, by the status each of its open
# requests has by then (a stuck request allows nothing).
RS = Q.RequestStatus
WINDOW_ACTIONS = (({RS.PENDING, RS.FUNDED}, "claim each request once it is funded (before its own expiration)"),
                  ({RS.PENDING_EXPIRED}, "cancel or reclaim your expired requests still in line"),
                  ({RS.EXPIRED_FUNDED}, "reclaim your expired funded requests (their AVAX goes back into ggAVAX for you)"))


def window_asks(requests: list[dict], at: int | None = None, deposits_paused: bool = False, *,
                until: bool = False) -> list[str]:
    """What the window asks of a requester with these open requests (their published records), by
    the status each has at ``at`` (None: now): one whose expiration comes first has expired by
    then, in line still or, funded, reclaimable (stuck while ggAVAX deposits are paused), one in
    line that the schedule funds before its expiration as a funded one.
    ``until``: what it can do from now until ``at``, the statuses now and then together."""
    requests = [r for r in requests if not Q.unowned(r["requester"])]  # no one acts for the zero address
    held = {RS(r["status"]) for r in requests} if until or at is None else set()
    expired_funded = RS.STUCK if deposits_paused else RS.EXPIRED_FUNDED
    for r in requests:
        st = RS(r["status"])
        if at is not None and r["expirationTime"] <= at:
            funded_first = st == RS.PENDING and (r["fundableNow"] or (r["estimatedFundingTime"] or r["expirationTime"]) < r["expirationTime"])
            st = {RS.PENDING: expired_funded if funded_first else RS.PENDING_EXPIRED,
                  RS.FUNDED: RS.STUCK if r.get("redepositBlocked") else expired_funded}.get(st, st)
        held.add(st)
    return [words for statuses, words in WINDOW_ACTIONS if held & statuses]


# The queue's functions a request's record allows now (``canClaim`` …), as a holder calls them.
CALLS = (("canClaim", "claimUnstake"), ("canCancel", "cancelRequest"), ("canReclaim", "reclaimExpiredRequest"))


def calls(r: dict) -> list[str]:
    """The calls of the queue that this open request's record allows now, with its id."""
    return [f"{fn}({r['id']})" for flag, fn in CALLS if r[flag]]


def listed(items: list[str]) -> str:
    """Phrases joined as a list in words: "a", "a and b", "a, b and c"."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


# What the window asks of a holder who has filed nothing (the aggregate's note says it to every holder).
FILE_ONE = ("to withdraw ggAVAX, file a request (requestUnstake) early enough for the depositor to fund it and for "
            "you to claim it by then")


def window_record(announced: list, claimable: int = 0, asks: list[str] | None = None, open_requests: bool = True,
                  days: bool = True) -> dict:
    """The announced withdrawal window in words: before it closes, what to do by then; after, that
    it closed and what the contracts still allow (they know no such date). ``asks``: one
    requester's own (``window_asks``; empty: its open requests allow nothing, all stuck, or it has
    none: ``open_requests`` False), in place of what the window asks of every holder. ``days``:
    the days left, which a page leaves to its script (its words then change only with its requests)."""
    end = next((a for a in announced if a["key"] == WINDOW_END), None)
    if end is None:
        return {"closesAt": None, "closed": False, "note": "No end of the withdrawal window is announced for this network."}
    allowed = ("the contracts know no such date: a funded request can still be claimed until its own expiration "
               "while the queue holds its AVAX, a pending one cancelled, and an expired one reclaimed (a funded one "
               "only while ggAVAX takes deposits)")
    if end["passed"]:
        note = f"The announced withdrawal window closed at {when(end['time'])}; {allowed}."
    else:
        n = end["daysLeft"] if days else None
        left = "" if n is None else f" ({'less than a day' if n == 0 else f'{n} day' + ('s' if n != 1 else '')} left)"  # as the dashboard says
        if asks is None:
            todo = ("claim funded requests before then and before their own expiration"
                    + (f" ({claimable} can be claimed now)" if claimable else "") + f"; {FILE_ONE}")
        elif asks:
            todo = f"before then, {listed(asks)}"
        elif asks is not None and not open_requests:
            todo = f"you have no open request: {FILE_ONE}"
        else:
            todo = "no call can change your open requests by then: they are stuck (below)"
        note = f"The announced withdrawal window closes at {when(end['time'])}{left}: {todo}. After it, {allowed}."
    return {"closesAt": end["time"], "closed": end["passed"], "note": note}


def _pst_record(pst: PstAvax | None) -> dict | None:
    if pst is None:
        return None
    return {"address": pst.address, "totalSupply": tokens(pst.total_supply), "vaultShares": tokens(pst.vault_shares)}


def _line_row(item: tuple[UnstakeRequest, int, Q.Place]) -> dict:
    r, total, place = item
    return {"position": place.position, "id": r.id, "requester": r.requester, "status": place.status.value,
            "expectedAvax": tokens(r.expected_assets), "cumulativeAvax": tokens(total),
            "fundableNow": place.fundable_now, "depositorCalls": place.depositor_calls,
            "estimatedFundingTime": place.funding_time, "awaitsOverdueReturns": place.overdue,
            "expiresBeforeFunding": place.expires_first}


def _sums(requests: list[UnstakeRequest]) -> dict:
    return {"count": len(requests), "shares": tokens(sum(r.shares for r in requests)),
            "expectedAvax": tokens(sum(r.expected_assets for r in requests))}


def _return_row(r: Q.Return) -> dict:
    return {"time": r.time, "avax": tokens(r.avax), "nodeID": node_id(r.node_id), "overdue": r.overdue,
            "afterRestakes": r.after_restakes}


def _restake_row(r: Q.Restake) -> dict:
    return {"time": r.time, "nodeID": node_id(r.node_id), "avax": tokens(r.avax), "rewardAvax": tokens(r.reward)}


@endpoint(
    REQUESTER_PATH, tag="Liquid staking", summary="One requester's withdrawal requests and receipts",
    description="Every open request of one requester (pending, funded or expired and not reclaimed), with what it "
                "can do now and where it stands in line: position, the AVAX ahead of it and the estimated funding "
                "time of /withdrawals' schedule; and the receipt of every request it ever filed, open or closed, "
                "from the queue's logs: when it was filed, funded, and claimed, cancelled or reclaimed, with the "
                "amounts and the transaction of each step. An address that never filed a request has no file (404); "
                "one whose requests are all closed keeps its file (no open request, its receipts). No run "
                "timestamp: the file changes only when one of its requests, its estimate or its receipts do, or "
                "when the depositor starts or stops looking stale (what a request in line is told then).",
    schema=S.obj({
        "requester": S.described(S.ADDRESS, "the requester"),
        "requests": S.described(S.array(REQUEST), "open requests, by id"),
        "count": S.described(COUNT, "number of open requests"),
        "totals": S.obj({"shares": SUMS["shares"], "expectedAvax": SUMS["expectedAvax"],
                         "payableAvax": S.described(AVAX, "AVAX a claim can still pay: the open requests not past "
                                                    "their expiration (in line or funded), whole AVAX; expectedAvax also "
                                                    "counts those past it, which no claim pays: reclaimed (or, still in "
                                                    "line, cancelled) they return ggAVAX, and a stuck one (funded, "
                                                    "expired, its AVAX not depositable back: stuckReason) can be neither"),
                         "allocatedAvax": S.described(AVAX, "AVAX funded for them, whole AVAX"),
                         "claimableAvax": S.described(AVAX, "AVAX the requester can claim now, whole AVAX")},
                        description="sums over the open requests"),
        "receipts": S.described(S.array(RECEIPT), "every request it ever filed, open and closed, by id (see /withdrawals "
                                "receipts.complete: when the queue's logs could not be read, the last steps may be missing)"),
    }),
    params=(REQUESTER_PARAM,),
)
def requester(ctx: Context):
    yield from ctx.own(requester_files(ctx))


@keyed_records
def schedule_places(ctx: Context) -> tuple[Q.Place, ...]:
    """The schedule's places, which every requester file declares: in the schedule's order (the
    line, then the funded requests), the same from block to block but for the requests that moved."""
    return tuple(ctx.cached(Q.cached_schedule).places.values()) if ctx.snap.withdraw_queue is not None else ()


def requester_files(ctx: Context) -> list[tuple[str, Deferred]]:
    """The requester files of this build, (path, Deferred), derived once for the files themselves
    and the page and calendar made from their inputs (a build derives them before its workers fork)."""
    return ctx.rendered(REQUESTER_PATH, _requester_files)


def _requester_files(ctx: Context):
    q = ctx.snap.withdraw_queue
    if q is None:
        return
    sched = ctx.cached(Q.cached_schedule)
    # The advice names the announced window's end, and whether it has passed: a file changes once
    # when it passes.
    now = ctx.snap.block.timestamp
    window = next(((a.time, now >= a.time) for a in ctx.announcements if a.key == WINDOW_END), None)
    mine: dict[str, list[UnstakeRequest]] = {}
    for r in q.requests:
        mine.setdefault(r.requester, []).append(r)
    receipts: dict[str, list[Receipt]] = {}
    for rc in ctx.snap.queue_receipts:
        receipts.setdefault(rc.requester, []).append(rc)
    # The depositor looking stale changes what a request in line is told (once, when it starts or
    # stops looking so): an input of the requesters with one.
    shown, stale, _ = depositor_inputs(ctx)
    idle = Q.Idle(shown.last_call_time) if shown is not None and stale is not None else None
    # Requesters with an open request, then those whose requests are all closed, by first id.
    for who in [*mine, *(w for w in receipts if w not in mine)]:
        # A file depends on its requests, what the build derived for them and its receipts, nothing else.
        items = tuple((r, sched.places[r.id], window) for r in mine.get(who, ()))
        waits = idle if any(Q.idle_matters(place) for _, place, _ in items) else None
        yield f"/withdrawals/{who.lower()}", Deferred((who, items, tuple(receipts.get(who, ())), waits), requester_body)


def requester_body(who: str, items: tuple[tuple[UnstakeRequest, Q.Place, tuple[int, bool] | None], ...],
                   receipts: tuple[Receipt, ...] = (), idle: Q.Idle | None = None) -> dict:
    rows = [_request_record(r, place, window, idle) for r, place, window in items]
    return {"requester": who, "requests": rows, "count": len(rows), "totals": {
        "shares": tokens(sum(r.shares for r, _, _ in items)),
        "expectedAvax": tokens(sum(r.expected_assets for r, _, _ in items)),
        "payableAvax": tokens(sum(r.expected_assets for r, p, _ in items if p.status in Q.CLAIMABLE_IN_TIME and not Q.unowned(r.requester))),
        "allocatedAvax": tokens(sum(r.allocated_funds for r, _, _ in items)),
        "claimableAvax": tokens(sum(r.allocated_funds for r, p, _ in items if p.can_claim)),
    }, "receipts": [receipt_record(r) for r in receipts]}


def request_times(items: tuple[tuple[UnstakeRequest, Q.Place, tuple[int, bool] | None], ...]) -> set[int]:
    """The times ``requester_body(who, items, …)`` shows of its open requests (filed, claimable,
    expiring, estimated funding): those its page counts from the block in words."""
    return {t for r, place, _ in items
            for t in (r.request_time, r.claimable_time, r.expiration_time, place.funding_time) if t is not None}


def receipt_record(r: Receipt) -> dict:
    """A receipt as the requester file publishes it (RECEIPT)."""
    c, at = r.closed, r.closed_at
    return {
        "id": r.id, "outcome": c or "open", "claimableTime": r.claimable_time,
        "requested": {**_step(r.requested), **_wei("shares", r.shares), **_wei("expectedAvax", r.expected_assets)},
        "funded": None if r.funded is None else {**_step(r.funded), **_wei("avax", r.allocated or 0)},
        "claimed": {**_step(at), **_wei("avax", r.paid or 0)} if c == "claimed" and at else None,
        "cancelled": {**_step(at), **_wei("sharesReturned", r.shares_returned or 0), **_wei("sharesBurnt", r.shares_burnt or 0)}
                     if c == "cancelled" and at else None,
        "reclaimed": {**_step(at), **_wei("avax", r.paid or 0), **_wei("sharesReturned", r.shares_returned or 0)}
                     if c == "reclaimed" and at else None,
    }


def _step(s: QueueStep) -> dict:
    return {"block": s.block, "time": s.time, "tx": s.tx}


def _wei(name: str, wei: int) -> dict:
    return {name: tokens(wei), f"{name}Wei": str(wei)}


def _request_record(r: UnstakeRequest, place: Q.Place, window: tuple[int, bool] | None, idle: Q.Idle | None = None) -> dict:
    """One open request's record; ``window``: the announced window's end and whether it has passed;
    ``idle``: the depositor looks stale."""
    end, closed = window if window is not None else (None, False)
    return {
        "id": r.id, "requester": r.requester, "status": place.status.value, "fulfilled": r.fulfilled,
        "canClaim": place.can_claim, "canCancel": place.can_cancel, "canReclaim": place.can_reclaim,
        "stuckReason": place.stuck_reason, "redepositBlocked": place.redeposit_blocked, "advice": Q.advice(r, place, None if closed else end, window_closed=end if closed else None, idle=idle), "shares": tokens(r.shares),
        "expectedAvax": tokens(r.expected_assets), "allocatedAvax": tokens(r.allocated_funds),
        "requestTime": r.request_time, "claimableTime": r.claimable_time, "expirationTime": r.expiration_time,
        "position": place.position, "aheadAvax": tokens(place.ahead_avax), "fundableNow": place.fundable_now,
        "depositorCalls": place.depositor_calls, "estimatedFundingTime": place.funding_time,
        "awaitsOverdueReturns": place.overdue,
        "expiresBeforeFunding": place.expires_first,
        "blockedBy": place.blocked_by, "callsFundNothing": place.calls_fund_nothing,
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
