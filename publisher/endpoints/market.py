"""Prices: oracle and feed (/prices), daily history (/prices/history)."""
from __future__ import annotations

from fractions import Fraction

from ..compute.prices import dex_quote
from ..sources import history

from . import schema as S
from .common import meta, usd
from .context import Context
from .registry import endpoint
from .units import WAD, tokens

TAG = "Prices"


@endpoint(
    "/prices", tag=TAG, summary="GGP and AVAX prices",
    description="GGP/AVAX from the protocol's on-chain Oracle, AVAX/USD from the Chainlink feed read at "
                "the same block, and GGP/USD as their product. `crossCheck` reports the optional "
                "comparison with an HTTP price API.",
    schema=S.obj({
        "ggpInAvax": S.described(S.NON_NEGATIVE, "AVAX per GGP (Oracle.getGGPPriceInAVAX)"),
        "ggpInUSD": S.described(S.NON_NEGATIVE, "USD per GGP"),
        "avaxInUSD": S.described(S.NON_NEGATIVE, "USD per AVAX (Chainlink AVAX/USD)"),
        "oracle": S.obj({"price": S.WEI, "timestamp": S.TIMESTAMP}),
        "feed": S.obj({"address": S.ADDRESS, "roundId": S.WEI, "answer": S.WEI, "decimals": S.INTEGER,
                       "updatedAt": S.TIMESTAMP}),
        "crossCheck": S.nullable(S.obj({"source": S.STRING, "status": {"enum": ["ok", "unavailable"]},
                                        "avaxInUSD": S.nullable(S.NUMBER), "ggpInUSD": S.nullable(S.NUMBER),
                                        "note": S.STRING})),
        "meta": S.META,
    }),
)
def prices(ctx: Context):
    s, u = ctx.snap, ctx.cached(usd)
    check = s.price_check
    yield "/prices", {
        "ggpInAvax": float(u["ggp_in_avax"]),
        "ggpInUSD": float(u["ggp_usd"]),
        "avaxInUSD": float(u["avax_usd"]),
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
    description="GGP/AVAX from the reserves of the configured Trader Joe v1 (Uniswap-v2 style) GGP/WAVAX pair "
                "at the build block, its USD value through the AVAX/USD feed, and its deviation from the "
                "protocol Oracle's price in percent (positive: the DEX is above the Oracle).",
    schema=S.obj({
        "ggpInAvax": S.NON_NEGATIVE, "ggpInUSD": S.NON_NEGATIVE, "oracleGgpInAvax": S.NON_NEGATIVE,
        "deviationFromOraclePct": S.NUMBER, "pair": S.ADDRESS, "token0": S.ADDRESS, "token1": S.ADDRESS,
        "reserve0": S.WEI, "reserve1": S.WEI, "reserveGGP": S.NON_NEGATIVE, "reserveAVAX": S.NON_NEGATIVE,
        "blockTimestampLast": S.TIMESTAMP, "meta": S.META,
    }),
)
def prices_tj(ctx: Context):
    q = dex_quote(ctx.snap)
    if q is None:
        return  # no pair configured for this network: the endpoint is not published
    yield "/prices/tj", {
        "ggpInAvax": float(q["ggp_in_avax"]), "ggpInUSD": float(q["ggp_usd"]),
        "oracleGgpInAvax": float(q["oracle_ggp_in_avax"]), "deviationFromOraclePct": float(q["deviation_pct"]),
        "pair": q["pair"], "token0": q["token0"], "token1": q["token1"],
        "reserve0": str(q["reserve0"]), "reserve1": str(q["reserve1"]),
        "reserveGGP": tokens(q["reserve_ggp"]), "reserveAVAX": tokens(q["reserve_avax"]),
        "blockTimestampLast": q["block_timestamp_last"], "meta": meta(ctx),
    }


POINT = S.obj({
    "date": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
    "ggpInAvax": S.NON_NEGATIVE, "ggpInUSD": S.NON_NEGATIVE, "avaxInUSD": S.NON_NEGATIVE,
    "ggpInAvaxWei": S.WEI, "avaxUsdAnswer": S.described(S.WEI, "the feed's answer (feed decimals)"),
    "block": S.INTEGER, "timestamp": S.TIMESTAMP,
    "ggavaxExchangeRate": S.described(S.nullable(S.NON_NEGATIVE), "AVAX per ggAVAX as a run saw it that day (null when no run did)"),
    "ggavaxAssetsPerShareWei": S.nullable(S.WEI), "ggavaxTime": S.nullable(S.TIMESTAMP),
})


@endpoint(
    "/prices/history", tag=TAG, summary="Daily price history",
    description="One point per UTC day: the last Oracle GGP/AVAX price and AVAX/USD feed answer of that "
                "day, rebuilt from the contracts' events. A fresh publisher reproduces it; later runs only "
                "add new days.",
    schema=S.obj({"points": S.array(POINT), "meta": S.META}),
)
def price_history(ctx: Context):
    decimals = ctx.snap.feed.decimals if ctx.snap.feed else 8
    points = []
    for p in ctx.snap.price_history:
        ggp_avax, avax_usd = Fraction(p.ggp_in_avax, WAD), Fraction(p.avax_usd, 10**decimals)
        # The exact fields let the next run resume from this file (sources/history.py).
        share = p.ggavax_assets_per_share
        points.append({**history.exact_fields(p), "ggpInAvax": float(ggp_avax),
                       "ggpInUSD": float(ggp_avax * avax_usd), "avaxInUSD": float(avax_usd),
                       "ggavaxExchangeRate": None if share is None else tokens(share)})
    yield "/prices/history", {"points": points, "meta": meta(ctx)}
