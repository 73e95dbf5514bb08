"""Prices: oracle and feed (/prices), daily history (/prices/history)."""
from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from fractions import Fraction

from ..compute.prices import dex_quote, dex_state
from ..sources import history_file
from . import schema as S
from .common import meta, oracle_staleness, usd
from .context import Context
from .meta import STATUS_PATH
from .registry import Accumulates, Bound, Check, Limits, Run, endpoint
from .units import WAD, tokens
from .vault import METRICS_PATH

TAG = "Prices"
PRICES_PATH = "/prices"
HISTORY_PATH = "/prices/history"


# ---- checks --------------------------------------------------------------------------------------


def prices_hold(b: Mapping, run: Run) -> list[str]:
    """Prices > 0, the feed fresh and the Oracle price labelled stale as old as it is, at the run's
    block; /metrics says the same."""
    prices = b.get(PRICES_PATH)
    return _price_invariants(b, prices, run.now, run.feed_max_age, run.oracle_max_age) if prices else []


def _price_invariants(b: Mapping, prices: dict, now: int | None, feed_max_age: int | None,
                      oracle_max_age: int | None) -> list[str]:
    if now is None:
        status = b.get(STATUS_PATH) or {}
        now = status["block"]["timestamp"] if "block" in status else prices["meta"]["block"]["timestamp"]
    metrics = b.get(METRICS_PATH)
    out = []
    for k in ("ggpInAvax", "ggpInUSD", "avaxInUSD"):
        if not prices[k] > 0:
            out.append(f"/prices: {k} must be > 0, got {prices[k]}")
    age = now - prices["feed"]["updatedAt"]
    if feed_max_age is not None and age > feed_max_age:
        out.append(f"/prices: AVAX/USD feed round is {age}s old at the build block (max {feed_max_age}s)")
    # Age alone is a label, not a refusal: an Oracle price older than the bound is published,
    # but only labelled so (GGP/USD multiplies it by a fresh feed, and would pass as fresh).
    age = now - prices["oracle"]["timestamp"]
    if oracle_max_age is not None and (age > oracle_max_age) != prices.get("stale"):
        out.append(f"/prices: the Oracle GGP price is {age}s old at the build block (bound {oracle_max_age}s) "
                   f"but is labelled stale: {prices.get('stale')}")
    if metrics and metrics.get("ggp_price_stale") != prices.get("stale"):
        out.append("/metrics: ggp_price_stale differs from /prices stale")
    return out


PRICES_HOLD = Check(prices_hold, {
    PRICES_PATH: ("ggpInAvax", "ggpInUSD", "avaxInUSD", "feed.updatedAt", "oracle.timestamp", "stale",
                  "meta.block.timestamp"),
    STATUS_PATH: ("block.timestamp",),
    METRICS_PATH: ("ggp_price_stale",),
})


def price_moves(old: Mapping, new: Mapping, limits: Limits) -> list[str]:
    """A price that moved more than the bound since the previous run."""
    out = []
    try:
        op, np_ = old[PRICES_PATH], new[PRICES_PATH]
        for k in ("ggpInAvax", "avaxInUSD"):
            move = abs(np_[k] - op[k]) / op[k] * 100 if op[k] else 0
            if move > limits.max_price_move_pct:
                out.append(f"{k} moved {move:.1f}% since the last run (bound {limits.max_price_move_pct}%)")
    except (KeyError, ValueError, TypeError, ZeroDivisionError):
        pass  # a previous run we cannot read bounds nothing
    return out


def history_share_prices(b: Mapping, run: Run) -> list[str]:
    body = b.get(HISTORY_PATH)
    return _history_problems(body) if body else []


def _history_problems(body: dict) -> list[str]:
    """A daily share price is of a block at or before the file's and no later than its day's end,
    and the days' blocks follow each other."""
    out, last = [], -1
    top = body["meta"]["block"]["number"]
    for p in body["points"]:
        block = p.get("ggavaxBlock")
        if block is None:
            continue
        day_end = int(datetime.strptime(p["date"], "%Y-%m-%d").replace(tzinfo=UTC).timestamp()) + 86_399
        if p.get("ggavaxExchangeRate") is None or not p["ggavaxExchangeRate"] > 0:
            out.append(f"/prices/history: {p['date']} has a share-price block but no positive share price")
        elif block > top or block < last or p["ggavaxTime"] > day_end:
            out.append(f"/prices/history: the share price of {p['date']} is of block {block}, outside its day "
                       f"(or after the file's block {top}, or before the previous day's)")
        last = block
    return out


@endpoint(
    PRICES_PATH, tag=TAG, summary="GGP and AVAX prices",
    description="GGP/AVAX from the protocol's on-chain Oracle, AVAX/USD from the Chainlink feed read at "
                "the same block, and GGP/USD as their product. `crossCheck` reports the optional "
                "comparison with an HTTP price API. An Oracle price older than the network's bound (7 days on "
                "mainnet) is still published, labelled: `stale` is true and `staleReason` says since when; "
                "`ggpInAvax` and `ggpInUSD` are then that old price (the AVAX/USD feed has its own, stricter "
                "age bound: a stale feed is refused, never published).",
    schema=S.obj({
        "ggpInAvax": S.described(S.NON_NEGATIVE, "AVAX per GGP, the protocol Oracle's price"),
        "ggpInUSD": S.described(S.NON_NEGATIVE, "USD per GGP (ggpInAvax x avaxInUSD); read by the DeltaPrime UI and the community calculator"),
        "avaxInUSD": S.described(S.NON_NEGATIVE, "USD per AVAX from the Chainlink AVAX/USD feed; read by the DeltaPrime UI and the community calculator"),
        "stale": S.described(S.BOOLEAN, "true when the Oracle's GGP price is older than the network's bound: ggpInAvax and ggpInUSD are that old price"),
        "staleReason": S.described(S.nullable(S.STRING), "why the GGP price is stale, in words (null when it is not)"),
        "ggpPriceAgeDays": S.described({"type": "integer", "minimum": 0}, "whole days since the Oracle's GGP price was set, at the block (oracle.timestamp has the second)"),
        "oracle": S.obj({
            "price": S.described(S.WEI, "AVAX per GGP in wei (1e18 = 1 AVAX), exact"),
            "timestamp": S.described(S.TIMESTAMP, "when the Oracle price was last set, unix seconds"),
        }, description="the protocol Oracle's GGP price as stored"),
        "feed": S.obj({
            "address": S.described(S.ADDRESS, "the Chainlink AVAX/USD feed contract"),
            "roundId": S.described(S.WEI, "the feed round the answer comes from"),
            "answer": S.described(S.WEI, "USD per AVAX scaled by 10^decimals, exact"),
            "decimals": S.described(S.INTEGER, "decimals of answer (8 for Chainlink USD feeds)"),
            "updatedAt": S.described(S.TIMESTAMP, "when the feed round was written, unix seconds"),
        }, description="the AVAX/USD feed round read at the build block"),
        "crossCheck": S.nullable(S.obj({
            "source": S.described(S.STRING, "the HTTP price API compared with"),
            "status": {"enum": ["ok", "unavailable"], "description": "ok: the API answered; unavailable: it did not"},
            "avaxInUSD": S.described(S.nullable(S.NUMBER), "USD per AVAX according to that API"),
            "ggpInUSD": S.described(S.nullable(S.NUMBER), "USD per GGP according to that API"),
            "note": S.described(S.STRING, "the outcome of the comparison, in words"),
        }, description="comparison with an independent price API; null when none is configured")),
        "meta": S.META,
    }),
    checks=(PRICES_HOLD,),
    bounds=(Bound(price_moves, {PRICES_PATH: ("ggpInAvax", "avaxInUSD")}),),
)
def prices(ctx: Context):
    s, u, stale = ctx.snap, ctx.cached(usd), ctx.cached(oracle_staleness)
    assert s.feed is not None and u is not None  # the build refuses a snapshot without a feed
    check = s.price_check
    yield "/prices", {
        "ggpInAvax": float(u["ggp_in_avax"]),
        "ggpInUSD": float(u["ggp_usd"]),
        "avaxInUSD": float(u["avax_usd"]),
        "stale": stale is not None, "staleReason": stale,
        # The Oracle takes the time its updater gives, which may run a few seconds ahead of the block.
        "ggpPriceAgeDays": max(0, s.block.timestamp - s.oracle.timestamp) // 86_400,
        "oracle": {"price": str(s.oracle.price), "timestamp": s.oracle.timestamp},
        "feed": {"address": s.feed.address, "roundId": str(s.feed.round_id), "answer": str(s.feed.answer),
                 "decimals": s.feed.decimals, "updatedAt": s.feed.updated_at},
        "crossCheck": None if check is None else {
            "source": check.source, "status": check.status,
            "avaxInUSD": float(check.avax_usd) if check.avax_usd else None,
            "ggpInUSD": float(check.ggp_usd) if check.ggp_usd else None, "note": check.note,
        },
        "meta": meta(ctx),
    }


@endpoint(
    "/prices/tj", tag=TAG, summary="GGP price on the DEX",
    description="GGP/AVAX from the reserves of the network's Trader Joe v1 (Uniswap-v2 style) GGP/WAVAX pair "
                "at the build block, its USD value through the AVAX/USD feed, and its deviation from the "
                "protocol Oracle's price in percent (positive: the DEX is above the Oracle). Always published: "
                "`status` is `ok` with the quote; `unavailable` when the pair could not be read, does not hold "
                "GGP and WAVAX, or has an empty reserve (quote fields null, `reason` says why, and `/status` "
                "carries a warning); `noPair` on a network without a configured pair (`pair` null).",
    schema=S.obj({
        "status": S.described({"enum": ["ok", "unavailable", "noPair"]}, "ok: a quote; unavailable: the pair could not be quoted (see reason); noPair: the network names no pair"),
        "reason": S.described(S.nullable(S.STRING), "why there is no quote (null when status is ok)"),
        "pair": S.described(S.nullable(S.ADDRESS), "the GGP/WAVAX pair contract (null when the network names none)"),
        "ggpInAvax": S.described(S.nullable(S.NON_NEGATIVE), "AVAX per GGP from the pair's reserves"),
        "ggpInUSD": S.described(S.nullable(S.NON_NEGATIVE), "USD per GGP: ggpInAvax x the feed's AVAX/USD"),
        "oracleGgpInAvax": S.described(S.NON_NEGATIVE, "AVAX per GGP from the protocol Oracle, for comparison"),
        "deviationFromOraclePct": S.described(S.nullable(S.NUMBER), "(DEX - Oracle) / Oracle in percent; positive: the DEX is above"),
        "token0": S.described(S.nullable(S.ADDRESS), "the pair's token0"),
        "token1": S.described(S.nullable(S.ADDRESS), "the pair's token1"),
        "reserve0": S.described(S.nullable(S.WEI), "reserve of token0 in wei, exact"),
        "reserve1": S.described(S.nullable(S.WEI), "reserve of token1 in wei, exact"),
        "reserveGGP": S.described(S.nullable(S.NON_NEGATIVE), "GGP in the pair, whole tokens"),
        "reserveAVAX": S.described(S.nullable(S.NON_NEGATIVE), "WAVAX in the pair, whole tokens"),
        "blockTimestampLast": S.described(S.nullable(S.TIMESTAMP), "when the reserves last changed, unix seconds"),
        "meta": S.META,
    }),
)
def prices_tj(ctx: Context):
    s = ctx.snap
    state, reason = dex_state(s)
    d = s.dex
    body = {
        "status": state,
        "reason": reason if state != "noPair" else f"no GGP/WAVAX DEX pair is configured for {s.network}",
        "pair": d.pair if d else s.dex_pair,
        "ggpInAvax": None, "ggpInUSD": None,
        "oracleGgpInAvax": float(Fraction(s.oracle.price, WAD)), "deviationFromOraclePct": None,
        "token0": d.token0 if d else None, "token1": d.token1 if d else None,
        "reserve0": str(d.reserve0) if d else None, "reserve1": str(d.reserve1) if d else None,
        "reserveGGP": None, "reserveAVAX": None,
        "blockTimestampLast": d.block_timestamp_last if d else None,
    }
    if state == "ok":
        q = dex_quote(s)
        assert q is not None  # dex_state said "ok": there is a readable pair
        body |= {
            "ggpInAvax": float(q["ggp_in_avax"]), "ggpInUSD": float(q["ggp_usd"]) if q["ggp_usd"] is not None else None,
            "deviationFromOraclePct": float(q["deviation_pct"]),
            "reserveGGP": tokens(q["reserve_ggp"]), "reserveAVAX": tokens(q["reserve_avax"]),
        }
    yield "/prices/tj", {**body, "meta": meta(ctx)}


POINT = S.obj({
    "date": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$", "description": "the UTC day, YYYY-MM-DD"},
    "ggpInAvax": S.described(S.NON_NEGATIVE, "AVAX per GGP, the Oracle's last price of the day"),
    "ggpInUSD": S.described(S.NON_NEGATIVE, "USD per GGP (ggpInAvax x avaxInUSD)"),
    "avaxInUSD": S.described(S.NON_NEGATIVE, "USD per AVAX, the feed's last answer of the day"),
    "ggpInAvaxWei": S.described(S.WEI, "ggpInAvax in wei (1e18 = 1 AVAX), exact"),
    "avaxUsdAnswer": S.described(S.WEI, "the feed's answer (feed decimals)"),
    "block": S.described(S.INTEGER, "block of the day's last price update"),
    "timestamp": S.described(S.TIMESTAMP, "time of that block, unix seconds"),
    "ggavaxExchangeRate": S.described(S.nullable(S.NON_NEGATIVE), "AVAX per ggAVAX (convertToAssets(1e18) / 1e18) at the day's last "
                                      "block, the build's block while the day runs (null when the chain could not tell)"),
    "ggavaxAssetsPerShareWei": S.described(S.nullable(S.WEI), "the same share price in wei, exact"),
    "ggavaxTime": S.described(S.nullable(S.TIMESTAMP), "time of the block of that share price, unix seconds"),
    "ggavaxBlock": S.described(S.nullable(S.INTEGER), "block of that share price (null: recorded before blocks were, or none)"),
    "ggavaxSource": S.described(S.nullable({"enum": ["archive", "events", "run"]}),
                                "archive: read from the node's state at that block; events: rebuilt from the vault's events "
                                "and a known state; run: read at a build's block; null: no share price, or one recorded "
                                "before sources were"),
})
STATE = S.obj({
    "totalReleasedAssetsWei": S.described(S.WEI, "TokenggAVAX totalReleasedAssets(), wei"),
    "lastRewardsAmtWei": S.described(S.WEI, "lastRewardsAmt(), wei"),
    "lastSync": S.described(S.TIMESTAMP, "lastSync(), unix seconds"),
    "rewardsCycleEnd": S.described(S.TIMESTAMP, "rewardsCycleEnd(), unix seconds"),
    "totalSupplyWei": S.described(S.WEI, "totalSupply(), wei"),
}, description="the ggAVAX vault's share-price state at meta.block, exact: a later build extends the share "
               "prices from it with the vault's events when the node keeps no old state")


@endpoint(
    HISTORY_PATH, tag=TAG, summary="Daily price history",
    description="One point per UTC day: the last Oracle GGP/AVAX price and AVAX/USD feed answer of that "
                "day, rebuilt from the contracts' events, and the ggAVAX share price at the day's last block, "
                "read from archive state or rebuilt from the vault's events. A fresh publisher reproduces it; "
                "later runs only add new days (and complete the day that was still running).",
    schema=S.obj({
        "points": S.described(S.array(POINT), "one per UTC day, oldest first"),
        "ggavaxState": S.nullable(STATE),
        "meta": S.META,
    }),
    checks=(Check(history_share_prices, {HISTORY_PATH: ("meta.block.number", "points[].date", "points[].ggavaxBlock",
                                                        "points[].ggavaxExchangeRate", "points[].ggavaxTime")}),),
    # Its points never disappear or change (see validate.compare_accumulated).
    accumulates=Accumulates("points", "date"),
)
def price_history(ctx: Context):
    decimals = ctx.snap.feed.decimals if ctx.snap.feed else 8
    points = []
    for p in ctx.snap.price_history:
        ggp_avax, avax_usd = Fraction(p.ggp_in_avax, WAD), Fraction(p.avax_usd, 10**decimals)
        # The exact fields let the next run resume from this file (sources/history_file.py).
        share = p.ggavax_assets_per_share
        points.append({**history_file.exact_fields(p), "ggpInAvax": float(ggp_avax),
                       "ggpInUSD": float(ggp_avax * avax_usd), "avaxInUSD": float(avax_usd),
                       "ggavaxExchangeRate": None if share is None else tokens(share)})
    state = history_file.state_fields(history_file.VaultState.of(ctx.snap)) if points else None
    yield "/prices/history", {"points": points, "ggavaxState": state, "meta": meta(ctx)}
