"""The daily ggAVAX share price of /prices/history, rebuilt from the chain: archive reads on a node
that keeps old state, the vault's events on one that does not (anvil keeping only its latest
states, as a pruned node), runs that resume and only add days, and what the APY and the dashboard
make of it. Every value is held to an eth_call of convertToAssets(1e18) at its block on a node
with the whole state (the same deterministic chain)."""
from __future__ import annotations

import dataclasses
import json
import shutil
from datetime import UTC, datetime

import pytest
from ggp_devnet import devnet_profile, running
from ggp_devnet.operator import Operator
from ggp_devnet.seed import Sender, deposit_from_staking, manual_mining
from support.chain import header
from support.flaky_proxy import FlakyProxy

from publisher.build.incremental import Cache
from publisher.build.pipeline import build
from publisher.build.validate import compare_accumulated, load_dir, validate
from publisher.chain import abis
from publisher.chain.reader import find_blocks_at, header_ref
from publisher.chain.rpc import RpcClient
from publisher.collect import collect
from publisher.compute.apy import YEAR, ggavax_apy
from publisher.config import load_profile
from publisher.runs import read_and_build
from publisher.sources import history, history_file, shareprice

WAD = 10**18
DAY = 86_400
KEEP = 8  # states the pruned node keeps: its last few blocks


def share_prices(client: RpcClient, vault: str, blocks: list[int]) -> list[int]:
    """convertToAssets(1e18) read at each block (the node must have its state)."""
    data = "0x" + abis.convertToAssets.encode(WAD).hex()
    raw = client.batch([("eth_call", [{"to": vault, "data": data}, hex(b)]) for b in blocks])
    return [abis.convertToAssets.decode(bytes.fromhex(r[2:])) for r in raw]


def day_of(t: int) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d")


def day_end(date: str) -> int:
    return int(datetime.strptime(date, "%Y-%m-%d").replace(tzinfo=UTC).timestamp()) + DAY - 1


def published(out) -> dict:
    return json.loads((out / "prices" / "history.json").read_text())


@pytest.fixture(scope="module")
def pruned():
    with running("demo", keep_states=KEEP) as net:
        yield net


@pytest.fixture(scope="module")
def pruned_snapshot(pruned):
    return collect(devnet_profile(load_profile("devnet"), pruned)).snapshot


# -- first build --------------------------------------------------------------------------------------


def test_a_first_build_has_the_share_price_of_every_day_at_its_last_block(demo, rpc, demo_snapshot):
    snap = demo_snapshot
    points = snap.price_history
    assert len(points) >= 7 and all(p.ggavax_assets_per_share for p in points)
    vault = demo.addresses["TokenggAVAX"]
    assert share_prices(rpc, vault, [p.ggavax_block for p in points]) == [p.ggavax_assets_per_share for p in points]
    for p in points:
        block, after = header_ref(header(rpc, p.ggavax_block), rpc), header(rpc, p.ggavax_block + 1)
        # The day's last block: at or before its end, the next one after it (or the pinned block).
        assert p.ggavax_time == block.timestamp <= day_end(p.date)
        assert p.ggavax_block == snap.block.number or int(after["timestamp"], 16) > day_end(p.date)
        assert p.ggavax_block <= snap.block.number
        assert p.ggavax_source == ("run" if p.ggavax_block == snap.block.number else "archive")
    # The demo's vault earns: the share price grows over the history.
    assert points[-1].ggavax_assets_per_share > points[0].ggavax_assets_per_share


def test_blocks_of_many_times_are_found_together(demo, rpc):
    head = int(rpc.request("eth_blockNumber"), 16)
    refs = [header_ref(h, rpc) for h in rpc.batch([("eth_getBlockByNumber", [hex(n), False]) for n in range(head + 1)])]
    times = [refs[0].timestamp - 5, refs[3].timestamp, refs[3].timestamp + 1, refs[-1].timestamp + 100]
    times += [day_end(day_of(r.timestamp)) for r in refs[::7]]
    client = RpcClient([demo.url])
    got = find_blocks_at(client, times, refs[-1], 1)
    for t, ref in zip(times, got, strict=True):
        expected = [r for r in refs[1:] if r.timestamp <= t]
        assert ref == (expected[-1] if expected else None), t
    assert client.counters.http_requests <= 12 and client.counters.rpc_calls < 4 * len(refs)


def test_a_pruned_node_rebuilds_the_share_prices_from_the_vaults_events(demo, rpc, demo_snapshot, pruned, pruned_snapshot):
    snap = pruned_snapshot
    assert snap.block == demo_snapshot.block  # the same chain: the archive node is the oracle
    assert any("ggAVAX share price at block" in w and "unavailable" in w for w in snap.warnings)  # no archive state
    assert not any("not rebuilt" in w or "share price unknown" in w for w in snap.warnings)
    points = snap.price_history
    sources = [p.ggavax_source for p in points]
    assert sources.count("events") >= len(points) - KEEP and set(sources) <= {"events", "archive", "run"}
    # Exactly what the node with every state reads at the same blocks.
    assert share_prices(rpc, demo.addresses["TokenggAVAX"], [p.ggavax_block for p in points]) == \
        [p.ggavax_assets_per_share for p in points]
    assert [dataclasses.replace(p, ggavax_source=None) for p in points] == \
        [dataclasses.replace(p, ggavax_source=None) for p in demo_snapshot.price_history]


def test_without_archive_state_the_apy_comes_from_the_rebuilt_history(pruned_snapshot):
    snap = pruned_snapshot
    assert snap.apy_base is None
    got = ggavax_apy(snap)
    assert got.method == "history" and got.after_fees_pct is not None and got.after_fees_pct > 0
    now = snap.block.timestamp
    then = max((p for p in snap.price_history if p.ggavax_time <= now - snap.apy_window_days * DAY), key=lambda p: p.ggavax_time)
    dt = now - then.ggavax_time
    assert got.window_seconds == dt and got.from_block == then.ggavax_block
    assert got.after_fees_pct == ((snap.ggavax.assets_per_share / then.ggavax_assets_per_share) ** (YEAR / dt) - 1) * 100


def test_events_that_miss_a_reward_sync_are_not_used(demo, rpc, pruned, pruned_snapshot):
    """A node that loses the latest NewRewardsCycle log: walking back from the pinned state
    meets a sync that does not match it, and no value rebuilt from those events is published."""
    newest = max(int(lg["blockNumber"], 16) for lg in rpc.request("eth_getLogs", [{
        "fromBlock": "0x0", "toBlock": "latest", "address": demo.addresses["TokenggAVAX"], "topics": [shareprice.TOPIC_SYNC]}]))

    def drop(logs):
        return [lg for lg in logs if not (lg["topics"][0] == shareprice.TOPIC_SYNC and int(lg["blockNumber"], 16) == newest)]

    with FlakyProxy(pruned.url, edit_logs=drop) as proxy:
        profile = devnet_profile(load_profile("devnet"), pruned).with_overrides(rpc_urls=(proxy.url,))
        snap = collect(profile).snapshot
    assert any("not rebuilt from the vault's events" in w for w in snap.warnings)
    assert any("share price unknown for" in w for w in snap.warnings)
    kept = [p for p in snap.price_history if p.ggavax_assets_per_share is not None]
    assert kept and {p.ggavax_source for p in kept} <= {"archive", "run"}
    by_date = {p.date: p for p in pruned_snapshot.price_history}
    assert all(p == by_date[p.date] for p in kept)  # what is published is what the chain says


# -- later runs -----------------------------------------------------------------------------------------


class Twins:
    """The demo chain on a node with every state and on a pruned one, moved forward together: the
    same transactions at the same times make the same blocks on both."""

    def __init__(self, full, pruned):
        self.nets = (full, pruned)
        self.clients = [RpcClient([n.url]) for n in self.nets]
        now = int(header(self.clients[0])["timestamp"], 16)
        self.ops = [Operator(c, n.addresses, Sender(c, clock=now)) for c, n in zip(self.clients, self.nets, strict=True)]

    def at(self, t: int, *actions) -> None:
        for client, op in zip(self.clients, self.ops, strict=True):
            with manual_mining(client):
                op.s.at(t)
                for act in actions:
                    act(op)
                op.s.check()
        assert header(self.clients[0])["hash"] == header(self.clients[1])["hash"]


def prices(ggp: int, avax: int):
    return lambda op: op.set_prices(ggp, avax)


def rewards(amount: int):
    return lambda op: op.send("TokenggAVAX", deposit_from_staking.encode(0, amount), "ggAVAX staking rewards")


@pytest.fixture
def twins():
    with running("demo") as full, running("demo", keep_states=KEEP) as pruned:
        yield Twins(full, pruned)


def test_later_runs_add_days_and_complete_the_running_one(twins, tmp_path):
    full, pruned = twins.nets
    archive = full.addresses["TokenggAVAX"]
    profile = devnet_profile(load_profile("devnet"), pruned)
    sc = pruned.scenario
    ggp, avax = sc.prices[-1][1], sc.prices[-1][2]
    depositor, shares = sc.deposits[0][0], 10 * WAD
    start = twins.ops[0].s.clock
    today = start - start % DAY
    cycle_end = twins.ops[0].call("TokenggAVAX", abis.rewardsCycleEnd)
    assert today < cycle_end < today + 12 * DAY  # a reward sync falls in the days played below

    out = tmp_path / "out"
    read_and_build(profile, out, cache=Cache(), workers=1)
    twins.at(today + 12 * 3600, prices(ggp, avax))
    second = read_and_build(profile, out, cache=Cache(), workers=1).collected.snapshot
    before = published(out)
    saved = tmp_path / "history-2.json"
    shutil.copy(out / "prices" / "history.json", saved)
    running_day = before["points"][-1]
    assert running_day["date"] == day_of(today) and running_day["ggavaxSource"] == "run"
    assert running_day["ggavaxBlock"] == second.block.number == before["meta"]["block"]["number"]

    twins.at(today + 20 * 3600, lambda op: op.deposit(depositor, 500 * WAD))
    synced = False
    for d in range(1, 12):
        day = today + d * DAY
        if day >= cycle_end and not synced:
            twins.at(cycle_end + 30, lambda op: op.sync_ggavax())
            synced = True
        actions = [prices(ggp + d * 10**14, avax + d * 10**6), rewards(3 * WAD)]
        if d == 1:
            # Redemptions go through the queue: a request, and the depositor serving the line
            # (the vault burns the served requests' shares: Withdraw and Transfer-to-zero events).
            actions += [lambda op: op.request_unstake(depositor, shares), lambda op: op.serve(b"TEST")]
        if d == 9:
            actions.append(lambda op: op.deposit(depositor, 250 * WAD))
        twins.at(day + 3600, *actions)
    assert synced
    third = read_and_build(profile, out, cache=Cache(), workers=1).collected.snapshot
    after = published(out)
    assert not any("share price" in w and ("unknown" in w or "not" in w) for w in third.warnings)

    # Only new days, and the day that was running completed at its last block; the rest unchanged.
    old, new = before["points"], after["points"]
    assert new[: len(old) - 1] == old[:-1] and len(new) == len(old) + 11
    completed = new[len(old) - 1]
    assert completed["date"] == running_day["date"] and completed["ggavaxBlock"] > running_day["ggavaxBlock"]
    assert completed["ggavaxTime"] <= day_end(completed["date"]) < int(header(twins.clients[0], completed["ggavaxBlock"] + 1)["timestamp"], 16)
    assert compare_accumulated({"/prices/history": json.dumps(before).encode()}, {"/prices/history": json.dumps(after).encode()}) == []
    sources = {p["ggavaxSource"] for p in new[len(old) - 1 :]}
    assert "events" in sources and sources <= {"events", "archive", "run"}
    blocks = [p["ggavaxBlock"] for p in new]
    assert share_prices(twins.clients[0], archive, blocks) == [int(p["ggavaxAssetsPerShareWei"]) for p in new]
    state = after["ggavaxState"]
    assert int(state["totalSupplyWei"]) == twins.ops[0].call("TokenggAVAX", abis.totalSupply)
    assert state["lastSync"] == twins.ops[0].call("TokenggAVAX", abis.lastSync) > running_day["ggavaxTime"]

    # A history built from scratch on the archive node at the same block has the same points.
    scratch = read_and_build(devnet_profile(load_profile("devnet"), full), tmp_path / "scratch", cache=Cache(), workers=1)
    assert scratch.collected.snapshot.block == third.block
    assert [{k: v for k, v in p.items() if k != "ggavaxSource"} for p in published(tmp_path / "scratch")["points"]] == \
        [{k: v for k, v in p.items() if k != "ggavaxSource"} for p in new]

    # The events the resumed run reads start after the previous run's block.
    prior = history_file.load_published(saved)
    client = RpcClient([pruned.url])
    resumed = history.build(client, oracle=pruned.addresses["Oracle"], feeds=[pruned.addresses["PriceFeed"]],
                            head=third.block.number, prior=prior)
    filled = shareprice.fill(client, third, resumed.points, prior, floor=0, span=2048, warnings=[])
    assert filled.ranges and filled.ranges[0][0] == prior.cursor + 1 and filled.missing == 0
    assert filled.by_source.get("events", 0) >= 1 and sum(filled.by_source.values()) == 12

    # A node that loses a Deposit log after the previous run: the walk from this block does not
    # arrive at the previous run's state, and the events are not used.
    deposits = client.request("eth_getLogs", [{"fromBlock": hex(prior.cursor + 1), "toBlock": "latest",
                                               "address": archive, "topics": [shareprice.TOPIC_DEPOSIT]}])
    lost = deposits[0]["transactionHash"]
    with FlakyProxy(pruned.url, edit_logs=lambda logs: [lg for lg in logs if lg["transactionHash"] != lost]) as proxy:
        tampered = read_and_build(profile.with_overrides(rpc_urls=(proxy.url,)), tmp_path / "tampered", history_from=saved, cache=Cache(), workers=1)
    warnings = tampered.collected.snapshot.warnings
    assert any("not rebuilt from the vault's events" in w and "previous run" in w for w in warnings)
    points = published(tmp_path / "tampered")["points"]
    assert all(p["ggavaxSource"] != "events" for p in points[len(old) - 1 :])
    assert points[len(old) - 1] == {**completed, **{k: running_day[k] for k in running_day if k.startswith("ggavax")}}


def test_a_history_from_before_the_share_price_blocks_is_completed_once(demo, rpc, pruned, tmp_path):
    """A history an earlier version published (a share price only where a run saw one, no block,
    no vault state): the next run rebuilds every missing day once (from the events here), keeps
    what was recorded, and the accumulation guard accepts it."""
    profile = devnet_profile(load_profile("devnet"), pruned)
    out = tmp_path / "out"
    read_and_build(profile, out, cache=Cache(), workers=1)
    doc = published(out)
    legacy = dict(doc)
    legacy.pop("ggavaxState")
    legacy["points"] = [{k: v for k, v in p.items() if k not in ("ggavaxBlock", "ggavaxSource")} for p in doc["points"]]
    for p in legacy["points"][:-1]:
        p.update(ggavaxAssetsPerShareWei=None, ggavaxTime=None, ggavaxExchangeRate=None)
    legacy["points"][3].update(ggavaxAssetsPerShareWei="1000000000000000001", ggavaxTime=1, ggavaxExchangeRate=1.0)
    saved = tmp_path / "legacy.json"
    saved.write_text(json.dumps(legacy))

    run = read_and_build(profile, tmp_path / "next", history_from=saved, cache=Cache(), workers=1)
    points = published(tmp_path / "next")["points"]
    assert points[3]["ggavaxAssetsPerShareWei"] == "1000000000000000001" and points[3]["ggavaxBlock"] is None
    rebuilt = [p for i, p in enumerate(points) if i != 3]
    assert [int(p["ggavaxAssetsPerShareWei"]) for p in rebuilt] == \
        share_prices(rpc, demo.addresses["TokenggAVAX"], [p["ggavaxBlock"] for p in rebuilt])
    assert [p["ggavaxBlock"] for p in rebuilt] == [p["ggavaxBlock"] for i, p in enumerate(doc["points"]) if i != 3]
    assert {p["ggavaxSource"] for p in rebuilt} <= {"events", "archive"} and "events" in {p["ggavaxSource"] for p in rebuilt}
    assert not any("share price" in w and ("unknown" in w or "not" in w) for w in run.collected.snapshot.warnings)
    old, new = json.dumps(legacy).encode(), (tmp_path / "next" / "prices" / "history.json").read_bytes()
    assert compare_accumulated({"/prices/history": old}, {"/prices/history": new}) == []
    # Changing a recorded value is still refused.
    changed = json.loads(new)
    changed["points"][3]["ggavaxAssetsPerShareWei"] = "1000000000000000002"
    assert compare_accumulated({"/prices/history": old}, {"/prices/history": json.dumps(changed).encode()})


def test_the_guards_keep_each_share_price_inside_its_day(demo_snapshot, demo_profile, tmp_path):
    files = load_dir(build(demo_snapshot, demo_profile, tmp_path / "out").out_dir)
    assert validate(files) == []
    doc = json.loads(files["/prices/history"])

    def problems(edit) -> list[str]:
        bad = json.loads(json.dumps(doc))
        edit(bad["points"])
        return [p for p in validate({**files, "/prices/history": json.dumps(bad).encode()}) if p.startswith("/prices/history")]

    def late(points):  # a block of the next day
        points[5].update(ggavaxBlock=points[6]["ggavaxBlock"], ggavaxTime=points[6]["ggavaxTime"])

    def future(points):  # after the file's own block
        points[-1]["ggavaxBlock"] = doc["meta"]["block"]["number"] + 1

    def empty(points):  # a block without a value
        points[2].update(ggavaxExchangeRate=None, ggavaxAssetsPerShareWei=None)

    assert "the share price of" in problems(late)[0] and "outside its day" in problems(late)[0]
    assert "after the file's block" in problems(future)[0]
    assert "no positive share price" in problems(empty)[0]
