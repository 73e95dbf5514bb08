"""A withdrawal request's estimate before it is filed: /withdrawals/params (what the estimate
needs, published by the build) and /withdrawals/estimate (answered by the function from it, with
compute/line.py, the code the build's schedule serves the line with)."""
from __future__ import annotations

from ..compute import line as L
from ..compute import queue as Q
from ..compute import rewards as R
from ..compute.depositor import depositor_stale
from . import schema as S
from .announcements import WINDOW_END
from .context import Context
from .registry import Deferred, Param, endpoint, function_endpoint

TAG = "Liquid staking"
WEI = S.WEI
COUNT = {"type": "integer", "minimum": 0}
TIME = S.TIMESTAMP
AMOUNT = {"type": "string", "pattern": R.amount_pattern(L.QUERY_LIMIT), "maxLength": R.MAX_AMOUNT_CHARS}

def _d(schema: dict, text: str) -> dict:
    return S.described(schema, text)


PARAMS = S.obj({
    "format": _d({"const": L.PARAMS_FORMAT}, "document format"),
    "block": _d(S.obj({"number": _d(COUNT, "block number"), "hash": _d(S.STRING, "block hash"),
                       "timestamp": _d(TIME, "block time, unix seconds")}), "the block the values were read at"),
    "books": _d(S.obj({k: _d(WEI, d) for k, d in (
        ("released", "TokenggAVAX totalReleasedAssets, wei"), ("rewards", "lastRewardsAmt (the current stream), wei"),
        ("lastSync", "lastSync, unix seconds, as a decimal string"),
        ("cycleEnd", "rewardsCycleEnd, unix seconds, as a decimal string"),
        ("supply", "totalSupply, ggAVAX wei"), ("staking", "stakingTotalAssets, wei"))}),
        "the vault's books, which the queue's liquidity and the share price follow"),
    "maxRequestsPerDeposit": _d(S.nullable(COUNT), "steps one depositor call takes at most (null: not read)"),
    "line": _d(S.array({"type": "array", "minItems": 3, "maxItems": 3, "items": {"type": ["integer", "string", "null"]}}),
               "the queue's line from its front to the last id issued: [id, shares wei, expected AVAX wei] for a "
               "pending request, [id, null, null] for a closed id still in the line"),
    "serves": _d(S.array({"type": "array", "minItems": 2, "maxItems": 2, "items": {"type": ["integer", "string"]}}),
                 "[time, stakingTotalAssets change in wei] of each depositor serve the funding schedule expects, in "
                 "order: the block after this one, each minipool end (a return lowers the staking assets, a restake "
                 "raises them again), the reward stream's end"),
    "nextRequestId": _d(COUNT, "the id a new request gets"),
    "pendingCount": _d(COUNT, "pending requests in line"),
    "pendingAvaxWei": _d(WEI, "expected AVAX of the pending line, wei"),
    "unstakeDelay": _d(COUNT, "seconds from filing to the claimable time"),
    "maxExpirationDelay": _d(COUNT, "longest expiration delay a requester may choose, seconds"),
    "minExpirationDelay": _d(COUNT, "shortest: a smaller one is raised to it, seconds"),
    "queuePaused": _d(S.nullable(S.BOOLEAN), "the queue refuses new requests (an estimate is then refused)"),
    "depositsPaused": _d(S.BOOLEAN, "ggAVAX refuses deposits (a funded request can then be neither cancelled nor reclaimed)"),
    "windowEnd": _d(S.nullable(TIME), "the announced end of the withdrawal window, unix seconds"),
    "depositorStaleReason": _d(S.nullable(S.STRING), "why the depositor looks stale (null when it does not)"),
    "assumptions": _d(S.array(S.STRING), "what the schedule assumes"),
})

RESULT = S.obj({
    "shares": _d(S.NON_NEGATIVE, "ggAVAX the request would take, whole tokens: for an amount of AVAX, the fewest "
                                 "shares worth at least it at the params' block (previewWithdraw, rounded up)"),
    "sharesWei": _d(WEI, "the same, wei"),
    "expectedAvax": _d(S.NON_NEGATIVE, "AVAX it would be paid (convertToAssets at the params' block), whole AVAX"),
    "expectedAvaxWei": _d(WEI, "the same, wei"),
    "position": _d({"type": "integer", "minimum": 1}, "its place at the back of the line"),
    "aheadAvax": _d(S.NON_NEGATIVE, "expected AVAX of the requests ahead of it, whole AVAX"),
    "aheadAvaxWei": _d(WEI, "the same, wei"),
    "refused": _d(S.BOOLEAN, "the queue would refuse the request now (0 shares, more shares than anyone holds outside the queue, a delay beyond its maximum, or the queue paused): nothing is funded, a caveat says why"),
    "fundableNow": _d(S.BOOLEAN, "the liquidity covers it and the line ahead at the depositor's next calls"),
    "depositorCalls": _d(S.nullable({"type": "integer", "minimum": 1}), "when fundable now: the depositor calls that reach it"),
    "estimatedFundingTime": _d(S.nullable(TIME), "when the schedule's serves fund it (null when fundable now, waiting for overdue returns, not covered, or refused)"),
    "awaitsOverdueReturns": _d(S.BOOLEAN, "covered by minipools whose validation has ended but whose end is not recorded: funded once it is, which no one can date"),
    "requestTime": _d(TIME, "the time it is taken as filed: the params' block"),
    "claimableTime": _d(TIME, "request time + the queue's unstake delay"),
    "expirationDelay": _d(COUNT, "the expiration delay it would carry (a shorter one is raised to the minimum; a longer one than the queue's maximum is kept, with a caveat that the queue would refuse the request)"),
    "expirationTime": _d(TIME, "its deadline to claim"),
    "expiresBeforeFunding": _d(S.BOOLEAN, "it would expire before it is funded"),
    "caveats": _d(S.array(S.STRING), "what stands in its way: pauses, the announced window, a stale depositor, no covering return"),
})

ESTIMATE = S.obj({
    "inputs": _d({"type": "object", "additionalProperties": S.STRING}, "the query as given"),
    "block": _d(S.obj({"number": _d(COUNT, "block number"), "hash": _d(S.STRING, "block hash"),
                       "timestamp": _d(TIME, "block time, unix seconds")}), "the block of the params the estimate is from"),
    "assumptions": _d(S.array(S.STRING), "what the funding schedule assumes"),
    "result": _d(RESULT, "the estimate"),
})
EXAMPLE_QUERY = {"amount": "100"}


def queue_estimate_params(ctx: Context) -> L.Params | None:
    s = ctx.snap
    window = next((a.time for a in ctx.announcements if a.key == WINDOW_END), None)
    return Q.estimate_params(s, window, depositor_stale(s, ctx.depositor_max_age), ctx.cached(Q.cached_schedule))


@endpoint(
    "/withdrawals/params", tag=TAG, summary="Inputs of the withdrawal estimate",
    description="Everything /withdrawals/estimate computes from, exact: the vault's books, the queue's line from its "
                "front (closed ids still in it included), the depositor's serves the funding schedule expects "
                "(times and staking-asset changes from the minipools' ends, decided by the contracts' rules), the "
                "queue's bounds and pauses and the announced window. The function places a new request at the back "
                "and serves the line with the same code as the build's funding schedule, so anyone can recompute "
                "an estimate. Absent where the network has no queue.",
    schema=PARAMS,
)
def params_endpoint(ctx: Context):
    p = ctx.cached(queue_estimate_params)
    if p is not None:
        yield "/withdrawals/params", Deferred((p,), L.document)


def estimate_example(ctx: Context) -> tuple[str, dict | None]:
    """What the function answers for the example query from this build's params."""
    p = ctx.cached(queue_estimate_params)
    if p is None:
        return "", None
    avax = int(EXAMPLE_QUERY["amount"]) * R.WAD
    return "amount=" + EXAMPLE_QUERY["amount"], L.answer(p, EXAMPLE_QUERY, shares=None, avax=avax, expiration_delay=None)


function_endpoint(
    "/withdrawals/estimate", tag=TAG, summary="Estimate a withdrawal before requesting it",
    description="What a withdrawal request for `amount` AVAX (or `amount` ggAVAX with `unit=ggavax`) would get if filed "
                "at the params' block: the AVAX it would be paid, its place at the back of the line and the AVAX "
                "ahead, when the depositor would fund it under the schedule's `assumptions`, its claimable and "
                "expiration times for `expirationDelay` seconds (default and minimum 3 days), and `caveats`. A "
                "request the queue would refuse (0 shares, a delay beyond its maximum, or the queue paused) is "
                "`refused`, with no funding dated and a caveat saying why. Answered by the function from /withdrawals/params with the same code as "
                "the funding schedule. The amount is a whole-token decimal string; "
                "400 otherwise, 503 when the params cannot be loaded.",
    schema=ESTIMATE,
    example=estimate_example,
    params=(
        Param("amount", "query", "how much, whole tokens: AVAX to receive, or ggAVAX to redeem with unit=ggavax",
              AMOUNT, example=EXAMPLE_QUERY["amount"]),
        Param("unit", "query", "what amount is in: avax (the default) or ggavax",
              {"type": "string", "enum": ["avax", "ggavax"]}, required=False),
        Param("expirationDelay", "query", "seconds after the claimable time the request may be claimed (default and "
              "minimum 259200)", {"type": "string", "pattern": "^[0-9]{1,12}$"}, required=False),
    ),
)
