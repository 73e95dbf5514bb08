"""What the withdraw queue's own logs say and no view does: when its depositor last called
``depositFromStaking``, when that last funded a request, and the front of the queue's private FIFO
line (reference/withdrawals.md §4.2, §5).

- **A call** leaves at least one of the events only ``depositFromStaking`` emits:
  ``DepositedFromStaking`` and ``StakeDeposited`` (except those naming the source "RESCUE", which
  ``rescueStuckAVAX`` emits through the same deposit path), ``RequestFulfilled``,
  ``InsufficientLiquidity``, ``QueueCleaned`` with the reason "REQUEST_NOT_IN_PENDING_SET",
  ``PendingRequestsNotProcesses`` and ``YieldDeposited``. A call that found nothing to do (no AVAX
  sent, the line empty) leaves no log, so this is evidence of calls, not a record of all of them.
- **A funding** is a ``RequestFulfilled``.
- **The line's front.** Every request id is pushed to the back of the line when filed, and ids
  leave only from the front: funded (``RequestFulfilled(source, id)``) or dropped as closed
  (``QueueCleaned(reason, id)``, both reasons: ``getNextPendingRequestAmount`` pops too, under
  "…_QUERY"). So the front is 1 + the largest id ever popped (0 when none was), every id from it
  on is still in the line, and the closed ones among those are stale entries.

The result is a fold over the logs in chain order up to the pinned block, so a run resumes from
the previous run's result (a ``PriorActivity``: the published ``/withdrawals`` ``depositor``, or
the previous snapshot) and reads only the blocks after its cursor; resuming and rebuilding give
the same ``QueueActivity``. Logs are read with history.scan (bounded ranges, batched, a range the
node refuses halved). The two "last" blocks' times come from their headers, one batch.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..chain import abis
from ..chain.abi import event_topic
from ..chain.rpc import RpcClient
from ..errors import PublisherError
from ..snapshot import QueueActivity, Snapshot
from .history import LogFilter, scan

log = logging.getLogger(__name__)

TOPIC_DEPOSITED = event_topic(abis.EV_WQ_DEPOSITED_FROM_STAKING)
TOPIC_STAKE_DEPOSITED = event_topic(abis.EV_WQ_STAKE_DEPOSITED)
TOPIC_FULFILLED = event_topic(abis.EV_WQ_REQUEST_FULFILLED)
TOPIC_INSUFFICIENT = event_topic(abis.EV_WQ_INSUFFICIENT_LIQUIDITY)
TOPIC_CLEANED = event_topic(abis.EV_WQ_QUEUE_CLEANED)
TOPIC_NOT_PROCESSED = event_topic(abis.EV_WQ_PENDING_NOT_PROCESSED)
TOPIC_YIELD = event_topic(abis.EV_WQ_YIELD_DEPOSITED)

# topic0 -> (topics the log carries, bytes of data)
SHAPES = {
    TOPIC_DEPOSITED: (1, 128),  # baseAmt, rewardAmt, source, value
    TOPIC_STAKE_DEPOSITED: (3, 32),  # indexed source, indexed depositor; amount
    TOPIC_FULFILLED: (3, 32),  # indexed source, indexed requestId; assets
    TOPIC_INSUFFICIENT: (1, 64),
    TOPIC_CLEANED: (3, 0),  # indexed reason, indexed requestId
    TOPIC_NOT_PROCESSED: (1, 32),
    TOPIC_YIELD: (1, 32),
}
TOPICS = list(SHAPES)


def _word(text: str) -> bytes:
    return text.encode().ljust(32, b"\0")


RESCUE = _word("RESCUE")
SERVE_CLEANED = _word("REQUEST_NOT_IN_PENDING_SET")  # the other reason ("…_QUERY") pops but is no call


@dataclass(frozen=True)
class PriorActivity:
    """A previous run's activity and where it comes from: it is resumed only for the same queue,
    on the same chain, through the same cursor block."""

    activity: QueueActivity
    queue: str | None = None
    network: str | None = None
    chain_id: int | None = None
    cursor_hash: str | None = None


@dataclass
class ActivityResult:
    activity: QueueActivity
    ranges: list[tuple[int, int]] = field(default_factory=list)  # block ranges read, inclusive
    warnings: list[str] = field(default_factory=list)
    resumed: bool = False  # folded on from the prior (False: from ``start``)


@dataclass(frozen=True)
class _Entry:
    block: int
    index: int
    call: bool  # a depositor call's evidence
    funding: bool
    popped: int | None  # the id that left the line's front


class _Fold:
    def __init__(self, prior: QueueActivity | None = None) -> None:
        self.front = prior.line_front if prior else 0
        self.call = prior.last_call_block if prior else None
        self.funding = prior.last_funding_block if prior else None
        self.gaps: list[tuple[int, int]] = []  # (expected front, popped id) where they differ

    def apply(self, e: _Entry) -> None:
        if e.call:
            self.call = e.block
        if e.funding:
            self.funding = e.block
        if e.popped is not None:
            if e.popped != self.front:
                self.gaps.append((self.front, e.popped))
            self.front = max(self.front, e.popped + 1)


def build(client: RpcClient, *, queue: str, head: int, start: int = 0, prior: QueueActivity | None = None,
          span: int = 2048, on_range: Callable[[int], None] | None = None) -> ActivityResult:
    """The queue's activity over blocks ``start..head``, folded on from ``prior`` when it is
    usable (its cursor at or before ``head``, its blocks at or before its cursor)."""
    warnings: list[str] = []
    if prior is not None:
        problem = _check_prior(prior, head)
        if problem:
            warnings.append(f"previous withdraw queue activity ignored ({problem}): reading the queue's logs again")
            prior = None
    state = _Fold(prior)
    first = max(start, prior.cursor + 1) if prior else start
    ranges: list[tuple[int, int]] = []
    for a, b, (raw,) in scan(client, [LogFilter(queue, [TOPICS])], first, head, span, ranges, on_range,
                             what="withdraw queue logs"):
        for entry in sorted(_decode(raw, queue, a, b), key=lambda e: (e.block, e.index)):
            state.apply(entry)
    if state.gaps:
        want, got = state.gaps[0]
        warnings.append(f"withdraw queue logs: the line popped id {got} where id {want} was at its front "
                        f"({len(state.gaps)} such gaps; logs before block {first} not read?): the line's front "
                        "is the largest id popped, the depositor's blocks are the logs read")
    # The prior's blocks keep their times; only a new last block's header is read.
    known: dict[int, int] = {}
    if prior:
        for block, t in ((prior.last_call_block, prior.last_call_time), (prior.last_funding_block, prior.last_funding_time)):
            if block is not None and t is not None:
                known[block] = t
    times = {**known, **_times(client, [b for b in (state.call, state.funding) if b is not None and b not in known])}
    activity = QueueActivity(
        cursor=head, line_front=state.front,
        last_call_block=state.call, last_call_time=None if state.call is None else times[state.call],
        last_funding_block=state.funding, last_funding_time=None if state.funding is None else times[state.funding])
    return ActivityResult(activity, ranges, warnings, prior is not None)


def activity_for(client: RpcClient, snap: Snapshot, *, start: int, span: int, prior: PriorActivity | None,
                 warnings: list[str], on_start: Callable[[int], None] | None = None,
                 on_range: Callable[[int], None] | None = None) -> QueueActivity | None:
    """The snapshot's queue activity up to its block (None without a queue). A prior from another
    chain or queue, or past the block, is ignored with a warning. A failure to read the logs does not
    stop the run: it is a warning, and the activity None (the evidence unavailable)."""
    q = snap.withdraw_queue
    if q is None:
        return None
    try:
        usable = verified(client, prior, snap, warnings)
        first = max(start, usable.activity.cursor + 1) if usable else start
        if on_start:
            on_start(max(0, snap.block.number - first) // max(1, span) + 1)
        got = build(client, queue=q.address, head=snap.block.number, start=start,
                    prior=usable.activity if usable else None, span=span, on_range=on_range)
    except PublisherError as exc:
        problem = f"withdraw queue logs not read ({exc}): the depositor's activity is unavailable"
        log.warning(problem)
        warnings.append(problem)
        return None
    for w in got.warnings:
        log.warning(w)
    warnings += got.warnings
    return got.activity


def verified(client: RpcClient, prior: PriorActivity | None, snap: Snapshot, warnings: list[str]) -> PriorActivity | None:
    """``prior`` when it belongs to the snapshot's queue and chain; otherwise None, with a warning."""
    if prior is None:
        return None
    problem = _foreign(client, prior, snap)
    if problem:
        warnings.append(f"previous withdraw queue activity ignored ({problem}): reading the queue's logs again")
        return None
    return prior


def _foreign(client: RpcClient, prior: PriorActivity, snap: Snapshot) -> str | None:
    q = snap.withdraw_queue
    if (prior.network, prior.chain_id) != (snap.network, snap.chain_id):
        return f"it is from {prior.network} (chain {prior.chain_id})"
    if q is None or (prior.queue or "").lower() != q.address.lower():
        return f"it is of queue {prior.queue}"
    cursor = prior.activity.cursor
    if cursor > snap.block.number:
        return f"its cursor {cursor} is after block {snap.block.number}"
    if cursor == snap.block.number and prior.cursor_hash == snap.block.hash:
        return None
    header = client.request("eth_getBlockByNumber", [hex(cursor), False])
    if not isinstance(header, dict) or header.get("hash") != prior.cursor_hash:
        return f"block {cursor} is not the one it was read at"
    return None


def _check_prior(p: QueueActivity, head: int) -> str | None:
    if p.cursor > head:
        return f"its cursor {p.cursor} is after block {head}"
    if p.line_front < 0:
        return "its line front is negative"
    for what, block, t in (("call", p.last_call_block, p.last_call_time), ("funding", p.last_funding_block, p.last_funding_time)):
        if (block is None) != (t is None):
            return f"its last {what} has a block or a time but not both"
        if block is not None and not 0 <= block <= p.cursor:
            return f"its last {what} is after its cursor"
    return None


def _decode(raw: list, queue: str, a: int, b: int) -> list[_Entry]:
    out = []
    for item in raw:
        try:
            if item.get("removed"):
                continue
            block, index = int(item["blockNumber"], 16), int(item["logIndex"], 16)
            topics, data = item["topics"], bytes.fromhex(item["data"][2:])
            if item["address"].lower() != queue.lower() or not a <= block <= b:
                raise ValueError("unexpected log")
            shape = SHAPES.get(topics[0])
            if shape is None or shape != (len(topics), len(data)):
                raise ValueError("unexpected topics")
            t0 = topics[0]
            if t0 == TOPIC_DEPOSITED:
                call = data[64:96] != RESCUE
            elif t0 == TOPIC_STAKE_DEPOSITED:
                call = bytes.fromhex(topics[1][2:]) != RESCUE
            elif t0 == TOPIC_CLEANED:
                call = bytes.fromhex(topics[1][2:]) == SERVE_CLEANED
            else:
                call = True
            popped = int(topics[2], 16) if t0 in (TOPIC_FULFILLED, TOPIC_CLEANED) else None
        except (AttributeError, KeyError, TypeError, ValueError, IndexError):
            raise PublisherError(f"withdraw queue logs: eth_getLogs for blocks {a}..{b} returned a malformed log") from None
        out.append(_Entry(block, index, call, t0 == TOPIC_FULFILLED, popped))
    return out


def _times(client: RpcClient, blocks: Sequence[int]) -> dict[int, int]:
    """The timestamps of ``blocks``, their headers read in one batch."""
    blocks = sorted(set(blocks))
    if not blocks:
        return {}
    headers = client.batch([("eth_getBlockByNumber", [hex(n), False]) for n in blocks])
    out = {}
    for n, h in zip(blocks, headers, strict=True):
        try:
            if int(h["number"], 16) != n:
                raise ValueError
            out[n] = int(h["timestamp"], 16)
        except (KeyError, TypeError, ValueError):
            raise PublisherError(f"withdraw queue logs: no usable header for block {n}") from None
    return out


# -- the previous run's activity ----------------------------------------------------------------------


def from_snapshot(snap: Snapshot) -> PriorActivity | None:
    a, q = snap.queue_activity, snap.withdraw_queue
    if a is None or q is None:
        return None
    return PriorActivity(a, q.address, snap.network, snap.chain_id,
                         snap.block.hash if a.cursor == snap.block.number else None)


def load_published(path: str | Path) -> PriorActivity | None:
    """The activity a published ``/withdrawals`` carries: its ``depositor`` object
    (endpoints/depositor.py ``depositor_record``) with the file's ``address`` and ``meta``, the
    depositor's ``cursor`` being ``meta.block``. None when the file is absent, has no usable
    depositor object (an earlier version's file, or the logs were unavailable), or is unusable:
    that costs only reading the logs from the start block again."""
    try:
        data = json.loads(Path(path).read_text())
        d = data.get("depositor")
        if not isinstance(d, dict) or d.get("available") is not True:
            return None
        meta = data["meta"]
        block = meta["block"]
        activity = QueueActivity(
            cursor=_int(d["cursor"]), line_front=_int(d["lineFront"]),
            last_call_block=_opt(d["lastCallBlock"]), last_call_time=_opt(d["lastCallTime"]),
            last_funding_block=_opt(d["lastFundingBlock"]), last_funding_time=_opt(d["lastFundingTime"]))
        queue, network, chain_id, number, block_hash = data["address"], meta["network"], meta["chainId"], block["number"], block["hash"]
        if not all(isinstance(v, str) for v in (queue, network, block_hash)) or not isinstance(chain_id, int):
            raise TypeError("unexpected meta")
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        log.warning("cannot resume the withdraw queue activity from %s (%s): reading the queue's logs again",
                    path, type(exc).__name__)
        return None
    if number != activity.cursor:
        log.warning("cannot resume the withdraw queue activity from %s (its cursor is not its block): reading "
                    "the queue's logs again", path)
        return None
    return PriorActivity(activity, queue, network, chain_id, block_hash)


def _int(value) -> int:
    if type(value) is not int:
        raise TypeError("expected an integer")
    return value


def _opt(value) -> int | None:
    return None if value is None else _int(value)

