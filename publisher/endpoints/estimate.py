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

PARAMS = S.obj({
    "format": {"const": L.PARAMS_FORMAT, "description": "document format"},
    "block": S.obj({"number": COUNT, "hash": S.STRING, "timestamp": TIME}, description="the block the values were read at"),
    "books": S.obj({k: S.described(WEI, d) for k, d in (
        ("released", "TokenggAVAX totalReleasedAssets, wei"), ("rewards", "lastRewardsAmt (the current stream), wei"),
        ("lastSync", "lastSync, unix seconds, as a decimal string"), ("cycleEnd", "rewardsCycleEnd, unix seconds, as a decimal string"),
        ("supply", "totalSupply, ggAVAX wei"), ("staking", "stakingTotalAssets, wei"))},
        description="the vault's books the queue's liquidity and share price follow"),
    "maxRequestsPerDeposit": S.described(S.nullable(COUNT), "steps one depositor call takes at most"),
    "line": S.described(S.array({"type": "array", "minItems": 3, "maxItems": 3,
                                 "items": {"type": ["integer", "string", "null"]}}),
                        "the queue's line from its front to the last id issued: [id, shares wei, expected AVAX wei] "
                        "for a pending request, [id, null, null] for a closed id still in the line"),
    "serves": S.described(S.array({"type": "array", "minItems": 2, "maxItems": 2,
                                   "items": {"type": ["integer", "string"]}}),
                          "[time, stakingTotalAssets change in wei] of each depositor serve, in order: the block "
                          "after this one, each minipool end (a return lowers the staking assets, a restake "
                          "raises them again), the reward stream's end"),
    "nextRequestId": COUNT, "pendingCount": COUNT,
    "pendingAvaxWei": S.described(WEI, "expected AVAX of the pending line, wei"),
    "unstakeDelay": COUNT, "maxExpirationDelay": COUNT, "minExpirationDelay": COUNT,
    "queuePaused": S.nullable(S.BOOLEAN), "depositsPaused": S.BOOLEAN,
    "windowEnd": S.described(S.nullable(TIME), "the announced end of the withdrawal window"),
    "depositorStaleReason": S.nullable(S.STRING),
    "assumptions": S.array(S.STRING),
})

RESULT = S.obj({
    "shares": S.described(S.NON_NEGATIVE, "ggAVAX the request would take, whole tokens"),
    "sharesWei": WEI,
    "expectedAvax": S.described(S.NON_NEGATIVE, "AVAX it would be paid (convertToAssets at the params' block), whole AVAX"),
    "expectedAvaxWei": WEI,
    "position": S.described({"type": "integer", "minimum": 1}, "its place at the back of the line"),
    "aheadAvax": S.described(S.NON_NEGATIVE, "expected AVAX of the requests ahead of it, whole AVAX"),
    "aheadAvaxWei": WEI,
    "fundableNow": S.described(S.BOOLEAN, "the liquidity covers it and the line ahead at the depositor's next calls"),
    "depositorCalls": S.described(S.nullable({"type": "integer", "minimum": 1}), "when fundable now: the depositor calls that reach it"),
    "estimatedFundingTime": S.described(S.nullable(TIME), "when the schedule's serves fund it (null when fundable now or not covered)"),
    "requestTime": S.described(TIME, "the time it is taken as filed: the params' block"),
    "claimableTime": S.described(TIME, "request time + the queue's unstake delay"),
    "expirationDelay": S.described(COUNT, "the expiration delay it would carry (a shorter one is raised to the minimum)"),
    "expirationTime": S.described(TIME, "its deadline to claim"),
    "expiresBeforeFunding": S.BOOLEAN,
    "caveats": S.described(S.array(S.STRING), "what stands in its way: pauses, the announced window, a stale depositor, no covering return"),
})

ESTIMATE = S.obj({
    "inputs": S.described({"type": "object", "additionalProperties": S.STRING}, "the query as given"),
    "meta": S.obj({"block": S.obj({"number": COUNT, "hash": S.STRING, "timestamp": TIME})}, description="the params' block"),
    "assumptions": S.array(S.STRING),
    "result": RESULT,
})


def queue_estimate_params(ctx: Context) -> L.Params | None:
    s = ctx.snap
    window = next((a.time for a in ctx.announcements if a.key == WINDOW_END), None)
    return Q.estimate_params(s, window, depositor_stale(s, ctx.depositor_max_age))


@endpoint(
    "/withdrawals/params", tag=TAG, summary="Inputs of the withdrawal estimate",
    description="Everything /withdrawals/estimate computes from, exact: the vault's books, the queue's line from its "
                "front (closed ids still in it included), the depositor's serves the funding schedule expects "
                "(times and staking-asset changes from the minipools' ends, decided by the contracts' rules), the "
                "queue's bounds and pauses and the announced window. The function places a new request at the back "
                "and serves the line with the same code as the build's schedule (`compute/line.py`), so anyone can "
                "recompute an estimate. Absent where the network has no queue.",
    schema=PARAMS,
)
def params_endpoint(ctx: Context):
    p = queue_estimate_params(ctx)
    if p is not None:
        yield "/withdrawals/params", Deferred((p,), L.document)


function_endpoint(
    "/withdrawals/estimate", tag=TAG, summary="Estimate a withdrawal before requesting it",
    description="What a withdrawal request for `shares` ggAVAX (or the shares `avax` AVAX buys) would get if filed "
                "at the params' block: the AVAX it would be paid, its place at the back of the line and the AVAX "
                "ahead, when the depositor would fund it under the schedule's `assumptions`, its claimable and "
                "expiration times for `expirationDelay` seconds (default and minimum 3 days, at most the queue's "
                "maximum), and `caveats`. Answered by the function from /withdrawals/params with the same code as "
                "the funding schedule. Exactly one of shares and avax; amounts are whole-token decimal strings; "
                "400 otherwise, 503 when the params cannot be loaded.",
    schema=ESTIMATE,
    params=(
        Param("shares", "query", "ggAVAX to redeem, whole tokens (give this or avax)",
              AMOUNT, example="100", required=False),
        Param("avax", "query", "AVAX to receive, whole tokens (give this or shares)",
              AMOUNT, required=False),
        Param("expirationDelay", "query", "seconds after the claimable time the request may be claimed (default and "
              "minimum 259200)", {"type": "string", "pattern": "^[0-9]{1,12}$"}, required=False),
    ),
)
