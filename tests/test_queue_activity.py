"""The withdraw queue's activity from its logs (sources/queuelog.py) against the living devnet: the
depositor's last call and last funding, and the line's front, each checked against the chain read
independently (web3: the depositor's transactions, eth_getLogs, the queue's views); resuming
from a previous run equals reading from scratch; a node refusing wide ranges, or failing, and the
staleness label and published record. The receipts the same scan folds are held to the chain in
tests/test_receipts.py."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jsonschema
import pytest
from ggp_devnet import devnet_profile, running_live
from ggp_devnet.scenarios import DAY
from support.jsonrpc import LimitedRpc
from web3 import Web3

from publisher.build.pipeline import build
from publisher.chain.rpc import RpcClient
from publisher.collect import collect
from publisher.compute import queue as Q
from publisher.compute.depositor import depositor_stale, line_busy_since
from publisher.config import load_profile
from publisher.endpoints.depositor import DEPOSITOR_SCHEMA, depositor_record
from publisher.snapshot import QueueActivity, QueueStep, Receipt, Snapshot, UnstakeRequest
from publisher.sources import queuelog

ARTIFACTS = json.loads((Path(__file__).parents[1] / "devnet/ggp_devnet/artifacts.json").read_text())["contracts"]
FULFILLED = Web3.keccak(text="RequestFulfilled(bytes32,uint256,uint256)").to_0x_hex()
CLEANED = Web3.keccak(text="QueueCleaned(bytes32,uint256)").to_0x_hex()


@pytest.fixture(scope="module")
def living():
    """The demo chain; a snapshot (``before``); three requests filed and the depositor serving the
    line; then, three days later, a block with no call in it; the snapshot there (``snap``)."""
    with running_live(seed=1) as (net, live):
        # The AVAX/USD feed has no round in the three quiet days: its age bound is widened.
        profile = devnet_profile(load_profile("devnet"), net).with_overrides(feed_max_age=30 * DAY)
        before = collect(profile).snapshot
        live.file_requests(3, live.now + 60)
        live.depositor_run()
        assert live.fundings, "the depositor funded nothing: nothing to check"
        live.file_requests(1, live.now + 3 * DAY)
        snap = collect(profile).snapshot
        yield net, profile, before, snap


@pytest.fixture(scope="module")
def chain(living):
    net = living[0]
    w3 = Web3(Web3.HTTPProvider(net.url))
    queue = w3.eth.contract(address=net.addresses["WithdrawQueue"], abi=ARTIFACTS["WithdrawQueue"]["abi"])
    return w3, queue


WAD = 10**18


def test_activity_equals_the_chain(living, chain):
    _, _, before, snap = living
    w3, queue = chain
    a, head = snap.queue_activity, snap.block.number
    assert a is not None and a.cursor == head and before.queue_activity is not None
    # The last call: the block of the latest depositFromStaking transaction, sent by a depositor.
    serve = Web3.keccak(text="depositFromStaking(uint256,uint256,bytes32)")[:4]
    txs = (tx for n in range(head, -1, -1) for tx in w3.eth.get_block(n, full_transactions=True).transactions
           if tx["to"] == queue.address and tx["input"][:4] == serve)
    latest = next(txs, None)
    assert latest is not None, "no depositFromStaking transaction on the chain"
    assert queue.functions.hasRole(queue.functions.DEPOSITOR_ROLE().call(), latest["from"]).call()
    assert a.last_call_block == latest["blockNumber"] > before.block.number
    assert a.last_call_time == w3.eth.get_block(latest["blockNumber"])["timestamp"]
    # The last funding: the latest RequestFulfilled.
    logs = w3.eth.get_logs({"address": queue.address, "fromBlock": 0, "toBlock": head, "topics": [[FULFILLED, CLEANED]]})
    funded = [e["blockNumber"] for e in logs if e["topics"][0].to_0x_hex() == FULFILLED]
    assert a.last_funding_block == max(funded)
    assert a.last_funding_time == w3.eth.get_block(max(funded))["timestamp"]
    # The line's front: 1 + the largest id popped, and the ids popped are exactly those below it.
    popped = sorted(int.from_bytes(e["topics"][2], "big") for e in logs)
    assert a.line_front == max(popped) + 1 and popped == list(range(a.line_front))
    pending = queue.functions.getAllPendingRequests().call(block_identifier=head)
    assert pending and min(pending) >= a.line_front and a.line_front <= queue.functions.nextRequestId().call(block_identifier=head)
    # The snapshot keeps it exactly.
    assert Snapshot.from_json(snap.to_json()) == snap


def test_resuming_equals_reading_from_scratch(living, tmp_path):
    net, profile, before, snap = living
    client, queue, head = RpcClient([net.url]), snap.withdraw_queue.address, snap.block.number
    scratch = queuelog.build(client, queue=queue, head=head, span=37)
    assert scratch.activity == snap.queue_activity and not scratch.resumed
    for cursor in [*range(0, head, 61), before.block.number, head - 1, head]:
        prior = queuelog.build(client, queue=queue, head=cursor, span=37).activity
        got = queuelog.build(client, queue=queue, head=head, prior=prior, span=37)
        assert got.resumed and got.activity == scratch.activity, cursor
        assert got.ranges == [] if cursor == head else got.ranges[0][0] == cursor + 1

    # Through the published tree: /withdrawals' depositor object, receipts count and meta, and the
    # requester files' receipts (tests/test_receipts.py holds the receipts to the chain).
    build(before, profile, tmp_path / "out")
    loaded = queuelog.load_published(tmp_path / "out" / "withdrawals.json")
    assert loaded == queuelog.from_snapshot(before) and loaded.resumable
    resumed = collect(profile, queue_prior=loaded).snapshot
    assert resumed.queue_activity == snap.queue_activity
    assert not [w for w in resumed.warnings if "queue" in w]
    # A /withdrawals of an earlier version (no receipts object) is not resumed: one pass folds both.
    path = tmp_path / "withdrawals.json"
    b = before.block
    path.write_text(json.dumps({"address": queue, "meta": {"network": before.network, "chainId": before.chain_id,
                    "block": {"number": b.number, "hash": b.hash, "timestamp": b.timestamp}},
                    "depositor": depositor_record(before.queue_activity, None, profile.depositor_max_age)}))
    older = queuelog.load_published(path)
    assert older.activity == before.queue_activity and older.receipts is None and not older.resumable
    warnings = []
    assert queuelog.activity_for(client, snap, start=0, span=2048, prior=older, warnings=warnings) == snap.queue_activity
    assert len(warnings) == 1 and "not resumed" in warnings[0]

    # A prior from another fork of the chain, or past the block, is ignored: read again.
    for foreign in (dataclasses.replace(loaded, cursor_hash="0x" + "ab" * 32),
                    dataclasses.replace(loaded, activity=dataclasses.replace(loaded.activity, cursor=head + 5)),
                    dataclasses.replace(loaded, queue="0x" + "11" * 20)):
        warnings: list[str] = []
        got = queuelog.activity_for(client, snap, start=0, span=2048, prior=foreign, warnings=warnings)
        assert got == snap.queue_activity
        assert len(warnings) == 1 and "previous withdraw queue activity ignored" in warnings[0]


def test_a_node_refusing_wide_ranges_or_failing(living):
    net, _, _, snap = living
    head = snap.block.number
    with LimitedRpc(net.url, limit=16) as proxy:
        got = queuelog.build(RpcClient([proxy.url]), queue=snap.withdraw_queue.address, head=head, span=1000)
    assert got.activity == snap.queue_activity
    assert proxy.refused > 0 and all(b - a + 1 <= 16 for a, b in got.ranges)
    assert [a for a, _ in got.ranges[1:]] == [b + 1 for _, b in got.ranges[:-1]] and (got.ranges[0][0], got.ranges[-1][1]) == (0, head)

    # Logs that cannot be read: a warning, and the evidence unavailable (the build goes on).
    warnings: list[str] = []
    with LimitedRpc(net.url, fail=True) as proxy:
        prior = queuelog.from_snapshot(snap)
        got = queuelog.activity_for(RpcClient([proxy.url], max_attempts=1), snap, start=0, span=2048,
                                    prior=None, warnings=warnings)
        assert queuelog.activity_for(RpcClient([proxy.url], max_attempts=1), snap, start=0, span=2048, prior=prior,
                                     warnings=[]) == snap.queue_activity  # nothing to read after its cursor
    assert got is None and len(warnings) == 1 and "withdraw queue logs not read" in warnings[0]
    record = depositor_record(None, depositor_stale(dataclasses.replace(snap, queue_activity=None), 1), 172_800)
    jsonschema.validate(record, DEPOSITOR_SCHEMA)
    assert record["available"] is False and record["stale"] is False and record["lineFront"] is None


def _line_of(snap, last_call: int | None, *spans: tuple[int, int | None, str | None]):
    """``snap`` with its queue's line and receipts made of ``spans`` (filed, left, how it left:
    "funded", "cancelled" or None while in line), times in days after the block's time less 100
    days, and the depositor's last call on record at ``last_call`` (days, likewise)."""
    t0, q = snap.block.timestamp - 100 * DAY, snap.withdraw_queue
    step = lambda day: QueueStep(1, t0 + day * DAY, "0x" + "00" * 32)  # noqa: E731
    receipts, waiting = [], []
    for i, (filed, left, how) in enumerate(spans):
        rc = Receipt(i, "0x" + "ab" * 20, WAD, WAD, t0 + (filed + 7) * DAY, step(filed),
                     funded=step(left) if how == "funded" else None, allocated=WAD if how == "funded" else None,
                     closed="cancelled" if how == "cancelled" else None, closed_at=step(left) if how == "cancelled" else None)
        receipts.append(rc)
        if how is None:
            waiting.append(UnstakeRequest(i, rc.requester, WAD, WAD, rc.requested.time, rc.claimable_time,
                                          rc.claimable_time + 90 * DAY, 0, False))
    activity = QueueActivity(snap.block.number, 0, None if last_call is None else 1, None if last_call is None else t0 + last_call * DAY,
                             None, None)
    return dataclasses.replace(snap, withdraw_queue=dataclasses.replace(q, requests=tuple(waiting)),
                               queue_receipts=tuple(receipts), queue_activity=activity)


def test_the_depositor_is_stale_only_while_requests_wait_on_it(living):
    """A call that finds the line empty leaves no log: the wait counts from the later of the last
    call on record and the moment the line last stopped being empty (day 100 is the block)."""
    _, profile, _, snap = living
    bound = profile.depositor_max_age
    assert bound == 2 * DAY
    # Filed at day 99.5, long after the last call (day 0), after a line empty since day 40: not stale yet.
    assert depositor_stale(_line_of(snap, 0, (30, 40, "cancelled"), (99.5, None, None)), bound) is None
    # The line held a request without a break since day 30 (the first one cancelled once the second
    # was filed): stale, counted from day 30, whichever request is left.
    held = _line_of(snap, 0, (30, 65.5, "cancelled"), (65, None, None))
    reason = depositor_stale(held, bound)
    assert reason is not None and f"requests have waited in line since {Q.when(held.block.timestamp - 70 * DAY)}" in reason
    assert "longer than the 2 days allowed" in reason and str(held.block.timestamp - 70 * DAY) not in reason
    # A call while they waited (day 99): counted from it, and named.
    called = _line_of(snap, 99, (30, 65.5, "cancelled"), (65, None, None))
    assert depositor_stale(called, bound) is None and depositor_stale(called, DAY // 2) is not None
    assert f"last called depositFromStaking at {Q.when(called.block.timestamp - DAY)} (block 1)" in depositor_stale(called, DAY // 2)
    # A line that emptied by fundings, then a request filed at day 97: three days of waiting.
    funded = _line_of(snap, 50, (30, 50, "funded"), (97, None, None))
    assert line_busy_since(funded) == funded.block.timestamp - 3 * DAY and depositor_stale(funded, bound) is not None
    # Receipts whose filings are out of id order (not the chain's) give the same answer.
    shuffled = _line_of(snap, 0, (65, None, None), (30, 65.5, "cancelled"))
    assert line_busy_since(shuffled) == line_busy_since(held) == held.block.timestamp - 70 * DAY
    # Nothing waits: never stale.
    assert depositor_stale(_line_of(snap, None, (30, 50, "funded")), 1) is None
    # The words name dates: they do not change as the wait grows.
    later = dataclasses.replace(held, block=dataclasses.replace(held.block, timestamp=held.block.timestamp + DAY))
    assert depositor_stale(later, bound) == reason


def test_the_stale_label(living):
    _, profile, _, snap = living
    a = snap.queue_activity
    age = snap.block.timestamp - a.last_call_time
    assert age >= 3 * DAY and profile.depositor_max_age == 2 * DAY
    assert depositor_stale(snap, age) is None
    reason = depositor_stale(snap, profile.depositor_max_age)
    assert reason is not None and f"(block {a.last_call_block})" in reason and Q.when(a.last_call_time) in reason
    record = depositor_record(a, reason, profile.depositor_max_age)
    jsonschema.validate(record, DEPOSITOR_SCHEMA)
    assert record == {"available": True, "lastCallBlock": a.last_call_block, "lastCallTime": a.last_call_time,
                      "lastFundingBlock": a.last_funding_block, "lastFundingTime": a.last_funding_time,
                      "lineFront": a.line_front, "maxAgeSeconds": 2 * DAY,
                      "stale": True, "staleReason": reason}
    # No call on record: stale once the line has held requests past the bound, never with an empty line.
    silent = dataclasses.replace(snap, queue_activity=QueueActivity(snap.block.number, 0, None, None, None, None))
    q = silent.withdraw_queue
    waited = snap.block.timestamp - line_busy_since(silent)
    assert "no call of the depositor" in depositor_stale(silent, waited - 1) and depositor_stale(silent, waited) is None
    served = dataclasses.replace(silent, withdraw_queue=dataclasses.replace(q, requests=tuple(r for r in q.requests if r.fulfilled)))
    assert depositor_stale(served, 1) is None
