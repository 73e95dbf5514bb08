"""`publisher build`: every endpoint from one snapshot, validated, written atomically."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from web3 import Web3

from publisher.build.pipeline import build
from publisher.build.validate import load_dir, validate
from publisher.compute.nodeid import ALPHABET
from publisher.config import load_profile
from publisher.errors import PublisherError

ARTIFACTS = json.loads((Path(__file__).parents[1] / "devnet/ggp_devnet/artifacts.json").read_text())["contracts"]


def body(out: Path, name: str):
    return json.loads((out / name).read_text())


@pytest.fixture(scope="module")
def w3(demo):
    return Web3(Web3.HTTPProvider(demo.url))


def contract(w3, demo, name, artifact=None):
    return w3.eth.contract(address=demo.addresses[name], abi=ARTIFACTS[artifact or name]["abi"])


def test_every_catalogue_endpoint_is_written(built):
    for name in ("prices.json", "prices/history.json", "ggAvax.json", "validators.json", "stakers.json",
                 "minipools.json", "metrics.json", "metrics/apy.json", "featureFlags.json", "status.json"):
        assert (built / name).is_file(), name
    assert len(list((built / "stakers").glob("*.json"))) == len(body(built, "stakers.json")["stakers"])
    assert len(list((built / "minipools").glob("NodeID-*.json"))) == body(built, "minipools.json")["count"]


def test_compatibility_contract_fields(built):
    m = body(built, "metrics.json")
    assert isinstance(m["ggavax_apy"], float) and 0 < m["ggavax_apy"] < 100  # percent, not a fraction
    assert isinstance(m["total_assets"], float) and m["total_assets"] > 1000  # whole AVAX, not wei
    apy = body(built, "metrics/apy.json")
    assert apy["total_apy"] > apy["total_apy_after_fees"] > 0.5  # percent scale
    p = body(built, "prices.json")
    assert isinstance(p["ggpInUSD"], float) and isinstance(p["avaxInUSD"], float)
    assert 1 < p["avaxInUSD"] < 1000 and 0 < p["ggpInUSD"] < p["avaxInUSD"]
    stakers = body(built, "stakers.json")["stakers"]
    assert all(Web3.is_checksum_address(s["stakerAddr"]) for s in stakers)
    assert all(isinstance(s["avaxValidating"], (int, float)) and not isinstance(s["avaxValidating"], bool) for s in stakers)
    for field in ("avaxAssigned", "avaxStaked", "avaxValidatingHighWater", "ggpRewards", "ggpStaked",
                  "lastRewardsCycleCompleted", "rewardsStartTime", "ggpLockedUntil"):
        assert all(field in s for s in stakers), field


def test_total_assets_equals_chain(built, demo_snapshot, w3, demo):
    ta = contract(w3, demo, "TokenggAVAX").functions.totalAssets().call(block_identifier=demo_snapshot.block.number)
    # ta / 10**18 is the correctly rounded quotient, as published; ta / 1e18 rounds twice.
    assert body(built, "metrics.json")["total_assets"] == ta / 10**18
    assert body(built, "ggAvax.json")["totalAssets"] == ta / 10**18


def test_one_staker_record_per_onchain_staker(built, demo_snapshot, w3, demo):
    staking = contract(w3, demo, "Staking")
    n = staking.functions.getStakerCount().call(block_identifier=demo_snapshot.block.number)
    chain = {staking.functions.getStaker(i).call(block_identifier=demo_snapshot.block.number)[0] for i in range(n)}
    rows = body(built, "stakers.json")["stakers"]
    assert len(rows) == n
    assert {r["stakerAddr"] for r in rows} == chain


def node_id_bytes(text: str) -> bytes:
    """The 20 bytes a ``NodeID-`` names, its CB58 checksum checked."""
    assert text.startswith("NodeID-")
    n = 0
    for c in text[len("NodeID-"):]:
        n = n * 58 + ALPHABET.index(c)
    raw = n.to_bytes(24, "big")
    assert hashlib.sha256(raw[:20]).digest()[-4:] == raw[20:]
    return raw[:20]


def test_node_ids_round_trip_through_cb58(built, demo_snapshot, w3, demo):
    mm = contract(w3, demo, "MinipoolManager")
    for row in body(built, "minipools.json")["minipools"]:
        onchain = mm.functions.getMinipool(row["index"]).call(block_identifier=demo_snapshot.block.number)
        assert node_id_bytes(row["nodeID"]) == bytes.fromhex(onchain[1][2:])
        one = body(built, f"minipools/{row['nodeID']}.json")["minipool"]
        assert one == row


def test_apy_matches_two_direct_reads(built, w3, demo):
    apy = body(built, "metrics/apy.json")
    vault = contract(w3, demo, "TokenggAVAX")
    x_now = vault.functions.convertToAssets(10**18).call(block_identifier=apy["to_block"])
    x_then = vault.functions.convertToAssets(10**18).call(block_identifier=apy["from_block"])
    t_now = w3.eth.get_block(apy["to_block"])["timestamp"]
    t_then = w3.eth.get_block(apy["from_block"])["timestamp"]
    # The window's far end is the last block at or before now - 30 days.
    assert t_then <= t_now - 30 * 86400 < w3.eth.get_block(apy["from_block"] + 1)["timestamp"]
    expected = ((x_now / x_then) ** (365 * 86400 / (t_now - t_then)) - 1) * 100
    assert apy["total_apy_after_fees"] == pytest.approx(expected, rel=1e-12)
    assert body(built, "metrics.json")["ggavax_apy"] == apy["total_apy_after_fees"]
    fee = vault.functions.totalSupply().call() and contract(w3, demo, "ProtocolDAO").functions.getFeeBips().call()
    # Before fees: the per-period growth grossed up by the fee, then compounded (not the APY / (1 - fee)).
    g = x_now / x_then - 1
    gross = ((1 + g / (1 - fee / 10000)) ** (365 * 86400 / (t_now - t_then)) - 1) * 100
    assert apy["total_apy"] == pytest.approx(gross, rel=1e-12)
    assert apy["total_apy"] > expected / (1 - fee / 10000)  # compounding the grossed growth earns more
    assert apy["method"] == "archive" and apy["window_days"] == (t_now - t_then) / 86400


def test_check_passes_on_build_output(built):
    assert validate(load_dir(built)) == []
    run = subprocess.run([sys.executable, "-m", "publisher.cli", "check", str(built)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_rebuild_from_saved_snapshot_is_byte_identical(demo_snapshot, demo_profile, tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1800000000")
    build(demo_snapshot, demo_profile, tmp_path / "first" / "out")
    first = load_dir(tmp_path / "first" / "out")
    demo_snapshot.save(tmp_path / "snap.json")
    env = {**os.environ, "SOURCE_DATE_EPOCH": "1800000000"}
    run = subprocess.run([sys.executable, "-m", "publisher.cli", "build", "--from-snapshot", str(tmp_path / "snap.json"),
                          "--out", str(tmp_path / "out")], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr
    assert load_dir(tmp_path / "out") == first


def test_invariant_violation_exits_nonzero_and_keeps_old_out(demo_snapshot, demo_profile, tmp_path):
    out = tmp_path / "out"
    build(demo_snapshot, demo_profile, out)
    before = load_dir(out)
    bad = dataclasses.replace(demo_snapshot, total_ggp_stake=demo_snapshot.total_ggp_stake + 1)
    bad.save(tmp_path / "bad.json")
    run = subprocess.run([sys.executable, "-m", "publisher.cli", "build", "--from-snapshot", str(tmp_path / "bad.json"),
                          "--out", str(out)], capture_output=True, text=True)
    assert run.returncode == 1
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "getTotalGGPStake" in lines[0]
    assert load_dir(out) == before
    # out is a link to the one tree built; the refused build left no other tree or link behind.
    assert os.readlink(out) == ".out.a"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".out.")) == [".out.a"]


def test_an_interrupt_just_after_the_swap_keeps_the_new_live_tree(demo_snapshot, demo_profile, tmp_path, monkeypatch):
    """A Ctrl-C (or the run's deadline) landing once ``out`` points at the new tree must not remove
    that tree: ``out`` would then point at nothing."""
    from publisher.build import pipeline

    out = tmp_path / "out"
    build(demo_snapshot, demo_profile, out)
    newer = dataclasses.replace(demo_snapshot, block=dataclasses.replace(demo_snapshot.block, number=demo_snapshot.block.number + 1))
    real = pipeline.flip

    def flip_then_interrupted(link, tree):
        real(link, tree)
        raise KeyboardInterrupt

    monkeypatch.setattr(pipeline, "flip", flip_then_interrupted)
    with pytest.raises(KeyboardInterrupt):
        build(newer, demo_profile, out)
    assert json.loads((out / "status.json").read_bytes())["block"]["number"] == newer.block.number
    assert validate(load_dir(out)) == []


def test_anomalous_apy_is_refused(demo_snapshot, demo_profile, tmp_path):
    base = demo_snapshot.apy_base
    crash = dataclasses.replace(base, assets_per_share=demo_snapshot.ggavax.assets_per_share * 2)
    with pytest.raises(PublisherError, match="outside"):
        build(dataclasses.replace(demo_snapshot, apy_base=crash), demo_profile, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_block_going_backwards_is_refused_unless_forced(demo_snapshot, demo_profile, tmp_path):
    out = tmp_path / "out"
    build(demo_snapshot, demo_profile, out)
    older = dataclasses.replace(demo_snapshot, block=dataclasses.replace(demo_snapshot.block, number=demo_snapshot.block.number - 1))
    with pytest.raises(PublisherError, match="older than the last run"):
        build(older, demo_profile, out)
    build(older, demo_profile, out, force=True)
    assert body(out, "status.json")["block"]["number"] == demo_snapshot.block.number - 1


def test_price_jump_is_refused(demo_snapshot, demo_profile, tmp_path):
    out = tmp_path / "out"
    build(demo_snapshot, demo_profile, out)
    jump = dataclasses.replace(demo_snapshot, oracle=dataclasses.replace(demo_snapshot.oracle, price=demo_snapshot.oracle.price * 3))
    with pytest.raises(PublisherError, match="ggpInAvax moved"):
        build(jump, demo_profile, out)


def test_a_refusal_names_every_cause(demo_snapshot, demo_profile, tmp_path):
    out = tmp_path / "out"
    build(demo_snapshot, demo_profile, out)
    feed = demo_snapshot.feed
    both = dataclasses.replace(demo_snapshot, oracle=dataclasses.replace(demo_snapshot.oracle, price=demo_snapshot.oracle.price * 3),
                               feed=dataclasses.replace(feed, answer=feed.answer * 2))
    with pytest.raises(PublisherError) as refused:
        build(both, demo_profile, out)
    text = str(refused.value)
    assert "\n" not in text and "more)" not in text
    assert re.search(r"ggpInAvax moved [\d.]+% since the last run .*; avaxInUSD moved [\d.]+% since the last run", text), text


def test_check_rejects_tampered_files(built, tmp_path):
    files = load_dir(built)
    tampered = dict(files)
    m = json.loads(files["/metrics"])
    m["total_assets"] = "1000"  # a string where clients expect a number
    tampered["/metrics"] = json.dumps(m).encode()
    assert any("/metrics: schema" in p for p in validate(tampered))
    nan = dict(files)
    nan["/prices"] = files["/prices"].replace(b'"ggpInAvax":', b'"ggpInAvax":NaN,"x":')
    assert any("NaN" in p for p in validate(nan))
    extra = dict(files)
    extra["/secret"] = b"{}"
    assert any("no endpoint declares" in p for p in validate(extra))


def test_status_digests_every_other_file(built):
    status = body(built, "status.json")
    files = load_dir(built)
    assert status["files"]["count"] == len(files) - 1
    others = sorted(p for p in files if p != "/status")
    lines = "".join(f"{p} {hashlib.sha256(files[p]).hexdigest()}\n" for p in others)
    assert status["files"]["sha256"] == hashlib.sha256(lines.encode()).hexdigest()
    assert status["files"]["bytes"] == sum(len(files[p]) for p in others)
    assert status["block"] == body(built, "metrics.json")["meta"]["block"]


def test_entity_files_carry_no_run_stamp(built):
    staker = next((built / "stakers").glob("*.json")).read_text()
    pool = next((built / "minipools").glob("*.json")).read_text()
    for text in (staker, pool):
        assert "meta" not in json.loads(text) and "generatedAt" not in text


def test_feature_flags_merge_profile_and_chain(built, demo):
    flags = body(built, "featureFlags.json")
    assert flags["environment"] == "devnet"
    assert flags["paused"]["Oracle"] is True and flags["paused"]["TokenggAVAX"] is False  # seeded examples
    assert flags["flags"]["rewardsEstimator"] is True  # from the profile file
    assert flags["flags"]["liquidStakingDeposits"] is True and flags["flags"]["delegation"] is False


def test_profile_files_are_valid():
    for name in ("devnet", "fuji", "mainnet"):
        p = load_profile(name)
        assert Web3.is_checksum_address(p.storage)


def test_history_from_another_chain_is_not_resumed(demo, demo_profile, tmp_path):
    out = tmp_path / "out"
    (out / "prices").mkdir(parents=True)
    planted = {"meta": {"network": "mainnet", "chainId": 43114, "block": {"number": 5, "hash": "0x" + "ab" * 32, "timestamp": 1}},
               "points": [{"date": "2020-01-01", "ggpInAvaxWei": str(999 * 10**18), "avaxUsdAnswer": "100000000",
                           "block": 1, "timestamp": 1577836800}]}
    (out / "prices" / "history.json").write_text(json.dumps(planted))
    env = {**os.environ, "PUBLISHER_VALIDATOR_API_URL": demo.services["validator_api"],
           "PUBLISHER_PCHAIN_RPC_URL": demo.services["pchain_rpc"], "PUBLISHER_PRICE_API_URL": demo.services["price_api"]}
    run = subprocess.run([sys.executable, "-m", "publisher.cli", "build", "--rpc-url", demo.url, "--out", str(out)],
                         capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr
    assert "previous price history ignored (it is from mainnet" in run.stdout
    points = body(out, "prices/history.json")["points"]
    assert points and points[0]["date"] != "2020-01-01" and all(p["ggpInAvax"] < 1 for p in points)


def test_a_stale_oracle_price_is_published_labelled_and_an_unlabelled_one_refused(demo_snapshot, demo_profile, tmp_path):
    age = demo_profile.oracle_max_age + 3 * 86400
    old = dataclasses.replace(demo_snapshot.oracle, timestamp=demo_snapshot.block.timestamp - age)
    out = tmp_path / "out"
    build(dataclasses.replace(demo_snapshot, oracle=old), demo_profile, out)
    prices, metrics = body(out, "prices.json"), body(out, "metrics.json")
    assert prices["stale"] is True and prices["ggpPriceAgeDays"] == age // 86400 and "days ago" in prices["staleReason"]
    assert metrics["ggp_price_stale"] is True and metrics["ggp_price_stale_reason"] == prices["staleReason"]
    assert "The GGP price is stale" in (out / "index.html").read_text()
    # The same file with its label removed is refused: a stale price never passes as a fresh one.
    files = load_dir(out)
    files["/prices"] = json.dumps({**prices, "stale": False, "staleReason": None}).encode()
    problems = validate(files, oracle_max_age=demo_profile.oracle_max_age)
    assert any("labelled stale: False" in p for p in problems), problems
    fresh = tmp_path / "fresh"
    build(demo_snapshot, demo_profile, fresh)
    assert body(fresh, "prices.json")["stale"] is False and body(fresh, "prices.json")["staleReason"] is None


def test_apy_falls_back_to_the_recorded_share_price_history(demo_snapshot, demo_profile):
    from publisher.compute.apy import ggavax_apy

    s = demo_snapshot
    window_start = s.block.timestamp - 31 * 86400
    history = [dataclasses.replace(p, ggavax_assets_per_share=None, ggavax_time=None, ggavax_block=None, ggavax_source=None)
               for p in s.price_history]
    # A share price on two days only (as runs recorded before the history had every day's);
    # the archive read at the window start failed.
    history[0] = dataclasses.replace(history[0], ggavax_assets_per_share=s.apy_base.assets_per_share, ggavax_time=window_start)
    history[-5] = dataclasses.replace(history[-5], ggavax_assets_per_share=s.ggavax.assets_per_share, ggavax_time=s.block.timestamp - 5 * 86400)
    no_archive = dataclasses.replace(s, apy_base=None, price_history=tuple(history))
    got = ggavax_apy(no_archive)
    x_now, x_then = s.ggavax.assets_per_share, s.apy_base.assets_per_share
    assert got.after_fees_pct == pytest.approx(((x_now / x_then) ** (365 / 31) - 1) * 100, rel=1e-12)
    assert got.from_block is None and got.method == "history" and "from the price history" in got.note
    # Only 8 days recorded: the oldest point at least 7 days back, with its shorter window.
    eight = s.block.timestamp - 8 * 86400
    history[-8] = dataclasses.replace(history[-8], ggavax_assets_per_share=x_then + (x_now - x_then) // 4, ggavax_time=eight)
    week = ggavax_apy(dataclasses.replace(no_archive, price_history=tuple(history[1:])))
    assert week.method == "history" and week.window_seconds == 8 * 86400
    assert week.after_fees_pct == pytest.approx(((x_now / (x_then + (x_now - x_then) // 4)) ** (365 / 8) - 1) * 100, rel=1e-12)
    # Less than 7 days recorded: the current reward stream, compounded over its length.
    short = dataclasses.replace(no_archive, price_history=tuple(h for h in history[1:] if h.ggavax_time != eight))
    stream = ggavax_apy(short)
    v = s.ggavax
    span = v.rewards_cycle_end - v.last_sync
    assert stream.method == "stream" and stream.window_seconds == span
    assert stream.after_fees_pct == pytest.approx(((1 + v.last_rewards_amt / v.total_released_assets) ** (365 * 86400 / span) - 1) * 100, rel=1e-12)
    assert 0 < stream.after_fees_pct < stream.gross_pct < 100
    # A stream of 0 runs: nothing accrues, so never the stream; the history's share price of any age
    # (5 days back here, the same as now) with its window stated.
    dead = dataclasses.replace(short, ggavax=dataclasses.replace(v, last_rewards_amt=0))
    idle = ggavax_apy(dead)
    assert (idle.method, idle.window_seconds, idle.after_fees_pct, idle.stream_apr_pct) == ("history", 5 * 86400, 0, 0)
    assert idle.stream_active is False and "streams 0 AVAX" in idle.note
    # No history either: the share price has stood still since the sync that started the stream of 0.
    bare = dataclasses.replace(dead, price_history=())
    flat = ggavax_apy(bare)
    assert flat.method == "flat" and flat.after_fees_pct == flat.gross_pct == 0
    assert flat.window_seconds == s.block.timestamp - v.last_sync and flat.from_block is None
    # That sync at this very block: no earlier time the share price is known at, so null with the
    # reason, never a made-up number.
    none = ggavax_apy(dataclasses.replace(bare, ggavax=dataclasses.replace(bare.ggavax, last_sync=s.block.timestamp)))
    assert none.after_fees_pct is None and none.gross_pct is None and none.method is None and "no earlier time" in none.note


def test_build_publishes_the_share_price_of_every_day_and_the_vault_state(built, demo_snapshot):
    from publisher.sources.history_file import VaultState, state_fields

    doc = body(built, "prices/history.json")
    assert [(int(p["ggavaxAssetsPerShareWei"]), p["ggavaxTime"], p["ggavaxBlock"], p["ggavaxSource"]) for p in doc["points"]] == \
        [(p.ggavax_assets_per_share, p.ggavax_time, p.ggavax_block, p.ggavax_source) for p in demo_snapshot.price_history]
    assert all(p["ggavaxExchangeRate"] == int(p["ggavaxAssetsPerShareWei"]) / 10**18 for p in doc["points"])
    assert doc["ggavaxState"] == state_fields(VaultState.of(demo_snapshot))
    assert VaultState.of(demo_snapshot).assets_per_share(demo_snapshot.block.timestamp) == demo_snapshot.ggavax.assets_per_share
