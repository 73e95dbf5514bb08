"""Receipts: every request an address ever filed and what became of it, from the withdraw queue's
logs (sources/queuelog.py), published in /withdrawals/{address}.

Each published receipt is held to the chain's logs decoded independently (web3 with the compiled
ABI, each step's block time from its header): on the demo, on the wound-down scenario and on a
living devnet after claims, cancels and reclaims. Runs resume from the published tree and equal a
reading from scratch; a reorg below the cursor that removes a claim removes its receipt's claim; a
pruned node (logs and headers only) gives the same receipts; a failed log read keeps the previous
receipts and says so; a requester with only closed requests keeps its file; serve answers 404 for
an address that never filed a request and 400 for a malformed one.
"""
from __future__ import annotations

import dataclasses
import json
import time
from itertools import pairwise
from pathlib import Path

import pytest
from ggp_devnet import devnet_profile, running, running_live
from ggp_devnet.scenarios import DAY
from support.chain import checkpoint, header, mine_at
from support.flaky_proxy import FlakyProxy
from web3 import Web3

from publisher.build.incremental import Cache
from publisher.build.pipeline import build
from publisher.chain.abi import Fn
from publisher.chain.rpc import RpcClient
from publisher.collect import collect
from publisher.config import load_profile
from publisher.endpoints.withdrawals import receipt_record
from publisher.runs import _queue_prior, read_and_build
from publisher.serve import Site
from publisher.snapshot import Snapshot
from publisher.sources import queuelog

ARTIFACTS = json.loads((Path(__file__).parents[1] / "devnet/ggp_devnet/artifacts.json").read_text())["contracts"]
WAD = 10**18
claim = Fn("claimUnstake(uint256)")
cancel = Fn("cancelRequest(uint256)")


# -- the oracle: the chain's logs through web3 ---------------------------------------------------------


def _wei(name: str, wei: int) -> dict:
    return {name: wei / WAD, f"{name}Wei": str(wei)}


def chain_receipts(url: str, queue_address: str, head: int) -> dict[str, dict[int, dict]]:
    """Every request's receipt record as the chain's logs up to ``head`` tell it, by lower-case
    requester and id: web3's decoding of the queue's events, each step's time from its block."""
    w3 = Web3(Web3.HTTPProvider(url, request_kwargs={"timeout": 120}))
    queue = w3.eth.contract(address=queue_address, abi=ARTIFACTS["WithdrawQueue"]["abi"])
    times: dict[int, int] = {}

    def logs(name: str) -> list:
        return list(getattr(queue.events, name)().get_logs(from_block=0, to_block=head))

    def step(e) -> dict:
        b = e["blockNumber"]
        if b not in times:
            times[b] = w3.eth.get_block(b)["timestamp"]
        return {"block": b, "time": times[b], "tx": e["transactionHash"].to_0x_hex()}

    records, owner = {}, {}
    for e in logs("UnstakeRequested"):
        a = e["args"]
        i = a["requestId"]
        owner[i] = a["requester"]
        records[i] = {"id": i, "outcome": "open", "claimableTime": a["claimableTime"],
                      "requested": {**step(e), **_wei("shares", a["shares"]), **_wei("expectedAvax", a["expectedAssets"])},
                      "funded": None, "claimed": None, "cancelled": None, "reclaimed": None}
    for e in logs("RequestFulfilled"):
        records[e["args"]["requestId"]]["funded"] = {**step(e), **_wei("avax", e["args"]["assets"])}
    burnt = {(e["transactionHash"], e["args"]["requestId"]): e["args"]["sharesBurnt"] for e in logs("ExcessSharesBurnt")}
    named = {(e["transactionHash"], e["args"]["requestId"]): e["args"]["amount"] for e in logs("ExpiredFundsReclaimed")}
    for e in logs("UnstakeClaimed"):
        i = e["args"]["requestId"]
        assert e["args"]["claimer"] == owner[i]
        records[i].update(outcome="claimed", claimed={**step(e), **_wei("avax", e["args"]["amount"])})
    for e in logs("RequestCancelled"):
        i = e["args"]["requestId"]
        assert e["args"]["requester"] == owner[i]
        records[i].update(outcome="cancelled", cancelled={**step(e), **_wei("sharesReturned", e["args"]["shares"]),
                                                          **_wei("sharesBurnt", burnt.pop((e["transactionHash"], i), 0))})
    for e in logs("ExpiredSharesReturned"):
        i = e["args"]["requestId"]
        assert e["args"]["requester"] == owner[i]
        records[i].update(outcome="reclaimed", reclaimed={**step(e), **_wei("avax", named.pop((e["transactionHash"], i))),
                                                          **_wei("sharesReturned", e["args"]["shares"])})
    assert not burnt and not named, "a burn or reclaim without its closing event in the same transaction"
    out: dict[str, dict[int, dict]] = {}
    for i, rec in records.items():
        out.setdefault(owner[i].lower(), {})[i] = rec
    return out


def body(out: Path, name: str):
    return json.loads((out / name).read_text())


def check_published(out: Path, url: str, queue: str, head: int) -> dict[str, dict[int, dict]]:
    """The tree's requester files hold exactly the chain's receipts, and /withdrawals counts them."""
    want = chain_receipts(url, queue, head)
    files = {p.stem: body(out / "withdrawals", p.name) for p in (out / "withdrawals").glob("0x*.json")}
    assert set(files) == set(want), "a file for every address that ever filed a request, and no other"
    for who, f in files.items():
        assert f["requester"].lower() == who
        assert f["receipts"] == [want[who][i] for i in sorted(want[who])], who
        # The open receipts are the file's open requests.
        assert [r["id"] for r in f["receipts"] if r["outcome"] == "open"] == [r["id"] for r in f["requests"]], who
    w = body(out, "withdrawals.json")
    every = [rec for mine in want.values() for rec in mine.values()]
    outcomes = {k: sum(1 for r in every if r["outcome"] == k) for k in ("open", "claimed", "cancelled", "reclaimed")}
    assert w["receipts"] == {"complete": True, "count": len(every), **outcomes}
    assert w["requestersEver"] == len(files) >= w["requesters"] == sum(1 for f in files.values() if f["count"])
    return want


def send_as(client: RpcClient, who: str, to: str, data: bytes) -> dict:
    client.request("anvil_impersonateAccount", [who])
    client.request("anvil_setBalance", [who, hex(10 * WAD)])
    tx = client.request("eth_sendTransaction", [{"from": who, "to": to, "data": "0x" + data.hex(), "gas": hex(2_000_000)}])
    deadline = time.monotonic() + 30
    while (receipt := client.request("eth_getTransactionReceipt", [tx])) is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert receipt and receipt["status"] == "0x1", f"the transaction of {who} reverted"
    return receipt


# -- the demo -------------------------------------------------------------------------------------------


def test_the_demos_receipts_equal_the_chains_logs(demo, demo_snapshot, built):
    snap = demo_snapshot
    want = check_published(built, demo.url, demo.addresses["WithdrawQueue"], snap.block.number)
    outcomes = {r["outcome"] for mine in want.values() for r in mine.values()}
    assert outcomes == {"open", "claimed", "cancelled", "reclaimed"}, "the demo lacks an outcome to check"
    assert any(r["cancelled"] and r["cancelled"]["sharesBurntWei"] != "0" for mine in want.values() for r in mine.values())
    assert len(snap.queue_receipts) == snap.withdraw_queue.next_request_id
    assert Snapshot.from_json(snap.to_json()) == snap
    # The published records read back as the snapshot's receipts (what a later run resumes from).
    assert queuelog.load_receipts(built / "withdrawals") == snap.queue_receipts
    assert all(queuelog.receipt_from_record(r.requester, receipt_record(r)) == r for r in snap.queue_receipts)


def test_serve_says_why_a_requester_has_no_file(demo_snapshot, built):
    site = Site(built)
    owners = {r.requester.lower() for r in demo_snapshot.queue_receipts}
    never = next(s.staker_addr for s in demo_snapshot.stakers if s.staker_addr.lower() not in owners)
    status, _, data = site.get(f"/withdrawals/{never}", "", "GET")
    error = json.loads(data)["error"]
    assert status == 404 and error["code"] == "not_found"
    assert error["message"] == f"no withdrawal request was ever filed by {never.lower()}"
    for bad in ("0x123", "0x" + "zz" * 20, "lookup-me", "0x" + "ab" * 21):
        status, _, data = site.get(f"/withdrawals/{bad}", "", "GET")
        assert status == 400 and json.loads(data)["error"]["code"] == "bad_request", bad
    who = demo_snapshot.queue_receipts[0].requester  # checksummed: normalized to the file
    status, _, data = site.get(f"/withdrawals/{who}", "", "GET")
    assert status == 200 and json.loads(data)["requester"] == who


def test_a_requester_with_only_closed_requests_keeps_its_file(demo, demo_profile, rpc, tmp_path):
    snap = collect(demo_profile).snapshot
    q = snap.withdraw_queue
    per: dict[str, list] = {}
    for r in q.requests:
        per.setdefault(r.requester, []).append(r)
    who, (target,) = next((w, rs) for w, rs in per.items() if len(rs) == 1 and not rs[0].fulfilled)
    with checkpoint(rpc):
        send_as(rpc, who, demo.addresses["WithdrawQueue"], cancel.encode(target.id))
        after = collect(demo_profile).snapshot
        build(after, demo_profile, tmp_path / "out")
        head = after.block.number
        check_published(tmp_path / "out", demo.url, demo.addresses["WithdrawQueue"], head)
    mine = body(tmp_path / "out", f"withdrawals/{who.lower()}.json")
    assert mine["count"] == 0 and mine["requests"] == []
    closed = next(r for r in mine["receipts"] if r["id"] == target.id)
    assert closed["outcome"] == "cancelled" and closed["cancelled"]["sharesReturnedWei"] != "0"
    w = body(tmp_path / "out", "withdrawals.json")
    before = len({r.requester for r in snap.withdraw_queue.requests})
    assert w["requesters"] == before - 1 and w["requestersEver"] == len({r.requester for r in after.queue_receipts})


# -- the wound-down scenario ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def wound_down(wound_devnet, tmp_path_factory):
    net = wound_devnet
    profile = devnet_profile(load_profile("devnet"), net)
    out = tmp_path_factory.mktemp("wound") / "out"
    run = read_and_build(profile, out, cache=Cache(), workers=1)
    return net, profile, run.collected.snapshot, out


def test_the_wound_down_receipts_equal_the_chains_logs(wound_down):
    net, _, snap, out = wound_down
    want = check_published(out, net.url, net.addresses["WithdrawQueue"], snap.block.number)
    every = [r for mine in want.values() for r in mine.values()]
    assert sum(r["outcome"] == "claimed" for r in every) > 10 and any(r["outcome"] == "reclaimed" for r in every)
    assert any(f["count"] == 0 for f in (body(out / "withdrawals", p.name) for p in (out / "withdrawals").glob("0x*.json"))), \
        "no requester with only closed requests"


def test_resuming_at_any_cursor_equals_reading_from_scratch(wound_down):
    net, _, snap, _ = wound_down
    client, queue, head = RpcClient([net.url]), snap.withdraw_queue.address, snap.block.number
    scratch = queuelog.build(client, queue=queue, head=head, span=97)
    assert scratch.receipts == snap.queue_receipts and scratch.activity == snap.queue_activity
    for cursor in [*range(0, head, max(1, head // 7)), head - 1, head]:
        prior = queuelog.build(client, queue=queue, head=cursor, span=97)
        got = queuelog.build(client, queue=queue, head=head, prior=prior.activity, receipts=prior.receipts, span=97)
        assert got.resumed and (got.receipts, got.activity) == (scratch.receipts, scratch.activity), cursor
        assert got.ranges == [] if cursor == head else got.ranges[0][0] == cursor + 1
        if cursor == head:  # nothing after the cursor: the prior's receipts, the very tuple
            assert got.receipts is prior.receipts
        # Headers are read only for the blocks of the steps after the cursor.
        later = {s.block for r in scratch.receipts for s in (r.requested, r.funded, r.closed_at) if s and s.block > cursor}
        assert got.headers <= len(later) + 2, cursor
        # Never shrinks: every receipt of the prior is still there, its steps kept.
        by_id = {r.id: r for r in got.receipts}
        for r in prior.receipts:
            assert by_id[r.id].requested == r.requested and (r.funded is None or by_id[r.id].funded == r.funded)
            assert r.closed is None or by_id[r.id] == r


def test_a_prior_whose_receipts_do_not_hold_together_is_read_again(wound_down):
    """Receipts read back from files are untrusted: duplicated, incoherent or naming a block past
    their cursor, the prior is dropped with a warning and the logs read from the start."""
    net, _, snap, _ = wound_down
    client, queue, head = RpcClient([net.url]), snap.withdraw_queue.address, snap.block.number
    scratch = queuelog.build(client, queue=queue, head=head, span=97)
    prior = queuelog.build(client, queue=queue, head=head - 1, span=97)
    first = prior.receipts[0]
    for broken in ((first, *prior.receipts),
                   (dataclasses.replace(first, closed="claimed", closed_at=None), *prior.receipts[1:]),
                   (dataclasses.replace(first, requested=dataclasses.replace(first.requested, block=head)), *prior.receipts[1:])):
        got = queuelog.build(client, queue=queue, head=head, prior=prior.activity, receipts=broken, span=97)
        assert not got.resumed and (got.receipts, got.activity) == (scratch.receipts, scratch.activity)
        assert any("previous withdraw queue activity ignored" in w for w in got.warnings), got.warnings


# -- a living devnet: claims, cancels, reclaims; resumed runs; a reorg ----------------------------------


@pytest.fixture(scope="module")
def living(tmp_path_factory):
    with running_live(seed=3) as (net, live):
        profile = devnet_profile(load_profile("devnet"), net).with_overrides(feed_max_age=30 * DAY)
        out = tmp_path_factory.mktemp("living") / "out"
        first = read_and_build(profile, out, cache=Cache(), workers=1)
        yield net, live, profile, out, first


def test_living_receipts_resume_and_equal_the_chain(living):
    net, live, profile, out, first = living
    queue = net.addresses["WithdrawQueue"]
    events: list[str] = []
    runs = [first]
    kept = Cache()  # the last two runs as a watch makes them: the second resumes from the first's cache
    for i in range(4):
        live.run(days=6, pace=0, on_step=lambda _live, e: events.extend(e))
        prior = queuelog.load_published(out / "withdrawals.json")
        assert prior is not None and prior.resumable and prior.receipts == runs[-1].collected.snapshot.queue_receipts
        cache = kept if i >= 2 else Cache()
        if i == 3:
            assert kept.queue is not None and _queue_prior(out, kept) is kept.queue[1] and kept.queue[1] == prior
        run = read_and_build(profile, out, cache=cache, workers=1)
        snap = run.collected.snapshot
        assert not [w for w in snap.warnings if "withdraw queue" in w], snap.warnings
        # Resumed equals from scratch, at the same block.
        scratch = collect(profile, block=snap.block.number).snapshot
        assert (snap.queue_receipts, snap.queue_activity) == (scratch.queue_receipts, scratch.queue_activity)
        # What the resumed read reads: the blocks after the prior's cursor only.
        got = queuelog.build(RpcClient([net.url]), queue=queue, head=snap.block.number, prior=prior.activity,
                             receipts=prior.receipts)
        assert got.ranges[0][0] == prior.activity.cursor + 1 and got.receipts == snap.queue_receipts
        check_published(out, net.url, queue, snap.block.number)
        runs.append(run)
    text = " ".join(events)
    assert " claimed" in text and " cancelled" in text and " reclaimed" in text, "the living devnet closed too little"
    # Never shrinks: every receipt of each run is in the next, its steps kept.
    for a, b in pairwise(runs):
        later = {r.id: r for r in b.collected.snapshot.queue_receipts}
        for r in a.collected.snapshot.queue_receipts:
            assert later[r.id].requested == r.requested and (r.closed is None or later[r.id] == r)


def test_a_reorg_that_removes_a_claim_removes_it_from_the_receipt(living):
    net, _, profile, out, _ = living
    client = RpcClient([net.url])
    queue = net.addresses["WithdrawQueue"]
    with checkpoint(client):
        snap = read_and_build(profile, out, cache=Cache(), workers=1).collected.snapshot
        now = snap.block.timestamp
        target = next(r for r in snap.withdraw_queue.requests if r.fulfilled and now + 3600 < r.expiration_time)
        fork = client.request("evm_snapshot", [])
        send_as(client, target.requester, queue, claim.encode(target.id))
        mine_at(client, int(header(client)["timestamp"], 16) + 5)
        claimed = read_and_build(profile, out, cache=Cache(), workers=1).collected.snapshot
        rc = next(r for r in claimed.queue_receipts if r.id == target.id)
        assert rc.closed == "claimed" and rc.paid == target.allocated_funds
        mine = body(out, f"withdrawals/{target.requester.lower()}.json")
        assert next(r for r in mine["receipts"] if r["id"] == target.id)["outcome"] == "claimed"
        # The claim's blocks are replaced by others (a reorg below the published cursor), longer.
        assert client.request("evm_revert", [fork]) is True
        t = int(header(client)["timestamp"], 16)
        for k in range(claimed.block.number - snap.block.number + 2):
            mine_at(client, t + 7 + k)
        assert header(client, claimed.block.number)["hash"] != claimed.block.hash
        run = read_and_build(profile, out, cache=Cache(), workers=1)
        again = run.collected.snapshot
        assert any("previous withdraw queue activity ignored" in w and f"block {claimed.block.number}" in w
                   for w in again.warnings), again.warnings
        rc = next(r for r in again.queue_receipts if r.id == target.id)
        assert rc.closed is None and rc.closed_at is None and rc.paid is None
        assert again.queue_receipts == collect(profile, block=again.block.number).snapshot.queue_receipts
        mine = body(out, f"withdrawals/{target.requester.lower()}.json")
        assert next(r for r in mine["receipts"] if r["id"] == target.id)["outcome"] == "open"
        assert target.id in [r["id"] for r in mine["requests"]]
        check_published(out, net.url, queue, again.block.number)


# -- a pruned node; a failed read -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pruned():
    with running("demo", keep_states=8) as net:
        yield net


def test_a_pruned_node_gives_the_same_receipts(pruned, demo_snapshot, tmp_path):
    profile = devnet_profile(load_profile("devnet"), pruned)
    snap = collect(profile).snapshot
    assert snap.block == demo_snapshot.block  # the same chain
    assert (snap.queue_receipts, snap.queue_activity) == (demo_snapshot.queue_receipts, demo_snapshot.queue_activity)
    # Resumed on it from an old cursor, whose state it no longer has: logs and headers suffice.
    client, queue, head = RpcClient([pruned.url]), snap.withdraw_queue.address, snap.block.number
    prior = queuelog.build(client, queue=queue, head=head - 40, span=50)
    got = queuelog.build(client, queue=queue, head=head, prior=prior.activity, receipts=prior.receipts, span=50)
    assert got.resumed and got.receipts == snap.queue_receipts


def test_a_failed_read_keeps_the_previous_receipts_and_says_so(demo, demo_profile, demo_snapshot, built, tmp_path):
    snap = demo_snapshot
    published = queuelog.load_published(built / "withdrawals.json")
    assert published.resumable and published.receipts == snap.queue_receipts
    # A prior some blocks back, as the previous run left it; then every eth_getLogs fails.
    queue, cursor = snap.withdraw_queue.address, snap.queue_receipts[0].requested.block + 1
    older = queuelog.build(RpcClient([demo.url]), queue=queue, head=cursor)
    prior = queuelog.PriorActivity(older.activity, queue, snap.network, snap.chain_id,
                                   header(RpcClient([demo.url]), cursor)["hash"], older.receipts)
    assert older.receipts and older.receipts != snap.queue_receipts
    with FlakyProxy(demo.url, always=500, only="eth_getLogs") as proxy:
        client = RpcClient([proxy.url], max_attempts=1)
        for given, kept in ((prior, older.receipts), (None, ()),
                            (dataclasses.replace(prior, queue="0x" + "11" * 20), ())):
            warnings: list[str] = []
            activity, receipts = queuelog.logs_for(client, snap, start=0, span=2048, prior=given, warnings=warnings)
            assert activity is None and receipts == kept
            assert "withdraw queue logs not read" in warnings[-1] and len(warnings) == 1 + (given is not None and not kept)
            assert ("previous run's" in warnings[-1]) is bool(kept)
    # Published: /withdrawals says the receipts may be incomplete; the files keep them.
    failed = dataclasses.replace(snap, queue_activity=None, queue_receipts=snap.queue_receipts)
    build(failed, demo_profile, tmp_path / "out")
    w = body(tmp_path / "out", "withdrawals.json")
    assert w["receipts"]["complete"] is False and w["receipts"]["count"] == len(snap.queue_receipts)
    assert w["depositor"]["available"] is False
    assert sorted(p.name for p in (tmp_path / "out" / "withdrawals").glob("0x*.json")) == \
        sorted(p.name for p in (built / "withdrawals").glob("0x*.json"))
    # Such a tree is not resumed (read again from the start), but its receipts are kept should the
    # next read fail too: they never shrink.
    again = queuelog.load_published(tmp_path / "out" / "withdrawals.json")
    assert again.activity is None and not again.resumable and again.receipts == snap.queue_receipts
    assert queuelog.kept(again, snap) == snap.queue_receipts
    warnings = []
    assert queuelog.logs_for(RpcClient([demo.url]), snap, start=0, span=2048, prior=again, warnings=warnings) == \
        (snap.queue_activity, snap.queue_receipts)
    assert len(warnings) == 1 and "not resumed" in warnings[0]


# -- one event, the files it rewrites -------------------------------------------------------------------


def _digests(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file() and not p.name.startswith(".")}


def test_one_request_or_claim_rewrites_no_other_requesters_files(demo, demo_profile, rpc, tmp_path):
    # A request filed at the back of the line, then a claim: each rewrites its own requester's
    # files (JSON, page, calendar) and the queue's shared ones, never another requester's.
    queue, vault = demo.addresses["WithdrawQueue"], demo.addresses["TokenggAVAX"]
    out, cache = tmp_path / "out", Cache()
    approve, request = Fn("approve(address,uint256)", "bool"), Fn("requestUnstake(uint256,uint48)", "uint256")
    balance = Fn("balanceOf(address)", "uint256")
    with checkpoint(rpc):
        snap = read_and_build(demo_profile, out, cache=cache, workers=1).collected.snapshot
        holder = demo.scenario.deposits[0][0]
        shares = balance.decode(bytes.fromhex(rpc.request("eth_call", [{"to": vault, "data": "0x" + balance.encode(holder).hex()}, "latest"])[2:])) // 100
        funded = next(r for r in snap.withdraw_queue.requests if r.fulfilled and snap.block.timestamp + 600 < r.expiration_time
                      and r.requester != holder)
        for who, steps in ((holder, [(vault, approve.encode(queue, shares)), (queue, request.encode(shares, 0))]),
                           (funded.requester, [(queue, claim.encode(funded.id))])):
            before = _digests(out)
            for to, data in steps:
                send_as(rpc, who, to, data)
            read_and_build(demo_profile, out, cache=cache, workers=1)
            after = _digests(out)
            changed = {k for k in after if before.get(k) != after[k]} | (before.keys() - after.keys())
            theirs = {k for k in changed if k.startswith(f"withdrawals/{who.lower()}.")}
            assert f"withdrawals/{who.lower()}.json" in theirs
            # Nothing of another requester's moves: a page's relative times ("in 9 days") are
            # its script's, counted from /status, so the block's time alone changes no page.
            assert {k for k in changed if k.startswith("withdrawals")} - theirs <= {
                "withdrawals.json", "withdrawals/params.json", "withdrawals/feed.xml"}, sorted(changed)
