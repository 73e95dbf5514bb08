"""Forecasts and yields on a protocol that has stopped: no GGP distribution is expected once
RewardsPool is paused or the rewards cycle is overdue by more than a whole cycle (ClaimNodeOp's
pause flag, which no contract checks, changes nothing), and the ggAVAX APY is what the share price
did after its reward stream ended (0 when flat).

Built from the demo snapshot changed with ``dataclasses.replace``, and from the demo chain itself
moved 60 days forward inside ``checkpoint`` (evm_snapshot / evm_revert)."""
from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from ggp_devnet import operator as O
from support.chain import DAY, checkpoint, eth_call, head, send
from support.estimates import published_estimate

from publisher.build.pipeline import build
from publisher.chain import abis
from publisher.collect import collect
from publisher.compute import params as P
from publisher.compute import rewards as R
from publisher.function import handler as H
from publisher.snapshot import BlockRef, PricePoint, Snapshot, VaultPoint
from publisher.utc import when

WAD = R.WAD
GGP_FIELDS = ("ggpPerCycleWei", "ggpPerYearWei", "ggpPerCycle", "ggpPerCycleInAvax", "ggpAprPct")


def at(snap: Snapshot, t: int, **changes) -> Snapshot:
    """The snapshot read at time ``t`` (its block moved there), with the Oracle price and the
    AVAX/USD round fresh as an operating chain keeps them (the guards refuse stale ones)."""
    return dataclasses.replace(
        snap, block=dataclasses.replace(snap.block, timestamp=t),
        oracle=dataclasses.replace(snap.oracle, timestamp=t - 600),
        feed=dataclasses.replace(snap.feed, started_at=t - 600, updated_at=t - 600), **changes)


def published(snap: Snapshot, profile, out: Path):
    build(snap, profile, out)
    return lambda path: json.loads((out / (path.lstrip("/") + ".json")).read_text())


def ask(out: Path, query: str, monkeypatch) -> dict:
    """/rewards/byStake answered by the function from the build's /rewards/params."""
    monkeypatch.setenv("REWARDS_PARAMS_URL", (out / "rewards" / "params.json").resolve().as_uri())
    H.CACHES.clear()
    try:
        resp = H.handler({"rawPath": "/rewards/byStake", "rawQueryString": query,
                          "requestContext": {"http": {"method": "GET", "path": "/rewards/byStake"}}}, None)
    finally:
        H.CACHES.clear()
    assert resp["statusCode"] == 200, resp["body"]
    return json.loads(resp["body"])


def staker_bodies(read, snap: Snapshot) -> dict[str, dict]:
    return {st.staker_addr: read(f"/rewards/{st.staker_addr.lower()}") for st in snap.stakers}


def assert_no_distribution(read, snap: Snapshot, out: Path, monkeypatch, because: str) -> dict:
    """Every forecast endpoint and the function say no distribution is expected, and why, with
    every GGP figure 0; returns /rewards/params."""
    params = read("/rewards/params")
    reason = params["noDistributionReason"]
    assert params["distributionExpected"] is False and because in reason
    assert params["forecast"]["cycleIntervals"] == 0
    assert params["forecast"]["cycleMintWei"] == params["forecast"]["nodeOpPoolWei"] == "0"
    assert reason in params["forecast"]["assumptions"][0]
    m = read("/metrics")
    assert m["next_distribution_expected"] is False and m["no_distribution_reason"] == reason
    assert m["next_cycle_nodeop_ggp"] == 0 and m["nodeop_apr_note"]
    for st, body in staker_bodies(read, snap).items():
        assert body["distributionExpected"] is False and body["noDistributionReason"] == reason, st
        estimate = published_estimate(read, st)
        assert estimate["distributionExpected"] is False and estimate["noDistributionReason"] == reason
        assert estimate["ggpPerCycleWei"] == "0" and estimate["ggpAprPct"] == 0
        assert read(f"/stakers/{st.lower()}")["rewards"] == body  # the staker's rewards view is the same
    grid = read("/rewards/grid")
    for point in grid["points"]:
        r = point["result"]
        assert r["distributionExpected"] is False and r["noDistributionReason"] == reason
        assert all(not r[k] or r[k] == "0" for k in GGP_FIELDS), point["query"]
        codes = {w["code"] for w in r["warnings"]}
        assert "no_distribution_expected" in codes and "misses_next_distribution" not in codes
    answer = ask(out, "ggpStaked=20000&avaxStaked=1000", monkeypatch)
    result = answer["result"]
    assert result["distributionExpected"] is False and result["noDistributionReason"] == reason
    assert result["ggpPerCycleWei"] == "0" and result["ggpAprPct"] == 0
    assert any(w["code"] == "no_distribution_expected" and reason in w["message"] for w in result["warnings"])
    # The grid is what the function answers, byte for byte.
    for point in grid["points"][::7]:
        assert R.canonical_json(ask(out, point["query"], monkeypatch)["result"]) == R.canonical_json(point["result"])
    return params


def assert_contract_fields(read) -> None:
    """The fields real clients read stay numbers (DESIGN §6)."""
    m, apy = read("/metrics"), read("/metrics/apy")
    for value in (m["ggavax_apy"], m["total_assets"], apy["total_apy"], apy["total_apy_after_fees"],
                  m["nodeop_apr_min"], m["nodeop_apr_max"]):
        assert isinstance(value, float) and value >= 0


# ---- the overdue bound --------------------------------------------------------------------------


@pytest.mark.parametrize("late_days", [0.5, 3.5, 30])
def test_a_late_distribution_within_a_whole_cycle_is_still_forecast(demo_snapshot, late_days):
    """Up to one whole rewards cycle late (the living devnet draws up to 3.5 days), the forecast is
    the one for a distribution that runs now, minting for every elapsed inflation interval."""
    s = demo_snapshot
    end = P.cycle_end_time(s)
    assert P.overdue_bound(s) == s.settings.rewards_cycle_seconds == 30 * DAY
    late = at(s, end + int(late_days * DAY))
    doc = P.rewards_params(late)
    assert doc["distributionExpected"] is True and doc["noDistributionReason"] is None
    assert doc["overdueBoundSeconds"] == 30 * DAY
    assert doc["overdue"] is True and f"{int(late_days * DAY)} s before this block" in doc["overdueReason"]
    assert doc["nextDistributionTime"] == late.block.timestamp
    assert doc["forecast"]["cycleIntervals"] == 30 + int(late_days) >= 30
    assert int(doc["forecast"]["nodeOpPoolWei"]) > 0
    r = R.estimate(doc, 20_000 * WAD, 1000 * WAD)
    assert r["distributionExpected"] is True and int(r["ggpPerCycleWei"]) > 0
    assert "no_distribution_expected" not in {w["code"] for w in r["warnings"]}


def test_one_second_past_the_bound_no_distribution_is_expected(demo_snapshot):
    s = demo_snapshot
    end = P.cycle_end_time(s)
    doc = P.rewards_params(at(s, end + 30 * DAY + 1))
    assert doc["distributionExpected"] is False
    assert f"ended at {when(end)}" in doc["noDistributionReason"] and "one whole rewards cycle" in doc["noDistributionReason"]
    # No forecast follows the clock any more: the time the missing distribution was due, and words
    # that do not change with every block.
    assert doc["nextDistributionTime"] == doc["rewardsCycleEndTime"] == end
    later = P.rewards_params(at(s, end + 90 * DAY))
    for key in ("nextDistributionTime", "overdueReason", "noDistributionReason", "forecast", "tegs"):
        assert later[key] == doc[key], key


# ---- builds from a changed snapshot -------------------------------------------------------------


def test_overdue_by_40_days_nothing_is_forecast(demo_snapshot, demo_profile, tmp_path, monkeypatch):
    s = demo_snapshot
    end = P.cycle_end_time(s)
    snap = at(s, end + 40 * DAY)
    read = published(snap, demo_profile, tmp_path / "out")
    params = assert_no_distribution(read, snap, tmp_path / "out", monkeypatch, because=f"ended at {when(end)}")
    assert params["overdue"] is True and "no distribution is expected" in params["overdueReason"]
    # Minipools can still be created: the AVAX part is the validation rewards, the APR only that.
    answer = ask(tmp_path / "out", "ggpStaked=20000&avaxStaked=1000", monkeypatch)["result"]
    assert int(answer["avaxPerCycleWei"]) > 0 and answer["aprPct"] == answer["avaxAprPct"] > 0
    m = read("/metrics")
    assert m["nodeop_apr_min"] > m["nodeop_apr_max"] > 0  # AVAX alone: less capital, a higher APR
    assert "AVAX validation rewards alone" in m["nodeop_apr_note"]
    flags = read("/featureFlags")["flags"]
    assert flags["rewardsDistribution"] is False and flags["rewardsEstimator"] is False
    assert flags["minipoolCreation"] is True and flags["liquidStakingDeposits"] is True
    assert_contract_fields(read)
    page = (tmp_path / "out" / "index.html").read_text()
    assert "None expected" in page


def test_a_paused_rewards_pool_means_no_distribution(demo_snapshot, demo_profile, tmp_path, monkeypatch):
    name = "RewardsPool"
    s = demo_snapshot
    snap = dataclasses.replace(s, paused={**s.paused, name: True})
    assert P.cycle_end_time(s) > s.block.timestamp  # on time otherwise
    read = published(snap, demo_profile, tmp_path / "out")
    params = assert_no_distribution(read, snap, tmp_path / "out", monkeypatch, because=f"{name} is paused")
    assert params["overdue"] is False and params["paused"][name] is True
    assert params["nextDistributionTime"] == params["rewardsCycleEndTime"]
    flags = read("/featureFlags")["flags"]
    assert flags["rewardsDistribution"] is False and flags["rewardsEstimator"] is False
    assert_contract_fields(read)


def test_a_paused_claimnodeop_changes_no_forecast(demo_snapshot):
    """calculateAndDistributeRewards checks no pause flag (mainnet's is onlyMultisig), so with
    ClaimNodeOp alone paused the params are those of the unpaused protocol but for the flag."""
    s = demo_snapshot
    assert not s.paused.get("ClaimNodeOp")
    doc = P.rewards_params(dataclasses.replace(s, paused={**s.paused, "ClaimNodeOp": True}))
    assert doc["distributionExpected"] is True and doc["noDistributionReason"] is None
    assert doc["paused"]["ClaimNodeOp"] is True
    assert {**doc, "paused": None} == {**P.rewards_params(s), "paused": None}


def test_paused_contracts_turn_their_feature_flags_off(demo_snapshot, demo_profile, tmp_path, monkeypatch):
    s = demo_snapshot
    everything = {name: True for name in s.paused}
    read = published(dataclasses.replace(s, paused=everything), demo_profile, tmp_path / "out")
    doc = read("/featureFlags")
    assert doc["paused"] == everything
    flags = doc["flags"]
    for flag in ("liquidStakingDeposits", "minipoolCreation", "rewardsDistribution", "rewardsEstimator", "ggpStaking"):
        assert flags[flag] is False, flag
    assert flags["liquidStaking"] is True  # the profile's: withdrawals still go through the queue
    # No minipool can be created: a new operator earns nothing at all, and is told why.
    result = ask(tmp_path / "out", "ggpStaked=20000&avaxStaked=1000", monkeypatch)["result"]
    assert {"minipool_creation_paused", "no_distribution_expected"} <= {w["code"] for w in result["warnings"]}
    assert result["aprPct"] == result["avaxAprPct"] == 0 and result["avaxPerCycleWei"] == "0"
    assert result["effectiveGGPStaked"] > 0 and result["collateralizationRatioPct"] > 0  # still about the inputs
    m = read("/metrics")
    assert m["nodeop_apr_min"] == m["nodeop_apr_max"] == 0 and "MinipoolManager is paused" in m["nodeop_apr_note"]
    assert_contract_fields(read)
    # Nothing paused: every derived flag is on (the profile allows them all).
    s_flags = published(dataclasses.replace(s, paused={n: False for n in s.paused}), demo_profile, tmp_path / "on")("/featureFlags")
    assert all(s_flags["flags"][f] for f in ("liquidStakingDeposits", "minipoolCreation", "rewardsDistribution",
                                             "rewardsEstimator", "ggpStaking"))


def ended_stream(s: Snapshot, days_after: int, *, archive: bool, history: bool) -> Snapshot:
    """The demo snapshot ``days_after`` days after its ggAVAX reward stream ended, with no sync
    since: the share price is the same as at the stream's end. Optionally the archive read a window
    back, and a daily share-price history of every day since the end, all flat (else the history
    has no share price)."""
    v = s.ggavax
    t = v.rewards_cycle_end + days_after * DAY
    x = v.assets_per_share  # at the block, the stream has all but run: the price it stays at
    base = None
    if archive:
        base = VaultPoint(BlockRef(s.block.number + 1, "0x" + "ab" * 32, t - 30 * DAY), x)
    points = list(s.price_history)
    if not history:
        points = [dataclasses.replace(p, ggavax_assets_per_share=None, ggavax_time=None, ggavax_block=None,
                                      ggavax_source=None) for p in points]
    else:
        last = points[-1]
        day = datetime.strptime(last.date, "%Y-%m-%d").replace(tzinfo=UTC).timestamp() // DAY + 1
        number = s.block.number + 2
        while (day + 1) * DAY <= t:
            if day * DAY >= v.rewards_cycle_end:  # from the end on: flat
                when = int((day + 1) * DAY - 1)
                date = datetime.fromtimestamp(day * DAY, UTC).strftime("%Y-%m-%d")
                points.append(PricePoint(date, last.ggp_in_avax, last.avax_usd, number, when, x, when, number, "archive"))
                number += 1
            day += 1
    block = dataclasses.replace(s.block, number=s.block.number + 1000)
    return dataclasses.replace(at(s, t), block=dataclasses.replace(block, timestamp=t), apy_base=base,
                               price_history=tuple(points))


@pytest.mark.parametrize("source, method", [("archive", "archive"), ("history", "history"), ("nothing", "flat")])
def test_after_the_stream_ended_the_apy_is_what_the_flat_share_price_did(demo_snapshot, demo_profile, tmp_path,
                                                                        source, method):
    s = demo_snapshot
    snap = ended_stream(s, 45, archive=source == "archive", history=source == "history")
    read = published(snap, demo_profile, tmp_path / "out")
    apy, m = read("/metrics/apy"), read("/metrics")
    assert apy["method"] == method
    assert apy["total_apy"] == apy["total_apy_after_fees"] == m["ggavax_apy"] == 0.0
    assert apy["stream_apr"] == 0 and apy["stream_active"] is False
    assert f"reward stream ended at {when(s.ggavax.rewards_cycle_end)}" in apy["note"] and "0" in apy["note"]
    assert m["ggavax_apy_note"] == apy["note"]
    if method == "flat":  # since the stream's end, the share price has stood still
        assert apy["window_days"] == 45 and apy["from_block"] is None
    else:
        assert apy["window_days"] >= 30
    assert_contract_fields(read)


def test_an_ended_stream_is_never_extrapolated(demo_snapshot):
    """Less than a week of history, and the stream ended: never the stream's rate (it would invent
    a yield), but what the share price did over the days there are, with that window stated."""
    from publisher.compute.apy import ggavax_apy

    s = demo_snapshot
    v = s.ggavax
    x_then = v.assets_per_share - 10**12  # 3 days back: the stream's last hours still to come then

    def three_days_back(now: int) -> tuple[PricePoint, ...]:
        point = dataclasses.replace(s.price_history[-1], ggavax_assets_per_share=x_then, ggavax_time=now - 3 * DAY)
        return (*(dataclasses.replace(p, ggavax_assets_per_share=None, ggavax_time=None, ggavax_block=None)
                  for p in s.price_history[:-1]), point)

    t = v.rewards_cycle_end + 3 * DAY
    got = ggavax_apy(at(s, t, apy_base=None, price_history=three_days_back(t)))
    assert got.method == "history" and got.window_seconds == 3 * DAY and got.stream_apr_pct == 0
    assert got.after_fees_pct == pytest.approx(((v.assets_per_share / x_then) ** (365 / 3) - 1) * 100, rel=1e-12)
    assert not got.stream_active and f"ended at {when(v.rewards_cycle_end)}" in got.note
    # While the stream runs, such a short history gives way to the stream, as before.
    running = ggavax_apy(dataclasses.replace(s, apy_base=None, price_history=three_days_back(s.block.timestamp)))
    assert running.method == "stream" and running.stream_active and running.stream_apr_pct > 0


def test_a_standing_chain_rewrites_no_staker_file(demo_snapshot, demo_profile, tmp_path):
    """Past the bound nothing in a staker's rewards view follows the clock: a day later, with
    nothing else changed, every per-staker file keeps its bytes."""
    s = demo_snapshot
    t = P.cycle_end_time(s) + 40 * DAY
    first = at(s, t)
    later = dataclasses.replace(first, block=BlockRef(s.block.number + 1, "0x" + "cd" * 32, t + DAY))
    build(first, demo_profile, tmp_path / "a")
    build(later, demo_profile, tmp_path / "b")
    for st in s.stakers:
        for folder in ("rewards", "stakers"):
            name = f"{folder}/{st.staker_addr.lower()}.json"
            assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


# ---- the demo chain, 60 days on -----------------------------------------------------------------


def test_sixty_days_later_on_the_chain(demo, demo_profile, rpc, tmp_path, monkeypatch):
    """Nothing happens for 60 days: no rewards cycle starts, the ggAVAX stream runs out. The feed and
    the Oracle keep publishing (as they do on mainnet); then RewardsPool and MinipoolManager are
    paused. Everything is read from the chain."""
    a = demo.addresses
    with checkpoint(rpc):
        _, now = head(rpc)
        stream_end = eth_call(rpc, a["TokenggAVAX"], abis.rewardsCycleEnd)
        cycle_end = eth_call(rpc, a["RewardsPool"], abis.getRewardsCycleStartTime) + 30 * DAY
        price = eth_call(rpc, a["Oracle"], abis.getGGPPriceInAVAX)[0]
        answer = eth_call(rpc, a["PriceFeed"], abis.latestRoundData)[1]
        assert now < stream_end < cycle_end < now + 30 * DAY

        def fresh_prices(t: int) -> None:
            rpc.request("evm_setNextBlockTimestamp", [hex(t)])
            send(rpc, a["PriceFeed"], O.update_answer.encode(answer, t))
            send(rpc, a["Oracle"], O.set_price.encode(price, t))

        fresh_prices(stream_end + DAY)  # a block after the stream's end, more than 30 days back
        fresh_prices(now + 60 * DAY)
        out = tmp_path / "out"
        snap = collect(demo_profile).snapshot
        assert now + 60 * DAY <= snap.block.timestamp < now + 60 * DAY + 60
        read = published(snap, demo_profile, out)
        assert_no_distribution(read, snap, out, monkeypatch, because=f"ended at {when(cycle_end)}")
        apy = read("/metrics/apy")
        assert apy["method"] == "archive" and apy["window_days"] > 30
        assert apy["total_apy"] == apy["total_apy_after_fees"] == read("/metrics")["ggavax_apy"] == 0.0
        assert apy["stream_apr"] == 0 and apy["stream_active"] is False and f"ended at {when(stream_end)}" in apy["note"]
        assert_contract_fields(read)
        flags = read("/featureFlags")["flags"]
        assert flags["rewardsDistribution"] is False and flags["minipoolCreation"] is True

        # The protocol pauses its rewards and minipool creation.
        for name in ("RewardsPool", "MinipoolManager"):
            send(rpc, a["Storage"], O.set_paused.encode(name, True))
        snap = collect(demo_profile).snapshot
        read = published(snap, demo_profile, out)
        params = assert_no_distribution(read, snap, out, monkeypatch, because="RewardsPool is paused")
        assert f"ended at {when(cycle_end)}" in params["noDistributionReason"]  # both reasons
        flags = read("/featureFlags")
        assert flags["paused"]["RewardsPool"] is True and flags["paused"]["MinipoolManager"] is True
        assert flags["flags"]["rewardsDistribution"] is False and flags["flags"]["minipoolCreation"] is False
        result = ask(out, "ggpStaked=20000&avaxStaked=1000", monkeypatch)["result"]
        assert "minipool_creation_paused" in {w["code"] for w in result["warnings"]} and result["aprPct"] == 0
        assert read("/metrics")["nodeop_apr_max"] == 0
        assert_contract_fields(read)
