"""Prices: oracle and feed (/prices), daily history (/prices/history)."""
from __future__ import annotations

from decimal import Decimal

from . import schema as S
from .common import meta, usd
from .context import Context
from .registry import endpoint
from .units import WAD

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
        "ggpInAvax": float(u["ggp_avax"]),
        "ggpInUSD": float(u["ggp"]),
        "avaxInUSD": float(u["avax"]),
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


POINT = S.obj({
    "date": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
    "ggpInAvax": S.NON_NEGATIVE, "ggpInUSD": S.NON_NEGATIVE, "avaxInUSD": S.NON_NEGATIVE,
    "block": S.INTEGER, "timestamp": S.TIMESTAMP,
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
        ggp_avax = Decimal(p.ggp_in_avax) / WAD
        avax_usd = Decimal(p.avax_usd) / (Decimal(10) ** decimals)
        points.append({"date": p.date, "ggpInAvax": float(ggp_avax), "ggpInUSD": float(ggp_avax * avax_usd),
                       "avaxInUSD": float(avax_usd), "block": p.block, "timestamp": p.timestamp})
    yield "/prices/history", {"points": points, "meta": meta(ctx)}
