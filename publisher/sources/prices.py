"""USD price sources: the AVAX/USD feed checked for sanity and an optional cross-check of the
derived USD prices (compute/prices.py) against a CoinGecko-style price API."""
from __future__ import annotations

import logging
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction

from ..compute.prices import usd_prices
from ..errors import PublisherError
from ..snapshot import BlockRef, FeedRound, PriceCheck, Snapshot
from .http import HttpClient, SourceError

log = logging.getLogger(__name__)

WAD = 10**18
COINGECKO_IDS = {"avax": "avalanche-2", "ggp": "gogopool"}
# No token of this protocol is worth a billion dollars: a larger quote is a broken API, and
# refusing it keeps absurd exponents (1e400) out of the arithmetic.
MAX_USD = Decimal(10) ** 9
MIN_USD = Decimal(10) ** -9


def validate_feed(feed: FeedRound, block: BlockRef, max_age: int) -> None:
    """Refuse a round a careful consumer would refuse; age is measured at the pinned block."""
    where = f"AVAX/USD feed {feed.address}"
    if feed.answer <= 0:
        raise PublisherError(f"{where}: answer {feed.answer} is not a positive price (round {feed.round_id})")
    if feed.updated_at == 0:
        raise PublisherError(f"{where}: round {feed.round_id} is not complete (updatedAt 0)")
    if feed.answered_in_round < feed.round_id:
        raise PublisherError(f"{where}: round {feed.round_id} carries a stale answer from round {feed.answered_in_round}")
    if feed.updated_at > block.timestamp:
        raise PublisherError(f"{where}: round {feed.round_id} is dated after block {block.number}")
    age = block.timestamp - feed.updated_at
    if age > max_age:
        raise PublisherError(f"{where}: round {feed.round_id} is {age}s old at block {block.number} (max {max_age}s)")


def cross_check(http: HttpClient, snap: Snapshot, bounds: dict[str, float], warnings: list[str], *,
                ggp_stale: bool = False, quote: Callable[[], dict[str, Decimal]] | None = None) -> PriceCheck:
    """Compare the feed-derived USD prices with the price API.

    A divergence beyond ``bounds[asset]`` (percent; keys "avax" and "ggp") stops the run. GGP gets
    its own, wider bound: the Oracle publishes a TWAP of a thinly traded token, which a spot quote
    can leave behind on a volatile day. The API is only a second opinion, so when it is down or
    answers in an unexpected shape the run continues with a warning. A stale Oracle price
    (``ggp_stale``) is expected to drift from the market: its divergence is a warning, not a
    refusal (the price is published labelled stale). ``quote``: the API's answer (``fetch_usd``),
    when the caller asked for it earlier.
    """
    ours = usd_prices(snap)
    assert ours is not None  # called only with a feed
    source = http.where("/simple/price")
    try:
        quoted = quote() if quote is not None else fetch_usd(http)
    except SourceError as exc:
        warnings.append(f"price cross-check skipped: {exc}")
        log.warning(warnings[-1])
        return PriceCheck(source=source, status="unavailable", note=str(exc))
    notes = []
    for key, label in (("avax", "AVAX/USD"), ("ggp", "GGP/USD")):
        mine = ours[f"{key}_usd"]
        if mine <= 0:  # check_snapshot refuses this before the cross-check; never divide by it
            raise PublisherError(f"{label} from the chain is not positive")
        bound_pct = bounds[key]
        diff = abs(Fraction(quoted[key]) - mine) / mine * 100
        if diff > Fraction(str(bound_pct)) and key == "ggp" and ggp_stale:
            notes.append(f"{label} {float(diff):.2f}% from the market's (bound {bound_pct}%, not applied: the Oracle price is stale)")
            warnings.append(f"price cross-check: {notes[-1]}")
            log.warning(warnings[-1])
            continue
        if diff > Fraction(str(bound_pct)):
            raise PublisherError(
                f"{source}: {label} {quoted[key]} diverges {float(diff):.2f}% from the chain's "
                f"{float(mine):.6g} (bound {bound_pct}%)"
            )
        notes.append(f"{label} within {float(diff):.2f}% (bound {bound_pct}%)")
    return PriceCheck(source=source, status="ok", avax_usd=str(quoted["avax"]), ggp_usd=str(quoted["ggp"]),
                      note=", ".join(notes))


def fetch_usd(http: HttpClient) -> dict[str, Decimal]:
    """``GET /simple/price`` in CoinGecko's shape: ``{"avalanche-2": {"usd": 24.1}, …}``."""
    path = "/simple/price"
    body = http.get_json(path, {"ids": ",".join(COINGECKO_IDS.values()), "vs_currencies": "usd"})
    if not isinstance(body, dict):
        raise http.malformed(path, "expected an object")
    out = {}
    for key, coin in COINGECKO_IDS.items():
        entry = body.get(coin)
        value = entry.get("usd") if isinstance(entry, dict) else None
        if isinstance(value, bool) or not isinstance(value, (int, Decimal)) or not value > 0:
            raise http.malformed(path, f"{coin}.usd is not a positive number")
        if value > MAX_USD:
            raise http.malformed(path, f"{coin}.usd is implausibly large")
        if value < MIN_USD:  # 1e-999999999 is a number too, whose exact fraction takes minutes to build
            raise http.malformed(path, f"{coin}.usd is implausibly small")
        out[key] = Decimal(value)
    return out
