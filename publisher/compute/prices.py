"""Prices derived from snapshot values, exact: USD through the AVAX/USD feed, and the DEX quote for
/prices/tj. Values are ``Fraction``s; renderers turn them into JSON numbers once (``float()`` of
a Fraction is correctly rounded)."""
from __future__ import annotations

from fractions import Fraction

from ..errors import PublisherError
from ..snapshot import DexReserves, Snapshot
from ..utc import when

WAD = 10**18


def stale_oracle(snap: Snapshot, max_age: int) -> str | None:
    """Why the Oracle's GGP price is stale at the block (older than ``max_age`` seconds), or None.
    Age alone is a label, not a refusal: a protocol that stopped updating its price still has
    that price on chain, and every value derived from it says so."""
    age = snap.block.timestamp - snap.oracle.timestamp
    if age <= max_age:
        return None
    return (f"the Oracle's GGP price was last set {age // 86_400} days ago (at {when(snap.oracle.timestamp)}; values older "
            f"than {max_age // 86_400} days are stale): GGP prices and values derived from them are that price")


def usd_prices(snap: Snapshot) -> dict[str, Fraction] | None:
    """AVAX/USD from the feed and GGP/USD = oracle GGP/AVAX x AVAX/USD; None without a feed."""
    if snap.feed is None:
        return None
    avax_usd = Fraction(snap.feed.answer, 10**snap.feed.decimals)
    ggp_in_avax = Fraction(snap.oracle.price, WAD)
    return {"avax_usd": avax_usd, "ggp_in_avax": ggp_in_avax, "ggp_usd": ggp_in_avax * avax_usd}


def dex_problem(d: DexReserves, ggp: str, wavax: str | None = None) -> str | None:
    """Why the pair gives no GGP/AVAX quote (no GGP or WAVAX side, an empty reserve), or None."""
    tokens = {d.token0.lower(), d.token1.lower()}
    if ggp.lower() not in tokens:
        return f"DEX pair {d.pair} does not hold GGP (tokens {d.token0}, {d.token1})"
    if wavax and wavax.lower() not in tokens:
        return f"DEX pair {d.pair} does not hold WAVAX (tokens {d.token0}, {d.token1})"
    if d.reserve0 == 0 or d.reserve1 == 0:
        return f"DEX pair {d.pair} has an empty reserve ({d.reserve0}, {d.reserve1})"
    return None


def dex_state(snap: Snapshot) -> tuple[str, str | None]:
    """("noPair" | "unavailable" | "ok", the reason when not ok)."""
    if snap.dex is None:
        if snap.dex_error:
            return "unavailable", snap.dex_error
        return ("unavailable", "the pair was not read") if snap.dex_pair else ("noPair", None)
    problem = dex_problem(snap.dex, snap.addresses["TokenGGP"], snap.addresses.get("WAVAX"))
    return ("unavailable", problem) if problem else ("ok", None)


def dex_quote(snap: Snapshot, *, ggp_decimals: int = 18, avax_decimals: int = 18) -> dict | None:
    """GGP/AVAX from the v2 pair's reserves and its deviation from the oracle, exact; None without a pair."""
    d = snap.dex
    if d is None:
        return None
    ggp = snap.addresses["TokenGGP"].lower()
    if d.token0.lower() == ggp:
        reserve_ggp, reserve_avax = d.reserve0, d.reserve1
    elif d.token1.lower() == ggp:
        reserve_ggp, reserve_avax = d.reserve1, d.reserve0
    else:
        raise PublisherError(f"DEX pair {d.pair} does not hold GGP (tokens {d.token0}, {d.token1})")
    if reserve_ggp == 0 or reserve_avax == 0:
        raise PublisherError(f"DEX pair {d.pair} has an empty reserve")
    price = Fraction(reserve_avax, 10**avax_decimals) / Fraction(reserve_ggp, 10**ggp_decimals)
    oracle = Fraction(snap.oracle.price, WAD)
    usd = usd_prices(snap)
    return {
        "pair": d.pair,
        "token0": d.token0,
        "token1": d.token1,
        "reserve0": d.reserve0,
        "reserve1": d.reserve1,
        "reserve_ggp": reserve_ggp,
        "reserve_avax": reserve_avax,
        "block_timestamp_last": d.block_timestamp_last,
        "ggp_in_avax": price,
        "ggp_usd": price * usd["avax_usd"] if usd else None,
        "oracle_ggp_in_avax": oracle,
        "deviation_pct": (price - oracle) / oracle * 100,
    }
