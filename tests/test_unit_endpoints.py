"""Endpoint bodies made from snapshots built in memory: each render function's body passes its
endpoint's schema and carries the figures worked out here from the snapshot's values."""
from __future__ import annotations

import dataclasses
import json
import re

import pytest
from support import factory as F
from support.factory import BLOCK, DAY, NOW, WAD, avax, replace

from publisher.build.validate import schema_problems
from publisher.compute import rewards as R
from publisher.config import load_profile
from publisher.endpoints import market, requester_page, rewards, vault, withdrawals
from publisher.endpoints.announcements import WINDOW_END
from publisher.endpoints.context import Context
from publisher.endpoints.registry import load_all, resolve
from publisher.snapshot import DexReserves, VaultPoint, check
from publisher.utc import iso, when


def render(fn, snap, **ctx) -> dict[str, dict]:
    """The bodies one render function yields, made and passed through JSON as a build writes them;
    each must pass its endpoint's schema."""
    out = {}
    endpoints = load_all()
    for path, body in fn(Context(snap, **ctx)):
        doc = json.loads(json.dumps(resolve(body)))
        ep = endpoints.get(path) or next(e for e in endpoints.values() if e.pattern.match(path))
        assert schema_problems(ep, path, doc) == []
        out[path] = doc
    return out


def test_ggavax_reports_the_vaults_books_in_whole_avax():
    v = F.vault(released=avax(10_500), supply=avax(10_000), staking=avax(9000), liquid=avax(2000), available=avax(3500))
    s = F.snapshot(ggavax=v, requests=[F.request(0, avax(7)), F.request(1, avax(2), fulfilled=True)])
    check(s)
    body = render(vault.ggavax, s)["/ggAvax"]
    assert body["totalAssets"] == 10_500 and body["exchangeRate"] == 1.05 and body["totalSupply"] == 10_000
    assert body["reserveTarget"] == 1050  # 10 % of totalAssets
    assert body["pendingRewards"] == 500  # WAVAX held + staking − released − streaming
    assert body["availableMinipools"] == 3  # 3 500 AVAX in 1 000-AVAX minipools
    assert body["feePct"] == 7 and body["depositsPaused"] is False
    assert (body["queuePendingCount"], body["queuePendingAvax"], body["queueFundedAvax"], body["queueLiquidityAvax"]) == (1, 7, 2, 1500)
    assert body["meta"] == {"network": "mainnet", "chainId": 43114,
                            "block": {"number": BLOCK, "hash": s.block.hash, "timestamp": NOW}}


def test_while_minipool_creation_is_paused_no_minipool_is_fundable_and_no_avax_reward_assumed():
    """The vault's amountAvailableForStaking is the contract's, which no pause changes; the
    minipools it could fund are none while MinipoolManager is paused, and the rewards forecast
    assumes no AVAX reward rate for a stake that cannot make a minipool."""
    v = F.vault(released=avax(10_500), supply=avax(10_000), staking=avax(9000), available=avax(3500))
    stakers = [F.staker(1, ggp=avax(1000), assigned=avax(1000))]
    s = F.snapshot(ggavax=v, stakers=stakers, paused={"MinipoolManager": True})
    check(s)
    body = render(vault.ggavax, s)["/ggAvax"]
    assert (body["amountAvailableForStaking"], body["availableMinipools"]) == (3500, 0)
    assert render(vault.ggavax, F.snapshot(ggavax=v, stakers=stakers))["/ggAvax"]["availableMinipools"] == 3
    doc = render(rewards.params_endpoint, s)["/rewards/params"]
    said = doc["forecast"]["assumptions"]
    assert any("no minipool can be created or renew its validation, so the estimates count no AVAX reward" in a
               for a in said), said
    assert not any("AVAX rewards accrue" in a for a in said)
    # An existing staker's estimate counts no AVAX on what validates now: no validation renews.
    mine = R.operator_estimate(doc, ggp_staked=avax(1000), avax_staked=avax(1000), avax_validating=avax(1000),
                               effective_ggp_staked=avax(1000), eligible_next=True)
    assert (mine["avaxPerCycleWei"], mine["avaxPerYearWei"], mine["avaxAprPct"]) == ("0", "0", 0)
    running = R.operator_estimate(render(rewards.params_endpoint, F.snapshot(ggavax=v, stakers=stakers))["/rewards/params"],
                                  ggp_staked=avax(1000), avax_staked=avax(1000), avax_validating=avax(1000),
                                  effective_ggp_staked=avax(1000), eligible_next=True)
    assert int(running["avaxPerYearWei"]) > 0


def test_metrics_apy_names_its_window_and_method():
    s = F.snapshot(apy_base=VaultPoint(F.block(BLOCK - 100, NOW - 30 * DAY), WAD))
    body = render(vault.metrics_apy, s)["/metrics/apy"]
    assert (body["method"], body["window_days"], body["from_block"], body["to_block"]) == ("archive", 30, BLOCK - 100, BLOCK)
    assert body["total_apy_after_fees"] == pytest.approx((1.05 ** (365 / 30) - 1) * 100, rel=1e-12)
    assert body["total_apy"] > body["total_apy_after_fees"] and body["fee_pct"] == 7


def test_prices_and_the_dex_quote():
    dex = DexReserves(F.addr(0xDE7), F.ADDRESSES["TokenGGP"], F.ADDRESSES["WAVAX"], avax(4000), avax(900), NOW - 60)
    s = F.snapshot(avax_usd=30, price_time=NOW - 9 * DAY, dex=dex, dex_pair=dex.pair)
    body = render(market.prices, s)["/prices"]
    assert (body["ggpInAvax"], body["avaxInUSD"], body["ggpInUSD"]) == (0.25, 30, 7.5)
    assert body["stale"] and body["ggpPriceAgeDays"] == 9 and body["oracle"]["price"] == str(WAD // 4)
    tj = render(market.prices_tj, s)["/prices/tj"]
    assert tj["status"] == "ok" and tj["ggpInAvax"] == 0.225 and tj["deviationFromOraclePct"] == pytest.approx(-10)
    assert (tj["reserveGGP"], tj["reserveAVAX"], tj["ggpInUSD"]) == (4000, 900, pytest.approx(6.75))
    none = render(market.prices_tj, F.snapshot())["/prices/tj"]
    assert none["status"] == "noPair" and none["ggpInAvax"] is None and "mainnet" in none["reason"]


def test_the_withdrawals_overview_and_a_requesters_file():
    s = F.snapshot(ggavax=F.vault(released=avax(1000), supply=avax(1000), staking=avax(990)),
                   requests=[F.request(0, avax(5)), F.request(1, avax(100), requester=F.addr(0xB000)),
                             F.request(2, avax(3), fulfilled=True)])
    body = render(withdrawals.withdrawals, s)["/withdrawals"]
    assert body["status"] == "ok" and body["pending"]["count"] == 2 and body["pending"]["expectedAvax"] == 105
    assert body["funded"]["count"] == 1 and body["funded"]["claimableAvax"] == 3
    assert body["liquidity"]["queueAvax"] == 10 and body["liquidity"]["pendingShortfallAvax"] == 95
    assert body["requesters"] == 2 and body["parameters"]["nextRequestId"] == 3
    files = render(withdrawals.requester, s)
    mine = files[f"/withdrawals/{F.addr(0xB000).lower()}"]
    assert [r["id"] for r in mine["requests"]] == [0, 1] and mine["totals"]["expectedAvax"] == 105
    first, second = mine["requests"]
    assert (first["position"], first["fundableNow"], first["depositorCalls"]) == (1, True, 1)
    assert (second["position"], second["aheadAvax"], second["fundableNow"]) == (2, 5, False)
    funded = files[f"/withdrawals/{F.addr(0xB002).lower()}"]["requests"][0]
    assert (funded["status"], funded["canClaim"], funded["position"]) == ("funded", True, None)


def page_of(snap, path: str) -> str:
    """The HTML page a render function yields at ``path`` (a page has no JSON schema to pass)."""
    return next(resolve(body) for p, body in requester_page.requester_page(Context(snap)) if p == path)


def test_a_funded_requests_banner_names_the_window_when_it_closes_before_the_expiration():
    """The page's most visible line says what comes first: the announced window's end, when it
    comes before the request's own expiration (a claim still pays until the expiration)."""
    window = 1_798_675_200  # 2026-12-31 00:00 UTC, mainnet's announced end
    me = F.addr(0xC001)
    now = window - 60
    late = F.request(0, avax(3), requester=me, requested=now - DAY, fulfilled=True)  # expires 20 days after the window
    early = F.request(1, avax(2), requester=me, requested=now - 21 * DAY + 30, fulfilled=True)  # expires 30 s before it
    s = F.snapshot(now=now, ggavax=F.vault(now=now), requests=[late, early])
    announced = load_profile("mainnet").announced()
    assert any(a.key == WINDOW_END and a.time == window for a in announced)
    page = next(resolve(body) for p, body in requester_page.requester_page(Context(s, announcements=announced))
                if p == f"/withdrawals/{me.lower()}.html")
    first = re.search(r'id="banner-expires-0">(.*?)</p>', page, re.S).group(1)
    assert 'claim it before the announced withdrawal window closes</strong>, <time datetime="2026-12-31T00:00:00Z"' in first
    assert f'until it expires, <time datetime="{iso(late.expiration_time)}"' in first
    second = re.search(r'id="banner-expires-1">(.*?)</p>', page, re.S).group(1)
    assert f'claim it before it expires</strong>, <time datetime="{iso(early.expiration_time)}"' in second
    assert "window" not in second


def test_a_funded_request_too_small_to_mint_a_share_is_told_so_everywhere():
    """A funded request worth less than one share: its record says why its cancel and reclaim
    revert, and its page's banner, its calendar and the window's asks say it is stuck once expired
    rather than reclaimable."""
    from publisher.compute import queue as Q
    from publisher.endpoints import calendar

    me = F.addr(0xC002)
    dear = F.vault(released=avax(1050), supply=avax(1000), staking=avax(1000))  # 1.05 AVAX a share
    dust = F.request(0, 1, shares=1, requester=me, fulfilled=True)
    s = F.snapshot(ggavax=dear, requests=[dust])
    body = render(withdrawals.requester, s)[f"/withdrawals/{me.lower()}"]
    (r,) = body["requests"]
    assert (r["status"], r["canClaim"], r["canCancel"], r["redepositBlocked"]) == ("funded", True, False, Q.ZERO_SHARES)
    page = page_of(s, f"/withdrawals/{me.lower()}.html")
    banner = re.search(r'id="banner-expires-0">(.*?)</p>', page, re.S).group(1)
    assert "reclaiming it reverts (its AVAX is too little to mint one ggAVAX share)" in banner
    assert withdrawals.window_asks(body["requests"], r["expirationTime"] + 1) == []  # stuck then: nothing to ask
    text = calendar.calendar_text("mainnet", None, body).replace("\r\n ", "")
    assert "nor reclaimed: its AVAX is too little to mint one ggAVAX share (it is stuck)" in text
    assert "can also be cancelled for ggAVAX" not in text


def test_a_requester_is_told_what_claims_can_still_pay_and_why_nothing_funds_a_request():
    """A request past its expiration returns ggAVAX (cancelled or reclaimed), never its AVAX: the
    requester's payableAvax leaves it out, and the page says how much it leaves out. A request in
    line that no depositor call funds names why, in its file and on its page: a per-call limit of
    0, or calls that fail whole at a request; not a lack of minipool returns."""
    me = F.addr(0xC000)
    books = F.vault(released=avax(1000), supply=avax(1000), staking=avax(900))  # 100 AVAX of liquidity
    rs = [F.request(0, avax(5), requester=me, requested=NOW - 30 * DAY),  # expired on day -9, in line
          F.request(1, avax(7), requester=me), F.request(2, avax(3), requester=me, fulfilled=True),
          F.request(3, avax(2), requester=me, requested=NOW - 30 * DAY, fulfilled=True)]  # funded, expired
    s = F.snapshot(ggavax=books, withdraw_queue=F.queue(rs, max_requests_per_deposit=0), paused={"TokenggAVAX": True})
    path = f"/withdrawals/{me.lower()}"
    body = render(withdrawals.requester, s)[path]
    assert [r["status"] for r in body["requests"]] == ["pendingExpired", "pending", "funded", "stuck"]
    assert (body["totals"]["expectedAvax"], body["totals"]["payableAvax"]) == (17, 10)
    assert [(r["callsFundNothing"], r["blockedBy"], r["fundableNow"]) for r in body["requests"]] == [
        (True, None, False), (True, None, False), (False, None, False), (False, None, False)]
    page = page_of(s, path + ".html")
    assert '<div class="v" id="total-payable">10.0000</div>' in page
    # What no claim pays, by what can still be done with it: the ggAVAX back, or nothing while deposits are paused.
    assert "and 5.0000 AVAX in requests past their expiration, which no claim pays: reclaimed (or, those still in line, cancelled), they return ggAVAX" in page
    assert "and 2.0000 AVAX stuck: no call releases it now (ggAVAX (TokenggAVAX) deposits are paused: reclaiming" in page
    estimate = re.search(r'<article class="request" id="request-1".*?<dd data-field="estimate">(.*?)</dd>', page, re.S).group(1)
    assert "maxRequestsPerDeposit is 0" in estimate and "minipool return" not in estimate
    # Calls that fail whole at a request worth nothing (a share price below 1): this one's, then behind it.
    half = F.vault(released=avax(500), supply=avax(1000), staking=avax(400))
    worthless, fair = F.request(0, 0, shares=1, requester=me), F.request(1, avax(1), shares=avax(2), requester=me)
    s = F.snapshot(ggavax=half, withdraw_queue=F.queue([worthless, fair]))
    body = render(withdrawals.requester, s)[path]
    assert [(r["blockedBy"], r["callsFundNothing"]) for r in body["requests"]] == [(0, False), (0, False)]
    assert body["totals"]["payableAvax"] == body["totals"]["expectedAvax"] == 1
    page = page_of(s, path + ".html")
    assert "total-expired" not in page and "total-stuck" not in page
    said = re.findall(r'<dd data-field="estimate">(.*?)</dd>', page, re.S)
    assert [x.split("(")[0].strip() for x in said] == [
        "none: the depositor's calls fail whole when they reach this request",
        "none: the depositor's calls fail whole when they reach request #0, ahead of it"]


def test_no_queue_is_published_with_its_reason():
    body = render(withdrawals.withdrawals, F.snapshot())["/withdrawals"]
    assert body["status"] != "ok" and "no WithdrawQueue" in body["reason"]


def test_rewards_params_body_is_the_formulas_inputs():
    stakers = [F.staker(1, ggp=avax(1000), assigned=avax(1000)), F.staker(2, ggp=avax(500), assigned=avax(1000))]
    s = F.snapshot(stakers=stakers)
    check(s)
    body = render(rewards.params_endpoint, s)["/rewards/params"]
    assert body["tegs"] == {**body["tegs"], "wei": str(avax(1500)), "stakers": 2}
    assert body["ggpPriceInAvaxWei"] == str(WAD // 4) and body["nextDistributionTime"] == NOW + 14 * DAY
    assert body["validatorRate"]["source"] == "default" and body["distributionExpected"] is True


def test_the_feed_writes_out_only_the_receipts_entries_it_shows():
    # Many receipts with ties in time: the newest entries chosen before they are written equal the
    # first entries of all of them in the feed's order.
    from publisher.endpoints import feed
    from publisher.snapshot import QueueStep, Receipt

    who = "0x" + "ab" * 20
    outcomes = (None, "claimed", "cancelled", "reclaimed")
    receipts = tuple(
        Receipt(i, who, 10**18 + i, 2 * 10**18, 1_000 + i, QueueStep(i, 1_000 + i // 3, "0x" + "00" * 32),
                funded=QueueStep(i + 1, 2_000 + i // 5, "0x" + "11" * 32) if i % 4 else None, allocated=2 * 10**18,
                closed=outcomes[i % 4], closed_at=QueueStep(i + 2, 2_000 + i // 7, "0x" + "22" * 32) if i % 4 else None,
                paid=10**18, shares_returned=10**18, shares_burnt=i % 2)
        for i in range(600))
    every = sorted(feed.receipt_entries("devnet", receipts), key=lambda e: (-e.updated, e.id))
    newest = sorted(feed.receipt_entries("devnet", receipts, 50), key=lambda e: (-e.updated, e.id))
    assert len(every) > 50 and newest == every[:50]


def test_the_feed_says_whether_a_funding_came_in_time_to_be_claimed():
    """The depositor funds a request in line past its expiration: its funded entry says it can
    only be reclaimed; one funded in time, when it can be claimed until."""
    from publisher.endpoints import feed
    from publisher.snapshot import QueueStep, Receipt

    who, tx = "0x" + "ab" * 20, "0x" + "11" * 32
    late, in_time = (Receipt(i, who, WAD, WAD, 1_000, QueueStep(1, 500, tx), funded=QueueStep(9, funded_at, tx),
                             allocated=WAD) for i, funded_at in ((1, 5_000), (2, 3_000)))
    entries = {e.id.rsplit("/", 2)[1]: e.content for e in feed.receipt_entries("devnet", (late, in_time), None, {1: 4_000, 2: 4_000})}
    assert "too late to be claimed: the request had expired at" in entries["1"] and "can no longer be claimed" in entries["1"]
    assert f"who can claim it until the request expires ({when(4_000)})" in entries["2"]
    assert "too late" not in entries["2"]
    # Closed, its expiration no longer known: a claim came in time; a reclaim may not have.
    week = 7 * DAY
    closed = {what: dataclasses.replace(late, funded=QueueStep(9, 1_000 + week, tx), closed=what, closed_at=QueueStep(10, 2 * week, tx))
              for what in ("claimed", "reclaimed")}
    words = {what: next(e.content for e in feed.receipt_entries("devnet", (r,)) if e.kind == "funded") for what, r in closed.items()}
    assert "who can claim it until the request expires. " in words["claimed"]
    assert ("unless it had expired already when it was funded: no event names its expiration, and a request funded "
            "after it can no longer be claimed") in words["reclaimed"]
    # Funded before the shortest expiration delay after its claimable time had run: in time, whatever came after.
    from publisher.compute.queue import MIN_EXPIRATION_DELAY
    for funded_at, in_time in ((1_000 + MIN_EXPIRATION_DELAY - 1, True), (1_000 + MIN_EXPIRATION_DELAY, False)):
        r = dataclasses.replace(closed["reclaimed"], funded=QueueStep(9, funded_at, tx))
        text = next(e.content for e in feed.receipt_entries("devnet", (r,)) if e.kind == "funded")
        assert ("who can claim it until the request expires. " in text) == in_time, funded_at


def test_a_long_lists_rows_are_checked_once_and_a_bad_new_row_is_still_refused():
    """/stakers made with kept rows: the rows that passed its schema are not checked again, a new
    row is, and a row that passed another endpoint's schema counts for nothing here."""
    from publisher.endpoints import operators
    from publisher.endpoints.registry import Row, Rows

    snap = F.snapshot(stakers=tuple(F.staker(n) for n in range(1, 4)))
    ep, rows = load_all()["/stakers"], Rows()
    (path, deferred), = operators.stakers(Context(snap))
    body = resolve(deferred, rows)
    assert schema_problems(ep, path, body) == [] and {r.checked for r in body["stakers"]} == {"/stakers"}
    broken = Row({k: v for k, v in body["stakers"][1].items() if k != "stakerAddr"})
    again = {**body, "stakers": [body["stakers"][0], broken, body["stakers"][2]]}
    assert "stakerAddr" in " ".join(schema_problems(ep, path, again))
    assert not hasattr(broken, "checked")
    elsewhere = Row(broken)
    elsewhere.checked = "/minipools"
    assert schema_problems(ep, path, {**body, "stakers": [elsewhere]}) != []


def test_the_outlook_names_the_request_where_the_depositors_calls_fail_whole():
    from publisher.endpoints import withdrawals

    half = F.vault(released=avax(500), supply=avax(1000), staking=avax(400))  # 0.5 AVAX a share
    worthless, fair = F.request(0, 0, shares=1), F.request(1, avax(1), shares=avax(2))
    body = render(withdrawals.withdrawals, F.snapshot(ggavax=half, withdraw_queue=F.queue([worthless, fair])))["/withdrawals"]
    outlook = body["schedule"]["outlook"]
    assert "2 wait on request #0, where the depositor's calls fail whole" in outlook, outlook
    assert "beyond every known return" not in outlook and body["schedule"]["revertedCalls"] >= 1
    # Calls failing at a request behind the one in front leave that one unfunded too: both wait on #1.
    streamed = F.vault(released=avax(100), rewards=avax(50), supply=avax(150), staking=0)
    body = render(withdrawals.withdrawals, F.snapshot(ggavax=streamed, requests=[F.request(0, avax(80)), F.request(1, avax(40))]))["/withdrawals"]
    outlook = body["schedule"]["outlook"]
    assert "2 wait on request #1, where the depositor's calls fail whole" in outlook and "released assets" in outlook, outlook


def test_rows_of_a_list_derived_anew_are_reused_where_equal_and_made_where_not():
    """A list made of new, equal records each build (the queue's schedule) takes the last build's
    rows at the same place; a changed item gets a row of its own, a shifted list finds its rows by
    value, and the rows equal those made afresh."""
    from dataclasses import dataclass

    from publisher.endpoints.registry import Rows

    hashed: list[int] = []

    @dataclass(frozen=True)
    class Item:
        n: int
        label: str

        def __hash__(self) -> int:  # counted: an item found at its place is not hashed
            hashed.append(self.n)
            return hash((self.n, self.label))

    made: list[int] = []

    def row(item):
        made.append(item.n)
        return {"n": item.n, "label": item.label}

    rows = Rows()
    first = rows.make(row, tuple(Item(n, f"#{n}") for n in range(50)))
    rows.turn()
    made.clear()
    hashed.clear()
    again = rows.make(row, tuple(Item(n, f"#{n}") for n in range(50)))  # new objects, equal
    assert made == [] and all(a is b for a, b in zip(first, again, strict=True))
    assert hashed == []  # each found at its place, none looked up by value
    rows.turn()
    changed = rows.make(row, tuple(Item(n, "moved" if n == 7 else f"#{n}") for n in range(50)))
    assert made == [7] and changed[7] == {"n": 7, "label": "moved"} and changed[8] is again[8]
    rows.turn()
    made.clear()
    shifted = rows.make(row, tuple(Item(n, f"#{n}") for n in range(1, 51)))  # the front dropped, one new at the back
    assert made == [7, 50] and shifted[0] is again[1]
    assert [dict(r) for r in shifted] == [{"n": n, "label": f"#{n}"} for n in range(1, 51)]


def test_a_dust_amount_is_never_told_as_0():
    from publisher.endpoints.calendar import amount

    assert (amount(1e-18), amount(4.9e-7), amount(1e-6), amount(0.0), amount(1234.5)) == (
        "less than 0.000001", "less than 0.000001", "0.000001", "0", "1,234.5")


def test_a_funded_request_filed_for_the_zero_address_offers_nothing_no_one_can_do():
    """The queue refuses claimUnstake and cancelRequest for a request filed for the zero address
    (RequestNotFound), whoever calls: not offered, not counted as claimable or payable, no alarm
    and nothing asked by the window; only a reclaim after its expiration closes it."""
    from publisher.endpoints import calendar

    zero = "0x" + "00" * 20
    funded = F.request(0, avax(3), requester=zero, fulfilled=True)  # funded, before its claimable time
    s = F.snapshot(requests=[funded])
    body = render(withdrawals.requester, s)[f"/withdrawals/{zero}"]
    (r,) = body["requests"]
    assert (r["status"], r["canClaim"], r["canCancel"], r["canReclaim"]) == ("funded", False, False, False)
    assert "filed for the zero address" in r["advice"] and f"Once it expires, at {when(funded.expiration_time)}" in r["advice"]
    assert body["totals"]["payableAvax"] == 0 and body["totals"]["claimableAvax"] == 0
    assert withdrawals.window_asks(body["requests"], funded.expiration_time + 1, until=True) == []
    text = calendar.calendar_text("mainnet", None, body)
    assert "VALARM" not in text and "pays a claim" not in text and "can also be cancelled" not in text
    listing = render(withdrawals.withdrawals, s)["/withdrawals"]
    assert (listing["funded"]["count"], listing["funded"]["claimableCount"]) == (1, 0)
    # Expired, it can be reclaimed by anyone: said so.
    late = replace(funded, expiration_time=NOW - 1)
    (r,) = render(withdrawals.requester, F.snapshot(requests=[late]))[f"/withdrawals/{zero}"]["requests"]
    assert r["canReclaim"] and "Anyone can reclaim it now" in r["advice"]
