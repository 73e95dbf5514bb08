"""ggAVAX's APY (compute/apy.py) and the prices (compute/prices.py) on snapshots built in memory:
each way the APY finds an earlier share price, and the USD and DEX figures, against values worked
out here."""
from __future__ import annotations

from fractions import Fraction

import pytest
from support import factory as F
from support.factory import BLOCK, DAY, NOW, WAD, avax, replace

from publisher.compute import apy as A
from publisher.compute import prices as PR
from publisher.errors import PublisherError
from publisher.snapshot import DexReserves, VaultPoint

YEAR = 365 * DAY
FEE = 0.07  # the factory's 700 bips


def annualized(growth: float, seconds: int) -> float:
    return ((1 + growth) ** (YEAR / seconds) - 1) * 100


def test_a_running_stream_is_compounded_when_no_earlier_share_price_is_known():
    v = F.vault(released=avax(10_000), rewards=avax(100), supply=avax(10_000), last_sync=NOW - DAY, cycle_end=NOW + 13 * DAY)
    a = A.ggavax_apy(F.snapshot(ggavax=v))
    assert a.method == "stream" and a.stream_active and a.window_seconds == 14 * DAY and a.from_block is None
    assert a.after_fees_pct == pytest.approx(annualized(0.01, 14 * DAY), rel=1e-12)
    assert a.gross_pct == pytest.approx(annualized(0.01 / (1 - FEE), 14 * DAY), rel=1e-12)
    total = avax(10_000) + avax(100) // 14  # a fourteenth of the stream released so far
    assert v.total_assets == total
    assert a.stream_apr_pct == pytest.approx(avax(100) / total * YEAR / (14 * DAY) * 100, rel=1e-12)


def test_an_archive_reading_a_window_back_comes_first():
    base = VaultPoint(F.block(BLOCK - 1_000_000, NOW - 30 * DAY), WAD)
    s = F.snapshot(apy_base=base)  # the default vault stands at 1.05 per share
    a = A.ggavax_apy(s)
    assert (a.method, a.window_seconds, a.from_block) == ("archive", 30 * DAY, BLOCK - 1_000_000)
    assert a.after_fees_pct == pytest.approx(annualized(0.05, 30 * DAY), rel=1e-12)
    assert a.gross_pct == pytest.approx(annualized(0.05 / (1 - FEE), 30 * DAY), rel=1e-12)


def test_the_history_gives_the_latest_share_price_a_window_old_else_the_oldest_a_week_old():
    history = (F.price_point(40, assets_per_share=WAD), F.price_point(35, assets_per_share=WAD + WAD // 100),
               F.price_point(20, assets_per_share=WAD + WAD // 50))
    a = A.ggavax_apy(F.snapshot(price_history=history))
    then = history[1].timestamp  # the latest point at least 30 days old
    assert a.method == "history" and a.window_seconds == NOW - then and a.from_block == history[1].block
    assert a.after_fees_pct == pytest.approx(annualized(1.05 / 1.01 - 1, NOW - then), rel=1e-12)
    short = A.ggavax_apy(F.snapshot(price_history=(F.price_point(3), F.price_point(10, assets_per_share=WAD))))
    assert short.method == "history" and short.window_seconds == NOW - F.price_point(10).timestamp


def test_a_stream_that_has_ended_gives_a_flat_apy_never_an_extrapolation():
    a = A.ggavax_apy(F.snapshot())  # the stream ended a day ago with nothing since
    assert (a.method, a.after_fees_pct, a.window_seconds, a.stream_apr_pct, a.stream_active) == ("flat", 0.0, DAY, 0.0, False)
    assert "stands still" in a.note
    # A week-old history point is preferred to the flat answer, and so is any younger one.
    young = A.ggavax_apy(F.snapshot(price_history=(F.price_point(2, assets_per_share=WAD),)))
    assert young.method == "history" and young.after_fees_pct > 0


def test_a_stream_of_zero_started_at_this_block_gives_no_apy_and_says_why():
    v = F.vault(rewards=0, last_sync=NOW, cycle_end=NOW + 14 * DAY)
    a = A.ggavax_apy(F.snapshot(ggavax=v))
    assert a.method is None and a.after_fees_pct is None and a.gross_pct is None
    assert "streams 0 AVAX" in a.note


# ---- prices ---------------------------------------------------------------------------------------


def test_usd_prices_are_exact_through_the_feed():
    u = PR.usd_prices(F.snapshot(avax_usd=25))
    assert u == {"avax_usd": Fraction(25), "ggp_in_avax": Fraction(1, 4), "ggp_usd": Fraction(25, 4)}
    assert PR.usd_prices(F.snapshot(avax_usd=None)) is None


def test_an_old_oracle_price_is_labelled_stale():
    assert PR.stale_oracle(F.snapshot(price_time=NOW - 7 * DAY), 7 * DAY) is None
    reason = PR.stale_oracle(F.snapshot(price_time=NOW - 8 * DAY - 5), 7 * DAY)
    assert reason is not None and "8 days ago" in reason


def pair(ggp_first: bool, ggp: int, wavax: int) -> DexReserves:
    tokens = (F.ADDRESSES["TokenGGP"], F.ADDRESSES["WAVAX"])
    r = (ggp, wavax)
    if not ggp_first:
        tokens, r = tokens[::-1], r[::-1]
    return DexReserves(F.addr(0xDE7), *tokens, *r, NOW - 60)


@pytest.mark.parametrize("ggp_first", [True, False])
def test_the_dex_quote_is_the_reserves_ratio_and_its_deviation_from_the_oracle(ggp_first):
    s = F.snapshot(dex=pair(ggp_first, avax(4000), avax(1100)), dex_pair=F.addr(0xDE7))
    q = PR.dex_quote(s)
    assert q["ggp_in_avax"] == Fraction(11, 40)  # 1 100 AVAX for 4 000 GGP
    assert q["deviation_pct"] == 10  # 0.275 against the Oracle's 0.25
    assert q["ggp_usd"] == Fraction(11, 40) * 25
    assert (q["reserve_ggp"], q["reserve_avax"]) == (avax(4000), avax(1100))
    assert PR.dex_state(s) == ("ok", None)


def test_a_pair_that_cannot_be_quoted_says_why():
    assert PR.dex_state(F.snapshot()) == ("noPair", None)
    assert PR.dex_state(F.snapshot(dex_pair=F.addr(0xDE7), dex_error="getReserves() reverted")) == (
        "unavailable", "getReserves() reverted")
    empty = F.snapshot(dex=pair(True, 0, avax(1)), dex_pair=F.addr(0xDE7))
    state, why = PR.dex_state(empty)
    assert state == "unavailable" and "empty reserve" in why
    with pytest.raises(PublisherError, match="empty reserve"):
        PR.dex_quote(empty)
    other = replace(pair(True, avax(1), avax(1)), token0=F.addr(0x1234))
    assert "does not hold GGP" in PR.dex_state(F.snapshot(dex=other, dex_pair=other.pair))[1]
